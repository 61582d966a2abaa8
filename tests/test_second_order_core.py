"""Second-order core: known answers, fill of empty cells, centering invariants."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ale_cli.core.second_order import (
    accumulate_2d,
    fill_nearest,
    pair_cells,
    remove_main_effects,
    second_order_from_cells,
)


def second_order_effect(ia, ib, values, *, edges_a, edges_b, route):
    cells = pair_cells(ia, ib, values, shape=(len(edges_a) - 1, len(edges_b) - 1))
    return second_order_from_cells(cells, edges_a=edges_a, edges_b=edges_b, route=route)


def bins_of(x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """(z_{k-1}, z_k] membership with z_0 in the first bin, written out independently."""
    return np.clip(np.searchsorted(edges, x, side="left") - 1, 0, len(edges) - 2)


def test_cell_means_match_a_loop():
    rng = np.random.default_rng(0)
    ia, ib = rng.integers(0, 3, 200), rng.integers(0, 4, 200)
    v = rng.normal(size=200)
    cells = pair_cells(ia, ib, v, shape=(3, 4))
    cm = second_order_from_cells(
        cells, edges_a=np.arange(4.0), edges_b=np.arange(5.0), route="classic"
    )
    for k in range(3):
        for m in range(4):
            sel = v[(ia == k) & (ib == m)]
            assert cm.counts[k, m] == len(sel) and not cm.filled[k, m]
            np.testing.assert_allclose(cm.cell_effect[k, m], sel.mean(), rtol=1e-12)
            np.testing.assert_allclose(cm.cell_std[k, m], sel.std(ddof=1), rtol=1e-10)


def test_product_surface_is_the_pure_interaction_for_independent_uniform_data():
    # f = x_a x_b, x ~ U(0, 1)^2 independent: f_a = x_a / 2 + c, so the pure
    # interaction is (x_a - 1/2)(x_b - 1/2) (exact at the grid corners for DALE,
    # up to the sampling of the cell weights).
    rng = np.random.default_rng(1)
    n = 200_000
    x = rng.uniform(0, 1, size=(n, 2))
    edges = np.linspace(0, 1, 11)
    ia, ib = bins_of(x[:, 0], edges), bins_of(x[:, 1], edges)
    res = second_order_effect(ia, ib, np.ones(n), edges_a=edges, edges_b=edges, route="dale")
    truth = np.outer(edges - 0.5, edges - 0.5)
    np.testing.assert_allclose(res.effect, truth, atol=5e-3)
    assert not res.filled.any()


def test_additive_model_has_exactly_zero_surface():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(5000, 2))
    edges_a = np.quantile(x[:, 0], np.linspace(0, 1, 9))
    edges_b = np.quantile(x[:, 1], np.linspace(0, 1, 7))
    ia, ib = bins_of(x[:, 0], edges_a), bins_of(x[:, 1], edges_b)
    # an additive f has zero mixed derivative and zero second-order differences
    for route in ("dale", "classic"):
        res = second_order_effect(
            ia, ib, np.zeros(len(x)), edges_a=edges_a, edges_b=edges_b, route=route
        )
        np.testing.assert_array_equal(res.effect, 0.0)


def test_empty_cells_take_the_nearest_non_empty_cell_in_normalised_coordinates():
    # a 3 x 3 grid over [0, 3] x [0, 300]: the b axis is 100 times longer, so
    # without normalisation every distance would be decided by b alone.
    edges_a = np.array([0.0, 1.0, 2.0, 3.0])
    edges_b = np.array([0.0, 100.0, 200.0, 300.0])
    values = np.full((3, 3), np.nan)
    values[0, 0], values[2, 1] = 1.0, 2.0
    filled = fill_nearest(values, np.isnan(values), edges_a, edges_b)
    # cell (0, 2): to (0, 0) is 2/3 in normalised b; to (2, 1) sqrt((2/3)^2 + (1/3)^2)
    assert filled[0, 2] == 1.0
    # cell (2, 2): to (2, 1) is 1/3; to (0, 0) is sqrt(2) * 2/3
    assert filled[2, 2] == 2.0
    # cell (1, 0): to (0, 0) is 1/3; to (2, 1) is sqrt(2)/3
    assert filled[1, 0] == 1.0
    np.testing.assert_array_equal(filled[0, 0], 1.0)
    np.testing.assert_array_equal(filled[2, 1], 2.0)


def test_correlated_pair_with_empty_cells_is_flagged_and_filled():
    rng = np.random.default_rng(3)
    z = rng.normal(size=(4000, 2))
    x = np.column_stack([z[:, 0], 0.95 * z[:, 0] + np.sqrt(1 - 0.95**2) * z[:, 1]])
    edges = np.linspace(-3, 3, 9)
    xa, xb = np.clip(x[:, 0], -3, 3), np.clip(x[:, 1], -3, 3)
    ia, ib = bins_of(xa, edges), bins_of(xb, edges)
    res = second_order_effect(ia, ib, xa * xb, edges_a=edges, edges_b=edges, route="dale")
    assert res.filled[0, -1] and res.filled[-1, 0]  # opposite corners of a strong correlation
    assert not np.isnan(res.cell_effect).any()
    np.testing.assert_array_equal(res.filled, res.counts == 0)


@settings(max_examples=40, deadline=None)
@given(
    ka=st.integers(1, 5),
    kb=st.integers(1, 5),
    seed=st.integers(0, 2**31 - 1),
)
def test_centering_gives_zero_weighted_mean_and_no_main_effect(ka, kb, seed):
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 20, size=(ka, kb))
    surface = accumulate_2d(rng.normal(size=(ka, kb)))
    h, _ = remove_main_effects(surface, counts)
    corners = (h[:-1, :-1] + h[:-1, 1:] + h[1:, :-1] + h[1:, 1:]) / 4
    np.testing.assert_allclose((counts * corners).sum() / counts.sum(), 0.0, atol=1e-12)
    # removing main effects again changes nothing but a constant
    again, offset = remove_main_effects(h, counts)
    np.testing.assert_allclose(again, h, atol=1e-12)
    np.testing.assert_allclose(offset, 0.0, atol=1e-12)


# -- from mergeable cell statistics -----------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    ka=st.integers(1, 6),
    kb=st.integers(1, 6),
    n=st.integers(1, 300),
    n_chunks=st.integers(2, 5),
    route=st.sampled_from(["classic", "dale"]),
    seed=st.integers(0, 2**31 - 1),
)
def test_statistics_merged_from_chunks_give_the_effect_of_all_rows(
    ka, kb, n, n_chunks, route, seed
):
    rng = np.random.default_rng(seed)
    edges_a = np.cumsum(rng.uniform(0.1, 2.0, ka + 1))
    edges_b = np.cumsum(rng.uniform(0.1, 2.0, kb + 1))
    # rows in a corner of the grid only, so that some grids have empty cells to fill
    ia = rng.integers(0, max(1, ka - 1), n) if rng.random() < 0.5 else rng.integers(0, ka, n)
    ib = rng.integers(0, kb, n)
    values = rng.normal(3.0, 2.0, n)
    whole = second_order_effect(ia, ib, values, edges_a=edges_a, edges_b=edges_b, route=route)

    cuts = np.sort(rng.integers(0, n + 1, n_chunks - 1))  # chunks may be empty
    bounds = [0, *cuts.tolist(), n]
    chunks = [
        pair_cells(ia[s:e], ib[s:e], values[s:e], shape=(ka, kb))
        for s, e in zip(bounds[:-1], bounds[1:], strict=True)
    ]
    merged = chunks[0]
    for chunk in chunks[1:]:
        merged = merged.merge(chunk)
    res = second_order_from_cells(merged, edges_a=edges_a, edges_b=edges_b, route=route)

    np.testing.assert_array_equal(res.counts, whole.counts)
    np.testing.assert_array_equal(res.filled, whole.filled)
    # entries that cancel to ~0 carry the rounding of the larger terms they came from
    scale = np.abs(whole.effect).max()
    np.testing.assert_allclose(res.effect, whole.effect, rtol=1e-12, atol=1e-12 * scale)
    np.testing.assert_allclose(res.cell_effect, whole.cell_effect, rtol=1e-12)
    np.testing.assert_allclose(res.cell_std, whole.cell_std, rtol=1e-12)
    np.testing.assert_allclose(res.center_offset, whole.center_offset, rtol=1e-12, atol=1e-12)


def test_pair_cells_leave_out_rows_outside_either_axis():
    c = pair_cells(np.array([0, -1, 1, 1]), np.array([0, 0, -1, 1]), np.ones(4), shape=(2, 2))
    assert c.counts.tolist() == [1, 0, 0, 1]


@settings(max_examples=40, deadline=None)
@given(
    ka=st.integers(1, 6),
    kb=st.integers(1, 6),
    route=st.sampled_from(["classic", "dale"]),
    seed=st.integers(0, 2**31 - 1),
)
def test_product_model_gives_the_doubly_centered_product_at_the_corners(ka, kb, route, seed):
    """f = x_a x_b with cell counts n_kl = r_k c_l (the two features independent).

    Derivation, independent of the code: the second-order difference of f over
    cell (k, l) is dz_k dw_l (and the mixed derivative is 1, times the cell
    area for DALE), so the accumulated surface is (z_k - z_0)(w_l - w_0). Its
    a-difference at corner l is dz_k (w_l - w_0); averaged over the two corners
    of each cell and weighted by c_l it is dz_k (w_bar - w_0) in every row k,
    with w_bar = sum_l c_l (w_{l-1} + w_l)/2 / sum c. Removing both main effects
    leaves (z_k - z_bar)(w_l - w_bar) plus a constant, and the count-weighted
    corner average of (z_k - z_bar)(w_l - w_bar) is already zero, so the effect
    is exactly the doubly-centered product.
    """
    rng = np.random.default_rng(seed)
    za = np.cumsum(rng.uniform(0.2, 2.0, ka + 1)) - 1.0
    wb = np.cumsum(rng.uniform(0.2, 2.0, kb + 1)) - 3.0
    r, c = rng.integers(1, 6, ka), rng.integers(1, 6, kb)
    counts = np.outer(r, c)
    ia = np.repeat(np.repeat(np.arange(ka), kb), counts.ravel())
    ib = np.repeat(np.tile(np.arange(kb), ka), counts.ravel())

    def f(xa, xb):
        return xa * xb

    if route == "classic":
        values = (
            f(za[ia + 1], wb[ib + 1])
            - f(za[ia], wb[ib + 1])
            - f(za[ia + 1], wb[ib])
            + f(za[ia], wb[ib])
        )
    else:
        values = np.ones(ia.size)  # d2(x_a x_b) / dx_a dx_b
    res = second_order_effect(ia, ib, values, edges_a=za, edges_b=wb, route=route)

    z_bar = np.sum(r * (za[:-1] + za[1:]) / 2) / r.sum()
    w_bar = np.sum(c * (wb[:-1] + wb[1:]) / 2) / c.sum()
    expected = np.outer(za - z_bar, wb - w_bar)
    np.testing.assert_array_equal(res.counts, counts)
    np.testing.assert_allclose(res.effect, expected, rtol=1e-9, atol=1e-12 * np.abs(expected).max())
