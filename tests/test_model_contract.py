"""What every model adapter promises, whatever its format: it is final once loaded
(describe() never changes), every call into the model goes through one guard
(ModelFailed, one line) while our own bugs keep their traceback, and a subset of
the columns can be explained at the cost of that subset only."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from ale_cli.data.table import load_table
from ale_cli.errors import InputError, ModelFailed
from ale_cli.estimators.inputs import ModelInputs
from ale_cli.models import Columns, LoadOptions, load_model
from ale_cli.models import scikit as scikit_module
from ale_cli.models.base import CHECK_ROWS, LoadRequest

HGB_TRUST = ("sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",)


@pytest.fixture(scope="module")
def diabetes(sample_dir: Path):  # type: ignore[no-untyped-def]
    return load_table(sample_dir / "diabetes.csv", exclude=["target"])


def load(path: Path, table, **options):  # type: ignore[no-untyped-def]
    columns = Columns(names=table.feature_names, fixed=table.categorical)
    return load_model(path, options=LoadOptions(**options), columns=columns, X=table.X)


def snapshot(model) -> str:  # type: ignore[no-untyped-def]
    return json.dumps(model.describe(), sort_keys=True)


@pytest.fixture(scope="module")
def linear_pickle(tmp_path_factory: pytest.TempPathFactory, diabetes) -> Path:  # type: ignore[no-untyped-def]
    import joblib
    from sklearn.linear_model import LinearRegression

    path = tmp_path_factory.mktemp("pickle") / "linear.pkl"
    y = diabetes.X @ np.arange(1.0, diabetes.X.shape[1] + 1)
    joblib.dump(LinearRegression().fit(diabetes.X, y), path)
    return path


@pytest.mark.parametrize(
    ("name", "options", "method"),
    [
        ("diabetes_mlp.pt", {}, "autodiff"),
        ("diabetes_mlp.onnx", {}, "autodiff"),
        ("diabetes_mlp.onnx", {"method": "finite-differences"}, "finite-differences"),
        ("diabetes_gbr.onnx", {}, "finite-differences"),
        ("diabetes_hgb.skops", {"trust": HGB_TRUST}, "finite-differences"),
        ("linear.pkl", {"trust_pickle": True}, "finite-differences"),
    ],
)
def test_describe_is_final_once_loaded(  # type: ignore[no-untyped-def]
    sample_dir: Path, diabetes, linear_pickle, name, options, method
) -> None:
    path = linear_pickle if name == "linear.pkl" else sample_dir / "models" / name
    model = load(path, diabetes, **options)
    before = snapshot(model)
    assert model.method == method and json.loads(before)["method"] == method
    X = diabetes.X
    model.local_effects(X)
    model.local_effects(X[:7], features=[2])
    model.predict(X[:3])
    if method == "autodiff":
        model.mixed_derivatives(X[:5], [(2, 3)])
    assert snapshot(model) == before
    if method == "finite-differences":
        assert json.loads(before)["step"]["absolute"]  # decided when loaded
    with pytest.raises(dataclasses.FrozenInstanceError):
        model.batch_size = 1


# -- one guarded model call -------------------------------------------------------------


class RaisesOnNegative(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if bool((x[:, 0] < -50.0).any()):
            raise ValueError("negative input\nsecond line")
        return 2.0 * x[:, 0] - x[:, 1]


def test_torchscript_model_raising_after_the_check_rows_is_model_failed(tmp_path: Path) -> None:
    path = tmp_path / "raises.pt"
    torch.jit.save(torch.jit.script(RaisesOnNegative()), str(path))
    X = np.random.default_rng(0).normal(size=(40, 2))
    X[20:, 0] = -100.0  # rows the load-time checks (the first 8, moved upwards) never see
    model = load_model(path, options=LoadOptions(), columns=Columns(names=("a", "b")), X=X)
    message = f"^model '{path}' failed: negative input$"
    with pytest.raises(ModelFailed, match=message) as info:
        model.local_effects(X)
    assert info.value.exit_code == 1
    assert isinstance(info.value.__cause__, torch.jit.Error)
    with pytest.raises(ModelFailed, match=message):
        model.predict(X)
    with pytest.raises(ModelFailed, match=message):
        model.mixed_derivatives(X, [(0, 1)])
    np.testing.assert_allclose(model.local_effects(X[:20]).local_effects, [[2.0, -1.0]] * 20)


def test_sklearn_estimator_whose_predict_raises_is_model_failed(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from sklearn.linear_model import LinearRegression

    X = np.random.default_rng(1).normal(size=(30, 2))
    est = LinearRegression().fit(X, X @ [1.0, 2.0])
    model = scikit_module.SklearnModel.of(
        est, LoadRequest(Path("m.skops"), "skops", LoadOptions(), Columns(names=("a", "b")), X)
    )

    def predict(self, X):  # type: ignore[no-untyped-def]
        raise MemoryError("cannot allocate\nmore")

    monkeypatch.setattr(LinearRegression, "predict", predict)
    with pytest.raises(ModelFailed, match=r"^model 'm.skops' failed: cannot allocate$"):
        model.local_effects(X)
    with pytest.raises(ModelFailed, match=r"^model 'm.skops' failed: cannot allocate$"):
        model.predict(X)


def test_onnxruntime_and_the_torch_translation_failing_are_model_failed(  # type: ignore[no-untyped-def]
    monkeypatch, sample_dir: Path, diabetes
) -> None:
    import onnxruntime as ort

    from ale_cli.models.onnx_torch import TorchGraph

    path = sample_dir / "models" / "diabetes_mlp.onnx"
    autodiff = load(path, diabetes)
    finite = load(path, diabetes, method="finite-differences")

    def raising(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("kernel crashed\ndetails")

    monkeypatch.setattr(ort.InferenceSession, "run", raising)
    monkeypatch.setattr(TorchGraph, "__call__", raising)
    message = f"^model '{path}' failed: kernel crashed$"
    for call in (
        lambda: finite.local_effects(diabetes.X),
        lambda: finite.predict(diabetes.X),
        lambda: autodiff.local_effects(diabetes.X),
        lambda: autodiff.mixed_derivatives(diabetes.X, [(2, 3)]),
    ):
        with pytest.raises(ModelFailed, match=message):
            call()


def test_a_bug_in_our_code_is_not_turned_into_model_failed(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from sklearn.linear_model import LinearRegression

    import ale_cli.models.finite_diff as fd

    X = np.random.default_rng(2).normal(size=(30, 2))
    est = LinearRegression().fit(X, X @ [1.0, 2.0])
    model = scikit_module.SklearnModel.of(
        est, LoadRequest(Path("m.skops"), "skops", LoadOptions(), Columns(names=("a", "b")), X)
    )

    def broken(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise ZeroDivisionError("our bug")

    monkeypatch.setattr(fd, "stacked_chunks", broken)
    with pytest.raises(ZeroDivisionError, match="our bug"):
        model.local_effects(X)


@pytest.mark.parametrize("chunk_rows", [None, 128])
def test_a_core_bug_in_classic_keeps_its_traceback(
    monkeypatch, sample_dir: Path, chunk_rows
) -> None:  # type: ignore[no-untyped-def]
    import ale_cli.estimators.rows as edges_module
    from ale_cli.estimators.classic import ClassicRequest, classic
    from ale_cli.estimators.inputs import ModelInputs

    def broken(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise ZeroDivisionError("core bug")

    monkeypatch.setattr(edges_module, "chunked_quantile_edges", broken)  # in memory or not
    inputs = ModelInputs(
        model=sample_dir / "models" / "diabetes_mlp.pt",
        data=sample_dir / "diabetes.csv",
        exclude=("target",),
        features=("bmi",),
    )
    with pytest.raises(ZeroDivisionError, match="core bug"):
        classic(ClassicRequest(inputs=inputs, chunk_rows=chunk_rows))


# -- explaining a subset of the columns ----------------------------------------------------


def test_hgb_subset_evaluates_only_the_chosen_columns(  # type: ignore[no-untyped-def]
    monkeypatch, sample_dir: Path, diabetes
) -> None:
    from sklearn.ensemble import HistGradientBoostingRegressor

    rows: list[int] = []
    real = HistGradientBoostingRegressor.predict

    def counting(self, X):  # type: ignore[no-untyped-def]
        rows.append(len(X))
        return real(self, X)

    monkeypatch.setattr(HistGradientBoostingRegressor, "predict", counting)
    path = sample_dir / "models" / "diabetes_hgb.skops"
    model = load(path, diabetes, trust=HGB_TRUST)
    # loading: one call on the check rows; the step comes from the model type (no sample)
    assert rows == [CHECK_ROWS]
    names = diabetes.feature_names
    chosen = [names.index("bmi"), names.index("bp")]
    n = len(diabetes.X)
    got = model.local_effects(diabetes.X, features=chosen)
    # x, x + h e_bmi, x + h e_bp, x - h e_bmi, x - h e_bp: 5 n rows in one stacked call
    assert sum(rows) == CHECK_ROWS + (1 + 2 * 2) * n
    assert got.local_effects.shape == (n, 2)
    full = model.local_effects(diabetes.X)
    assert sum(rows) == CHECK_ROWS + (1 + 2 * 2) * n + (1 + 2 * len(names)) * n
    np.testing.assert_allclose(got.local_effects, full.local_effects[:, chosen], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(got.prediction, full.prediction)
    reversed_order = model.local_effects(diabetes.X, features=chosen[::-1]).local_effects
    np.testing.assert_array_equal(reversed_order, got.local_effects[:, ::-1])


def test_onnx_finite_difference_subset_evaluates_only_the_chosen_columns(  # type: ignore[no-untyped-def]
    monkeypatch, sample_dir: Path, diabetes
) -> None:
    import onnxruntime as ort

    rows: list[int] = []
    real = ort.InferenceSession.run

    def counting(self, names, feed, *args, **kwargs):  # type: ignore[no-untyped-def]
        rows.append(len(next(iter(feed.values()))))
        return real(self, names, feed, *args, **kwargs)

    monkeypatch.setattr(ort.InferenceSession, "run", counting)
    model = load(sample_dir / "models" / "diabetes_gbr.onnx", diabetes)
    assert model.method == "finite-differences"
    # loading: the first rows, then the row-independence check (those rows changed, and
    # the first row alone); a tree ensemble gets the large step without a sample
    assert rows == [CHECK_ROWS, CHECK_ROWS, 1]
    loaded = sum(rows)
    names = diabetes.feature_names
    chosen = [names.index("bmi"), names.index("bp")]
    n = len(diabetes.X)
    got = model.local_effects(diabetes.X, features=chosen)
    assert sum(rows) == loaded + (1 + 2 * 2) * n
    full = model.local_effects(diabetes.X)
    np.testing.assert_allclose(got.local_effects, full.local_effects[:, chosen], rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", ["diabetes_mlp.pt", "diabetes_mlp.onnx"])
def test_autodiff_subset_is_the_full_gradients_columns(sample_dir: Path, diabetes, name) -> None:  # type: ignore[no-untyped-def]
    model = load(sample_dir / "models" / name, diabetes)
    assert model.method == "autodiff"
    names = diabetes.feature_names
    chosen = [names.index("bp"), names.index("bmi"), names.index("bp")]
    got = model.local_effects(diabetes.X, features=chosen)
    full = model.local_effects(diabetes.X)
    assert got.local_effects.shape == (len(diabetes.X), 3)
    np.testing.assert_array_equal(got.local_effects, full.local_effects[:, chosen])
    np.testing.assert_array_equal(got.prediction, full.prediction)


def test_held_fixed_columns_get_zero_from_every_adapter(sample_dir: Path, diabetes) -> None:  # type: ignore[no-untyped-def]
    sex = diabetes.feature_names.index("sex")
    table = dataclasses.replace(diabetes, categorical=("sex",))
    for name, options in (("diabetes_mlp.pt", {}), ("diabetes_hgb.skops", {"trust": HGB_TRUST})):
        model = load(sample_dir / "models" / name, table, **options)
        free = load(sample_dir / "models" / name, diabetes, **options)
        effects = model.local_effects(table.X, features=[sex, 2]).local_effects
        np.testing.assert_array_equal(effects[:, 0], 0.0)
        if free.method == "autodiff":  # the trees' step (0.05 std) never crosses sex's split
            assert np.any(free.local_effects(table.X, features=[sex]).local_effects != 0)
        np.testing.assert_allclose(
            effects[:, 1], free.local_effects(table.X, features=[2]).local_effects[:, 0]
        )


def test_bad_features_and_options_name_their_parameter(sample_dir: Path, diabetes) -> None:  # type: ignore[no-untyped-def]
    model = load(sample_dir / "models" / "diabetes_mlp.pt", diabetes)
    with pytest.raises(InputError, match="^features index 10 is out of range") as info:
        model.local_effects(diabetes.X, features=[1, 10])
    assert info.value.param == "features"
    path = sample_dir / "models" / "diabetes_mlp.onnx"
    for options, param in (({"method": "magic"}, "method"), ({"step": 0.0}, "step")):
        with pytest.raises(InputError, match=f"^{param} must be") as info:
            ModelInputs(model=path, data=Path("d.csv"), **options)  # where options enter
        assert info.value.param == param
