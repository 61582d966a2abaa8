"""Binary numeric columns are levels by default (``discrete`` not given), announced in a
note; ``discrete="none"`` gives them a slope again, and classic then says when bins
between rows are empty instead of reporting a silent 0."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ale_cli import api


@pytest.fixture(scope="module")
def hgb(sample_dir: Path):  # type: ignore[no-untyped-def]
    import skops.io as sio

    path = sample_dir / "models" / "diabetes_hgb.skops"
    return path, tuple(sio.get_untrusted_types(file=path))


def test_classic_uniform_bins_on_a_tree_model_gives_the_two_levels(hgb, sample_dir) -> None:
    path, trust = hgb
    data = sample_dir / "diabetes.csv"
    common = {"exclude": "target", "features": "sex,bmi", "binning": "uniform", "trust": trust}
    default = api.classic(path, data, **common)
    asked = api.classic(path, data, discrete="sex", **common)
    sex = default.feature("sex")
    np.testing.assert_allclose(sex.edges, [1.0, 2.0])
    np.testing.assert_allclose(sex.effect, asked.feature("sex").effect, rtol=0, atol=1e-12)
    # women (1) above, men (2) below the mean prediction, by about 19 in the target's units
    assert sex.effect[0] > 5 and sex.effect[1] < -5
    np.testing.assert_allclose(sex.effect[0] - sex.effect[1], 18.83, atol=0.05)
    assert any(n.startswith("sex has two values: estimated per level") for n in default.notes)
    assert "discrete" not in default.params
    assert default.feature("bmi").edges.size == 21  # a continuous column keeps its bins


def test_discrete_none_gives_the_slope_and_says_the_bins_are_empty(hgb, sample_dir) -> None:
    path, trust = hgb
    summary = api.classic(
        path,
        sample_dir / "diabetes.csv",
        exclude="target",
        features="sex",
        binning="uniform",
        trust=trust,
        discrete="none",
    )
    sex = summary.feature("sex")
    assert sex.edges.size == 21 and summary.params["discrete"] == "none"
    np.testing.assert_allclose(sex.effect, 0.0)  # classic ALE across empty bins: no change
    assert sex.note is not None and sex.note.startswith("18 of 20 bins between rows are empty")


def test_compute_streamed_stores_binary_levels_as_the_whole_table_does(
    cli, mlp_model: Path, sample_dir: Path, tmp_path: Path
) -> None:
    data = sample_dir / "diabetes.csv"
    streamed = tmp_path / "s.npz"
    done = cli("compute", mlp_model, data, "--exclude", "target", "-o", streamed,
               "--chunk-rows", 100)  # fmt: skip
    assert done.exit_code == 0, done.stderr
    meta = api.read_store(streamed).meta
    assert [lv["feature"] for lv in meta["levels"]] == ["sex"]
    assert meta["chunks"]["rows"] == [100, 100, 100, 100, 42]  # still streamed
    notes = " ".join(meta["notes"])
    assert "sex has two values: estimated per level" in notes
    assert "whole table" not in notes
    whole = tmp_path / "w.npz"
    api.compute(mlp_model, data, exclude="target", out=whole, discrete="sex")
    a, b = api.rhale(streamed), api.rhale(whole)
    for fa, fb in zip(a.features, b.features, strict=True):
        np.testing.assert_allclose(fa.effect, fb.effect, rtol=0, atol=1e-12)
    classic = api.classic(mlp_model, data, exclude="target", features="sex")
    np.testing.assert_allclose(a.feature("sex").effect, classic.feature("sex").effect, atol=1e-12)


def test_compute_discrete_none_stores_no_levels_and_is_its_own_cache(
    mlp_model: Path, sample_dir: Path, tmp_path: Path
) -> None:
    data, out = sample_dir / "diabetes.csv", tmp_path / "n.npz"
    api.compute(mlp_model, data, exclude="target", out=out, discrete="none")
    assert not api.read_store(out).meta.get("levels")
    again = api.compute(mlp_model, data, exclude="target", out=out)
    assert not again.cache_hit and again.reason == "the options changed"
    assert api.read_store(out).meta["levels"][0]["feature"] == "sex"


def test_categorical_help_no_longer_says_not_estimable(cli) -> None:
    text = " ".join(cli("classic", "--help").stdout.split())
    assert "reported as not estimable" not in text
    assert "'none': slopes for every numeric input" in text


def test_the_first_rows_rule_out_columns_and_spare_the_pass(monkeypatch) -> None:
    from ale_cli.estimators import level_plans
    from ale_cli.passes.engine import ArraySource

    calls = []
    kernel_call = level_plans.Distinct.__call__
    monkeypatch.setattr(
        level_plans.Distinct,
        "__call__",
        lambda self, chunk, shared: calls.append(self.cols) or kernel_call(self, chunk, shared),
    )
    rng = np.random.default_rng(0)
    # b: one value in the first rows, a second later (binary); t: two in the first rows,
    # a third later (not binary); c: continuous
    b = np.r_[np.zeros(50), np.ones(50)]
    t = np.r_[np.tile([0.0, 1.0], 25), np.full(50, 2.0)]
    X = np.column_stack([b, t, rng.normal(size=100)])
    source = ArraySource({level_plans.ROWS: X})
    plans = level_plans.discrete_plans(source, "btc", "btc", "binary", head=X[:50])
    assert list(plans) == ["b"] and calls == [(0, 1)]  # c ruled out by its first rows
    np.testing.assert_allclose(plans["b"].values, [0.0, 1.0])
    calls.clear()
    assert level_plans.discrete_plans(source, "btc", "c", "binary", head=X[:50]) == {}
    assert calls == []  # nothing left to check: no pass over the rows
