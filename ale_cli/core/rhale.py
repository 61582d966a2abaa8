"""RHALE automatic bin splitting (Gkolemis et al. 2023) as a shortest path over a grid.

A partition of the grid ``g_0 < ... < g_M`` (M = K_max cells) is a path ``0 = l_0 < ... <
l_K = M``, bin k the cells ``l_{k-1} .. l_k - 1``, of cost::

    L = sum_k tau_k s_k^2 dz_k,    tau_k = 1 - alpha n_k / N,   dz_k = g_{l_k} - g_{l_{k-1}}

subject to ``n_k >= N_ppb >= 2``: prefix sums give every bin's cost, a dynamic programme
the cheapest path. A bin's variance counts as zero when ``s_k <= RTOL * rms`` (rms of the
feature's effects; RTOL above float32 rounding), so that effects equal up to rounding (a
linear term) cost 0 for every partition and take the single bin (ties: fewest bins).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ale_cli.core.binstats import CellStats

DEFAULT_MAX_BINS = 50
DEFAULT_ALPHA = 0.2
#: relative tolerance on a bin's std in the cost (see the module docstring)
RTOL = 1e-6


@dataclass(frozen=True)
class Partition:
    """The optimal bins: grid points ``limits`` (K+1,), ``edges = grid[limits]``,
    ``objective`` L; not ``feasible``: no partition has ``n_k >= min_points`` (one bin)."""

    limits: np.ndarray
    edges: np.ndarray
    objective: float
    feasible: bool

    @property
    def n_bins(self) -> int:
        return int(self.limits.size - 1)


def default_min_points(n_rows: int) -> int:
    """The paper's default ``N_ppb = ceil(N / 20)``, at least 2.

    >>> default_min_points(1000), default_min_points(10)
    (50, 2)
    """
    return max(2, math.ceil(n_rows / 20))


def bin_costs(
    grid: np.ndarray, cells: CellStats, *, alpha: float, min_points: int, rtol: float = RTOL
) -> np.ndarray:
    """Cost ``tau s^2 dz`` (M+1, M+1) of a bin from grid point i to j, for i < j with at
    least ``min_points`` rows (``inf`` elsewhere; ``s^2`` is 0 where ``s <= rtol * rms``).

    >>> cells = CellStats.from_values(np.array([0, 0, 1, 1]), np.array([1.0, 3.0, 4.0, 4.0]),
    ...                               n_cells=2)
    >>> bin_costs(np.array([0.0, 1.0, 2.0]), cells, alpha=0.0, min_points=2)
    array([[inf,  2.,  4.],
           [inf, inf,  0.],
           [inf, inf, inf]])
    >>> noisy = CellStats.from_values(np.array([0, 0, 1, 1]), 3.0 + np.array([0, 1, 0, 1]) * 1e-15,
    ...                               n_cells=2)
    >>> bin_costs(np.array([0.0, 1.0, 2.0]), noisy, alpha=0.0, min_points=2)[0, 2]
    np.float64(0.0)
    """
    if min_points < 2:
        raise ValueError(f"min_points must be at least 2, got {min_points}")
    pn, p1, p2 = cells.prefix()
    n = (pn[None, :] - pn[:, None]).astype(np.float64)
    s1 = p1[None, :] - p1[:, None]
    s2 = p2[None, :] - p2[:, None]
    dz = grid[None, :] - grid[:, None]
    ok = np.triu(n >= min_points, k=1)
    total = float(pn[-1])
    squares = cells.m2.sum() + np.dot(cells.counts, cells.mean * cells.mean)  # sum of e^2
    square = float(squares / total) if total else 0.0
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.maximum(s2 - s1 * s1 / n, 0.0) / (n - 1.0)
        var[var <= rtol * rtol * square] = 0.0
        cost = (1.0 - alpha * n / total) * var * dz
    return np.where(ok, cost, np.inf)


def shortest_path(cost: np.ndarray) -> tuple[np.ndarray, float]:
    """Cheapest path ``0 -> M`` by ``best[j] = min_{i<j} best[i] + cost[i, j]`` (ties to the
    smallest i); empty if M is unreachable.

    >>> c = np.full((3, 3), np.inf); c[0, 1] = 1.0; c[1, 2] = 1.0; c[0, 2] = 3.0
    >>> shortest_path(c)
    (array([0, 1, 2]), 2.0)
    """
    m = cost.shape[0] - 1
    best = np.full(m + 1, np.inf)
    best[0] = 0.0
    prev = np.full(m + 1, -1, dtype=np.int64)
    for j in range(1, m + 1):
        total = best[:j] + cost[:j, j]
        i = int(np.argmin(total))
        if np.isfinite(total[i]):
            best[j] = total[i]
            prev[j] = i
    if not np.isfinite(best[m]):
        return np.zeros(0, dtype=np.int64), math.inf
    path = [m]
    while path[-1] != 0:
        path.append(int(prev[path[-1]]))
    return np.array(path[::-1], dtype=np.int64), float(best[m])


def optimal_partition(
    grid: np.ndarray,
    cells: CellStats,
    *,
    min_points: int,
    alpha: float = DEFAULT_ALPHA,
    rtol: float = RTOL,
) -> Partition:
    """RHALE's partition of ``grid`` (M+1,) minimising L with ``n_k >= min_points``, from
    the local effects' statistics in its M ``cells``.

    >>> x = np.array([0.1, 0.2, 0.3, 0.4, 1.6, 1.7, 1.8, 1.9])
    >>> slope = np.array([1.0, 1.1, 1.0, 1.1, -1.0, -0.5, -1.0, -0.5])  # noisier on the right
    >>> from ale_cli.core.binning import assign
    >>> grid = np.linspace(0.0, 2.0, 5)
    >>> p = optimal_partition(grid, CellStats.from_values(assign(x, grid).index, slope, n_cells=4),
    ...                       min_points=2)
    >>> p.edges.tolist(), p.feasible
    ([0.0, 1.5, 2.0], True)
    """
    if cells.n_cells != grid.size - 1:
        raise ValueError(f"{cells.n_cells} cells do not match a grid of {grid.size} points")
    cost = bin_costs(grid, cells, alpha=alpha, min_points=min_points, rtol=rtol)
    path, objective = shortest_path(cost)
    feasible = path.size > 0
    if not feasible:
        m = cells.n_cells
        path = np.array([0, m], dtype=np.int64)
        relaxed = bin_costs(grid, cells, alpha=alpha, min_points=2, rtol=rtol)[0, m]
        objective = float(relaxed) if np.isfinite(relaxed) else math.nan
    return Partition(limits=path, edges=grid[path], objective=objective, feasible=feasible)
