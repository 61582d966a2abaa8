"""Second-order core: known answers, fill of empty cells, centering invariants."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ale_cli.core.second_order import (
    accumulate_2d,
    cell_means,
    fill_nearest,
    remove_main_effects,
    second_order_effect,
)


def bins_of(x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """(z_{k-1}, z_k] membership with z_0 in the first bin, written out independently."""
    return np.clip(np.searchsorted(edges, x, side="left") - 1, 0, len(edges) - 2)


def test_cell_means_match_a_loop():
    rng = np.random.default_rng(0)
    ia, ib = rng.integers(0, 3, 200), rng.integers(0, 4, 200)
    v = rng.normal(size=200)
    cm = cell_means(ia, ib, v, shape=(3, 4))
    for k in range(3):
        for m in range(4):
            sel = v[(ia == k) & (ib == m)]
            assert cm.counts[k, m] == len(sel)
            np.testing.assert_allclose(cm.mean[k, m], sel.mean(), rtol=1e-12)
            np.testing.assert_allclose(cm.std[k, m], sel.std(ddof=1), rtol=1e-10)


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
