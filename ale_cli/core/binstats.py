"""Per-cell sufficient statistics of the local effects, and the bin statistics from them.

Every estimator here needs only, per cell of a grid, the count ``n``, the sum
``S1`` and the sum of squares ``S2`` of the local effects in the cell. Those
merge across data chunks (add them), and any coarser bin made of consecutive
cells has the sums of its cells (prefix sums). The values are summed after
subtracting a per-feature ``shift`` (a typical value such as the mean), which
keeps ``S2 - S1^2 / n`` free of cancellation when the effects are nearly
constant.

From the statistics of a bin with ``n_k`` rows::

    mu_k  = shift + S1 / n_k                           (bin effect)
    s_k^2 = (S2 - S1^2 / n_k) / (n_k - 1)              (ddof = 1; NaN if n_k < 2)
    se_k  = s_k / sqrt(n_k)                            (standard error of mu_k)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ale_cli.core.binning import UniformGrid

#: rows per chunk in :func:`uniform_cells` (2048 x 32 float64 columns = 512 KiB per temporary)
CHUNK_ROWS = 2048


@dataclass(frozen=True)
class CellStats:
    """Counts, sums and sums of squares of ``v - shift`` per cell of one feature.

    Attributes
    ----------
    counts : ndarray, shape (M,), int64
    sums : ndarray, shape (M,), float64
        ``sum(v - shift)`` over the rows in each cell.
    sumsq : ndarray, shape (M,), float64
        ``sum((v - shift)^2)`` over the rows in each cell.
    shift : float
        The value subtracted before summing.
    """

    counts: np.ndarray
    sums: np.ndarray
    sumsq: np.ndarray
    shift: float = 0.0

    @property
    def n_cells(self) -> int:
        return int(self.counts.size)

    @property
    def total(self) -> int:
        """Rows in all cells together."""
        return int(self.counts.sum())

    @classmethod
    def from_values(
        cls, index: np.ndarray, values: np.ndarray, *, n_cells: int, shift: float | None = None
    ) -> CellStats:
        """Statistics of ``values`` grouped by cell ``index`` (``-1`` = not in any cell).

        ``shift`` defaults to the mean of the values in the cells.

        >>> c = CellStats.from_values(np.array([0, 0, 1, -1]), np.array([1.0, 3.0, 5.0, 9.0]),
        ...                           n_cells=3, shift=0.0)
        >>> c.counts.tolist(), c.sums.tolist(), c.sumsq.tolist()
        ([2, 1, 0], [4.0, 5.0, 0.0], [10.0, 25.0, 0.0])
        """
        index = np.asarray(index, dtype=np.int64)
        values = np.asarray(values, dtype=np.float64)
        inside = index >= 0
        if not np.all(inside):
            index, values = index[inside], values[inside]
        if shift is None:
            shift = float(values.mean()) if values.size else 0.0
        dev = values - shift
        return cls(
            counts=np.bincount(index, minlength=n_cells).astype(np.int64),
            sums=np.bincount(index, weights=dev, minlength=n_cells),
            sumsq=np.bincount(index, weights=dev * dev, minlength=n_cells),
            shift=float(shift),
        )

    def rebase(self, shift: float) -> CellStats:
        """The same statistics about another shift c: ``sum(v - c) = S1 + n (s - c)`` etc."""
        d = self.shift - shift
        return CellStats(
            counts=self.counts,
            sums=self.sums + self.counts * d,
            sumsq=self.sumsq + 2.0 * d * self.sums + self.counts * d * d,
            shift=float(shift),
        )

    def merge(self, other: CellStats) -> CellStats:
        """Statistics of the union of two chunks on the same grid (in this one's shift).

        >>> a = CellStats.from_values(np.array([0, 1]), np.array([1.0, 2.0]), n_cells=2)
        >>> b = CellStats.from_values(np.array([1]), np.array([4.0]), n_cells=2)
        >>> bin_stats(a.merge(b)).mean.tolist()
        [1.0, 3.0]
        """
        if other.n_cells != self.n_cells:
            raise ValueError(f"cannot merge {self.n_cells} cells with {other.n_cells} cells")
        o = other.rebase(self.shift)
        return CellStats(
            counts=self.counts + o.counts,
            sums=self.sums + o.sums,
            sumsq=self.sumsq + o.sumsq,
            shift=self.shift,
        )

    def prefix(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Prefix sums ``P[i] = sum over cells < i`` of counts, sums, sumsq; shape (M+1,)."""
        zero = np.zeros(1)
        return (
            np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(self.counts)]),
            np.concatenate([zero, np.cumsum(self.sums)]),
            np.concatenate([zero, np.cumsum(self.sumsq)]),
        )

    def coarsen(self, limits: np.ndarray) -> CellStats:
        """Statistics of the bins made of cells ``limits[k] .. limits[k+1] - 1``.

        ``limits`` are increasing cell boundaries from 0 to M (shape (K+1,)).

        >>> c = CellStats.from_values(np.array([0, 1, 2, 2]), np.array([1.0, 2, 3, 4]), n_cells=3,
        ...                           shift=0.0)
        >>> c.coarsen(np.array([0, 1, 3])).counts.tolist()
        [1, 3]
        """
        limits = np.asarray(limits, dtype=np.int64)
        if limits[0] != 0 or limits[-1] != self.n_cells or np.any(np.diff(limits) <= 0):
            raise ValueError("limits must increase strictly from 0 to the number of cells")
        # reduceat sums each run of cells directly (no cancellation from prefix differences)
        starts = limits[:-1]
        return CellStats(
            counts=np.add.reduceat(self.counts, starts),
            sums=np.add.reduceat(self.sums, starts),
            sumsq=np.add.reduceat(self.sumsq, starts),
            shift=self.shift,
        )


def uniform_cells(
    X: np.ndarray,
    values: np.ndarray,
    grid: UniformGrid,
    *,
    shift: np.ndarray | None = None,
    chunk_rows: int = CHUNK_ROWS,
) -> list[CellStats]:
    """:meth:`CellStats.from_values` for every column of (N, D) arrays on a uniform grid.

    Rows are processed in chunks of ``chunk_rows`` (so the temporaries stay in
    cache) and the chunks' statistics are added, as any streaming source
    would. Within a chunk, column j's cells are offset by ``j * K`` so that one
    ``np.bincount`` over the flattened chunk fills every column at once.
    ``shift`` (D,) defaults to the column means of ``values``. Every value of
    column j must lie inside the grid's ``[z_0, z_K]``.

    Returns
    -------
    list of CellStats, length D, each with K cells

    >>> g = UniformGrid.build(np.array([0.0, 0.0]), np.array([1.0, 1.0]), bins=2)
    >>> cells = uniform_cells(np.array([[0.0, 1.0], [1.0, 1.0]]), np.ones((2, 2)), g)
    >>> [c.counts.tolist() for c in cells]
    [[1, 1], [0, 2]]
    """
    n, d = X.shape
    k = grid.bins
    if shift is None:
        shift = values.mean(axis=0) if n else np.zeros(d)
    offsets = np.arange(d, dtype=np.int64) * k
    size = d * k
    counts = np.zeros(size, dtype=np.int64)
    sums = np.zeros(size)
    sumsq = np.zeros(size)
    for start in range(0, n, chunk_rows):
        index = grid.index(X[start : start + chunk_rows])
        index += offsets
        flat = index.ravel()
        dev = values[start : start + chunk_rows] - shift
        counts += np.bincount(flat, minlength=size)
        sums += np.bincount(flat, weights=dev.ravel(), minlength=size)
        dev *= dev
        sumsq += np.bincount(flat, weights=dev.ravel(), minlength=size)
    return [
        CellStats(
            counts=counts[j * k : (j + 1) * k],
            sums=sums[j * k : (j + 1) * k],
            sumsq=sumsq[j * k : (j + 1) * k],
            shift=float(shift[j]),
        )
        for j in range(d)
    ]


@dataclass(frozen=True)
class BinStats:
    """Statistics of the local effects per bin.

    Attributes
    ----------
    counts : ndarray, shape (K,), int64
        Rows per bin ``n_k``.
    mean : ndarray, shape (K,)
        Bin effect ``mu_k``; NaN for an empty bin.
    var : ndarray, shape (K,)
        ``s_k^2`` with ddof=1; NaN when ``n_k < 2``.
    std : ndarray, shape (K,)
        ``s_k``; NaN when ``n_k < 2``.
    stderr : ndarray, shape (K,)
        ``s_k / sqrt(n_k)``; NaN when ``n_k < 2``.
    """

    counts: np.ndarray
    mean: np.ndarray
    var: np.ndarray
    std: np.ndarray
    stderr: np.ndarray


def bin_stats(cells: CellStats) -> BinStats:
    """Bin effect, std (ddof=1) and standard error of each cell of ``cells``.

    ``s_k^2 = (S2 - S1^2 / n_k) / (n_k - 1)``, clipped at 0 against rounding.

    >>> b = bin_stats(CellStats.from_values(np.array([0, 0, 0, 1]),
    ...                                     np.array([1.0, 2.0, 3.0, 7.0]), n_cells=3))
    >>> b.mean.tolist(), b.std.tolist()
    ([2.0, 7.0, nan], [1.0, nan, nan])
    """
    n = cells.counts
    nf = n.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, cells.shift + cells.sums / nf, np.nan)
        ss = np.maximum(cells.sumsq - cells.sums * cells.sums / nf, 0.0)
        var = np.where(n > 1, ss / (nf - 1.0), np.nan)
        std = np.sqrt(var)
        stderr = std / np.sqrt(nf)
    return BinStats(counts=n, mean=mean, var=var, std=std, stderr=stderr)


def fill_missing(values: np.ndarray, valid: np.ndarray, centers: np.ndarray) -> np.ndarray:
    """Replace ``values[~valid]`` by linear interpolation between valid neighbours.

    Interpolates in ``centers`` (the bin midpoints); constant beyond the first
    and last valid bin. All-invalid input gives all zeros (nothing to fill from).

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
