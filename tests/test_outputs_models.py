"""Every output at once for ONNX graphs, native boosters and callables: one compute
whose records equal the single-output runs to 1e-12 (compute + rhale, and classic)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_outputs import same_records  # tests/ is on sys.path (rootdir conftest)

from ale_cli import api
from ale_cli.errors import InputError
from ale_cli.store.npz import read_store

RNG = np.random.default_rng(3)
X = RNG.normal(size=(5000, 3))  # secants need >= 20 rows per fine bin (240 bins)
Y = (X[:, 0] + 0.7 * X[:, 1] > 0).astype(int) + (X[:, 0] - X[:, 2] > 0.8)  # 3 classes
FRAME = pd.DataFrame(X, columns=["a", "b", "c"])


def _skl2onnx(estimator, path: Path) -> Path:  # type: ignore[no-untyped-def]
    skl2onnx = pytest.importorskip("skl2onnx")
    options = {id(estimator): {"zipmap": False}}
    proto = skl2onnx.to_onnx(
        estimator.fit(X[:500], Y[:500]), X[:1].astype(np.float32), options=options
    )
    path.write_bytes(proto.SerializeToString())
    return path


def _mlp_classifier(root: Path) -> Path:
    """ArgMax and ArrayFeatureExtractor: finite differences through onnxruntime."""
    from sklearn.neural_network import MLPClassifier

    mlp = MLPClassifier(hidden_layer_sizes=(6,), max_iter=50, random_state=0)
    with pytest.warns(Warning):  # not converged in 50 iterations: no matter here
        return _skl2onnx(mlp, root / "mlp.onnx")


def _tree_classifier(root: Path) -> Path:
    """A TreeEnsembleClassifier: piecewise constant, secants."""
    from sklearn.ensemble import GradientBoostingClassifier

    return _skl2onnx(GradientBoostingClassifier(n_estimators=5, max_depth=2), root / "gb.onnx")


def _torch_net(root: Path) -> Path:
    """A float32 net of 2 outputs from torch.onnx: autodiff through the torch translation."""
    torch = pytest.importorskip("torch")
    from ale_cli.sample import save_onnx

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    return save_onnx(net, 3, root / "net.onnx")


def _check(model, spec: str, singles: list[str], tmp_path: Path, names: list[str]):  # type: ignore[no-untyped-def]
    """compute + rhale and classic of ``spec`` at once equal each of ``singles`` alone."""
    api.compute(model, FRAME, out=tmp_path / "all.npz", output=spec)
    many = api.rhale(tmp_path / "all.npz")
    assert [o["name"] for o in many.store["outputs"]] == names
    assert {f.status for f in many.features} == {"ok"}, many.features[0].reason
    both = api.classic(model, FRAME, output=spec, bins=5)
    for single, name in zip(singles, names, strict=True):
        api.compute(model, FRAME, out=tmp_path / "one.npz", output=single)
        same_records(many, api.rhale(tmp_path / "one.npz"), name)
        same_records(both, api.classic(model, FRAME, output=single, bins=5), name)
    return many


@pytest.mark.parametrize(
    ("build", "spec", "singles", "names", "method", "classes"),
    [
        (_mlp_classifier, "all", ["proba:0", "proba:1", "proba:2"], None, "finite-differences",
         [None] * 3),  # the graph has no classifier op that names its classes
        (_tree_classifier, "proba:0,proba:2", ["proba:0", "proba:2"], None, "secant", ["0", "2"]),
        (_torch_net, "all", ["0", "1"], ["y:0", "y:1"], "autodiff", [None] * 2),
    ],
)  # fmt: skip
def test_onnx_outputs_at_once(build, spec, singles, names, method, classes, tmp_path) -> None:  # type: ignore[no-untyped-def]
    many = _check(build(tmp_path), spec, singles, tmp_path, names or singles)
    assert many.store["method"] == method
    assert [o["class"] for o in many.store["outputs"]] == classes


def _xgboost(path: Path) -> None:
    xgb = pytest.importorskip("xgboost")
    params = {"objective": "multi:softprob", "num_class": 3, "max_depth": 2, "nthread": 1}
    xgb.train(params, xgb.DMatrix(X, Y), 6).save_model(path)


def _lightgbm(path: Path) -> None:
    lgb = pytest.importorskip("lightgbm")
    params = {"objective": "multiclass", "num_class": 3, "num_leaves": 4, "verbose": -1,
              "num_threads": 1, "min_data_in_leaf": 5}  # fmt: skip
    lgb.train(params, lgb.Dataset(X, Y), 6).save_model(path)


def _catboost(path: Path) -> None:
    cb = pytest.importorskip("catboost")
    model = cb.CatBoostClassifier(
        iterations=6,
        depth=2,
        loss_function="MultiClass",
        verbose=False,
        thread_count=1,
        allow_writing_files=False,
    )
    model.fit(X, Y).save_model(str(path))


@pytest.mark.parametrize(("build", "name"), [(_xgboost, "m.json"), (_lightgbm, "m.txt"),
                                             (_catboost, "m.cbm")])  # fmt: skip
def test_booster_classes_at_once(build, name, tmp_path) -> None:  # type: ignore[no-untyped-def]
    build(tmp_path / name)
    many = _check(tmp_path / name, "all", ["0", "1", "2"], tmp_path, ["0", "1", "2"])
    assert many.store["method"] == "secant"
    whole = read_store(tmp_path / "all.npz")
    p0, p1 = (whole.select_output(k).prediction for k in (0, 1))
    assert np.abs(p0 - p1).max() > 0.1  # distinct classes, not one output thrice


W = RNG.normal(size=(3, 3))


def test_callable_outputs_at_once(tmp_path) -> None:  # type: ignore[no-untyped-def]
    def f(Z: np.ndarray) -> np.ndarray:
        return np.tanh(np.asarray(Z) @ W)

    _check(f, "0,2", ["0", "2"], tmp_path, ["0", "2"])
    many = _check(f, "all", ["0", "1", "2"], tmp_path, ["0", "1", "2"])
    assert many.store["method"] == "finite-differences"


@pytest.mark.parametrize(
    ("model", "spec", "message"),
    [
        (lambda Z: np.asarray(Z)[:, 0], "all", "output all: model '.*' has one output"),
        (lambda Z: np.asarray(Z)[:, :2], "0,5", "output 5 is out of range: .* columns 0..1"),
        (lambda Z: np.asarray(Z), "0,b", "expected a column INDEX .*, a list of them"),
        (lambda Z: np.asarray(Z)[:, 0], "0,1", r"shape \(8,\) .* expected \(N, k\) to pick"),
        (lambda Z: np.asarray(Z)[:, :2], "1,1", "^output 1,1 names column 1 twice; list each"),
    ],
)
def test_callable_output_lists_refused(model, spec, message, tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match=message):
        api.compute(model, FRAME, output=spec, out=tmp_path / "x.npz")
    assert not (tmp_path / "x.npz").exists()


def test_an_index_beyond_one_output_per_row_is_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A booster regressor or a callable of one value per row has column 0 only."""
    xgb = pytest.importorskip("xgboost")
    booster = xgb.train({"max_depth": 2, "nthread": 1}, xgb.DMatrix(X, X[:, 0]), 3)
    booster.save_model(tmp_path / "r.json")
    for model in (tmp_path / "r.json", lambda Z: np.asarray(Z)[:, 0]):
        with pytest.raises(InputError, match=r"^output 7 is out of range: model .* columns 0..0$"):
            api.compute(model, FRAME, output="7", out=tmp_path / "x.npz")
        assert not (tmp_path / "x.npz").exists()
    twice = api.classic(lambda Z: 2.0 * np.asarray(Z)[:, 0], FRAME, output="0", bins=4)
    np.testing.assert_allclose(twice.features[0].bin_effect, 2.0, rtol=1e-9)  # column 0: it


def test_a_callables_gradient_is_of_one_output(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from ale_cli.models import Predictor

    both = Predictor(lambda Z: np.asarray(Z)[:, :2], gradient=lambda Z: np.ones_like(Z))
    with pytest.raises(InputError, match="the gradient given with model .* is of one output"):
        api.compute(both, FRAME, output="all", out=tmp_path / "x.npz")


def test_onnx_output_lists_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    net = _torch_net(tmp_path)
    with pytest.raises(InputError, match=r"output 0,3 is out of range: .* columns 0..1"):
        api.compute(net, FRAME, output="0,3", out=tmp_path / "x.npz")
    with pytest.raises(InputError, match="^output 1,1 names column y:1 twice; list each"):
        api.classic(net, FRAME, output="1,1")
    gb = _tree_classifier(tmp_path)
    with pytest.raises(InputError, match="a list names columns of one output"):
        api.compute(gb, FRAME, output="proba:0,probabilities", out=tmp_path / "x.npz")
