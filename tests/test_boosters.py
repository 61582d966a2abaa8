"""Native booster files (XGBoost .json/.ubj, LightGBM .txt, CatBoost .cbm): classic equals
PyALE on its own edges; compute takes the secant route of tree models; a missing extra is
one line naming it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ale_cli import api


def _frame(n: int = 400) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(11)
    df = pd.DataFrame(
        {
            "x1": rng.normal(size=n),
            "x2": rng.uniform(-2, 2, size=n),
            "x3": rng.exponential(size=n),
        }
    )
    y = np.sin(2 * df.x1) + df.x2 * df.x1 + np.log1p(df.x3) + rng.normal(0, 0.1, n)
    return df, y.to_numpy()


class _Predict:
    """What PyALE calls: ``predict`` of a DataFrame, as float64 (XGBoost predicts float32;
    PyALE would then average the differences in float32, ale in float64)."""

    def __init__(self, f):  # type: ignore[no-untyped-def]
        self.f = f

    def predict(self, df: pd.DataFrame) -> np.ndarray:
        return np.asarray(self.f(df.to_numpy(dtype=np.float64)), dtype=np.float64)


@pytest.fixture(scope="module")
def boosters(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, object]]:
    """Each installed library's booster saved natively, and its predict for PyALE."""
    df, y = _frame()
    folder = tmp_path_factory.mktemp("boosters")
    df.to_parquet(folder / "data.parquet", index=False)
    out: dict[str, tuple[Path, object]] = {}
    try:
        import xgboost as xgb
    except ImportError:
        pass
    else:
        booster = xgb.train(
            {"max_depth": 3, "eta": 0.3, "nthread": 1, "seed": 0},
            xgb.DMatrix(df.to_numpy(), label=y),
            num_boost_round=40,
        )
        for ext in ("json", "ubj"):
            booster.save_model(str(folder / f"m.{ext}"))
            out[ext] = (folder / f"m.{ext}", _Predict(lambda X: booster.inplace_predict(X)))
    try:
        import lightgbm as lgb
    except ImportError:
        pass
    else:
        params = {"num_leaves": 8, "verbose": -1, "num_threads": 1, "seed": 0}
        model = lgb.train(params, lgb.Dataset(df.to_numpy(), label=y), num_boost_round=40)
        model.save_model(str(folder / "m.txt"))
        out["txt"] = (folder / "m.txt", _Predict(model.predict))
    try:
        import catboost as cb
    except ImportError:
        pass
    else:
        reg = cb.CatBoostRegressor(
            iterations=40, depth=3, verbose=False, random_seed=0, allow_writing_files=False
        )
        reg.fit(df.to_numpy(), y)
        reg.save_model(str(folder / "m.cbm"))
        out["cbm"] = (folder / "m.cbm", _Predict(reg.predict))
    return out


def _booster(boosters, ext: str):  # type: ignore[no-untyped-def]
    if ext not in boosters:
        pytest.skip(f"the library for .{ext} files is not installed")
    return boosters[ext]


@pytest.mark.parametrize("ext", ["json", "ubj", "txt", "cbm"])
def test_classic_equals_pyale_on_its_own_edges(cli, boosters, ext: str, tmp_path: Path) -> None:
    from PyALE import ale

    path, model = _booster(boosters, ext)
    data = path.parent / "data.parquet"
    df = pd.read_parquet(data)
    names = ["x1", "x2", "x3"]
    ref = {
        n: ale(X=df, model=model, feature=[n], grid_size=10, include_CI=False, plot=False)
        for n in names
    }
    edges = tmp_path / "edges.json"
    edges.write_text(json.dumps({n: ref[n].index.tolist() for n in names}))
    out = tmp_path / "classic.json"
    result = cli("classic", path, data, "--edges", edges, "-o", out)
    assert result.exit_code == 0, result.stderr
    summary = api.read_summary(out)
    for n in names:
        feat = summary.feature(n)
        np.testing.assert_array_equal(feat.counts, ref[n]["size"].to_numpy()[1:])
        np.testing.assert_allclose(feat.effect, ref[n]["eff"].to_numpy(), rtol=0, atol=1e-10)


@pytest.mark.parametrize("ext", ["json", "txt", "cbm"])
def test_compute_takes_the_secant_route(boosters, ext: str, tmp_path: Path) -> None:
    path, _ = _booster(boosters, ext)
    data = tmp_path / "big.parquet"  # secants need about 20 rows per fine bin: 4,800 rows
    _frame(6000)[0].to_parquet(data, index=False)
    store = tmp_path / "s.npz"
    done = api.compute(path, data, out=store)
    assert done.method == "secant"
    fmt = {"json": "xgboost", "txt": "lightgbm", "cbm": "catboost"}[ext]
    assert api.read_store(store).meta["model"]["format"] == fmt
    rhale = api.rhale(store)
    for name in ("x1", "x2", "x3"):
        assert rhale.feature(name).status == "ok"
        assert api.rebin(store, bins=8).feature(name).status == "ok"


def test_a_missing_extra_is_one_line(cli, boosters, tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "m.txt"
    path.write_text("tree\n")
    df, _ = _frame(20)
    data = tmp_path / "d.csv"
    df.to_csv(data, index=False)
    monkeypatch.setitem(sys.modules, "lightgbm", None)  # import lightgbm raises ImportError
    result = cli("classic", path, data, "-o", tmp_path / "c.json")
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: model file '{path}' is a LightGBM model, which needs the lightgbm extra: "
        "pip install 'ale-cli[lightgbm]'\n"
    )


def test_a_booster_of_another_width_is_refused(boosters, tmp_path: Path) -> None:
    from ale_cli.errors import ModelError

    path, _ = _booster(boosters, "json")
    df, _ = _frame(30)
    with pytest.raises(ModelError, match=r"takes 3 features but 2 are selected \(x1, x2\)"):
        api.classic(path, df, exclude="x3")


def _booster_object(path: Path, ext: str):  # type: ignore[no-untyped-def]
    """The booster of ``path`` as a notebook holds it: its library's model object."""
    if ext == "ubj":
        import xgboost as xgb

        return xgb.Booster(model_file=str(path))
    if ext == "txt":
        import lightgbm as lgb

        return lgb.Booster(model_file=str(path))
    import catboost as cb

    return cb.CatBoostRegressor().load_model(str(path))


@pytest.mark.parametrize("ext", ["ubj", "txt", "cbm"])
def test_a_booster_object_is_explained_as_its_file(boosters, ext: str, tmp_path: Path) -> None:
    from ale_cli.models.objects import model_object

    path, _ = _booster(boosters, ext)
    df = pd.read_parquet(path.parent / "data.parquet")
    given = _booster_object(path, ext)
    by_file, by_object = api.classic(path, df), api.classic(given, df)
    for name in ("x1", "x2", "x3"):
        f, o = by_file.feature(name), by_object.feature(name)
        np.testing.assert_array_equal(o.counts, f.counts)
        np.testing.assert_allclose(o.effect, f.effect, rtol=0, atol=1e-12)
    api.compute(path, df, out=tmp_path / "file.npz")
    done = api.compute(given, df, out=tmp_path / "object.npz")
    file_store, object_store = (api.read_store(tmp_path / n) for n in ("file.npz", "object.npz"))
    np.testing.assert_allclose(
        object_store.local_effects, file_store.local_effects, rtol=0, atol=1e-12
    )
    fmt = {"ubj": "xgboost", "txt": "lightgbm", "cbm": "catboost"}[ext]
    record = object_store.meta["model"]
    assert done.method == api.compute(path, df, out=tmp_path / "again.npz").method
    assert record["format"] == fmt and record["path"] is None
    assert record["object"].endswith(type(given).__qualname__)
    # the content hash is of the booster's bytes: the same model loaded again has it too
    assert record["sha256"] == model_object(_booster_object(path, ext)).sha256 is not None
