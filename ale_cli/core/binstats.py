"""Per-cell sufficient statistics of the local effects, and the bin statistics from them.

Per cell: count, mean and ``M2`` (the sum of squared deviations from the cell mean), so
a bin of equal values has exactly ``M2 = 0``. Two sets on the same cells merge exactly
(Chan, Golub & LeVeque). For a bin of ``n_k`` rows::

    mu_k  = mean_k                                      (bin effect)
    s_k^2 = M2_k / (n_k - 1)                            (ddof = 1; NaN if n_k < 2)
    se_k  = s_k / sqrt(n_k)                             (standard error of mu_k)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ale_cli.core.binning import UniformGrid

#: rows per chunk in :func:`uniform_cells` (temporaries stay in cache)
CHUNK_ROWS = 2048


@dataclass(frozen=True)
class CellStats:
    """``counts`` (int64), ``mean`` (0 for an empty cell) and ``m2 = sum((v - mean)^2)`` of
    the local effects per cell, each (M,)."""

    counts: np.ndarray
    mean: np.ndarray
    m2: np.ndarray

    @property
    def n_cells(self) -> int:
        return int(self.counts.size)

    def take(self, index: slice | np.ndarray) -> CellStats:
        """The statistics of the cells ``index``."""
        return CellStats(self.counts[index], self.mean[index], self.m2[index])

    @property
    def total(self) -> int:
        """Rows in all cells together."""
        return int(self.counts.sum())

    @property
    def var(self) -> np.ndarray:
        """``s^2 = M2 / (n - 1)`` per cell (ddof = 1; NaN where n < 2).

        >>> c = CellStats.from_values(np.array([0, 0, 0, 1]), np.array([1.0, 2, 3, 7]), n_cells=3)
        >>> c.var.tolist(), c.std.tolist(), c.stderr[:1].tolist()
        ([1.0, nan, nan], [1.0, nan, nan], [0.5773502691896258])
        """
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.counts > 1, self.m2 / (self.counts - 1.0), np.nan)

    @property
    def std(self) -> np.ndarray:
        """``s = sqrt(s^2)`` per cell."""
        std: np.ndarray = np.sqrt(self.var)
        return std

    @property
    def stderr(self) -> np.ndarray:
        """``s / sqrt(n)`` per cell (the standard error of the cell mean)."""
        stderr: np.ndarray = self.std / np.sqrt(self.counts)
        return stderr

    @classmethod
    def empty(cls, n_cells: int) -> CellStats:
        """``n_cells`` cells holding no values (the neutral element of :meth:`merge`)."""
        return cls(np.zeros(n_cells, dtype=np.int64), np.zeros(n_cells), np.zeros(n_cells))

    @classmethod
    def from_values(
        cls, index: np.ndarray, values: np.ndarray, *, n_cells: int, all_inside: bool = False
    ) -> CellStats:
        """Statistics of ``values`` grouped by cell ``index`` (``-1`` = not in any cell;
        ``all_inside``: the caller knows there is none, which skips two passes).

        >>> c = CellStats.from_values(np.array([0, 0, 1, -1]), np.array([1.0, 3.0, 5.0, 9.0]),
        ...                           n_cells=3)
        >>> c.counts.tolist(), c.mean.tolist(), c.m2.tolist()
        ([2, 1, 0], [2.0, 5.0, 0.0], [2.0, 0.0, 0.0])
        """
        index = np.asarray(index, dtype=np.intp)
        values = np.asarray(values, dtype=np.float64)
        if not all_inside:
            inside = index >= 0
            if not np.all(inside):
                index, values = index[inside], values[inside]
        counts = np.bincount(index, minlength=n_cells)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.bincount(index, weights=values, minlength=n_cells) / counts
        mean[counts == 0] = 0.0
        dev = values - mean.take(index)
        dev *= dev
        m2 = np.bincount(index, weights=dev, minlength=n_cells)
        return cls(counts.astype(np.int64), mean, m2)

    def divided_by(self, widths: np.ndarray) -> CellStats:
        """Statistics of the values divided by ``widths`` (M,): ``mean / w``, ``M2 / w^2``.

        >>> c = CellStats.from_values(np.array([0, 0, 1]), np.array([1.0, 3.0, 5.0]), n_cells=2)
        >>> d = c.divided_by(np.array([2.0, 0.5]))
        >>> d.mean.tolist(), d.m2.tolist()
        ([1.0, 10.0], [0.5, 0.0])
        """
        return CellStats(counts=self.counts, mean=self.mean / widths, m2=self.m2 / widths**2)

    def merge(self, other: CellStats) -> CellStats:
        """Statistics of the union of two chunks on the same cells (Chan et al.).

        >>> a = CellStats.from_values(np.array([0, 1]), np.array([1.0, 2.0]), n_cells=2)
        >>> b = CellStats.from_values(np.array([1]), np.array([4.0]), n_cells=2)
        >>> m = a.merge(b)
        >>> m.mean.tolist(), m.m2.tolist()
        ([1.0, 3.0], [0.0, 2.0])
        """
        if other.n_cells != self.n_cells:
            raise ValueError(f"cannot merge {self.n_cells} cells with {other.n_cells} cells")
        n = self.counts + other.counts
        with np.errstate(invalid="ignore", divide="ignore"):
            wb = np.where(n > 0, other.counts / n, 0.0)
        delta = other.mean - self.mean
        m2 = self.m2 + other.m2 + delta * delta * self.counts * wb
        return CellStats(n, self.mean + delta * wb, m2)

    def prefix(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Prefix sums (M+1,) over cells ``< i`` of n, ``S1 = sum(v - c)`` and
        ``S2 = sum((v - c)^2) = M2 + n (mean - c)^2`` about the overall mean c: the variance of
        cells i..j-1 is ``(S2 - S1^2 / n) / (n - 1)`` of the differences."""
        total = self.total
        c = float(np.dot(self.counts, self.mean) / total) if total else 0.0
        d = self.mean - c
        s1 = self.counts * d
        s2 = self.m2 + s1 * d
        return cumsum0(self.counts), cumsum0(s1), cumsum0(s2)

    def grouped(self, owner: np.ndarray, *, n_groups: int) -> CellStats:
        """Statistics of the groups of cells, cell i in group ``owner[i]`` (M,): ``n = sum n_c``,
        ``mean = sum n_c mean_c / n``, ``M2 = sum M2_c + sum n_c (mean_c - mean)^2``.

        >>> c = CellStats.from_values(np.array([0, 1, 2, 2]), np.array([1.0, 2, 4, 6]), n_cells=3)
        >>> g = c.grouped(np.array([0, 2, 2]), n_groups=3)
        >>> g.counts.tolist(), g.mean.tolist(), g.m2.tolist()
        ([1, 0, 3], [1.0, 0.0, 4.0], [0.0, 0.0, 8.0])
        """
        owner = np.asarray(owner, dtype=np.intp)
        counts = np.bincount(owner, weights=self.counts, minlength=n_groups).astype(np.int64)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.bincount(owner, weights=self.counts * self.mean, minlength=n_groups) / counts
        mean[counts == 0] = 0.0
        d = self.mean - mean.take(owner)
        m2 = np.bincount(owner, weights=self.m2 + self.counts * d * d, minlength=n_groups)
        return CellStats(counts=counts, mean=mean, m2=m2)

    def coarsen(self, limits: np.ndarray) -> CellStats:
        """Statistics of the bins of cells ``limits[k] .. limits[k+1] - 1`` (``limits`` (K+1,)
        increasing from 0 to M), as :meth:`grouped`.

        >>> c = CellStats.from_values(np.array([0, 1, 2, 2]), np.array([1.0, 2, 4, 6]), n_cells=3)
        >>> b = c.coarsen(np.array([0, 1, 3]))
        >>> b.counts.tolist(), b.mean.tolist(), b.m2.tolist()
        ([1, 3], [1.0, 4.0], [0.0, 8.0])
        """
        limits = np.asarray(limits, dtype=np.int64)
        if limits[0] != 0 or limits[-1] != self.n_cells or np.any(np.diff(limits) <= 0):
            raise ValueError("limits must increase strictly from 0 to the number of cells")
        starts = limits[:-1]
        counts = np.add.reduceat(self.counts, starts)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.add.reduceat(self.counts * self.mean, starts) / counts
        mean[counts == 0] = 0.0
        owner = np.repeat(np.arange(starts.size), np.diff(limits))
        d = self.mean - mean[owner]
        m2 = np.add.reduceat(self.m2 + self.counts * d * d, starts)
        return CellStats(counts=counts, mean=mean, m2=m2)


def cumsum0(values: np.ndarray) -> np.ndarray:
    """``[0, v_0, v_0 + v_1, ...]`` (M+1,) of int64 or float64 ``values`` (M,), in their dtype."""
    out = np.zeros(values.size + 1, dtype=values.dtype)
    np.cumsum(values, out=out[1:])
    return out


def uniform_cells(
    X: np.ndarray, values: np.ndarray, grid: UniformGrid, *, chunk_rows: int = CHUNK_ROWS
) -> list[CellStats]:
    """:meth:`CellStats.from_values` for every column of (N, D) arrays on a uniform grid
    (every value inside ``[z_0, z_K]``): D lists of K cells, one bincount for all columns.

    >>> g = UniformGrid.build(np.array([0.0, 0.0]), np.array([1.0, 1.0]), bins=2)
    >>> cells = uniform_cells(np.array([[0.0, 1.0], [1.0, 1.0]]), np.ones((2, 2)), g)
    >>> [c.counts.tolist() for c in cells]
    [[1, 1], [0, 2]]
    """
    n, d = X.shape
    k = grid.bins
    offsets = np.arange(d, dtype=np.int64) * k
    acc = CellStats.empty(d * k)
    for start in range(0, n, chunk_rows):
        index = grid.index(X[start : start + chunk_rows])
        index += offsets
        rows = values[start : start + chunk_rows].ravel()
        chunk = CellStats.from_values(index.ravel(), rows, n_cells=d * k, all_inside=True)
        acc = chunk if start == 0 else acc.merge(chunk)
    return [acc.take(slice(j * k, (j + 1) * k)) for j in range(d)]


def fill_missing(values: np.ndarray, valid: np.ndarray, centers: np.ndarray) -> np.ndarray:
    """``values[~valid]`` interpolated in ``centers`` between valid neighbours (constant
    beyond the ends; all invalid: zeros).

    >>> fill_missing(np.array([1.0, np.nan, 3.0, np.nan]), np.array([True, False, True, False]),
    ...              np.array([0.5, 1.5, 2.5, 3.5]))
    array([1., 2., 3., 3.])
    """
    values = np.asarray(values, dtype=np.float64)
    valid = np.asarray(valid, dtype=bool)
    if valid.all():
        return values.copy()
    if not valid.any():
        return np.zeros_like(values)
    out = values.copy()
    out[~valid] = np.interp(centers[~valid], centers[valid], values[valid])
    return out
