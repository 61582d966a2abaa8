"""Bin edges, membership, cell and bin statistics (ale_cli.core.binning / binstats)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ale_cli.core.binning import (
    UniformGrid,
    assign,
    check_edges,
    quantile_edges,
    uniform_edges,
)
from ale_cli.core.binstats import CellStats, fill_missing, uniform_cells

finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)


def brute_bins(x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Bin by the definition: (z_{k-1}, z_k], z_0 in the first bin, -1 outside."""
    out = np.full(x.shape, -1)
    for k in range(len(edges) - 1):
        inside = (x > edges[k]) & (x <= edges[k + 1])
        if k == 0:
            inside |= x == edges[0]
        out[inside] = k
    return out


# -- edges -----------------------------------------------------------------------------------


def test_quantile_edges_match_r_type_1() -> None:
    # R: quantile(1:10, probs = seq(0, 1, 0.25), type = 1) -> 1 3 5 8 10
    np.testing.assert_array_equal(quantile_edges(np.arange(1.0, 11.0), bins=4), [1, 3, 5, 8, 10])
    # R: quantile(c(1, 1, 1, 2, 9), probs = seq(0, 1, 0.25), type = 1) -> 1 1 1 2 9, deduplicated
    np.testing.assert_array_equal(quantile_edges(np.array([9.0, 1, 1, 2, 1]), bins=4), [1, 2, 9])


@settings(max_examples=150, deadline=None)
@given(
    hnp.arrays(np.float64, st.integers(1, 60), elements=st.integers(-5, 5).map(float)),
    st.integers(1, 12),
)
def test_quantile_edges_are_the_smallest_value_with_ecdf_at_least_k_over_K(
    x: np.ndarray, bins: int
) -> None:
    n = x.size
    expected = [x.min()]
    for k in range(1, bins + 1):
        # smallest v in the data with #{x <= v} / n >= k / K, in exact integers
        expected.append(min(v for v in x if np.sum(x <= v) * bins >= k * n))
    np.testing.assert_array_equal(quantile_edges(x, bins=bins), np.unique(expected))


def _sample(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "normal":
        return rng.normal(size=n)
    if kind == "rounded":  # heavy ties: about 80 distinct values
        return np.round(rng.normal(size=n), 1)
    if kind == "integers":  # a few distinct values, thousands of copies each
        return rng.integers(0, 7, size=n).astype(float)
    if kind == "resampled":  # like a bootstrap of a small data set
        return rng.choice(rng.normal(size=300), size=n)
    if kind == "lognormal":  # very skewed
        return rng.lognormal(sigma=3.0, size=n)
    if kind == "outlier":
        return np.concatenate([rng.normal(size=n - 1), [1e12]])
    if kind == "tiny range":  # neighbouring floats
        return 1.0 + rng.integers(0, 5, size=n) * np.finfo(np.float64).eps
    if kind == "huge range":  # hi - lo overflows
        return np.concatenate([rng.normal(size=n - 2) * 1e307, [-1.7e308, 1.7e308]])
    if kind == "signed zeros":
        return rng.choice(np.array([-1.0, -0.0, 0.0, 2.0]), size=n)
    raise AssertionError(kind)


KINDS = [
    "normal",
    "rounded",
    "integers",
    "resampled",
    "lognormal",
    "outlier",
    "tiny range",
    "huge range",
    "signed zeros",
]


@settings(max_examples=80, deadline=None)
@given(
    kind=st.sampled_from(KINDS),
    n=st.sampled_from([1, 7, 4095, 4096, 5000, 30_001]),
    bins=st.sampled_from([1, 2, 3, 7, 20, 64, 65, 100]),
    seed=st.integers(0, 2**31 - 1),
)
def test_quantile_edges_equal_type_1_quantiles_and_the_bin_definition(
    kind: str, n: int, bins: int, seed: int
) -> None:
    """The bucketed selection gives the type-1 quantiles of a full sort, deduplicated, and
    the bins of the definition, whatever the distribution.

    (Not ``np.quantile(method="inverted_cdf")``: it computes ``n q`` in floating
    point, so for n = 5000 and q = 7/100 it takes the 351st value, not the 350th.)"""
    x = _sample(
        kind, max(n, 2) if kind in ("outlier", "huge range") else n, np.random.default_rng(seed)
    )
    edges = quantile_edges(x, bins=bins)
    a = assign(x, edges)
    k = np.arange(bins + 1)
    ranks = np.maximum((x.size * k + bins - 1) // bins, 1)  # ceil(n k / K), 1-based
    expected = np.unique(np.sort(x)[ranks - 1])
    np.testing.assert_array_equal(edges, expected)
    assert a.n_outside == 0
    assert a.index.dtype == np.int64
    if expected.size >= 2:  # one distinct value has no bins (not estimable upstream)
        np.testing.assert_array_equal(a.index, brute_bins(x, expected))


def test_uniform_edges() -> None:
    np.testing.assert_array_equal(uniform_edges(-1.0, 1.0, bins=4), [-1, -0.5, 0, 0.5, 1])
    assert uniform_edges(2.0, 3.0, bins=7)[-1] == 3.0
    # edges that round together are removed: fewer bins
    assert uniform_edges(1e16, 1e16 + 4, bins=8).size < 9


@pytest.mark.parametrize(
    ("edges", "message"),
    [
        ([1.0], "at least 2 edges"),
        ([0.0, np.inf], "finite"),
        ([0.0, 1.0, 1.0], r"strictly increasing \(edge 2 = 1.0 follows 1.0\)"),
        ([0.0, 2.0, 1.0], r"strictly increasing \(edge 2 = 1.0 follows 2.0\)"),
    ],
)
def test_check_edges_rejects(edges: list[float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_edges(np.array(edges))


# -- membership ------------------------------------------------------------------------------


def test_assign_left_open_right_closed_first_bin_holds_z0() -> None:
    edges = np.array([0.0, 1.0, 2.0, 4.0])
    x = np.array([-0.1, 0.0, 1e-12, 1.0, 1.0 + 1e-12, 2.0, 4.0, 4.5])
    a = assign(x, edges)
    np.testing.assert_array_equal(a.index, [-1, 0, 0, 0, 1, 1, 2, -1])
    assert a.n_outside == 2


@settings(max_examples=100, deadline=None)
@given(
    st.floats(-1e6, 1e6),
    st.floats(1e-3, 1e3),
    st.integers(1, 60),
    st.integers(0, 2**31),
)
def test_uniform_grid_matches_binary_search(lo: float, width: float, bins: int, seed: int) -> None:
    """Values exactly on every edge, at both ends and random ones, with offsets up to 1e6."""
    rng = np.random.default_rng(seed)
    hi = lo + width
    edges = uniform_edges(lo, hi, bins=bins)
    grid = UniformGrid.build(np.array([lo, 0.0]), np.array([hi, 1.0]), bins=bins)
    if grid is None:  # edges rounded together: callers use assign()
        assert edges.size < bins + 1 or width / max(abs(lo), abs(hi)) < 1e-9
        return
    x = np.concatenate([edges, np.nextafter(edges, np.inf), rng.uniform(lo, hi, 50)])
    x = np.clip(x, lo, hi)
    second = rng.integers(0, 11, x.size) / 10.0  # integer-valued column: many values on edges
    both = np.column_stack([x, second])
    index = grid.index(both)
    np.testing.assert_array_equal(index[:, 0], brute_bins(x, edges))
    np.testing.assert_array_equal(
        index[:, 1], brute_bins(second, uniform_edges(0.0, 1.0, bins=bins))
    )
    by_column = grid.index(np.asfortranarray(both))  # columns in runs: the same bins
    assert by_column.flags.f_contiguous
    np.testing.assert_array_equal(by_column, index)


def test_uniform_grid_refuses_a_constant_column() -> None:
    assert UniformGrid.build(np.array([0.0, 1.0]), np.array([1.0, 1.0]), bins=4) is None


# -- statistics ------------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(
    hnp.arrays(np.float64, st.integers(1, 40), elements=finite),
    st.integers(1, 6),
    st.integers(0, 2**31),
)
def test_cell_stats_merge_equals_one_pass_and_their_var_matches_numpy(
    values: np.ndarray, n_cells: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    index = rng.integers(-1, n_cells, values.size)
    cut = int(rng.integers(0, values.size + 1))
    a = CellStats.from_values(index, values, n_cells=n_cells)  # whole, b merged
    b = CellStats.from_values(index[:cut], values[:cut], n_cells=n_cells).merge(
        CellStats.from_values(index[cut:], values[cut:], n_cells=n_cells)
    )
    np.testing.assert_array_equal(a.counts, b.counts)
    for k in range(n_cells):
        v = values[index == k]
        assert a.counts[k] == v.size
        if v.size == 0:
            assert a.mean[k] == 0.0 and b.mean[k] == 0.0
            continue
        np.testing.assert_allclose([a.mean[k], b.mean[k]], v.mean(), rtol=1e-9, atol=1e-9)
        if v.size < 2:
            assert np.isnan(a.std[k]) and np.isnan(a.stderr[k])
            continue
        scale = max(1.0, float(np.abs(v).max()))
        np.testing.assert_allclose(a.var[k], v.var(ddof=1), rtol=1e-7, atol=1e-9 * scale**2)
        np.testing.assert_allclose(b.var[k], v.var(ddof=1), rtol=1e-7, atol=1e-9 * scale**2)
        np.testing.assert_allclose(a.stderr[k], a.std[k] / np.sqrt(v.size))


@settings(max_examples=100, deadline=None)
@given(
    hnp.arrays(np.float64, st.integers(1, 40), elements=finite),
    st.lists(st.floats(1e-3, 1e3), min_size=6, max_size=6),
    st.integers(0, 2**31),
)
def test_cell_stats_divided_by_widths_equal_the_stats_of_the_quotients(
    values: np.ndarray, widths: list[float], seed: int
) -> None:
    # what ale classic relies on: the bins' statistics of D_i / dz_k without dividing each row
    w = np.array(widths)
    index = np.random.default_rng(seed).integers(-1, w.size, values.size)
    divided = CellStats.from_values(index, values, n_cells=w.size).divided_by(w)
    quotients = np.where(index >= 0, values / w[index], 0.0)
    direct = CellStats.from_values(index, quotients, n_cells=w.size)
    np.testing.assert_array_equal(divided.counts, direct.counts)
    filled = direct.counts > 0
    scale = max(1.0, float(np.abs(quotients).max()))
    np.testing.assert_allclose(
        divided.mean[filled], direct.mean[filled], rtol=1e-12, atol=1e-12 * scale
    )
    two = direct.counts > 1
    np.testing.assert_allclose(divided.var[two], direct.var[two], rtol=1e-7, atol=1e-9 * scale**2)


def test_constant_effects_have_zero_std_to_rounding() -> None:
    # each bin constant, bins different: no heterogeneity from cancellation (a one-pass
    # S2 - S1^2 / n would leave about sqrt(eps) x 6000 = 1e-4 here)
    index = np.arange(1000) % 7
    values = 0.2 + 1e3 * index
    cells = CellStats.from_values(index, values, n_cells=7)
    np.testing.assert_allclose(cells.std, np.zeros(7), atol=1e-14 * 6000)
    np.testing.assert_allclose(cells.mean, 0.2 + 1e3 * np.arange(7), rtol=1e-13)
    merged = cells.merge(cells).coarsen(np.array([0, 1, 7]))
    np.testing.assert_allclose(merged.std[0], 0.0, atol=1e-15)
    constant = CellStats.from_values(index, np.full(1000, 0.2), n_cells=7)
    np.testing.assert_allclose(constant.std, np.zeros(7), atol=1e-15)


def test_coarsen_combines_runs_of_cells() -> None:
    cells = CellStats.from_values(np.array([0, 1, 1, 3, 3, 3]), np.arange(6.0), n_cells=4)
    c = cells.coarsen(np.array([0, 2, 4]))
    np.testing.assert_array_equal(c.counts, [3, 3])
    np.testing.assert_allclose(c.mean, [1.0, 4.0])
    # sums of squared deviations: (1 + 0 + 1) and (1 + 0 + 1)
    np.testing.assert_allclose(c.m2, [2.0, 2.0])
    with pytest.raises(ValueError, match="limits"):
        cells.coarsen(np.array([0, 2, 2, 4]))


def test_uniform_cells_equal_per_column_statistics_across_chunks() -> None:
    rng = np.random.default_rng(3)
    X = np.column_stack([rng.uniform(-2, 3, 5000), rng.integers(0, 7, 5000).astype(float)])
    E = rng.normal(size=X.shape) + 4.0
    grid = UniformGrid.build(X.min(0), X.max(0), bins=9)
    assert grid is not None
    chunked = uniform_cells(X, E, grid, chunk_rows=333)
    for j in range(2):
        edges = uniform_edges(X[:, j].min(), X[:, j].max(), bins=9)
        direct = CellStats.from_values(assign(X[:, j], edges).index, E[:, j], n_cells=9)
        np.testing.assert_array_equal(chunked[j].counts, direct.counts)
        a, b = chunked[j], direct
        np.testing.assert_allclose(a.mean, b.mean, rtol=1e-12)
        np.testing.assert_allclose(a.var, b.var, rtol=1e-10)


def test_fill_missing_interpolates_in_bin_centers_and_is_constant_at_the_ends() -> None:
    centers = np.array([0.5, 1.5, 3.0, 6.0, 7.0])
    values = np.array([np.nan, 1.0, np.nan, 4.0, np.nan])
    filled = fill_missing(values, ~np.isnan(values), centers)
    # (3.0 - 1.5) / (6.0 - 1.5) of the way from 1 to 4
    np.testing.assert_allclose(filled, [1.0, 1.0, 1.0 + 3.0 * 1.5 / 4.5, 4.0, 4.0])


@settings(max_examples=60, deadline=None)
@given(
    n_edges=st.sampled_from([2, 3, 21, 66, 67, 200]),
    seed=st.integers(0, 2**31 - 1),
)
def test_assign_counting_and_binary_search_paths_agree(n_edges: int, seed: int) -> None:
    """Few edges are counted edge by edge, many by binary search: same bins either way,
    also for values exactly on an edge and outside the range."""
    rng = np.random.default_rng(seed)
    edges = np.unique(rng.normal(size=n_edges))
    if edges.size < 2:
        return
    x = np.concatenate([rng.normal(size=500) * 1.5, edges, edges[:3]])
    got = assign(x, edges)
    expected = np.searchsorted(edges[1:-1], x, side="left")
    inside = (x >= edges[0]) & (x <= edges[-1])
    np.testing.assert_array_equal(got.index[inside], expected[inside])
    np.testing.assert_array_equal(got.index[~inside], -1)
    assert got.n_outside == int((~inside).sum())
