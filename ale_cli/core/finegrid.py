"""ALE of piecewise-constant models from secants across the bins of a fine grid
(docs/estimators.md, "Secants for tree models")::

    e_i  = (f(g_j, x_i,-s) - f(g_{j-1}, x_i,-s)) / (g_j - g_{j-1})     row i in fine bin j
    F(g_j) = sum_{l<=j} m_l (g_l - g_{l-1}),  m_l = mean_{i in l} e_i      (F(g_0) = 0)
    mu_k = (F(z_k) - F(z_{k-1})) / (z_k - z_{k-1})      (fine bins weighted by width)

Fine edges are type-1 quantile edges at ``j / K_FINE``; as ``ceil(N k / K) =
ceil(N (k r) / (K r))`` for ``K r = K_FINE``, quantile edges at any K dividing it are fine
edges, where ``F`` is exact. ``s_k`` is the std of the secants in coarse bin k.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ale_cli.core.binning import assign
from ale_cli.core.binstats import CellStats, cumsum0, fill_missing
from ale_cli.core.effect import FirstOrderEffect, effect_from_cells

#: Fine quantile bins per feature (240 = 2^4 * 3 * 5: many divisors)
K_FINE = 240
#: Median rows per fine bin below which the secants are too sparse (see :func:`sparse_reason`).
MIN_ROWS_PER_FINE_BIN = 20


@dataclass(frozen=True)
class Limits:
    """Each row's fine bin ``index`` (N,) (-1 outside ``[g_0, g_M]``) and the limits
    ``lower``, ``upper`` (N,) it is moved to: ``g_{j-1}``, ``g_j`` (outside: its own value)."""

    index: np.ndarray
    lower: np.ndarray
    upper: np.ndarray


def row_limits(x: np.ndarray, edges: np.ndarray) -> Limits:
    """The fine bin of each value and its limits.

    >>> lim = row_limits(np.array([0.0, 0.5, 1.0, 1.5]), np.array([0.0, 1.0, 2.0]))
    >>> lim.index.tolist(), lim.lower.tolist(), lim.upper.tolist()
    ([0, 0, 0, 1], [0.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 2.0])
    """
    x = np.asarray(x, dtype=np.float64)
    index = assign(x, edges).index
    inside = index >= 0
    safe = np.where(inside, index, 0)
    lower = np.where(inside, edges[safe], x)
    upper = np.where(inside, edges[safe + 1], x)
    return Limits(index=index, lower=lower, upper=upper)


def secants(rise: np.ndarray, run: np.ndarray) -> np.ndarray:
    """``rise / run = (f(upper) - f(lower)) / (upper - lower)`` per row; 0 where ``run == 0``.

    >>> secants(np.array([2.0, 0.0]), np.array([0.5, 0.0])).tolist()
    [4.0, 0.0]
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(run > 0, rise / np.where(run > 0, run, 1.0), 0.0)


@dataclass(frozen=True)
class FineCurve:
    """The uncentered fine-grid ALE: fine ``edges`` g (M+1,), ``slope`` m_j (M,) (empty bins
    interpolated) and ``value`` ``F(g_j)`` (M+1,), ``F(g_0) = 0``."""

    edges: np.ndarray
    slope: np.ndarray
    value: np.ndarray

    def at(self, z: np.ndarray) -> np.ndarray:
        """``F(z)``: linear inside each fine bin, continued with the end bins' slopes.

        >>> cells = CellStats.from_values(np.array([0, 1]), np.array([2.0, -1.0]), n_cells=2)
        >>> c = fine_curve(np.array([0.0, 1.0, 2.0]), cells)
        >>> c.at(np.array([-1.0, 0.5, 1.0, 1.5, 3.0])).tolist()
        [-2.0, 1.0, 2.0, 1.5, 0.0]
        """
        z = np.asarray(z, dtype=np.float64)
        g, v = self.edges, self.value
        out = np.interp(z, g, v)
        below, above = z < g[0], z > g[-1]
        out = np.where(below, v[0] + self.slope[0] * (z - g[0]), out)
        result: np.ndarray = np.where(above, v[-1] + self.slope[-1] * (z - g[-1]), out)
        return result


def fine_curve(edges: np.ndarray, cells: CellStats) -> FineCurve:
    """The fine-grid ALE from the secants' statistics per fine bin (M cells).

    >>> cells = CellStats.from_values(np.array([0, 0, 1]), np.array([1.0, 3.0, 4.0]), n_cells=2)
    >>> fine_curve(np.array([0.0, 1.0, 1.5]), cells).value.tolist()
    [0.0, 2.0, 4.0]
    """
    if cells.n_cells != edges.size - 1:
        raise ValueError(f"{cells.n_cells} cells do not match {edges.size} fine edges")
    centers = (edges[:-1] + edges[1:]) / 2.0
    slope = fill_missing(cells.mean, cells.counts > 0, centers)
    value = cumsum0(slope * np.diff(edges))
    return FineCurve(edges=edges, slope=slope, value=value)


def secant_effect(
    edges: np.ndarray, curve: FineCurve, cells: CellStats, *, center: str = "mean"
) -> FirstOrderEffect:
    """The effect on coarse ``edges`` (K+1,) from the fine curve (``mu_k``) and the secants'
    statistics per coarse bin (``cells``, K: counts and ``s_k``). The width-weighted coarse
    slope is (1 x 2 + 1 x 0) / 2 = 1, whatever the row counts:

    >>> fine = CellStats.from_values(np.array([0, 1, 1, 1]), np.array([2.0, 0, 0, 0]), n_cells=2)
    >>> curve = fine_curve(np.array([0.0, 1.0, 2.0]), fine)
    >>> coarse = CellStats.from_values(np.zeros(4, dtype=int), np.array([2.0, 0, 0, 0]), n_cells=1)
    >>> e = secant_effect(np.array([0.0, 2.0]), curve, coarse, center="start")
    >>> e.bin_effect.tolist(), e.effect.tolist()
    ([1.0], [0.0, 2.0])
    """
    edges = np.asarray(edges, dtype=np.float64)
    mu = np.diff(curve.at(edges)) / np.diff(edges)
    return effect_from_cells(edges, cells, center=center, mu=mu)


def replicate_curves(
    fine: np.ndarray, counts: np.ndarray, sums: np.ndarray, edges: np.ndarray
) -> np.ndarray:
    """Uncentered ``F_b`` (B, K+1) at coarse ``edges`` of bootstrap replicates whose
    weighted ``counts`` and ``sums`` of the secants per fine bin are (B, M).

    >>> replicate_curves(np.array([0.0, 1.0, 2.0]), np.array([[1.0, 1.0], [2.0, 0.0]]),
    ...                  np.array([[2.0, 0.0], [2.0, 0.0]]), np.array([0.0, 2.0])).tolist()
    [[0.0, 2.0], [0.0, 2.0]]
    """
    out = np.empty((counts.shape[0], edges.size))
    for b in range(counts.shape[0]):
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(counts[b] > 0, sums[b] / counts[b], 0.0)
        cells = CellStats(counts=counts[b].astype(np.int64), mean=mean, m2=np.zeros_like(mean))
        value = fine_curve(fine, cells).at(edges)
        out[b] = value - value[0]
    return out


def sparse_reason(counts: np.ndarray, *, min_rows: int = MIN_ROWS_PER_FINE_BIN) -> str | None:
    """Why a feature's secants are too sparse (fewer than ``min_rows`` rows in the median
    fine bin; ``bench/bench_secant.py``) for the store-based estimators, or None.

    >>> sparse_reason(np.array([2, 2, 3])) is not None, sparse_reason(np.full(4, 25))
    (True, None)
    """
    median = float(np.median(counts)) if counts.size else 0.0
    if median >= min_rows:
        return None
    return (
        f"secants on a fine grid of {counts.size} bins have a median of {median:g} rows per "
        f"fine bin (fewer than {min_rows}): too sparse; use 'ale classic'"
    )
