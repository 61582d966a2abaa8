"""Models given as Python objects: the same routes and numbers as their files, provenance
with a content hash where one can be computed, and one-line errors for anything else."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ale_cli import api
from ale_cli.errors import InputError, ModelError
from ale_cli.models.objects import ModelObject, model_object


def _same_features(a, b, atol=1e-12):  # type: ignore[no-untyped-def]
    assert [f.name for f in a.features] == [f.name for f in b.features]
    for fa, fb in zip(a.features, b.features, strict=True):
        assert fa.status == fb.status
        np.testing.assert_allclose(fa.edges, fb.edges, rtol=0, atol=atol)
        if fa.effect is not None:
            np.testing.assert_allclose(fa.effect, fb.effect, rtol=0, atol=atol)


@pytest.fixture(scope="module")
def credit(sample_dir: Path):  # type: ignore[no-untyped-def]
    import pandas as pd
    import skops.io as sio

    path = sample_dir / "models" / "credit_logreg.skops"
    trusted = sio.get_untrusted_types(file=path)
    return path, sio.load(path, trusted=trusted), trusted, pd.read_csv(sample_dir / "credit.csv")


@pytest.fixture(scope="module")
def diabetes(sample_dir: Path):  # type: ignore[no-untyped-def]
    import pandas as pd

    return pd.read_csv(sample_dir / "diabetes.csv")


def test_pipeline_object_equals_its_file(credit, tmp_path: Path) -> None:
    path, pipe, trusted, frame = credit
    opts = {"exclude": "approved", "output": "proba:1"}
    _same_features(
        api.classic(pipe, frame, **opts), api.classic(path, frame, trust=trusted, **opts)
    )
    api.compute(pipe, frame, out=tmp_path / "o.npz", **opts)
    api.compute(path, frame, out=tmp_path / "f.npz", trust=trusted, **opts)
    from_object = api.rhale(tmp_path / "o.npz")
    _same_features(from_object, api.rhale(tmp_path / "f.npz"))
    model = from_object.store["model"]
    assert model["path"] is None and model["object"] == "sklearn.pipeline.Pipeline"
    assert model["format"] == "sklearn" and len(model["sha256"]) == 64


def test_pipeline_object_is_a_cache_hit_and_a_refit_is_not(credit, tmp_path: Path) -> None:
    from sklearn.base import clone

    path, pipe, _, frame = credit
    opts = {"exclude": "approved", "output": "proba:1", "out": tmp_path / "o.npz"}
    assert not api.compute(pipe, frame, **opts).cache_hit
    assert api.compute(pipe, frame, **opts).cache_hit
    other = clone(pipe).set_params(clf__C=0.1).fit(frame.drop(columns="approved"), frame.approved)
    again = api.compute(other, frame, **opts)
    assert not again.cache_hit and again.reason == "the model file changed"


def test_module_object_equals_its_torchscript_file(diabetes, mlp_model: Path, tmp_path) -> None:
    from ale_cli.sample import train_diabetes_mlp

    module = train_diabetes_mlp().train()  # left in train mode: ale explains a copy in eval
    assert module.training
    try:
        opts = {"exclude": "target", "features": "bmi,bp"}
        _same_features(
            api.classic(module, diabetes, **opts), api.classic(mlp_model, diabetes, **opts)
        )
        api.compute(module, diabetes, out=tmp_path / "o.npz", **opts)
        api.compute(mlp_model, diabetes, out=tmp_path / "f.npz", **opts)
        o, f = api.read_store(tmp_path / "o.npz"), api.read_store(tmp_path / "f.npz")
        # the sample MLP holds float64 weights: both run in float64 (float32 modules agree
        # to float32 rounding, ~1e-7 relative)
        np.testing.assert_allclose(o.local_effects, f.local_effects, rtol=0, atol=1e-12)
        assert o.meta["model"]["format"] == "torch-module" and o.meta["method"] == "autodiff"
        assert module.training  # the caller's module is not changed
        assert all(p.requires_grad for p in module.parameters())
    finally:
        module.eval()


def test_a_loaded_torchscript_module_equals_its_file(diabetes, mlp_model: Path, tmp_path) -> None:
    import torch

    script = torch.jit.load(str(mlp_model))  # a ScriptModule as a notebook holds it
    opts = {"exclude": "target", "features": "bmi,bp"}
    api.compute(script, diabetes, out=tmp_path / "o.npz", **opts)
    api.compute(mlp_model, diabetes, out=tmp_path / "f.npz", **opts)
    o, f = api.read_store(tmp_path / "o.npz"), api.read_store(tmp_path / "f.npz")
    np.testing.assert_allclose(o.local_effects, f.local_effects, rtol=0, atol=1e-12)
    assert o.meta["model"]["object"].endswith("RecursiveScriptModule")
    assert all(p.requires_grad and p.is_leaf for p in script.parameters())  # not changed


def test_linear_callable_known_answer_and_no_cache(tmp_path: Path) -> None:
    import pandas as pd

    x = np.random.default_rng(1).uniform(-1, 1, size=(400, 3))
    frame = pd.DataFrame(x, columns=["a", "b", "c"])
    coef = np.array([2.0, -0.5, 0.0])

    def f(X):  # type: ignore[no-untyped-def]
        return X @ coef

    out = tmp_path / "c.npz"
    first = api.compute(f, frame, out=out)
    assert first.method == "finite-differences"
    store = api.read_store(out)
    np.testing.assert_allclose(store.local_effects, np.tile(coef, (400, 1)), atol=1e-8)
    assert store.meta["model"]["sha256"] is None
    again = api.compute(f, frame, out=out)
    assert not again.cache_hit
    assert any("never reused as a cache" in n for n in again.notes)
    summary = api.classic(f, frame, bins=5)
    assert any("no content hash" in n for n in summary.notes)
    for name, slope in zip("abc", coef, strict=True):
        feat = summary.feature(name)
        np.testing.assert_allclose(np.diff(feat.effect) / np.diff(feat.edges), slope, atol=1e-9)


def test_predictor_gradient_is_used_and_frame_names_columns(tmp_path: Path) -> None:
    import pandas as pd

    x = np.random.default_rng(2).uniform(0, 2, size=(300, 2))
    frame = pd.DataFrame(x, columns=["u", "v"])
    seen: list[list[str]] = []

    def f(X):  # type: ignore[no-untyped-def]
        seen.append(list(X.columns))
        return X["u"] ** 2 + X["v"]

    def grad(X):  # type: ignore[no-untyped-def]
        return np.column_stack([2 * X["u"], np.ones(len(X))])

    done = api.compute(api.Predictor(f, gradient=grad, frame=True), frame, out=tmp_path / "g.npz")
    assert done.method == "gradient" and seen[0] == ["u", "v"]
    store = api.read_store(tmp_path / "g.npz")
    np.testing.assert_allclose(store.local_effects[:, 0], 2 * x[:, 0], rtol=1e-15)
    np.testing.assert_allclose(store.local_effects[:, 1], 1.0)


def test_step_function_callable_goes_the_secant_route(diabetes, tmp_path: Path) -> None:
    def step(X):  # type: ignore[no-untyped-def]
        return np.where(X[:, 2] > 26.0, 3.0, 0.0)

    done = api.compute(step, diabetes, out=tmp_path / "s.npz", exclude="target", features="bmi")
    assert done.method == "secant"


def test_a_step_callable_no_sampled_row_jumps_on_goes_the_secant_route(tmp_path: Path) -> None:
    """Every small-step derivative on the sample is exactly 0 (no row within 1e-5 std of
    a jump) while the predictions vary: the model is piecewise constant, and its secants
    give the slopes 2 and -3 of the linear function it rounds (a wrongly smooth step
    gave 0); a truly constant callable keeps zero effects."""
    import pandas as pd

    rng = np.random.default_rng(5)
    frame = pd.DataFrame(rng.uniform(0, 1, size=(6000, 2)), columns=["a", "b"])

    def steps(X):  # type: ignore[no-untyped-def]
        return np.round(2 * X[:, 0] - 3 * X[:, 1], 1)

    done = api.compute(steps, frame, out=tmp_path / "s.npz")
    assert done.method == "secant"
    step = api.read_store(tmp_path / "s.npz").meta["method_details"]["step"]
    assert step["rule"] == "zero share on a sample" and step["zero_share"] == 1.0
    summary = api.rebin(tmp_path / "s.npz", bins=5)
    for name, slope in (("a", 2.0), ("b", -3.0)):
        feat = summary.feature(name)
        np.testing.assert_allclose(np.diff(feat.effect) / np.diff(feat.edges), slope, rtol=0.1)

    done = api.compute(lambda X: np.full(len(X), 4.0), frame, out=tmp_path / "k.npz")
    assert done.method == "finite-differences"
    np.testing.assert_array_equal(api.read_store(tmp_path / "k.npz").local_effects, 0.0)


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (3, r"^model: got int; expected a model file path, a fitted scikit-learn"),
        ({"w": 1}, r"^model: got dict; expected"),
        (ModelObject, r"^model is the class ModelObject, not a fitted model"),
    ],
)
def test_anything_else_is_an_input_error_naming_model(value, match: str, diabetes) -> None:
    with pytest.raises(InputError, match=match):
        api.classic(value, diabetes, exclude="target")


@pytest.mark.parametrize("func", [api.classic, api.interact, api.compute])
@pytest.mark.parametrize("data", [np.zeros((10, 3)), 3, None])
def test_data_that_is_no_path_or_frame_is_an_input_error_naming_data(func, data, tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = {"out": tmp_path / "s.npz"} if func is api.compute else {}
    with pytest.raises(InputError) as info:
        func(lambda X: X[:, 0], data, **out)
    assert str(info.value) == (
        f"data: got {type(data).__name__}; expected a CSV or Parquet file path or a pandas "
        "DataFrame"
    )


def test_an_unknown_keyword_is_an_input_error_naming_the_right_one(diabetes) -> None:
    model = lambda X: X[:, 0]  # noqa: E731
    with pytest.raises(
        InputError, match=r"^interact\(\) has no keyword 'pair'; did you mean 'pairs'\?$"
    ):
        api.interact(model, diabetes, exclude="target", pair=["bmi,bp"])
    with pytest.raises(
        InputError, match=r"^classic\(\) has no keyword 'bin'; did you mean 'bins'\?$"
    ):
        api.classic(model, diabetes, exclude="target", bin=3)
    with pytest.raises(
        InputError, match=r"^classic\(\) has no keyword 'zzz'; it takes batch_size, "
    ):
        api.classic(model, diabetes, exclude="target", zzz=3)


def test_unfitted_estimator_and_wrong_options(diabetes) -> None:
    from sklearn.linear_model import LinearRegression

    with pytest.raises(ModelError, match=r"^model is a LinearRegression that is not fitted"):
        api.classic(LinearRegression(), diabetes, exclude="target")
    with pytest.raises(ModelError, match=r"^method autodiff needs a gradient"):
        api.classic(lambda X: X[:, 0], diabetes, exclude="target", method="autodiff")
    with pytest.raises(InputError, match="^predict must be callable, got int"):
        api.Predictor(3)


def test_a_module_object_does_not_go_to_dask(diabetes, tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    import pickle

    from ale_cli.models import Columns, LoadOptions
    from ale_cli.passes.shipped import ShippedModel

    given = model_object(lambda X: X[:, 0])
    handle = ShippedModel.of(
        given,
        model_format="callable",
        options=LoadOptions(),
        columns=Columns(names=("a",)),
        head=np.zeros((1, 1)),
    )
    with pytest.raises(InputError, match=r"^engine dask ships the model file .* <callable"):
        pickle.dumps(handle)


def test_content_hashes() -> None:
    from sklearn.linear_model import LinearRegression

    x = np.arange(12.0).reshape(6, 2)
    a = LinearRegression().fit(x, x[:, 0])
    b = LinearRegression().fit(x, x[:, 1])
    assert model_object(a).sha256 == model_object(a).sha256
    assert model_object(a).sha256 != model_object(b).sha256
    assert model_object(np.sum).sha256 is None


def test_interact_takes_a_module_object_as_its_file(diabetes, mlp_model: Path) -> None:
    from ale_cli.sample import train_diabetes_mlp

    module = train_diabetes_mlp()
    opts = {"exclude": "target", "pairs": [("bmi", "bp")], "bins": 4}
    a = api.interact(module, diabetes, **opts)
    b = api.interact(mlp_model, diabetes, **opts)
    assert a.estimator == b.estimator
    np.testing.assert_allclose(
        a.interactions[0].effect, b.interactions[0].effect, rtol=0, atol=1e-12
    )
