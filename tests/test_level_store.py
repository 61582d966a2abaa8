"""Per-level features on the gradient route: ``ale compute`` stores each row's jumps to
the adjacent levels, ``rebin``/``rhale`` report them per level with no model call."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest

from ale_cli.errors import InputError
from ale_cli.store.npz import Store, open_store, read_store, write_store
from ale_cli.summary.model import SCHEMA_PATH, FeatureSummary, read_summary

SCHEMA = json.loads(SCHEMA_PATH.read_text())
LEVEL_FIELDS = ("counts", "effect", "std", "stderr", "bin_effect", "bin_std", "edges", "order")


def _run(cli, *args: object) -> None:  # type: ignore[no-untyped-def]
    result = cli(*args)
    assert result.exit_code == 0, result.output


def _feature(path: Path, name: str) -> FeatureSummary:
    jsonschema.validate(json.loads(path.read_text()), SCHEMA)
    return read_summary(path).feature(name)


def _same_levels(got: FeatureSummary, want: FeatureSummary, atol: float) -> None:
    assert got.kind == want.kind and got.levels == want.levels
    for field in LEVEL_FIELDS:
        np.testing.assert_allclose(
            np.asarray(getattr(got, field), dtype=float),
            np.asarray(getattr(want, field), dtype=float),
            rtol=0,
            atol=atol,
            err_msg=field,
        )


def _pyale(df: pd.DataFrame, predict, feature: str) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    from PyALE import ale

    class Wrapped:
        def predict(self, frame: pd.DataFrame) -> np.ndarray:
            return predict(frame)

    return ale(
        X=df, model=Wrapped(), feature=[feature], feature_type="discrete", include_CI=False,
        plot=False,
    )  # fmt: skip


def test_sex_on_the_sample_mlp_from_the_store_equals_classic_and_pyale(
    cli, sample_dir: Path, mlp_model: Path, tmp_path: Path
) -> None:
    """TorchScript MLP (float64): ``--discrete sex`` streams compute (the levels found by
    a pass before; the store in 5 chunks of 100 rows); rebin and rhale read the store
    chunk by chunk (merged jump statistics) and, with --bootstrap, whole; every route
    equals classic (bit for bit on the whole store, 1e-12 chunk by chunk) and PyALE."""
    from ale_cli.models import load_model
    from ale_cli.models.base import Columns, LoadOptions

    data = sample_dir / "diabetes.csv"
    store = tmp_path / "s.npz"
    common = ("--exclude", "target", "--discrete", "sex")
    _run(cli, "compute", mlp_model, data, *common, "-o", store, "--chunk-rows", 100, "-q")
    meta = open_store(store).meta
    assert meta["chunks"]["rows"] == [100, 100, 100, 100, 42]
    assert [lv["feature"] for lv in meta["levels"]] == ["sex"]
    assert meta["levels"][0]["values"] == [1.0, 2.0]
    any_notes = " ".join(meta["notes"])
    assert "stored the jumps to the adjacent levels of sex (2 levels)" in any_notes

    classic = tmp_path / "c.json"
    _run(cli, "classic", mlp_model, data, *common, "--features", "sex,bmi", "-o", classic, "-q")
    want = _feature(classic, "sex")
    for command in ("rebin", "rhale"):
        out = tmp_path / f"{command}.json"
        _run(cli, command, store, "-o", out, "-q")
        _same_levels(_feature(out, "sex"), want, atol=1e-12)
        assert _feature(out, "bmi").kind is None  # a numeric feature stays a curve

    boot = ("--bootstrap", 50, "--seed", 3)
    _run(cli, "classic", mlp_model, data, *common, "--features", "sex", *boot, "-o", classic, "-q")
    want = _feature(classic, "sex")
    out = tmp_path / "boot.json"
    _run(cli, "rebin", store, "--features", "sex", *boot, "-o", out, "-q")
    got = _feature(out, "sex")
    _same_levels(got, want, atol=0)  # the whole store: the same arrays, the same numbers
    np.testing.assert_array_equal(got.ci_low, want.ci_low)
    np.testing.assert_array_equal(got.ci_high, want.ci_high)

    df = pd.read_csv(data).drop(columns="target")
    model = load_model(
        mlp_model, options=LoadOptions(), columns=Columns(names=tuple(df.columns)),
        X=df.to_numpy(dtype=float),
    )  # fmt: skip
    ref = _pyale(df, lambda frame: model.predict(frame.to_numpy(dtype=float)), "sex")
    np.testing.assert_array_equal(got.counts, ref["size"].to_numpy())
    np.testing.assert_allclose(got.effect, ref["eff"].to_numpy(), rtol=0, atol=1e-10)


def _skops(est: object, path: Path) -> list[str]:
    """Save ``est`` as .skops; the --trust arguments it needs."""
    import skops.io as sio

    sio.dump(est, path)
    return [a for t in sio.get_untrusted_types(file=path) for a in ("--trust", t)]


@pytest.mark.parametrize("kind", ["gbr", "hgb"])
def test_diabetes_sex_of_tree_models_from_the_store(
    cli, sample_dir: Path, tmp_path: Path, kind: str
) -> None:
    """GradientBoosting (fitted here) and the sample HistGradientBoosting model: the
    finite-difference step never crosses sex's two values, but the stored jumps do, so
    rebin and rhale give classic's per-level effect (and PyALE's, to 1e-10)."""
    import skops.io as sio
    from sklearn.ensemble import GradientBoostingRegressor

    data = sample_dir / "diabetes.csv"
    frame = pd.read_csv(data)
    df = frame.drop(columns="target")
    if kind == "gbr":
        model = tmp_path / "gbr.skops"
        est = GradientBoostingRegressor(n_estimators=60, max_depth=3, random_state=0)
        trust = _skops(est.fit(df, frame.target), model)
    else:
        model = sample_dir / "models" / "diabetes_hgb.skops"
        untrusted = sio.get_untrusted_types(file=model)
        trust = [a for t in untrusted for a in ("--trust", t)]
        est = sio.load(model, trusted=untrusted)
    common = ("--exclude", "target", "--discrete", "sex", *trust)
    store = tmp_path / "s.npz"
    _run(cli, "compute", model, data, *common, "-o", store, "-q")
    classic = tmp_path / "c.json"
    _run(cli, "classic", model, data, *common, "--features", "sex", "-o", classic, "-q")
    want = _feature(classic, "sex")
    assert abs(want.effect[1] - want.effect[0]) > 1.0  # sex matters to the model
    for command in ("rebin", "rhale"):
        out = tmp_path / f"{command}.json"
        _run(cli, command, store, "--features", "sex,bmi", "-o", out, "-q")
        got = _feature(out, "sex")
        _same_levels(got, want, atol=1e-12)
    ref = _pyale(df, lambda f: est.predict(f), "sex")
    np.testing.assert_allclose(got.effect, ref["eff"].to_numpy(), rtol=0, atol=1e-10)


def test_text_column_of_a_one_hot_pipeline_from_the_store(cli, sample_dir, tmp_path) -> None:
    """The sample credit pipeline (.skops, OneHotEncoder inside): the text column 'region'
    gets its jumps stored without --discrete; the order is computed at compute time and
    stored; rebin's per-level record equals classic's."""
    import skops.io as sio

    model = sample_dir / "models" / "credit_logreg.skops"
    data = sample_dir / "credit.csv"
    untrusted = sio.get_untrusted_types(file=model)
    common = (
        "--exclude", "approved", "--output", "proba:1",
        *(a for t in untrusted for a in ("--trust", t)),
    )  # fmt: skip
    store = tmp_path / "s.npz"
    _run(cli, "compute", model, data, *common, "-o", store, "-q")
    classic = tmp_path / "c.json"
    _run(cli, "classic", model, data, *common, "--features", "region", "-o", classic, "-q")
    want = _feature(classic, "region")
    (record,) = open_store(store).meta["levels"]
    assert record["kind"] == "categorical"
    assert [record["labels"][int(record["values"][i])] for i in record["order"]] == list(
        want.levels
    )
    out = tmp_path / "r.json"
    _run(cli, "rebin", store, "-o", out, "-q")
    _same_levels(_feature(out, "region"), want, atol=1e-12)


def test_known_level_effects_are_recovered_from_the_store(cli, tmp_path: Path) -> None:
    """f = L[c] (1 + z/2) + x, fitted exactly by a one-hot + interactions + linear
    regression pipeline saved as .skops, c a text column: each level's effect from the
    store is L minus its count-weighted mean within 2 SE (the jumps vary with z)."""
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, PolynomialFeatures

    rng = np.random.default_rng(4)
    n = 3000
    names = np.array(["red", "green", "blue", "grey"])
    L = np.array([0.0, 2.0, -1.0, 5.0])
    c = rng.integers(0, 4, n)
    df = pd.DataFrame({"c": names[c], "x": rng.normal(size=n), "z": rng.normal(size=n)})
    y = L[c] * (1 + df.z / 2) + df.x
    pipe = make_pipeline(
        ColumnTransformer(
            [("onehot", OneHotEncoder(), ["c"])], remainder="passthrough", sparse_threshold=0
        ),
        PolynomialFeatures(degree=2, interaction_only=True, include_bias=False),
        LinearRegression(),
    ).fit(df, y)
    np.testing.assert_allclose(pipe.predict(df), y, atol=1e-8)  # the model is f
    model = tmp_path / "m.skops"
    trust = _skops(pipe, model)
    data = tmp_path / "d.csv"
    df.to_csv(data, index=False)
    store = tmp_path / "s.npz"
    _run(cli, "compute", model, data, *trust, "-o", store, "-q")
    out = tmp_path / "r.json"
    _run(cli, "rebin", store, "-o", out, "-q")
    feat = _feature(out, "c")
    assert feat.kind == "categorical"
    idx = np.array([list(names).index(v) for v in feat.levels])
    counts = np.bincount(c, minlength=4)[idx]
    np.testing.assert_array_equal(feat.counts, counts)
    truth = L[idx] - np.dot(counts, L[idx]) / n
    se = np.maximum(feat.stderr, feat.stderr.max())  # the first level's error: centering
    assert np.all(np.abs(feat.effect - truth) <= 2 * se), (feat.effect, truth, se)
    assert np.all(feat.stderr[1:] > 0)


def test_a_store_without_jumps_keeps_its_curves(cli, sample_dir, mlp_model, tmp_path) -> None:
    """--discrete none: sex, binary, is a gradient curve and the store has no level arrays."""
    store = tmp_path / "s.npz"
    data = sample_dir / "diabetes.csv"
    _run(cli, "compute", mlp_model, data, "--exclude", "target", "--discrete", "none", "-o",
         store, "-q")  # fmt: skip
    loaded = read_store(store)
    assert loaded.meta["levels"] == [] and "level_up" not in loaded.extra
    out = tmp_path / "r.json"
    _run(cli, "rebin", store, "--features", "sex", "--bins", 4, "-o", out, "-q")
    assert _feature(out, "sex").kind is None


def _level_store(**change: object) -> Store:
    """A small store with one feature 's' (levels 0, 1, 2) and its jumps."""
    rng = np.random.default_rng(0)
    n = 30
    s = rng.integers(0, 3, n).astype(float)
    X = np.column_stack([s, rng.normal(size=n)])
    up = np.where(s < 2, 1.0, 0.0)
    down = np.where(s > 0, 1.0, 0.0)
    levels = [
        {"feature": "s", "kind": "discrete", "values": [0.0, 1.0, 2.0], "order": [0, 1, 2],
         "labels": None},
    ]  # fmt: skip
    meta = {"levels": levels, **change.pop("meta", {})}  # type: ignore[dict-item]
    extra = {"level_up": up[:, None], "level_down": down[:, None]}
    extra = {**extra, **change.pop("extra", {})}  # type: ignore[dict-item]
    return Store(
        X=X,
        local_effects=np.zeros((n, 2)),
        prediction=np.zeros(n),
        feature_names=("s", "x"),
        meta=meta,
        extra={k: v for k, v in extra.items() if v is not None},
    )


def test_stored_jumps_give_the_known_effect_on_both_store_layouts(tmp_path: Path) -> None:
    """Every jump is 1: the effect at levels 0, 1, 2 is 0, 1, 2 minus its mean; a
    schema-2 store (whole arrays) read whole and chunk by chunk says the same."""
    from ale_cli.estimators.dale import RebinRequest, rebin

    store = _level_store()
    path = tmp_path / "s.npz"
    write_store(path, store)
    counts = np.bincount(store.X[:, 0].astype(int), minlength=3)
    expected = np.arange(3.0) - np.dot(counts, np.arange(3.0)) / counts.sum()
    for source in (store, path, read_store(path)):
        feat = rebin(RebinRequest(store=source)).summary.feature("s")
        assert feat.kind == "discrete" and feat.levels == (0.0, 1.0, 2.0)
        np.testing.assert_allclose(feat.effect, expected, rtol=0, atol=1e-14)
        np.testing.assert_array_equal(feat.counts, counts)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"extra": {"level_down": None}}, "arrays 'level_up' and 'level_down' come with"),
        ({"meta": {"levels": []}}, "must hold floats of shape (30, 0)"),
        (
            {"extra": {"level_up": np.zeros((30, 2))}},
            "array 'level_up' must hold floats of shape (30, 1)",
        ),
        (
            {
                "meta": {
                    "levels": [
                        {
                            "feature": "s",
                            "kind": "discrete",
                            "values": [2.0, 1.0],
                            "order": [0, 1],
                            "labels": None,
                        }
                    ]
                }
            },  # fmt: skip
            "the levels of feature 's': its values are not strictly increasing",
        ),
        (
            {
                "meta": {
                    "levels": [
                        {
                            "feature": "s",
                            "kind": "discrete",
                            "values": [0.0, 1.0],
                            "order": [0, 0],
                            "labels": None,
                        }
                    ]
                }
            },  # fmt: skip
            "its order is not an ordering of its 2 levels",
        ),
    ],
)
def test_damaged_level_arrays_are_refused(tmp_path: Path, change: dict, message: str) -> None:
    path = tmp_path / "s.npz"
    write_store(path, _level_store(**change))
    with pytest.raises(InputError, match=f"store '{path}'.*" + __import__("re").escape(message)):
        read_store(path)


def test_a_level_value_missing_from_the_stored_levels_is_refused(tmp_path: Path) -> None:
    from ale_cli.estimators.dale import RebinRequest, rebin

    store = _level_store()
    store.X[0, 0] = 7.0
    path = tmp_path / "s.npz"
    write_store(path, store)
    with pytest.raises(InputError, match="feature 's': value 7 is not one of its levels"):
        rebin(RebinRequest(store=path))


def test_nan_jumps_are_refused_or_dropped_naming_them(cli, tmp_path: Path) -> None:
    """log(a + 1.5 - s) is finite (with a finite gradient) at every row, but rows at s = 1
    with a < 0.5 moved up to s = 2 give log of a negative number: compute refuses naming
    the jumps, or with --drop-nonfinite drops exactly those rows from the store."""
    import torch
    from torch import nn

    class LogGap(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.log(x[:, 0] + 1.5 - x[:, 1])

    rng = np.random.default_rng(2)
    s = rng.integers(1, 3, 200).astype(float)
    a = np.where(s == 2, rng.uniform(0.6, 1.0, 200), rng.uniform(0.0, 1.0, 200))
    data = tmp_path / "d.csv"
    pd.DataFrame({"a": a, "s": s}).to_csv(data, index=False)
    model = tmp_path / "m.pt"
    torch.jit.script(LogGap().double().eval()).save(str(model))
    store = tmp_path / "s.npz"
    result = cli("compute", model, data, "--discrete", "s", "-o", store, "-q")
    assert result.exit_code == 1
    assert "gave NaN or infinite jumps to the adjacent levels" in result.stderr
    bad = (s == 1) & (a < 0.5)
    _run(cli, "compute", model, data, "--discrete", "s", "--drop-nonfinite", "-o", store, "-q")
    kept = read_store(store)
    assert kept.n_rows == int((~bad).sum()) and bad.any()
    np.testing.assert_array_equal(kept.X[:, 1], s[~bad])
    assert np.all(np.isfinite(kept.extra["level_up"]))
