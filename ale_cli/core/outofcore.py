"""Exact type-1 quantile edges of columns that arrive in chunks (out of core).

The in-memory :func:`~ale_cli.core.binning.quantile_bins` counts the values in
equal-width buckets and selects each quantile inside its own bucket. Here the
same happens in passes over the chunks, for every column at once:

1. count the values of each column in ``B`` equal-width buckets over its
   ``[lo, hi]``; the order statistic at sorted position ``p`` lies in the
   bucket where the cumulative count first exceeds ``p``, at rank
   ``p - (count below it)`` among that bucket's values (bucketing is monotone
   in x, so every value of a lower bucket is smaller);
2. gather the values of the buckets that hold a position and select the rank
   among them (``np.partition``).

A bucket with more than ``max_candidates`` values (very skewed data) is
bucketed again within its own range in a further pass, and so on; a bucket
whose values are all equal gives its value without being gathered. Memory is
the chunk plus the gathered values, never N.

``chunks`` is a function returning a fresh iterable of (n_i, D) arrays, the
same rows in the same order on every call (one pass each).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ale_cli.core.binning import assign
from ale_cli.core.binstats import CellStats

#: buckets per level (the in-memory path uses up to 65536 too)
MAX_BUCKETS = 1 << 16
#: a bucket holding at most this many values is gathered, a larger one is split again
MAX_CANDIDATES = 1 << 16

Chunks = Callable[[], Iterable[np.ndarray]]
#: what one pass gathers per group: counts (None for a gathering group), minimum, maximum,
#: gathered values (:func:`pass_accumulators`)
Accumulator = tuple[np.ndarray | None, float, float, list[np.ndarray]]
#: one pass over the data for the groups (see :func:`order_statistics`' ``run_pass``)
PassFn = Callable[[list["_Group"], list["_Level"]], list[Accumulator]]


@dataclass(frozen=True)
class _Level:
    """One bucketing: ``b(x) = min(floor((x - lo) / width * size), size - 1)`` for x >= lo.

    Dividing by the width (rather than multiplying by ``size / width``) stays finite
    for subnormal widths; every step is monotone, so is ``b``.
    """

    lo: float
    width: float
    size: int

    def of(self, x: np.ndarray) -> np.ndarray:
        scale = self.size / self.width
        bound = (abs(self.lo) + self.width) * scale  # |x| * scale for x near the range
        if np.isfinite(scale) and bound < 1e300:
            with np.errstate(over="ignore"):  # inf (x far above the range) is clipped
                u = x * scale  # (x - lo) * scale in two passes: x * scale - lo * scale
            u -= self.lo * scale
        else:  # a subnormal width: divide, which stays finite
            with np.errstate(over="ignore"):
                u = x - self.lo
                u /= self.width
                u *= self.size
        np.clip(u, 0.0, self.size - 1, out=u)
        return u.astype(np.intp)

    def bucket_range(self, b: int) -> tuple[float, float]:
        """About the values of bucket b (exact bounds do not matter, only monotonicity)."""
        step = self.width / self.size
        return self.lo + b * step, self.lo + (b + 1) * step


@dataclass
class _Group:
    """The values of one column lying in a chain of buckets, and the ranks wanted among them.

    ``chain`` is [(level, bucket), ...] from the column's root bucketing down;
    ``ranks`` are 0-based ranks among the group's ``count`` values, ``slots`` where
    each answer goes in the column's result.
    """

    column: int
    chain: list[tuple[_Level, int]]
    count: int
    ranks: np.ndarray
    slots: np.ndarray
    gathered: list[np.ndarray] = field(default_factory=list)
    sub: _Level | None = None
    sub_counts: np.ndarray | None = None
    vmin: float = np.inf
    vmax: float = -np.inf

    def shipped(self) -> _Group:
        """A copy without the count array and values, to send to where a pass runs."""
        return _Group(self.column, self.chain, self.count, self.ranks, self.slots, [], self.sub)

    def no_values(self) -> Accumulator:
        """What a pass over no rows gathers for this group."""
        counts = None if self.sub is None else np.zeros(self.sub.size, dtype=np.int64)
        return counts, np.inf, -np.inf, []


def _split(group: _Group, level: _Level, counts: np.ndarray) -> list[_Group]:
    """Children of ``group`` by ``level`` holding its ranks (``counts`` per bucket)."""
    upto = np.cumsum(counts)
    home = np.searchsorted(upto, group.ranks, side="right")
    below = upto[home] - counts[home]
    out = []
    for b in np.unique(home):
        pick = home == b
        out.append(
            _Group(
                column=group.column,
                chain=[*group.chain, (level, int(b))],
                count=int(counts[b]),
                ranks=group.ranks[pick] - below[pick],
                slots=group.slots[pick],
            )
        )
    return out


def _members(x: np.ndarray, chain: list[tuple[_Level, int]]) -> np.ndarray:
    """The values of x in every bucket of ``chain`` after the first (already selected)."""
    for level, b in chain[1:]:
        x = x[level.of(x) == b]
    return x


def order_statistics(
    chunks: Chunks,
    *,
    n: int,
    positions: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    max_candidates: int = MAX_CANDIDATES,
    run_pass: PassFn | None = None,
) -> np.ndarray:
    """``np.sort(column)[positions]`` for every column of data given in chunks.

    Parameters
    ----------
    chunks : callable
        Returns an iterable of (n_i, D) arrays; called once per pass.
    n : int
        Rows in all chunks together.
    positions : ndarray of int, shape (P,)
        0-based positions in sorted order (``0 <= p < n``).
    lo, hi : ndarray, shape (D,)
        Each column's minimum and maximum (``hi > lo``).
    max_candidates : int
        Largest bucket gathered in memory; larger ones are bucketed again.
    run_pass : callable, optional
        ``run_pass(groups, roots)`` makes one pass and returns what it gathered per group
        (default: :func:`pass_accumulators` over ``chunks``). A pass on an engine runs
        :func:`pass_accumulators` per chunk and folds them with :func:`merge_accumulators`.

    Returns
    -------
    ndarray, shape (D, P), float64

    >>> X = np.array([[5.0], [1.0], [2.0], [2.0], [3.0], [4.0]])
    >>> order_statistics(lambda: [X[:4], X[4:]], n=6, positions=np.array([1, 3, 5]),
    ...                  lo=np.array([1.0]), hi=np.array([5.0])).tolist()
    [[2.0, 3.0, 5.0]]
    """
    positions = np.asarray(positions, dtype=np.int64)
    d = len(lo)
    out = np.empty((d, positions.size), dtype=np.float64)
    size = int(np.clip(n // 8, 64, MAX_BUCKETS))
    roots = [_Level(float(lo[j]), float(hi[j]) - float(lo[j]), size) for j in range(d)]
    everything = [_Group(j, [], n, positions.copy(), np.arange(positions.size)) for j in range(d)]
    for g, level in zip(everything, roots, strict=True):
        if np.isfinite(level.width) and level.width > 0:
            g.sub, g.sub_counts = level, np.zeros(size, dtype=np.int64)
        # else (a range wider than the largest float): the column is gathered whole
    if run_pass is None:

        def run_pass(groups: list[_Group], levels: list[_Level]) -> list[Accumulator]:
            return pass_accumulators(chunks, groups, levels)

    active = everything
    while active:
        for g in active:
            if g.sub is None and g.chain and g.count > max_candidates:
                level, b = g.chain[-1]
                lo_g, hi_g = level.bucket_range(b)
                if np.isfinite(hi_g - lo_g) and hi_g > lo_g:
                    sub_size = int(np.clip(g.count // 8, 64, MAX_BUCKETS))
                    g.sub = _Level(lo_g, hi_g - lo_g, sub_size)
                    g.sub_counts = np.zeros(sub_size, dtype=np.int64)
        absorb(active, run_pass(active, roots))
        following: list[_Group] = []
        for g in active:
            if g.sub is not None and g.sub_counts is not None:
                if g.vmin == g.vmax and g.chain:  # one distinct value
                    out[g.column, g.slots] = g.vmin
                    continue
                following += _split(g, g.sub, g.sub_counts)
            else:
                values = np.concatenate(g.gathered) if g.gathered else np.empty(0)
                keys, inverse = np.unique(g.ranks, return_inverse=True)
                out[g.column, g.slots] = np.partition(values, keys)[keys][inverse]
        active = following
    return out


def _pass(chunks: Chunks, groups: list[_Group], roots: list[_Level]) -> None:
    """One pass: count (groups with ``sub``) or gather (the others) each group's values.

    Per chunk and column the root bucket of every value is computed once; the
    values of the root buckets that groups live in are picked out together
    (a lookup table and one stable sort), not group by group.
    """
    by_column: dict[int, list[_Group]] = {}
    for g in groups:
        by_column.setdefault(g.column, []).append(g)
    tables: dict[int, tuple[np.ndarray, list[list[_Group]]]] = {}
    for j, gs in by_column.items():
        homes = sorted({g.chain[0][1] for g in gs if g.chain})
        lut = np.full(roots[j].size, -1, dtype=np.intp)
        lut[homes] = np.arange(len(homes))
        members: list[list[_Group]] = [[] for _ in homes]
        for g in gs:
            if g.chain:
                members[int(lut[g.chain[0][1]])].append(g)
        tables[j] = (lut, members)
    for chunk in chunks():
        columns = np.ascontiguousarray(chunk.T, dtype=np.float64)  # one pass, rows = columns
        for j, gs in by_column.items():
            x = columns[j]
            lut, members = tables[j]
            whole = [g for g in gs if not g.chain]
            if whole and whole[0].sub is None:  # a column gathered whole (see above)
                _take(whole[0], x, None)
                continue
            root = roots[j].of(x)
            for g in whole:  # the whole column, counted in the root buckets
                _take(g, x, root)
            if not members:
                continue
            slot = lut.take(root)
            inside = np.flatnonzero(slot >= 0)
            if not inside.size:
                continue
            slot = slot[inside]
            order = np.argsort(slot, kind="stable")
            values = x[inside][order]
            bounds = np.searchsorted(slot[order], np.arange(len(members) + 1))
            for k, gs_k in enumerate(members):
                v0 = values[bounds[k] : bounds[k + 1]]
                if not v0.size:
                    continue
                for g in gs_k:
                    v = _members(v0, g.chain)
                    if v.size:
                        _take(g, v, None)


def pass_accumulators(
    chunks: Chunks, groups: list[_Group], roots: list[_Level]
) -> list[Accumulator]:
    """One pass over ``chunks`` for copies of ``groups`` that start empty: per group its
    counts (None for a gathering group), minimum, maximum and gathered values."""
    fresh = []
    for g in groups:
        counts = None if g.sub is None else np.zeros(g.sub.size, dtype=np.int64)
        fresh.append(_Group(g.column, g.chain, g.count, g.ranks, g.slots, [], g.sub, counts))
    _pass(chunks, fresh, roots)
    return [(g.sub_counts, g.vmin, g.vmax, g.gathered) for g in fresh]


def merge_accumulators(a: list[Accumulator], b: list[Accumulator]) -> list[Accumulator]:
    """What passes over the rows of ``a`` and then of ``b`` gather (counts add up)."""
    return [
        (None if ca is None or cb is None else ca + cb, min(lo_a, lo_b), max(hi_a, hi_b), ga + gb)
        for (ca, lo_a, hi_a, ga), (cb, lo_b, hi_b, gb) in zip(a, b, strict=True)
    ]


def absorb(groups: list[_Group], results: list[Accumulator]) -> None:
    """Merge what a pass gathered into ``groups`` (counts add up, values are gathered)."""
    for g, (counts, vmin, vmax, gathered) in zip(groups, results, strict=True):
        if counts is not None and g.sub_counts is not None:
            g.sub_counts += counts
            g.vmin, g.vmax = min(g.vmin, vmin), max(g.vmax, vmax)
        else:
            g.gathered.extend(gathered)


def _take(g: _Group, v: np.ndarray, bucket: np.ndarray | None) -> None:
    """Count ``v`` in the group's sub-buckets (``bucket``: already known) or gather it."""
    if g.sub is not None and g.sub_counts is not None:
        g.sub_counts += np.bincount(g.sub.of(v) if bucket is None else bucket, minlength=g.sub.size)
        g.vmin = min(g.vmin, float(v.min()))
        g.vmax = max(g.vmax, float(v.max()))
    else:
        g.gathered.append(v)


def quantile_positions(n: int, bins: int) -> np.ndarray:
    """0-based sorted positions of the type-1 quantiles at ``k/K``, k = 0..K.

    >>> quantile_positions(6, 3).tolist()
    [0, 1, 3, 5]
    """
    k = np.arange(bins + 1, dtype=np.int64)
    return np.maximum(-(-n * k // bins) - 1, 0)


def chunked_quantile_edges(
    chunks: Chunks,
    *,
    n: int,
    bins: int,
    lo: np.ndarray,
    hi: np.ndarray,
    run_pass: PassFn | None = None,
) -> list[np.ndarray]:
    """Type-1 quantile edges at ``k/K`` of every column (deduplicated), from chunks.

    The same edges as :func:`~ale_cli.core.binning.quantile_edges` of each whole
    column; ``z_0 = lo``, ``z_K = hi``.

    >>> X = np.array([[5.0], [1.0], [2.0], [2.0], [3.0], [4.0]])
    >>> chunked_quantile_edges(lambda: [X[:2], X[2:]], n=6, bins=3,
    ...                        lo=np.array([1.0]), hi=np.array([5.0]))[0].tolist()
    [1.0, 2.0, 3.0, 5.0]
    """
    interior = quantile_positions(n, bins)[1:-1]
    stats = order_statistics(chunks, n=n, positions=interior, lo=lo, hi=hi, run_pass=run_pass)
    return [
        np.unique(np.concatenate(([float(lo[j])], stats[j], [float(hi[j])])))
        for j in range(len(lo))
    ]


# ---------------------------------------------------------------------------------------
# Quantile bins and their cell statistics in two passes over (X, local effects) chunks


#: Largest bucket whose rows are gathered in pass 2 (a larger one holding a quantile must
#: hold one distinct value, else its column takes the slower path of :func:`order_statistics`)
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
    ``[lo_j, hi_j]`` lands in ``0 .. size-1`` without clipping (rounding of the two steps
    stays below the shrink). Each step is monotone in x, so ``b_j`` is: every value of a
    lower bucket is smaller than every value of a higher one. Float32 columns are bucketed
    in float32 (half the memory traffic) when their range allows it.

    Attributes
    ----------
    lo, scale : ndarray, shape (D,)
        In the dtype the buckets are computed in.
    size : int
        Buckets per column.
    usable : ndarray of bool, shape (D,)
        Columns with a finite, non-zero scale (the others land in bucket 0).
    """

    lo: np.ndarray
    scale: np.ndarray
    size: int
    usable: np.ndarray

    @classmethod
    def build(cls, lo: np.ndarray, hi: np.ndarray, *, size: int, dtype: Any) -> BucketGrid:
        """The grid over ``[lo, hi]`` per column, in float32 if ``dtype`` is and every column
        has a finite float32 scale, else in float64."""
        if dtype == np.float32:
            grid = cls._in(np.dtype(np.float32), lo, hi, size)
            if grid.usable.all():
                return grid
        return cls._in(np.dtype(np.float64), lo, hi, size)

    @classmethod
    def _in(cls, ftype: np.dtype[Any], lo: np.ndarray, hi: np.ndarray, size: int) -> BucketGrid:
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            lo_t: np.ndarray = np.asarray(lo, dtype=ftype)
            width: np.ndarray = np.asarray(hi, dtype=ftype) - lo_t
            scale: np.ndarray = np.asarray(size, dtype=ftype) / width
            scale *= np.asarray(1.0 - 2.0**-20, dtype=ftype)
        usable = np.isfinite(width) & (width > 0) & np.isfinite(scale) & (scale > 0)
        return cls(lo_t, np.where(usable, scale, 0).astype(ftype), size, usable)

    def flat(self, X: np.ndarray) -> np.ndarray:
        """Bucket of each value of X (n, D) as ``j * size + b_j(x)``: shape (n, D), intp."""
        u = np.subtract(X, self.lo, dtype=self.lo.dtype)
        u *= self.scale
        b: np.ndarray = u.astype(np.intp)  # u >= 0: truncation is floor
        b += np.arange(0, self.lo.size * self.size, self.size, dtype=np.intp)
        return b

    def counts(self, X: np.ndarray) -> np.ndarray:
        """Values per bucket of X (n, D): shape (D * size,), int64 (pass 1 of a chunk).

        :data:`COUNT_ROWS` rows at a time, so that the bucket numbers of a block stay in the
        CPU's cache (about a fifth faster on 65536 x 32 float32 values than at once)."""
        total = self.lo.size * self.size
        if len(X) <= COUNT_ROWS:
            return np.bincount(self.flat(X).ravel(), minlength=total)
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
    """What pass 2 keeps of some chunks: statistics per cell (segments of ordinary buckets
    and buckets holding quantiles), the rows of the gathered buckets (cell, x, effect; one
    array per chunk), and per big bucket one of its x values and whether it holds another."""

    stats: CellStats
    rows: tuple[tuple[np.ndarray, np.ndarray, np.ndarray], ...]
    seen: np.ndarray
    rep: np.ndarray
    varied: np.ndarray

    def merge(self, other: _Scan) -> _Scan:
        """The scan of both chunks' rows (``self`` first)."""
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

    Per column j the buckets holding a quantile position ("position buckets",
    ``homes[j]``, increasing) cut the others into runs ("segments"); cell
    ``base[j] + 2 s`` is segment s (the buckets between position buckets s-1 and s),
    cell ``base[j] + 2 i + 1`` is position bucket i. A segment's values all fall in one
    bin whatever the edges turn out to be; a position bucket's rows are gathered
    (``kind`` 1) or, when too many, only checked for holding one distinct value
    (``kind`` 2).
    """

    grid: BucketGrid
    n: int
    bins: int
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
            upto = np.cumsum(c)
            home = np.searchsorted(upto, positions, side="right")
            targets, where_j = np.unique(home, return_inverse=True)
            homes.append(targets)
            ranks.append(positions - (upto[home] - c[home]))
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
        return cls(grid, n, bins, tuple(homes), tuple(ranks), tuple(where), base, lut, kind)

    def scan(self, X: np.ndarray, E: np.ndarray) -> _Scan:
        """Pass 2 over one chunk: X (n, D) and its local effects E (n, D).

        The chunk is worked on :data:`SCAN_ROWS` rows at a time, so that the
        temporaries stay in the CPU's cache (about twice as fast as whole chunks)."""
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
        n_cells = self.kind.size
        return _Scan(
            CellStats.empty(n_cells),
            (),
            np.zeros(n_cells, dtype=bool),
            np.zeros(n_cells),
            np.zeros(n_cells, dtype=bool),
        )

    def finish(self, scan: _Scan, lo: np.ndarray, hi: np.ndarray) -> list[QuantileCells | None]:
        """Each column's edges and cells; None for a column this plan cannot finish (not
        bucketable, or a big position bucket holding several values)."""
        rows = scan.rows or ((np.zeros(0, dtype=np.intp), np.zeros(0), np.zeros(0)),)
        cell, x, e = (np.concatenate(parts) for parts in zip(*rows, strict=True))
        small = np.uint16 if self.kind.size <= 1 << 16 else cell.dtype
        order = np.argsort(cell.astype(small), kind="stable")  # a radix sort for 16 bits
        cell, x, e = cell[order], x[order], e[order]
        bounds = np.searchsorted(cell, np.arange(self.kind.size + 1))
        out: list[QuantileCells | None] = []
        for j in range(self.grid.lo.size):
            out.append(self._column(j, scan, cell, x, e, bounds, float(lo[j]), float(hi[j])))
        return out

    def _column(
        self,
        j: int,
        scan: _Scan,
        cell: np.ndarray,
        x: np.ndarray,
        e: np.ndarray,
        bounds: np.ndarray,
        lo: float,
        hi: float,
    ) -> QuantileCells | None:
        if not self.grid.usable[j]:
            return None
        base, homes = int(self.base[j]), self.homes[j]
        pos_cells = base + 2 * np.arange(homes.size) + 1
        big = self.kind[pos_cells] == 2
        if np.any(scan.varied[pos_cells[big]]):
            return None
        # the order statistics: a big bucket's one value, else the rank among the gathered
        # rows of the column (its buckets in order: each lower bucket's values are smaller)
        value = scan.rep[pos_cells]
        first, last = bounds[base], bounds[int(self.base[j + 1])]
        where, ranks = self.where[j], self.ranks[j]
        stats = value[where].astype(np.float64)
        pick = ~big[where]
        if np.any(pick):
            keys, inverse = np.unique(
                bounds[pos_cells][where[pick]] - first + ranks[pick], return_inverse=True
            )
            stats[pick] = np.partition(x[first:last], keys)[keys][inverse.reshape(-1)]
        edges = np.unique(np.concatenate(([lo], stats, [hi])))
        k = edges.size - 1
        interior = edges[1:-1]
        # the position bucket of each interior edge (distinct values: distinct or same bucket)
        edge_home = self.where[j][np.searchsorted(stats, interior)] if stats.size else stats
        if stats.size and not np.all(np.diff(stats) >= 0):
            raise AssertionError("order statistics out of order")  # monotone bucketing
        # segment s: above the edges of position buckets < s, below the others
        seg_bin = np.searchsorted(edge_home, np.arange(homes.size + 1), side="left")
        segments = CellStats(
            counts=scan.stats.counts[base : base + 2 * homes.size + 1 : 2],
            mean=scan.stats.mean[base : base + 2 * homes.size + 1 : 2],
            m2=scan.stats.m2[base : base + 2 * homes.size + 1 : 2],
        )
        cells = segments.grouped(seg_bin, n_groups=k)
        for i, c in enumerate(pos_cells):
            if big[i]:  # one value: all its rows in one bin, its statistics from pass 2
                own = CellStats(
                    scan.stats.counts[c : c + 1],
                    scan.stats.mean[c : c + 1],
                    scan.stats.m2[c : c + 1],
                )
                b = int(np.searchsorted(interior, value[i], side="left"))
                cells = cells.merge(own.grouped(np.array([b]), n_groups=k))
        # the gathered rows of every other position bucket, split by the edges at once
        if last > first:
            index = assign(x[first:last], edges).index
            cells = cells.merge(CellStats.from_values(index, e[first:last], n_cells=k))
        return QuantileCells(edges=edges, cells=cells)


def bucket_grid(*, n: int, lo: np.ndarray, hi: np.ndarray, dtype: Any, bins: int = 0) -> BucketGrid:
    """The equal-width buckets of pass 1 over ``[lo, hi]`` for ``n`` values per column of
    ``dtype`` (float32 values are bucketed in float32: the store's X keeps the data's
    dtype): ``n / 1024`` buckets, at least ``32 bins`` (so that the rows gathered in pass 2,
    about ``n bins / size`` a column, stay a small share of the rows), between 64 and 16384.

    >>> bucket_grid(n=10**6, lo=np.zeros(2), hi=np.ones(2), dtype=np.float64).size
    976
    """
    size = int(np.clip(max(n // 1024, 32 * bins), 64, 1 << 14))
    return BucketGrid.build(
        np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64), size=size, dtype=dtype
    )
