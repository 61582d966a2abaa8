"""Tree models on the gradient route: secants across a fine grid (ale_cli.estimators.secants).

Known answers: the store's curve on the fine grid is Apley-Zhu's ALE on that grid
(``ale classic`` on the 240 quantile bins, to rounding); coarse quantile grids at K
dividing 240 nest in the fine grid; the width-weighted accumulation recovers a
step function's ALE. The done-when bounds against ``ale classic`` on a 20k-row
synthetic dataset (HistGradientBoosting, GradientBoosting, RandomForest) and on
the diabetes data, where the sparse features are refused.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ale_cli.core.binning import quantile_edges
from ale_cli.core.binstats import CellStats
from ale_cli.core.finegrid import (
    K_FINE,
    fine_curve,
    row_limits,
    secant_effect,
    sparse_reason,
)
from ale_cli.errors import InputError
from ale_cli.summary.model import read_summary

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from bench_secant import models as tree_models  # noqa: E402
from bench_secant import save, synthetic  # noqa: E402

DIVISORS = [k for k in range(1, K_FINE + 1) if K_FINE % k == 0]


@pytest.fixture(autouse=True, scope="module")
def one_thread():  # type: ignore[no-untyped-def]
    """HistGradientBoosting's OpenMP threads on a busy 2-core machine cost 10x: one thread."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        yield


# -- the fine grid ---------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 6000),
    levels=st.integers(2, 400),
    k=st.sampled_from(DIVISORS),
    seed=st.integers(0, 2**31 - 1),
)
def test_quantile_grids_at_divisors_of_240_nest_in_the_fine_grid(
    n: int, levels: int, k: int, seed: int
) -> None:
    """Ties included (few levels): the deduplicated edges stay a subset."""
    x = np.random.default_rng(seed).integers(0, levels, n).astype(np.float64)
    fine = quantile_edges(x, bins=K_FINE)
    assert np.isin(quantile_edges(x, bins=k), fine).all()


def test_quantile_grids_at_other_k_need_not_nest() -> None:
    x = np.arange(1000.0)
    assert not np.isin(quantile_edges(x, bins=7), quantile_edges(x, bins=K_FINE)).all()


def test_rows_on_edges_follow_the_bin_convention() -> None:
    """(g_{j-1}, g_j], g_0 in the first bin: a row on an interior edge is moved across
    the bin below it."""
    lim = row_limits(np.array([0.0, 1.0, 1.0 + 1e-9, 3.0]), np.array([0.0, 1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(lim.index, [0, 0, 1, 2])
    np.testing.assert_array_equal(lim.lower, [0.0, 0.0, 1.0, 2.0])
    np.testing.assert_array_equal(lim.upper, [1.0, 1.0, 2.0, 3.0])


def test_coarse_effect_weights_fine_bins_by_width_not_rows() -> None:
    """A step of height 1 just above x = 0.5 on [0, 2] with 90 % of the rows in [0, 1]:
    the fine slopes are 2 on (0.5, 1], 0 elsewhere. The coarse slope over [0, 2] is
    1 / 2 whatever the rows; a count-weighted mean of the secants would give 2 x 0.45."""
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(0, 1, 900), rng.uniform(1, 2, 100)])
    g = np.array([0.0, 0.5, 1.0, 2.0])
    lim = row_limits(x, g)
    step = lambda v: (v > 0.5).astype(float)  # noqa: E731
    e = (step(lim.upper) - step(lim.lower)) / (lim.upper - lim.lower)
    curve = fine_curve(g, CellStats.from_values(lim.index, e, n_cells=3))
    coarse = CellStats.from_values(np.zeros(len(x), dtype=int), e, n_cells=1)
    got = secant_effect(np.array([0.0, 2.0]), curve, coarse, center="start")
    np.testing.assert_allclose(got.bin_effect, [0.5])
    np.testing.assert_allclose(got.effect, [0.0, 1.0])
    assert abs(e.mean() - 0.5) > 0.3  # the biased alternative is far off
    # an edge inside a fine bin: linear interpolation of the fine curve
    mid = secant_effect(
        np.array([0.0, 0.75, 2.0]),
        curve,
        CellStats.from_values((x > 0.75).astype(int), e, n_cells=2),
        center="start",
    )
    np.testing.assert_allclose(mid.effect, [0.0, 0.5, 1.0])


def test_sparse_threshold() -> None:
    assert sparse_reason(np.full(240, 20)) is None
    reason = sparse_reason(np.full(240, 19))
    assert reason is not None and reason.endswith("use 'ale classic'")


# -- through the library ------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, tuple[str, ...]]:
    """A gradient-boosting model on 6000 rows (25 rows per fine bin), saved as skops."""
    from sklearn.ensemble import GradientBoostingRegressor

    root = tmp_path_factory.mktemp("secant_small")
    frame, y = synthetic(n=6000, seed=3)
    frame.to_csv(root / "d.csv", index=False)
    est = GradientBoostingRegressor(n_estimators=30, max_depth=3, random_state=0)
    est.fit(frame.to_numpy(), y)
    trust = save(est, root / "gbr.skops")
    return root / "gbr.skops", root / "d.csv", trust


@pytest.fixture(scope="module")
def small_store(small_tree, tmp_path_factory: pytest.TempPathFactory) -> Path:  # type: ignore[no-untyped-def]
    from ale_cli import api

    model, data, trust = small_tree
    out = tmp_path_factory.mktemp("secant_store") / "s.npz"
    result = api.compute(model, data, out=out, trust=trust)
    assert result.method == "secant"
    return out


def test_store_on_the_fine_grid_equals_classic_on_it(small_tree, small_store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Known answer: on the 240 quantile bins the store's curve is classic ALE exactly."""
    from ale_cli import api
    from ale_cli.summary.model import write_summary

    model, data, trust = small_tree
    fine = api.rebin(small_store, bins=240, binning="quantile")
    write_summary(tmp_path / "edges.json", fine)
    classic = api.classic(model, data, edges=tmp_path / "edges.json", trust=trust)
    for name in ("x1", "x2", "x3"):
        got, want = fine.feature(name), classic.feature(name)
        assert got.n_bins == 240
        np.testing.assert_allclose(got.effect, want.effect, rtol=0, atol=1e-9)
        np.testing.assert_array_equal(got.counts, want.counts)


def test_store_meta_summary_notes_and_method(small_store) -> None:  # type: ignore[no-untyped-def]
    from ale_cli import api
    from ale_cli.store.npz import FINE_EDGES, FINE_OFFSETS, read_store

    store = read_store(small_store)
    assert store.meta["method"] == "secant"
    assert store.meta["secant"]["k_fine"] == 240
    assert "secants" in store.meta["notes"][-1]
    offsets = store.extra[FINE_OFFSETS]
    np.testing.assert_array_equal(np.diff(offsets), [241, 241, 241])
    x1 = store.X[:, store.input_index("x1")]
    np.testing.assert_array_equal(
        store.extra[FINE_EDGES][: offsets[1]], quantile_edges(x1, bins=K_FINE)
    )
    summary = api.rebin(small_store, bins=10, binning="uniform")
    assert summary.notes and "fine grid of 240" in summary.notes[0]
    feat = summary.feature("x1")
    assert feat.method == "secant"
    assert feat.note is not None and "interpolated linearly" in feat.note
    quantile = api.rebin(small_store, bins=20, binning="quantile").feature("x1")
    assert quantile.note is not None and "interpolated" not in quantile.note
    rh = api.rhale(small_store).feature("x2")
    assert rh.method == "secant" and rh.note is not None and "fine edges" in rh.note


def test_summary_round_trips_through_the_schema(small_store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from ale_cli import api
    from ale_cli.summary.model import write_summary

    summary = api.rhale(small_store)
    write_summary(tmp_path / "s.json", summary)  # validated on read
    back = read_summary(tmp_path / "s.json")
    assert back.notes == summary.notes
    assert [f.method for f in back.features] == ["secant"] * 3
    raw = json.loads((tmp_path / "s.json").read_text())
    assert raw["notes"] == list(summary.notes)


def test_edges_without_rows_make_a_feature_not_estimable(small_store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from ale_cli import api

    (tmp_path / "edges.json").write_text(json.dumps({"x1": [1e6, 1.5e6, 2e6]}))
    feat = api.rebin(small_store, edges=tmp_path / "edges.json").feature("x1")
    assert feat.status == "not_estimable" and feat.n_outside == 6000
    assert feat.reason == "no rows inside the given edges [1e+06, 2e+06]"


def test_store_without_its_fine_grid_is_refused(small_store, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import zipfile

    from ale_cli.store.npz import read_store

    bad = tmp_path / "bad.npz"
    with zipfile.ZipFile(small_store) as src, zipfile.ZipFile(bad, "w") as dst:
        for info in src.infolist():
            if info.filename != "fine_offsets.npy":
                dst.writestr(info, src.read(info))
    with pytest.raises(InputError, match="needs the arrays 'fine_edges' and 'fine_offsets'"):
        read_store(bad)


def test_bootstrap_bands_on_secants(small_store) -> None:  # type: ignore[no-untyped-def]
    from ale_cli import api

    a = api.rebin(small_store, bins=20, binning="quantile", bootstrap=50, seed=4)
    b = api.rebin(small_store, bins=20, binning="quantile", bootstrap=50, seed=4)
    for name in ("x1", "x2"):
        fa, fb = a.feature(name), b.feature(name)
        assert fa.ci_low is not None and fa.ci_high is not None
        np.testing.assert_array_equal(fa.ci_low, fb.ci_low)
        assert np.all(fa.ci_low <= fa.ci_high)
        assert np.mean((fa.ci_low <= fa.effect) & (fa.effect <= fa.ci_high)) >= 0.9
        assert np.all(fa.ci_high - fa.ci_low > 0)
    rh = api.rhale(small_store, bootstrap=20, seed=1).feature("x1")
    assert rh.ci_low is not None and rh.ci_low.shape == rh.effect.shape


def test_figure_says_the_local_effects_are_secants(small_store) -> None:  # type: ignore[no-untyped-def]
    from ale_cli import api
    from ale_cli.plot.first_order import feature_figure, overview_figure

    summary = api.rebin(small_store, bins=20, binning="quantile")
    fig = feature_figure(summary, "x1")
    texts = [t for ax in fig.axes for t in ax.texts if t.get_gid() == "method_note"]
    assert len(texts) == 1 and "secants on a fine grid of 240" in texts[0].get_text()
    assert "secants" in overview_figure(summary).get_suptitle()


# -- the done-when bounds (CLI) -----------------------------------------------------------


def _gap(store_feat, classic_feat) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """Median and worst |store - classic| over the edges, as a share of classic's range."""
    np.testing.assert_array_equal(store_feat.edges, classic_feat.edges)
    diff = np.abs(store_feat.effect - classic_feat.effect) / np.ptp(classic_feat.effect)
    return float(np.median(diff)), float(np.max(diff))


def _trust_args(trust: tuple[str, ...]) -> list[str]:
    return ["--trust", ",".join(trust)] if trust else []


@pytest.fixture(scope="module")
def fitted_trees(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, tuple]]:
    """The 20k-row synthetic data and the three tree models (small fits, n_jobs=1)."""

    root = tmp_path_factory.mktemp("secant_trees")
    frame, y = synthetic()
    frame.to_csv(root / "synthetic.csv", index=False)
    fitted = {}
    for name, est in tree_models().items():
        est.fit(frame.to_numpy(), y)
        fitted[name] = (root / f"{name}.skops", save(est, root / f"{name}.skops"))
    return root / "synthetic.csv", fitted


def _store_vs_classic(cli, model: Path, data: Path, trust, tmp: Path, *extra: str):  # type: ignore[no-untyped-def]
    """(rebin, classic on its edges, rhale, classic on the RHALE edges) through the CLI."""
    store = tmp / f"{model.stem}.npz"
    args = [*extra, *_trust_args(trust)]
    out = {}
    assert cli("compute", model, data, *args, "-q", "-o", store).exit_code == 0
    for key, cmd in (
        ("rebin", ["rebin", store, "--bins", "20", "--binning", "quantile"]),
        ("rhale", ["rhale", store]),
    ):
        result = cli(*cmd, "-o", tmp / f"{model.stem}-{key}.json")
        assert result.exit_code == 0, result.output
        out[key] = read_summary(tmp / f"{model.stem}-{key}.json")
        edges = {f.name: f.edges.tolist() for f in out[key].features if f.status == "ok"}
        (tmp / f"{model.stem}-{key}-edges.json").write_text(json.dumps(edges))
        classic = tmp / f"{model.stem}-{key}-classic.json"
        result = cli(
            "classic", model, data, *args, "--edges", tmp / f"{model.stem}-{key}-edges.json",
            "-q", "-o", classic,
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        out[f"classic_{key}"] = read_summary(classic)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", ["hgb", "gbr", "rf"])
def test_trees_on_20k_rows_agree_with_classic(fitted_trees, name, cli, tmp_path) -> None:  # type: ignore[no-untyped-def]
    data, fitted = fitted_trees
    model, trust = fitted[name]
    out = _store_vs_classic(cli, model, data, trust, tmp_path)
    assert out["rebin"].notes and "secants" in out["rebin"].notes[0]
    for key in ("rebin", "rhale"):
        for feat in out[key].features:
            assert feat.status == "ok" and feat.method == "secant"
            median, worst = _gap(feat, out[f"classic_{key}"].feature(feat.name))
            assert median <= 0.05 and worst <= 0.15, (key, feat.name, median, worst)


def _native_booster(name: str, frame, y, path: Path) -> Path:  # type: ignore[no-untyped-def]
    """An XGBoost, LightGBM or CatBoost booster of about the scikit-learn trees' size,
    saved natively."""
    if name == "xgboost":
        xgb = pytest.importorskip("xgboost")
        params = {"max_depth": 3, "eta": 0.2, "nthread": 1, "seed": 0}
        booster = xgb.train(params, xgb.DMatrix(frame.to_numpy(), label=y), num_boost_round=60)
    elif name == "lightgbm":
        lgb = pytest.importorskip("lightgbm")
        params = {"num_leaves": 8, "verbose": -1, "num_threads": 1, "seed": 0}
        booster = lgb.train(params, lgb.Dataset(frame.to_numpy(), label=y), num_boost_round=60)
    else:
        cb = pytest.importorskip("catboost")
        booster = cb.CatBoostRegressor(
            iterations=60,
            depth=3,
            verbose=False,
            random_seed=0,
            thread_count=1,
            allow_writing_files=False,
        ).fit(frame.to_numpy(), y)
    booster.save_model(str(path))
    return path


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "ext"), [("xgboost", "json"), ("lightgbm", "txt"), ("catboost", "cbm")]
)
def test_native_boosters_on_20k_rows_agree_with_classic(name, ext, cli, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The gradient route on an XGBoost, LightGBM or CatBoost file meets the scikit-learn trees'
    bounds: secants as their method, median gap <= 5 % and worst <= 15 % of classic's range."""
    frame, y = synthetic()
    frame.to_csv(tmp_path / "synthetic.csv", index=False)
    model = _native_booster(name, frame, y, tmp_path / f"{name}.{ext}")
    out = _store_vs_classic(cli, model, tmp_path / "synthetic.csv", (), tmp_path)
    for key in ("rebin", "rhale"):
        for feat in out[key].features:
            assert feat.status == "ok" and feat.method == "secant"
            median, worst = _gap(feat, out[f"classic_{key}"].feature(feat.name))
            assert median <= 0.05 and worst <= 0.15, (key, feat.name, median, worst)


@pytest.mark.slow
def test_diabetes_trees_agree_with_classic_or_are_refused(cli, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """442 rows: a feature whose median fine bin holds fewer than 20 rows is refused
    with the pointer to classic; the others (here the binary sex, one fine bin)
    meet the bounds."""
    import pandas as pd

    frame = pd.read_csv(ROOT / "sample_data" / "diabetes.csv")
    X, y = frame.drop(columns="target").to_numpy(), frame["target"].to_numpy()
    data = ROOT / "sample_data" / "diabetes.csv"
    for name, est in tree_models().items():
        trust = save(est.fit(X, y), tmp_path / f"{name}.skops")
        out = _store_vs_classic(
            cli, tmp_path / f"{name}.skops", data, trust, tmp_path, "--exclude", "target"
        )
        refused = 0
        for key in ("rebin", "rhale"):
            for feat in out[key].features:
                if feat.status != "ok":
                    assert feat.reason is not None
                    assert feat.reason.endswith("too sparse; use 'ale classic'"), feat.reason
                    refused += 1
                    continue
                median, worst = _gap(feat, out[f"classic_{key}"].feature(feat.name))
                assert median <= 0.05 and worst <= 0.15, (name, key, feat.name, median, worst)
        assert refused == 18  # every feature but sex, in rebin and rhale
    result = cli("rebin", tmp_path / "rf.npz", "--bins", "20", "-o", tmp_path / "rf.json")
    assert result.exit_code == 0
    assert "bmi: not estimable (secants on a fine grid of 140 bins have a median of 3 rows" in (
        result.stderr
    )


def test_a_cached_finite_difference_store_of_a_tree_is_recomputed(small_tree, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A store written before secants (same model, data and options) is not a cache hit."""
    import io
    import zipfile

    from ale_cli import api

    model, data, trust = small_tree
    out = tmp_path / "s.npz"
    api.compute(model, data, out=out, trust=trust, features=("x1",))
    old = tmp_path / "old.npz"
    with zipfile.ZipFile(out) as src, zipfile.ZipFile(old, "w") as dst:
        for info in src.infolist():
            if info.filename in ("fine_edges.npy", "fine_offsets.npy"):
                continue
            data_bytes = src.read(info)
            if info.filename == "meta.npy":
                meta = json.loads(str(np.load(io.BytesIO(data_bytes))))
                meta["method"] = "finite-differences"
                meta.pop("secant")
                meta.pop("content_sha256")  # its members changed: as a store of no identity
                buf = io.BytesIO()
                np.save(buf, np.array(json.dumps(meta), dtype=np.str_))
                data_bytes = buf.getvalue()
            dst.writestr(info.filename, data_bytes)
    old.replace(out)
    again = api.compute(model, data, out=out, trust=trust, features=("x1",))
    assert not again.cache_hit and again.method == "secant"
    assert (
        again.reason
        == "the method for piecewise-constant models changed (finite differences -> secants)"
    )


def test_json_result_names_the_method_and_carries_the_note(small_store, cli, tmp_path) -> None:  # type: ignore[no-untyped-def]
    result = cli("rebin", small_store, "--bins", "20", "-o", tmp_path / "r.json", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["details"]["method"] == "secant"
    assert any(
        n.startswith("piecewise-constant model: local effects are secants") for n in (data["notes"])
    )


def test_fine_grids_that_do_not_fit_their_features_are_refused(small_store) -> None:  # type: ignore[no-untyped-def]
    import dataclasses

    from ale_cli import api
    from ale_cli.store.npz import FINE_EDGES, FINE_OFFSETS, read_store

    store = read_store(small_store)
    bad_offsets = dataclasses.replace(
        store, extra=store.extra | {FINE_OFFSETS: np.array([0, 5, 3, 723])}
    )
    with pytest.raises(InputError, match="^store: array 'fine_offsets' does not cut"):
        api.rebin(bad_offsets, bins=10)
    flat = store.extra[FINE_EDGES].copy()
    flat[[1, 2]] = flat[[2, 1]]
    unsorted = dataclasses.replace(store, extra=store.extra | {FINE_EDGES: flat})
    with pytest.raises(InputError, match="^store: fine edges of feature 'x1': edges must be"):
        api.rebin(unsorted, bins=10)
