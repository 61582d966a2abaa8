"""The first-order effect of one feature on given edges, from its per-bin statistics.

Empty bins keep ``n_k = 0``, are flagged, and their ``mu_k`` is interpolated between the
neighbouring non-empty bins (constant at the ends), as ``s_k^2`` of bins with fewer than
2 rows is (``bin_std`` stays NaN). Then, with ``dz_k = z_k - z_{k-1}``, at the K+1 edges:

- effect: ``f(z_0) = 0``, ``f(z_k) = sum_{j<=k} mu_j dz_j``, linear between edges;
- heterogeneity (RHALE Eq. 16): ``STD(z_k) = sqrt(sum_{j<=k} dz_j^2 s_j^2)``;
- standard error (DALE Eq. 15): ``SE(z_k) = sqrt(sum_{j<=k} dz_j^2 s_j^2 / n_j)``;
- centering ``mean`` subtracts ``c = sum_k n_k (f(z_{k-1}) + f(z_k)) / 2 / N``;
  ``start`` and ``none`` nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ale_cli.core.binstats import CellStats, cumsum0, fill_missing

CENTER_MODES = ("mean", "start", "none")


def accumulate(
    edges: np.ndarray, bin_effect: np.ndarray, *, bin_var: np.ndarray, counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Uncentered effect f(z_k), heterogeneity STD(z_k) and standard error SE(z_k) at the
    edges (K+1,) from ``mu_k``, ``s_k^2`` (K,, no NaN) and ``n_k`` (0 counts as 1 in SE).

    >>> [a.tolist() for a in accumulate(np.array([0.0, 1.0, 3.0]), np.array([2.0, -1.0]),
    ...                                 bin_var=np.array([4.0, 1.0]), counts=np.array([4, 1]))]
    [[0.0, 2.0, 0.0], [0.0, 2.0, 2.8284271247461903], [0.0, 1.0, 2.23606797749979]]
    """
    dz = np.diff(edges)
    dz2var = dz * dz * bin_var
    return (
        cumsum0(bin_effect * dz),
        np.sqrt(cumsum0(dz2var)),
        np.sqrt(cumsum0(dz2var / np.maximum(counts, 1))),
    )


def check_center(mode: str) -> str:
    """``mode`` if it is one of :data:`CENTER_MODES`, else ValueError."""
    if mode not in CENTER_MODES:
        raise ValueError(f"center must be one of {', '.join(CENTER_MODES)}, got {mode!r}")
    return mode


def center_offset(
    effect: np.ndarray, counts: np.ndarray, *, mode: str = "mean", per_level: bool = False
) -> float:
    """The constant subtracted for centering ``mode`` (see the module docstring); with
    ``per_level``, ``counts`` (K+1,) weigh the points (``c = sum_k n_k f(l_k) / N``).

    >>> center_offset(np.array([0.0, 1.0, 3.0]), np.array([1, 3]), mode="mean")
    1.625
    """
    if check_center(mode) != "mean":
        return 0.0
    n = counts.sum()
    if n == 0:
        return 0.0
    mids = effect if per_level else (effect[:-1] + effect[1:]) / 2.0
    return float(np.dot(counts, mids) / n)


@dataclass(frozen=True)
class FirstOrderEffect:
    """Per bin (K,) ``counts``, ``bin_effect`` mu_k (interpolated where ``bin_filled``),
    ``bin_std`` s_k and ``bin_stderr`` (NaN where n_k < 2); at the K+1 ``edges`` the
    accumulated ``effect`` minus ``center_offset``, ``std`` and ``stderr``."""

    edges: np.ndarray
    counts: np.ndarray
    bin_effect: np.ndarray
    bin_std: np.ndarray
    bin_stderr: np.ndarray
    bin_filled: np.ndarray
    effect: np.ndarray
    std: np.ndarray
    stderr: np.ndarray
    center_offset: float


def effect_from_cells(
    edges: np.ndarray, cells: CellStats, *, center: str = "mean", mu: np.ndarray | None = None
) -> FirstOrderEffect:
    """The first-order effect from the cell statistics of the K bins of ``edges`` (K+1,),
    some n_k > 0: filled, accumulated and centered; ``mu``: the bin effects (K,, no NaN)
    instead of the cell means filled.

    >>> from ale_cli.core.binning import assign
    >>> x = np.array([0.0, 0.5, 1.0, 1.5, 2.0]); slope = np.full(5, 3.0)
    >>> edges = np.array([0.0, 1.0, 2.0])
    >>> cells = CellStats.from_values(assign(x, edges).index, slope, n_cells=2)
    >>> e = effect_from_cells(edges, cells, center="start")
    >>> e.effect.tolist(), e.std.tolist()
    ([0.0, 3.0, 6.0], [0.0, 0.0, 0.0])
    """
    n = cells.counts
    if n.size != edges.size - 1:
        raise ValueError(f"{n.size} bins do not match {edges.size} edges")
    centers = (edges[:-1] + edges[1:]) / 2.0
    if mu is None:
        mu = fill_missing(cells.mean, n > 0, centers)
    var = fill_missing(cells.var, n > 1, centers)
    effect, std, stderr = accumulate(edges, mu, bin_var=var, counts=n)
    offset = center_offset(effect, n, mode=center)
    return FirstOrderEffect(
        edges=edges,
        counts=n,
        bin_effect=mu,
        bin_std=cells.std,
        bin_stderr=cells.stderr,
        bin_filled=n == 0,
        effect=effect - offset,
        std=std,
        stderr=stderr,
        center_offset=offset,
    )
