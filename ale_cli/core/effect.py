"""The first-order effect of one feature on given edges, from its per-bin statistics.

Empty bins keep ``n_k = 0``, are flagged, and their ``mu_k`` is interpolated between the
neighbouring non-empty bins (constant at the ends), as ``s_k^2`` of bins with fewer than
2 rows is for the accumulation (``bin_std`` stays NaN); then :mod:`~ale_cli.core.accumulate`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ale_cli.core.accumulate import accumulate, center_offset
from ale_cli.core.binstats import BinStats, CellStats, bin_stats, fill_missing


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

    @property
    def n_bins(self) -> int:
        return int(self.counts.size)


def effect_from_bins(
    edges: np.ndarray, stats: BinStats, *, center: str = "mean", mu: np.ndarray | None = None
) -> FirstOrderEffect:
    """Fill, accumulate and center per-bin statistics on ``edges`` (K+1,), some n_k > 0;
    ``mu``: the bin effects (K,, no NaN) instead of ``stats.mean`` filled."""
    if stats.counts.size != edges.size - 1:
        raise ValueError(f"{stats.counts.size} bins do not match {edges.size} edges")
    centers = (edges[:-1] + edges[1:]) / 2.0
    if mu is None:
        mu = fill_missing(stats.mean, stats.counts > 0, centers)
    var = fill_missing(stats.var, stats.counts > 1, centers)
    acc = accumulate(edges, mu, bin_var=var, counts=stats.counts)
    offset = center_offset(acc.effect, stats.counts, mode=center)
    return FirstOrderEffect(
        edges=edges,
        counts=stats.counts,
        bin_effect=mu,
        bin_std=stats.std,
        bin_stderr=stats.stderr,
        bin_filled=stats.counts == 0,
        effect=acc.effect - offset,
        std=acc.std,
        stderr=acc.stderr,
        center_offset=offset,
    )


def effect_from_cells(
    edges: np.ndarray, cells: CellStats, *, center: str = "mean"
) -> FirstOrderEffect:
    """The first-order effect from the cell statistics of the K bins of ``edges``.

    >>> from ale_cli.core.binning import assign
    >>> x = np.array([0.0, 0.5, 1.0, 1.5, 2.0]); slope = np.full(5, 3.0)
    >>> edges = np.array([0.0, 1.0, 2.0])
    >>> cells = CellStats.from_values(assign(x, edges).index, slope, n_cells=2)
    >>> e = effect_from_cells(edges, cells, center="start")
    >>> e.effect.tolist(), e.std.tolist()
    ([0.0, 3.0, 6.0], [0.0, 0.0, 0.0])
    """
    return effect_from_bins(edges, bin_stats(cells), center=center)
