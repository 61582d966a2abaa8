"""Exact type-1 quantile edges of columns that arrive in chunks (out of core); an array in
memory is one chunk (:func:`~ale_cli.core.binning.quantile_edges`). Passes over the chunks,
every column at once:

1. count each column's values in ``B`` equal-width buckets over its ``[lo, hi]``; the
   order statistic at sorted position ``p`` lies in the bucket where the cumulative count
   first exceeds ``p``, at rank ``p - (count below it)`` among its values;
2. gather the values of the buckets that hold a position and select the rank among them.

A bucket of more than ``max_candidates`` values is bucketed again within its range in a
further pass; a bucket of one distinct value gives it without being gathered. Memory is
a chunk plus the gathered values. ``chunks()`` yields (n_i, D) arrays, the same each call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial

import numpy as np

#: buckets per level
MAX_BUCKETS = 1 << 16
#: a bucket holding at most this many values is gathered, a larger one is split again
MAX_CANDIDATES = 1 << 16

Chunks = Callable[[], Iterable[np.ndarray]]
#: what one pass gathers per group: counts (None when gathering), min, max, values
Accumulator = tuple[np.ndarray | None, float, float, list[np.ndarray]]
#: one pass over the data for the groups (see :func:`order_statistics`' ``run_pass``)
PassFn = Callable[[list["_Group"], list["_Level"]], list[Accumulator]]


@dataclass(frozen=True)
class _Level:
    """One bucketing: ``b(x) = min(floor((x - lo) / width * size), size - 1)`` for x >= lo
    (monotone in x)."""

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
        """About the values of bucket b (only monotonicity matters)."""
        step = self.width / self.size
        return self.lo + b * step, self.lo + (b + 1) * step


@dataclass
class _Group:
    """A column's values in a ``chain`` of [(level, bucket), ...] from its root down: the
    0-based ``ranks`` wanted among its ``count`` values and the ``slots`` of the answers."""

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
        """A copy without counts and values, to send to where a pass runs."""
        return _Group(self.column, self.chain, self.count, self.ranks, self.slots, [], self.sub)


def locate(counts: np.ndarray, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The bucket holding each sorted position (``counts`` per bucket, buckets in order) and
    the position's rank among that bucket's values.

    >>> [a.tolist() for a in locate(np.array([2, 0, 3]), np.array([0, 1, 2, 4]))]
    [[0, 0, 2, 2], [0, 1, 0, 2]]
    """
    upto = np.cumsum(counts)
    home = np.searchsorted(upto, positions, side="right")
    return home, positions - (upto[home] - counts[home])


def select(values: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """``np.sort(values)[ranks]`` by one partition."""
    keys, inverse = np.unique(ranks, return_inverse=True)
    out: np.ndarray = np.partition(values, keys)[keys][inverse.reshape(-1)]
    return out


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
    """``np.sort(column)[positions]`` (D, P) for every column of the n rows in ``chunks``,
    0-based ``positions`` (P,), each column's minimum ``lo`` and maximum ``hi`` (D,).
    ``run_pass(groups, roots)``: one pass, what it gathered per group (default
    :func:`pass_accumulators` over ``chunks``; on an engine, per chunk folded with
    :func:`merge_accumulators`).

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
    active = [_Group(j, [], n, positions.copy(), np.arange(positions.size)) for j in range(d)]
    if run_pass is None:
        run_pass = partial(pass_accumulators, chunks)
    while active:
        for g in active:  # each group counts in a sub-bucketing (sub) or gathers its values
            if g.chain and g.count <= max_candidates:
                continue
            level = roots[g.column]
            if g.chain:
                lo_g, hi_g = g.chain[-1][0].bucket_range(g.chain[-1][1])
                level = _Level(lo_g, hi_g - lo_g, int(np.clip(g.count // 8, 64, MAX_BUCKETS)))
            if np.isfinite(level.width) and level.width > 0:  # else (inf): gathered whole
                g.sub = level
        following: list[_Group] = []
        for g, (counts, vmin, vmax, gathered) in zip(active, run_pass(active, roots), strict=True):
            if g.sub is not None and counts is not None:
                if vmin == vmax and g.chain:  # one distinct value
                    out[g.column, g.slots] = vmin
                    continue
                home, rank = locate(counts, g.ranks)  # children holding its ranks
                for b in np.unique(home):
                    pick = home == b
                    chain = [*g.chain, (g.sub, int(b))]
                    following.append(
                        _Group(g.column, chain, int(counts[b]), rank[pick], g.slots[pick])
                    )
            else:
                values = np.concatenate(gathered) if gathered else np.empty(0)
                out[g.column, g.slots] = select(values, g.ranks)
        active = following
    return out


def _pass(chunks: Chunks, groups: list[_Group], roots: list[_Level]) -> None:
    """One pass: count (groups with ``sub``) or gather (the others) each group's values,
    the values of every group's root bucket picked out together (a lookup table, a sort)."""
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
                    v = v0
                    for level, b in g.chain[1:]:  # the first bucket is selected already
                        v = v[level.of(v) == b]
                    if v.size:
                        _take(g, v, None)


def pass_accumulators(
    chunks: Chunks, groups: list[_Group], roots: list[_Level]
) -> list[Accumulator]:
    """One pass over ``chunks`` (none: the neutral element of :func:`merge_accumulators`)
    for empty copies of ``groups``: an Accumulator per group."""
    fresh = [g.shipped() for g in groups]
    for g in fresh:
        g.sub_counts = None if g.sub is None else np.zeros(g.sub.size, dtype=np.int64)
    _pass(chunks, fresh, roots)
    return [(g.sub_counts, g.vmin, g.vmax, g.gathered) for g in fresh]


def merge_accumulators(a: list[Accumulator], b: list[Accumulator]) -> list[Accumulator]:
    """What passes over the rows of ``a`` and then of ``b`` gather (counts add up)."""
    return [
        (None if ca is None or cb is None else ca + cb, min(lo_a, lo_b), max(hi_a, hi_b), ga + gb)
        for (ca, lo_a, hi_a, ga), (cb, lo_b, hi_b, gb) in zip(a, b, strict=True)
    ]


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
    """Type-1 quantile edges at ``k/K`` of every column (deduplicated; ``z_0 = lo``,
    ``z_K = hi``), from chunks.

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
