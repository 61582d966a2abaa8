"""Effect-size statistics: known answers, R ``ale``'s normalisation as an oracle, the contract."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ale_cli.core.binning import assign, quantile_edges, uniform_edges
from ale_cli.core.binstats import CellStats
from ale_cli.core.effect import effect_from_cells
from ale_cli.core.statistics import (
    aled,
    effect_statistics,
    heterogeneity_share,
    normalize,
    prediction_distribution,
    ranks,
)
from ale_cli.summary.model import (
    SCHEMA_PATH,
    FeatureSummary,
    Summary,
    read_summary,
    with_statistics,
    write_summary,
)

SCHEMA = json.loads(SCHEMA_PATH.read_text())


def feature(name: str, x: np.ndarray, local: np.ndarray, edges: np.ndarray, center: str = "mean"):
    """A FeatureSummary from exact local effects on given edges, through the core functions."""
    cells = CellStats.from_values(assign(x, edges).index, local, n_cells=edges.size - 1)
    e = effect_from_cells(edges, cells, center=center)
    return FeatureSummary(
        name=name,
        edges=e.edges,
        counts=e.counts,
        bin_effect=e.bin_effect,
        bin_std=e.bin_std,
        bin_stderr=e.bin_stderr,
        bin_filled=e.bin_filled,
        effect=e.effect,
        std=e.std,
        stderr=e.stderr,
        center_offset=e.center_offset,
    )


def bin_counts(x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Counts by the definition (z_{k-1}, z_k], z_0 in the first bin."""
    counts = [((x > a) & (x <= b)).sum() for a, b in zip(edges[:-1], edges[1:], strict=True)]
    counts[0] += (x == edges[0]).sum()
    return np.array(counts)


def summary_of(*features: FeatureSummary) -> Summary:
    return Summary(estimator="dale", params={}, store={}, n_rows=0, features=tuple(features))


# -- known answers ---------------------------------------------------------------------------


@pytest.mark.parametrize("center", ["mean", "start", "none"])
@pytest.mark.parametrize("binning", ["uniform", "quantile"])
def test_linear_model_aled_is_slope_times_mean_absolute_deviation(center: str, binning: str):
    rng = np.random.default_rng(3)
    x = rng.gamma(2.0, 1.5, 5000)
    b = -1.75
    if binning == "uniform":
        edges = uniform_edges(x.min(), x.max(), bins=17)
    else:
        edges = quantile_edges(x, bins=17)
    f = feature("x", x, np.full(x.size, b), edges, center=center)
    counts = bin_counts(x, edges)
    lo, hi = edges[:-1], edges[1:]
    c = np.sum(counts * (lo + hi) / 2) / counts.sum()  # the centering point
    # mean |x - c| over each bin, x spread evenly in it
    inside = (lo < c) & (c < hi)
    mad = np.where(
        inside, ((lo - c) ** 2 + (hi - c) ** 2) / (2 * (hi - lo)), np.abs((lo + hi) / 2 - c)
    )
    expected = abs(b) * np.sum(counts * mad) / counts.sum()
    stats = effect_statistics(effect=f.effect, std=f.std, counts=f.counts)
    np.testing.assert_allclose(stats["aled"], expected, rtol=1e-12)
    np.testing.assert_allclose(
        [stats["aler_min"], stats["aler_max"]],
        [b * (edges[-1] - c), b * (edges[0] - c)],
        rtol=1e-12,
    )
    assert stats["heterogeneity_share"] == 0.0


def test_exactly_additive_model_has_zero_heterogeneity_share_and_an_interaction_does_not():
    rng = np.random.default_rng(5)
    n = 4000
    edges = np.linspace(-2.0, 2.0, 11)
    centres = (edges[:-1] + edges[1:]) / 2
    # one distinct value per bin: the local effect of x1 is then the same for every row of a bin
    x1 = rng.choice(centres, n)
    x2 = rng.uniform(-1, 1, n)
    additive = feature("x1", x1, np.cos(x1), edges)  # f = sin(x1) + x2^2
    interacting = feature("x1", x1, np.cos(x1) + x2, edges)  # f = sin(x1) + x1 x2
    assert additive.statistics is None
    share = heterogeneity_share(effect=additive.effect, std=additive.std, counts=additive.counts)
    np.testing.assert_allclose(share, 0.0, atol=1e-12)  # 0 up to rounding of the bin means
    assert aled(effect=additive.effect, counts=additive.counts) > 0.1
    share_x = heterogeneity_share(
        effect=interacting.effect, std=interacting.std, counts=interacting.counts
    )
    assert share_x > 0.1


def test_feature_without_effect_has_aled_zero_and_a_constant_feature_no_statistics():
    rng = np.random.default_rng(1)
    x = rng.uniform(0, 1, 500)
    edges = uniform_edges(0.0, 1.0, bins=10)
    flat = feature("flat", x, np.zeros(x.size), edges)
    const = FeatureSummary(name="const", status="not_estimable", reason="single distinct value")
    s = with_statistics(summary_of(flat, const), rng.normal(size=500))
    assert s.features[0].statistics is not None
    assert s.features[0].statistics["aled"] == 0.0
    assert s.features[0].statistics["heterogeneity_share"] == 0.0
    assert s.features[0].statistics["naled"] == 0.0
    assert s.features[1].statistics is None


def test_rank_orders_features_by_aled_with_ties_sharing_a_rank():
    rng = np.random.default_rng(2)
    x = rng.uniform(-1, 1, 1000)
    edges = uniform_edges(-1.0, 1.0, bins=8)
    feats = [
        feature(n, x, np.full(x.size, b), edges)
        for n, b in [("a", 1.0), ("b", -3.0), ("c", 2.0), ("d", 3.0)]
    ]
    s = with_statistics(summary_of(*feats), None)
    assert [f.statistics["rank"] for f in s.features] == [4, 1, 3, 1]
    assert ranks(np.array([np.nan, 1.0])).tolist() == [2, 1]


def test_heterogeneity_share_is_infinite_when_only_heterogeneity_and_null_in_json(tmp_path: Path):
    rng = np.random.default_rng(4)
    x = rng.uniform(0, 1, 2000)
    edges = uniform_edges(0.0, 1.0, bins=5)
    # f = x * u with u = +-1 at random: the average effect is 0, the rows' effects are not
    pure = feature("x", x, rng.choice([-1.0, 1.0], x.size), edges)
    forced = FeatureSummary(**{**pure.__dict__, "effect": np.zeros(6), "bin_effect": np.zeros(5)})
    assert heterogeneity_share(effect=forced.effect, std=forced.std, counts=forced.counts) == (
        float("inf")
    )
    s = with_statistics(summary_of(forced), None)
    path = tmp_path / "s.json"
    write_summary(path, s)
    data = json.loads(path.read_text())
    jsonschema.validate(data, SCHEMA)
    assert data["features"][0]["statistics"]["heterogeneity_share"] is None


# -- NALED / NALER -----------------------------------------------------------------------------


def r_ale_norm(values: np.ndarray, predictions: np.ndarray) -> np.ndarray:
    """R ale's create_ale_y_norm_function, transcribed from its definition (the oracle)."""
    centred = predictions - np.median(predictions)
    below, above = centred[centred < 0], centred[centred > 0]
    pre = below.max() if below.size else 0.0
    post = above.min() if above.size else 0.0
    lower = -centred[centred <= 0]  # distances below the median
    upper = centred[centred >= 0]
    out = []
    for a in values:
        if pre <= a <= post:
            out.append(0.0)
        elif a < 0:
            out.append(-np.mean(lower <= -a) / 2 * 100)
        else:
            out.append(np.mean(upper <= a) / 2 * 100)
    return np.array(out)


@pytest.mark.parametrize("draw", ["normal", "lognormal", "uniform"])
def test_normalisation_matches_r_ale_within_a_percentile_point(draw: str):
    rng = np.random.default_rng(8)
    pred = getattr(rng, draw)(size=20_000)
    spread = np.quantile(pred, 0.99) - np.quantile(pred, 0.01)
    values = np.concatenate([rng.uniform(-spread, spread, 400), [0.0, 10 * spread, -10 * spread]])
    dist = prediction_distribution(prediction=pred)
    ours = normalize(values, quantiles=dist.quantiles)
    np.testing.assert_allclose(ours, r_ale_norm(values, pred), atol=1.0)


def test_naled_equals_aled_when_predictions_are_uniform_over_a_hundred_units():
    pred = np.linspace(0.0, 100.0, 100_001)  # F(median + a) - 1/2 = a / 100
    rng = np.random.default_rng(9)
    x = rng.uniform(0, 1, 3000)
    edges = uniform_edges(0.0, 1.0, bins=12)
    f = feature("x", x, np.full(x.size, 30.0), edges)
    q = prediction_distribution(prediction=pred).quantiles
    stats = effect_statistics(effect=f.effect, std=f.std, counts=f.counts, quantiles=q)
    np.testing.assert_allclose(stats["naled"], stats["aled"], rtol=1e-9)
    np.testing.assert_allclose(
        [stats["naler_min"], stats["naler_max"]], [stats["aler_min"], stats["aler_max"]], rtol=1e-9
    )


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=3, max_size=30),
    counts=st.lists(st.integers(0, 50), min_size=2, max_size=29),
    shift=st.floats(-100, 100, allow_nan=False),
    scale=st.floats(-10, 10, allow_nan=False),
)
def test_properties_of_aled_and_naled(values, counts, shift, scale):
    k = min(len(values) - 1, len(counts))
    effect = np.array(values[: k + 1])
    n = np.array(counts[:k])
    if n.sum() == 0:
        n[0] = 1
    base = aled(effect=effect, counts=n)
    # centering does not matter; scaling the curve scales ALED
    np.testing.assert_allclose(aled(effect=effect + shift, counts=n), base, atol=1e-9 * (1 + base))
    np.testing.assert_allclose(
        aled(effect=scale * effect, counts=n), abs(scale) * base, rtol=1e-9, atol=1e-9
    )
    q = np.sort(np.random.default_rng(0).normal(size=101))
    value = aled(effect=effect, counts=n, quantiles=q)
    assert 0.0 <= value <= 50.0


# -- the summary contract ----------------------------------------------------------------------


def test_statistics_round_trip_and_validate_and_old_summaries_still_read(tmp_path: Path):
    rng = np.random.default_rng(6)
    x = rng.normal(size=800)
    edges = uniform_edges(x.min(), x.max(), bins=9)
    plain = summary_of(feature("a", x, 2 * x, edges), feature("b", x, np.ones(x.size), edges))
    old = tmp_path / "old.json"
    write_summary(old, plain)
    data = json.loads(old.read_text())
    assert "prediction" not in data and "statistics" not in data["features"][0]
    jsonschema.validate(data, SCHEMA)
    assert read_summary(old).features[0].statistics is None

    pred = rng.normal(3.0, 2.0, 800)
    new = tmp_path / "new.json"
    write_summary(new, with_statistics(read_summary(old), pred))
    data = json.loads(new.read_text())
    jsonschema.validate(data, SCHEMA)
    assert data["prediction"]["n"] == 800 and len(data["prediction"]["quantiles"]) == 101
    np.testing.assert_allclose(data["prediction"]["mean"], pred.mean(), rtol=1e-12)
    back = read_summary(new)
    for f in back.features:
        expected = effect_statistics(
            effect=f.effect,
            std=f.std,
            counts=f.counts,
            quantiles=np.quantile(pred, np.linspace(0, 1, 101)),
        )
        assert f.statistics is not None
        np.testing.assert_allclose(f.statistics["aled"], expected["aled"], rtol=1e-12)
        np.testing.assert_allclose(f.statistics["naled"], expected["naled"], rtol=1e-12)
    # the recorded distribution is kept when no new predictions are given
    again = with_statistics(back, None)
    np.testing.assert_array_equal(again.prediction["quantiles"], back.prediction["quantiles"])
    assert again.features[0].statistics["naled"] == back.features[0].statistics["naled"]


def test_with_statistics_leaves_out_non_finite_predictions_and_keeps_interact_summaries():
    rng = np.random.default_rng(12)
    x = rng.uniform(0, 1, 300)
    f = feature("x", x, np.full(x.size, 2.0), uniform_edges(0.0, 1.0, bins=5))
    pred = np.concatenate([rng.normal(size=300), [np.nan, np.inf]])
    s = with_statistics(summary_of(f), pred)
    assert s.prediction["n"] == 300
    assert with_statistics(summary_of(f), np.full(3, np.nan)).prediction is None
    pairs_only = with_statistics(summary_of(), pred)
    assert pairs_only.features == () and pairs_only.prediction["n"] == 300


def test_aled_is_the_mean_absolute_centered_curve_over_the_rows():
    """For rows spread evenly within the bins, ALED is the rows' mean |f(x_i)| of the
    piecewise-linear curve centered on the rows' mean."""
    rng = np.random.default_rng(13)
    x = rng.uniform(-2.0, 2.0, 200_000)
    edges = quantile_edges(x, bins=7)
    f = feature("x", x, 3 * x**2 - 1.0, edges)  # a U-shaped curve crossing zero twice
    curve = np.interp(x, f.edges, f.effect)  # the curve is linear between edges
    rows = np.mean(np.abs(curve - curve.mean()))
    np.testing.assert_allclose(aled(effect=f.effect, counts=f.counts), rows, rtol=2e-3)
