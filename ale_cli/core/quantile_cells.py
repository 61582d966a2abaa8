"""Quantile bins in two passes (a speed tuning of ``ale rebin --binning quantile``,
``bench/bench_scale.py``): exact type-1 quantile edges and the cells of the local effects in
them, on :func:`~ale_cli.core.outofcore.locate` and :func:`~ale_cli.core.outofcore.select`.

1. count each column's values in equal-width buckets (:class:`BucketGrid`);
2. per chunk (:meth:`QuantilePlan.scan`), the effects' statistics per segment (the runs of
   buckets between those holding a quantile: each inside one bin) and the rows of the
   position buckets, among which :meth:`QuantilePlan.finish` selects.

A column comes back None (for the out-of-core passes) when a position bucket holds more
than :data:`MAX_BUCKET_ROWS` rows of several values or its range has no finite width.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ale_cli.core.binning import assign
from ale_cli.core.binstats import CellStats
from ale_cli.core.outofcore import locate, quantile_positions, select

#: Largest bucket whose rows are gathered in pass 2 (a larger one must hold one value)
MAX_BUCKET_ROWS = 1 << 16
#: Rows gathered in pass 2 over all columns together (x and effect: 16 bytes a row)
MAX_GATHERED_ROWS = 1 << 22
#: Rows of a chunk worked on at once in pass 2 (4096 x 32 float64 columns: 1 MiB)
SCAN_ROWS = 4096
#: rows per block of the bucket counts of pass 1 (:meth:`BucketGrid.counts`)
COUNT_ROWS = 16384


@dataclass(frozen=True)
class BucketGrid:
    """Equal-width buckets for D columns at once: ``b_j(x) = floor((x - lo_j) scale_j)``.

    ``scale_j = size / (hi_j - lo_j)`` shrunk by ``2^-20`` relative, so that every value of
    ``[lo_j, hi_j]`` lands in ``0 .. size-1`` without clipping; ``b_j`` is monotone in x.
    ``lo``, ``scale`` (D,) in the dtype the buckets are computed in (float32 when the
    column's range allows); ``usable`` (D,): a finite, non-zero scale (else bucket 0).
    """

    lo: np.ndarray
    scale: np.ndarray
    size: int
    usable: np.ndarray

    @classmethod
    def build(cls, lo: np.ndarray, hi: np.ndarray, *, size: int, dtype: Any) -> BucketGrid:
        """The grid in float32 if ``dtype`` is and every scale is finite there, else float64."""
        for ftype in (np.float32, np.float64) if dtype == np.float32 else (np.float64,):
            with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
                lo_t: np.ndarray = np.asarray(lo, dtype=ftype)
                width: np.ndarray = np.asarray(hi, dtype=ftype) - lo_t
                scale: np.ndarray = np.asarray(size, dtype=ftype) / width
                scale *= np.asarray(1.0 - 2.0**-20, dtype=ftype)
            usable = np.isfinite(width) & (width > 0) & np.isfinite(scale) & (scale > 0)
            if usable.all() or ftype == np.float64:
                break
        return cls(lo_t, np.where(usable, scale, 0).astype(ftype), size, usable)

    def flat(self, X: np.ndarray) -> np.ndarray:
        """Bucket of each value of X (n, D) as ``j * size + b_j(x)``: shape (n, D), intp."""
        u = np.subtract(X, self.lo, dtype=self.lo.dtype)
        u *= self.scale
        b: np.ndarray = u.astype(np.intp)  # u >= 0: truncation is floor
        b += np.arange(0, self.lo.size * self.size, self.size, dtype=np.intp)
        return b

    def counts(self, X: np.ndarray) -> np.ndarray:
        """Values per bucket of X (n, D): shape (D * size,), int64, :data:`COUNT_ROWS` rows
        at a time (pass 1 of a chunk)."""
        total = self.lo.size * self.size
        out = np.zeros(total, dtype=np.int64)
        for start in range(0, len(X), COUNT_ROWS):
            out += np.bincount(self.flat(X[start : start + COUNT_ROWS]).ravel(), minlength=total)
        return out


@dataclass(frozen=True)
class QuantileCells:
    """One column's type-1 quantile edges (K+1,) and the cell statistics (K cells) of its
    local effects in those bins."""

    edges: np.ndarray
    cells: CellStats


@dataclass(frozen=True)
class _Scan:
    """Pass 2's state: statistics per cell, the gathered rows (cell, x, effect) per chunk,
    and per big bucket whether ``seen``, one of its x values and whether it holds another."""

    stats: CellStats
    rows: tuple[tuple[np.ndarray, np.ndarray, np.ndarray], ...]
    seen: np.ndarray
    rep: np.ndarray
    varied: np.ndarray

    def merge(self, other: _Scan) -> _Scan:
        both = self.seen & other.seen
        return _Scan(
            stats=self.stats.merge(other.stats),
            rows=self.rows + other.rows,
            seen=self.seen | other.seen,
            rep=np.where(self.seen, self.rep, other.rep),
            varied=self.varied | other.varied | (both & (self.rep != other.rep)),
        )


@dataclass(frozen=True)
class QuantilePlan:
    """After pass 1: where each column's quantile positions lie, and the cells of pass 2.

    Per column j the buckets holding a quantile position (``homes[j]``, increasing) cut the
    others into segments: cell ``base[j] + 2 s`` is segment s, cell ``base[j] + 2 i + 1``
    position bucket i, whose rows are gathered (``kind`` 1) or, when too many, only checked
    for holding one distinct value (``kind`` 2); ``lut`` maps a flat bucket to its cell.
    """

    grid: BucketGrid
    homes: tuple[np.ndarray, ...]
    ranks: tuple[np.ndarray, ...]
    where: tuple[np.ndarray, ...]
    base: np.ndarray
    lut: np.ndarray
    kind: np.ndarray

    @classmethod
    def build(
        cls,
        grid: BucketGrid,
        counts: np.ndarray,
        *,
        n: int,
        bins: int,
        max_bucket: int = MAX_BUCKET_ROWS,
        max_gathered: int = MAX_GATHERED_ROWS,
    ) -> QuantilePlan:
        """The plan from the bucket counts of all rows (shape (D * size,))."""
        d, size = grid.lo.size, grid.size
        positions = quantile_positions(n, bins)[1:-1]  # 0 and n - 1 are lo and hi
        homes, ranks, where, sizes = [], [], [], []
        for j in range(d):
            c = counts[j * size : (j + 1) * size]
            home, rank = locate(c, positions)
            targets, where_j = np.unique(home, return_inverse=True)
            homes.append(targets)
            ranks.append(rank)
            where.append(where_j.reshape(-1))
            sizes.append(c[targets])
        base = np.concatenate([[0], np.cumsum([2 * h.size + 1 for h in homes])])
        kind = np.zeros(int(base[-1]), dtype=np.int8)
        # gather the smallest position buckets first, up to the row budget
        flat_sizes = np.concatenate(sizes) if sizes else np.zeros(0, dtype=np.int64)
        cells = np.concatenate([base[j] + 2 * np.arange(h.size) + 1 for j, h in enumerate(homes)])
        order = np.argsort(flat_sizes, kind="stable")
        fits = np.cumsum(flat_sizes[order]) <= max_gathered
        gather = np.zeros(flat_sizes.size, dtype=bool)
        gather[order[fits]] = True
        gather &= flat_sizes <= max_bucket
        kind[cells] = np.where(gather, 1, 2)
        lut = np.empty(d * size, dtype=np.intp)
        idx = np.arange(size)
        for j, h in enumerate(homes):
            below = np.searchsorted(h, idx, side="left")  # position buckets < b
            hit = np.zeros(size, dtype=bool)
            hit[h] = True
            lut[j * size : (j + 1) * size] = base[j] + 2 * below + hit
        return cls(grid, tuple(homes), tuple(ranks), tuple(where), base, lut, kind)

    def scan(self, X: np.ndarray, E: np.ndarray) -> _Scan:
        """Pass 2 over X (n, D) and its local effects E (n, D), :data:`SCAN_ROWS` rows at a
        time."""
        n_cells = self.kind.size
        stats = CellStats.empty(n_cells)
        rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        big: list[tuple[np.ndarray, np.ndarray]] = []
        for start in range(0, len(X), SCAN_ROWS):
            Xb, Eb = X[start : start + SCAN_ROWS], E[start : start + SCAN_ROWS]
            cell = self.lut.take(self.grid.flat(Xb).ravel())
            e = np.asarray(Eb, dtype=np.float64).ravel()
            stats = stats.merge(CellStats.from_values(cell, e, n_cells=n_cells, all_inside=True))
            special = np.flatnonzero(self.kind.take(cell))
            if not special.size:
                continue
            cell, e = cell[special], e[special]
            x = np.asarray(Xb).ravel()[special].astype(np.float64)
            keep = self.kind.take(cell) == 1
            rows.append((cell[keep], x[keep], e[keep]))
            if not keep.all():
                big.append((cell[~keep], x[~keep]))
        seen = np.zeros(n_cells, dtype=bool)
        rep = np.zeros(n_cells)
        varied = np.zeros(n_cells, dtype=bool)
        if big:
            bc = np.concatenate([c for c, _ in big])
            bx = np.concatenate([x for _, x in big])
            seen[bc] = True
            rep[bc] = bx  # one of each big bucket's values
            varied[bc[bx != rep.take(bc)]] = True
        return _Scan(stats, tuple(rows), seen, rep, varied)

    def empty_scan(self) -> _Scan:
        return self.scan(np.zeros((0, 0)), np.zeros((0, 0)))

    def finish(self, scan: _Scan, lo: np.ndarray, hi: np.ndarray) -> list[QuantileCells | None]:
        """Each column's edges and cells; None for a column this plan cannot finish."""
        rows = scan.rows or ((np.zeros(0, dtype=np.intp), np.zeros(0), np.zeros(0)),)
        cell, x, e = (np.concatenate(parts) for parts in zip(*rows, strict=True))
        small = np.uint16 if self.kind.size <= 1 << 16 else cell.dtype
        order = np.argsort(cell.astype(small), kind="stable")  # a radix sort for 16 bits
        cell, x, e = cell[order], x[order], e[order]
        bounds = np.searchsorted(cell, np.arange(self.kind.size + 1))
        out: list[QuantileCells | None] = []
        for j, homes in enumerate(self.homes):
            base = int(self.base[j])
            pos_cells = base + 2 * np.arange(homes.size) + 1
            big = self.kind[pos_cells] == 2
            if not self.grid.usable[j] or np.any(scan.varied[pos_cells[big]]):
                out.append(None)
                continue
            # a big bucket's one value, else the rank among the column's gathered rows
            value = scan.rep[pos_cells]
            first, last = bounds[base], bounds[int(self.base[j + 1])]
            where, ranks = self.where[j], self.ranks[j]
            stats = value[where].astype(np.float64)
            pick = ~big[where]
            if np.any(pick):
                local = bounds[pos_cells][where[pick]] - first + ranks[pick]
                stats[pick] = select(x[first:last], local)
            edges = np.unique(np.concatenate(([float(lo[j])], stats, [float(hi[j])])))
            k = edges.size - 1
            interior = edges[1:-1]
            # the position bucket of each interior edge (distinct values: distinct or same bucket)
            edge_home = where[np.searchsorted(stats, interior)] if stats.size else stats
            if stats.size and not np.all(np.diff(stats) >= 0):
                raise AssertionError("order statistics out of order")  # monotone bucketing
            # segment s: above the edges of position buckets < s, below the others
            seg_bin = np.searchsorted(edge_home, np.arange(homes.size + 1), side="left")
            segments = scan.stats.take(slice(base, base + 2 * homes.size + 1, 2))
            cells = segments.grouped(seg_bin, n_groups=k)
            if big.any():  # one value each: all its rows in one bin, its statistics from pass 2
                b = np.searchsorted(interior, value[big], side="left")
                cells = cells.merge(scan.stats.take(pos_cells[big]).grouped(b, n_groups=k))
            if last > first:
                index = assign(x[first:last], edges).index
                cells = cells.merge(CellStats.from_values(index, e[first:last], n_cells=k))
            out.append(QuantileCells(edges=edges, cells=cells))
        return out


def bucket_grid(*, n: int, lo: np.ndarray, hi: np.ndarray, dtype: Any, bins: int = 0) -> BucketGrid:
    """The buckets of pass 1 over ``[lo, hi]`` for ``n`` values per column of ``dtype``:
    ``n / 1024``, at least ``32 bins`` (pass 2 gathers about ``n bins / size`` rows a
    column), between 64 and 16384.

    >>> bucket_grid(n=10**6, lo=np.zeros(2), hi=np.ones(2), dtype=np.float64).size
    976
    """
    size = int(np.clip(max(n // 1024, 32 * bins), 64, 1 << 14))
    return BucketGrid.build(lo, hi, size=size, dtype=dtype)
