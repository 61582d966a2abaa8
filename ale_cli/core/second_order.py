"""Second-order (pairwise) ALE from per-cell statistics of a per-row value: for classic
(Apley & Zhu 2020, Eq. 13-15) the second-order difference at the corners of the row's cell,
for DALE (Gkolemis et al. 2022, Eq. 9) the mixed derivative ``d2f / dx_a dx_b`` (times
``dz_k dw_l``); empty cells filled, accumulated, main effects removed, centered.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ale_cli.core.binstats import CellStats, cumsum0

#: The two per-row routes; ``classic`` values are differences, ``dale`` derivatives.
ROUTES = ("classic", "dale")


@dataclass(frozen=True)
class SecondOrderEffect:
    """A pair's doubly-centered effect: ``counts``, ``cell_effect`` (the cell's mean value,
    from the nearest non-empty cell where ``filled``), ``cell_std`` (ddof=1), ``filled``
    (K_a, K_b), cell (k, l) = (z_{k-1}, z_k] x (w_{l-1}, w_l]; ``effect`` (K_a + 1, K_b + 1)
    at the corners, minus ``center_offset``.
    """

    edges_a: np.ndarray
    edges_b: np.ndarray
    counts: np.ndarray
    cell_effect: np.ndarray
    cell_std: np.ndarray
    filled: np.ndarray
    effect: np.ndarray
    center_offset: float


def pair_cells(
    ia: np.ndarray, ib: np.ndarray, values: np.ndarray, *, shape: tuple[int, int]
) -> CellStats:
    """Mergeable statistics of ``values`` per cell ``(ia, ib)`` (N,) of a (K_a, K_b) grid,
    flattened to ``k * K_b + l``; a row with ``-1`` on either axis is in no cell.

    >>> c = pair_cells(np.array([0, 0, 1]), np.array([1, 1, 0]), np.array([1.0, 3.0, 5.0]),
    ...                shape=(2, 2))
    >>> c.counts.tolist(), c.mean.tolist()
    ([0, 2, 1, 0], [0.0, 2.0, 5.0, 0.0])
    """
    ia = np.asarray(ia, dtype=np.int64)
    ib = np.asarray(ib, dtype=np.int64)
    flat = np.where((ia >= 0) & (ib >= 0), ia * shape[1] + ib, -1)
    return CellStats.from_values(flat, values, n_cells=shape[0] * shape[1])


@dataclass(frozen=True)
class PairCells:
    """One pair's :func:`pair_cells`, its rows ``outside`` the grid and whether any value
    was ``nonzero``; merged as the cells merge, ``outside`` adds, ``nonzero`` ors.

    >>> a = pair_cells(np.array([0, 1]), np.array([1, 1]), np.array([1.0, 3.0]), shape=(2, 2))
    >>> m = PairCells.empty((2, 2)).merge(PairCells(a, outside=1, nonzero=True))
    >>> m.cells.counts.tolist(), m.outside, m.nonzero
    ([0, 1, 0, 1], 1, True)
    """

    cells: CellStats
    outside: int = 0
    nonzero: bool = False

    @classmethod
    def empty(cls, shape: tuple[int, int]) -> PairCells:
        return cls(CellStats.empty(shape[0] * shape[1]))

    def merge(self, other: PairCells) -> PairCells:
        return PairCells(
            self.cells.merge(other.cells),
            self.outside + other.outside,
            self.nonzero or other.nonzero,
        )


def fill_nearest(
    values: np.ndarray, empty: np.ndarray, edges_a: np.ndarray, edges_b: np.ndarray
) -> np.ndarray:
    """Every empty cell takes the value of the nearest non-empty one (cell centres, each
    axis divided by its range, as ALEPlot; ties to the first in row-major order; all
    empty: unchanged).

    >>> v = np.array([[1.0, np.nan], [np.nan, np.nan]])
    >>> fill_nearest(v, np.isnan(v), np.array([0., 1, 2]), np.array([0., 1, 10])).tolist()
    [[1.0, 1.0], [1.0, 1.0]]
    """
    out = values.copy()
    if not empty.any() or empty.all():
        return out
    ca = (edges_a[:-1] + edges_a[1:]) / 2 / (edges_a[-1] - edges_a[0])
    cb = (edges_b[:-1] + edges_b[1:]) / 2 / (edges_b[-1] - edges_b[0])
    pts = np.stack(np.meshgrid(ca, cb, indexing="ij"), axis=-1).reshape(-1, 2)
    src = np.flatnonzero(~empty.ravel())
    dst = np.flatnonzero(empty.ravel())
    d2 = ((pts[dst, None, :] - pts[None, src, :]) ** 2).sum(axis=2)
    out.ravel()[dst] = values.ravel()[src[np.argmin(d2, axis=1)]]
    return out


def accumulate_2d(increments: np.ndarray) -> np.ndarray:
    """Sum increments over both axes: corners (K_a+1, K_b+1), zero on the first row/column.

    >>> accumulate_2d(np.ones((2, 2))).tolist()
    [[0.0, 0.0, 0.0], [0.0, 1.0, 2.0], [0.0, 2.0, 4.0]]
    """
    ka, kb = increments.shape
    out = np.zeros((ka + 1, kb + 1))
    out[1:, 1:] = increments.cumsum(axis=0).cumsum(axis=1)
    return out


def _main_effect(surface: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``g_a`` (K+1,) of :func:`remove_main_effects` from h (K+1, L+1) and n (K, L)."""
    diff = surface[1:] - surface[:-1]  # Dh (K, L+1)
    mid = (diff[:, :-1] + diff[:, 1:]) / 2
    n = counts.sum(axis=1)
    weighted = (counts * mid).sum(axis=1)
    plain = mid.mean(axis=1)  # a slice with no rows at all: unweighted mean
    return cumsum0(np.where(n > 0, weighted / np.maximum(n, 1), plain))


def remove_main_effects(surface: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, float]:
    """Remove both first-order effects implied by ``surface`` h (at the corners; n the
    cell counts), then center it (Apley & Zhu Eq. 14-15, as ALEPlot)::

        g_a(k) = sum_{k' <= k} sum_l n_{k'l} (Dh_{k'l} + Dh_{k',l-1}) / 2 / n_{k'.}
        Dh_{kl} = h(k, l) - h(k-1, l)           (and the same for axis b)
        h <- h - g_a(k) - g_b(l)
        c = sum_{kl} n_{kl} (mean of the cell's four corners) / N;  h <- h - c

    Returns the centered surface and c. For f = x_a x_b on a uniform 2 x 2 grid
    over [0, 2]^2 the pure interaction is (x_a - 1)(x_b - 1):

    >>> h, c = remove_main_effects(accumulate_2d(np.ones((2, 2))), np.ones((2, 2), int))
    >>> h.tolist(), c
    ([[1.0, 0.0, -1.0], [0.0, 0.0, 0.0], [-1.0, 0.0, 1.0]], -1.0)
    """
    h = surface - _main_effect(surface, counts)[:, None] - _main_effect(surface.T, counts.T)
    corners = (h[:-1, :-1] + h[:-1, 1:] + h[1:, :-1] + h[1:, 1:]) / 4
    total = counts.sum()
    offset = float((counts * corners).sum() / total) if total else 0.0
    return h - offset, offset


def second_order_from_cells(
    cells: CellStats, *, edges_a: np.ndarray, edges_b: np.ndarray, route: str
) -> SecondOrderEffect:
    """The doubly-centered effect from the per-row values' K_a * K_b :func:`pair_cells`:
    increments the cell means (classic) or times ``dz_k * dw_l`` (dale), then
    :func:`accumulate_2d` and :func:`remove_main_effects`. Two chunks of rows merged:

    >>> e = np.array([0.0, 1.0, 2.0])
    >>> a = pair_cells(np.array([0, 1]), np.array([0, 1]), np.ones(2), shape=(2, 2))
    >>> b = pair_cells(np.array([0, 1]), np.array([1, 0]), np.ones(2), shape=(2, 2))
    >>> res = second_order_from_cells(a.merge(b), edges_a=e, edges_b=e, route="dale")
    >>> res.effect.tolist()
    [[1.0, 0.0, -1.0], [0.0, 0.0, 0.0], [-1.0, 0.0, 1.0]]
    """
    if route not in ROUTES:
        raise ValueError(f"route must be one of {ROUTES}, got {route!r}")
    shape = (len(edges_a) - 1, len(edges_b) - 1)
    if cells.n_cells != shape[0] * shape[1]:
        raise ValueError(f"{cells.n_cells} cells do not match a {shape[0]} x {shape[1]} grid")
    counts = cells.counts.reshape(shape)
    empty = counts == 0
    mean = fill_nearest(np.where(empty, np.nan, cells.mean.reshape(shape)), empty, edges_a, edges_b)
    increments = mean
    if route == "dale":
        increments = mean * np.outer(np.diff(edges_a), np.diff(edges_b))
    surface, offset = remove_main_effects(accumulate_2d(increments), counts)
    return SecondOrderEffect(
        edges_a=edges_a,
        edges_b=edges_b,
        counts=counts,
        cell_effect=mean,
        cell_std=cells.std.reshape(shape),
        filled=empty,
        effect=surface,
        center_offset=offset,
    )
