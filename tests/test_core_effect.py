"""Accumulation, centering, the composed first-order effect and the RHALE optimiser."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ale_cli.core.binning import assign, uniform_edges
from ale_cli.core.binstats import CellStats
from ale_cli.core.effect import accumulate, center_offset, effect_from_cells
from ale_cli.core.rhale import default_min_points, optimal_partition

# -- accumulation and centering --------------------------------------------------------------


def test_accumulate_closed_form() -> None:
    edges = np.array([0.0, 1.0, 3.0, 4.0])
    mu = np.array([2.0, -1.0, 0.5])
    var = np.array([4.0, 1.0, 9.0])
    n = np.array([4, 1, 9])
    effect, std, stderr = accumulate(edges, mu, bin_var=var, counts=n)
    np.testing.assert_allclose(effect, [0.0, 2.0, 0.0, 0.5])
    # STD = sqrt(sum dz^2 s^2): 1*4, + 4*1, + 1*9
    np.testing.assert_allclose(std, np.sqrt([0.0, 4.0, 8.0, 17.0]))
    # SE = sqrt(sum dz^2 s^2 / n): 4/4, + 4/1, + 9/9
    np.testing.assert_allclose(stderr, np.sqrt([0.0, 1.0, 5.0, 6.0]))


def test_center_modes() -> None:
    effect = np.array([0.0, 2.0, 0.0])
    counts = np.array([1, 3])
    # trapezoids: bin 1 mean 1.0 (1 row), bin 2 mean 1.0 (3 rows)
    assert center_offset(effect, counts, mode="mean") == pytest.approx(1.0)
    assert center_offset(effect, counts, mode="start") == 0.0
    assert center_offset(effect, counts, mode="none") == 0.0
    with pytest.raises(ValueError, match="center must be one of mean, start, none"):
        center_offset(effect, counts, mode="median")


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(0.01, 10.0), min_size=1, max_size=30),
    st.lists(st.floats(-100.0, 100.0), min_size=30, max_size=30),
    st.lists(st.integers(0, 50), min_size=30, max_size=30),
)
def test_mean_centering_gives_zero_count_weighted_trapezoid_mean(
    widths: list[float], slopes: list[float], counts: list[int]
) -> None:
    k = len(widths)
    n = np.array(counts[:k])
    if n.sum() == 0:
        n[0] = 1
    edges = np.concatenate([[0.0], np.cumsum(widths)])
    mu = np.array(slopes[:k])
    effect = accumulate(edges, mu, bin_var=np.ones(k), counts=n)[0]
    centered = effect - center_offset(effect, n, mode="mean")
    trapezoid_mean = sum(n[i] * (centered[i] + centered[i + 1]) / 2 for i in range(k)) / n.sum()
    scale = max(1.0, float(np.abs(effect).max()))
    assert abs(trapezoid_mean) <= 1e-12 * scale


def test_empty_bins_are_kept_flagged_and_filled() -> None:
    x = np.array([0.1, 0.2, 0.3, 2.6, 2.7, 3.5, 3.6])
    v = np.array([1.0, 1.0, 1.0, 3.0, 3.0, 4.0, 6.0])
    edges = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    e = effect_from_cells(
        edges, CellStats.from_values(assign(x, edges).index, v, n_cells=4), center="start"
    )
    np.testing.assert_array_equal(e.counts, [3, 0, 2, 2])
    np.testing.assert_array_equal(e.bin_filled, [False, True, False, False])
    # bin 2 (center 1.5) between bin 1 (0.5, mu 1) and bin 3 (2.5, mu 3): mu = 2
    np.testing.assert_allclose(e.bin_effect, [1.0, 2.0, 3.0, 5.0])
    assert np.isnan(e.bin_std[1])
    np.testing.assert_allclose(e.bin_std, [0.0, np.nan, 0.0, np.sqrt(2.0)])
    np.testing.assert_allclose(e.effect, [0.0, 1.0, 3.0, 6.0, 11.0])


# -- RHALE optimiser -------------------------------------------------------------------------


def exhaustive(
    x: np.ndarray, v: np.ndarray, grid: np.ndarray, *, min_points: int, alpha: float
) -> float:
    """min L over every subset of interior grid points, straight from the rows."""
    m = grid.size - 1
    n_total = x.size
    best = math.inf
    for r in range(m):
        for inner in itertools.combinations(range(1, m), r):
            limits = [0, *inner, m]
            total = 0.0
            for a, b in itertools.pairwise(limits):
                lo, hi = grid[a], grid[b]
                rows = (x > lo) & (x <= hi) if a > 0 else (x >= lo) & (x <= hi)
                n = int(rows.sum())
                if n < min_points:
                    break
                total += (1 - alpha * n / n_total) * v[rows].var(ddof=1) * (hi - lo)
            else:
                best = min(best, total)
    return best


def check_partition(
    x: np.ndarray, v: np.ndarray, grid: np.ndarray, p, *, min_points, alpha
) -> None:  # type: ignore[no-untyped-def]
    """The returned partition obeys N_ppb and its objective is what the rows give."""
    total = 0.0
    for a, b in itertools.pairwise(p.limits):
        lo, hi = grid[a], grid[b]
        rows = (x > lo) & (x <= hi) if a > 0 else (x >= lo) & (x <= hi)
        assert rows.sum() >= min_points
        total += (1 - alpha * rows.sum() / x.size) * v[rows].var(ddof=1) * (hi - lo)
    np.testing.assert_allclose(p.objective, total, rtol=1e-12, atol=1e-12)


@settings(max_examples=120, deadline=None)
@given(
    st.integers(1, 12),
    st.integers(2, 60),
    st.integers(2, 20),
    st.floats(0.0, 1.0),
    st.sampled_from(["continuous", "clustered", "ties"]),
    st.integers(0, 2**31),
)
def test_optimiser_matches_exhaustive_search(
    m: int, n: int, min_points: int, alpha: float, kind: str, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    if kind == "continuous":
        x = rng.uniform(0, 1, n)
        v = rng.normal(0, 1, n) * (1 + 3 * x)
    elif kind == "clustered":  # data in a few places: many empty grid cells
        x = rng.choice([0.0, 0.05, 0.5, 0.93, 1.0], n)
        v = rng.normal(0, 1, n)
    else:  # few distinct local effects: exact ties between partitions
        x = rng.integers(0, 4, n) / 3.0
        v = rng.integers(-1, 2, n).astype(float)
    if np.ptp(x) == 0:
        x[0] += 1.0
    grid = uniform_edges(x.min(), x.max(), bins=m)
    cells = CellStats.from_values(assign(x, grid).index, v, n_cells=grid.size - 1)
    p = optimal_partition(grid, cells, min_points=min_points, alpha=alpha)
    best = exhaustive(x, v, grid, min_points=min_points, alpha=alpha)
    if n < min_points:
        assert not p.feasible and best == math.inf
        np.testing.assert_array_equal(p.limits, [0, grid.size - 1])
        return
    assert p.feasible
    np.testing.assert_allclose(p.objective, best, rtol=1e-12, atol=1e-12)
    check_partition(x, v, grid, p, min_points=min_points, alpha=alpha)


def test_feature_with_two_distinct_values() -> None:
    x = np.array([0.0] * 30 + [1.0] * 30)
    v = np.concatenate([np.zeros(30), np.arange(30.0)])  # all the heterogeneity at x = 1
    grid = uniform_edges(0.0, 1.0, bins=50)
    cells = CellStats.from_values(assign(x, grid).index, v, n_cells=50)
    p = optimal_partition(grid, cells, min_points=3, alpha=0.2)
    # two bins; the limit just below 1 keeps the noisy bin as narrow as the grid allows
    np.testing.assert_array_equal(p.limits, [0, 49, 50])
    check_partition(x, v, grid, p, min_points=3, alpha=0.2)
    # with too few rows per value for two bins: one bin
    p1 = optimal_partition(grid, cells, min_points=31, alpha=0.2)
    np.testing.assert_array_equal(p1.limits, [0, 50])
    assert p1.feasible


def test_constant_effects_give_one_bin_and_zero_objective() -> None:
    x = np.linspace(-1, 1, 200)
    grid = uniform_edges(-1.0, 1.0, bins=50)
    cells = CellStats.from_values(assign(x, grid).index, np.full(200, 0.2), n_cells=50)
    p = optimal_partition(grid, cells, min_points=10, alpha=0.2)
    np.testing.assert_array_equal(p.edges, [-1.0, 1.0])
    assert p.objective == 0.0


def test_too_few_rows_falls_back_to_one_bin_and_says_so() -> None:
    x = np.array([0.0, 0.5, 1.0])
    grid = uniform_edges(0.0, 1.0, bins=4)
    cells = CellStats.from_values(assign(x, grid).index, np.array([1.0, 2.0, 4.0]), n_cells=4)
    p = optimal_partition(grid, cells, min_points=5, alpha=0.2)
    assert not p.feasible
    np.testing.assert_array_equal(p.edges, [0.0, 1.0])
    np.testing.assert_allclose(p.objective, (1 - 0.2) * np.var([1.0, 2.0, 4.0], ddof=1))


def test_default_min_points() -> None:
    assert default_min_points(1000) == 50
    assert default_min_points(1001) == 51
    assert default_min_points(5) == 2
