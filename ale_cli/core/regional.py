"""Regional effects: where a feature's local effects agree, found by splitting the rows
(docs/estimators.md, "Regional effects"). On the feature's fixed cells ``z_0 < ... < z_K``::

    H(R) = sqrt(sum_k dz_k^2 s_k(R)^2)      s_k(R)^2 = M2_k / (n_k - 1)   (ddof = 1)
    H_split = (n_L H(L) + n_R' H(R')) / (n_L + n_R')        drop = 1 - H_split / H(R)

A child's cell with fewer than 2 rows keeps the parent's ``s_k^2``. A split needs only the
:class:`ShiftedSums` per (node, input, bucket, bin) cell (:func:`split_cells`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ale_cli.core.binning import count_below
from ale_cli.core.binstats import CellStats

THRESHOLD = "threshold"
LEVEL = "level"


@dataclass(frozen=True)
class Splitter:
    """The candidate splits on input ``name`` (column ``column`` of X): ``kind``
    ``"threshold"`` (``x <= t`` / ``x > t``) or ``"level"`` (``x == v`` / the rest) on
    ``values`` (C,), increasing thresholds or the input's levels."""

    name: str
    column: int
    kind: str
    values: np.ndarray

    @property
    def n_buckets(self) -> int:
        """Buckets of this input: C + 1 for thresholds, C for levels."""
        return int(self.values.size) + (1 if self.kind == THRESHOLD else 0)

    def buckets(self, x: np.ndarray) -> np.ndarray:
        """Bucket of each value (N,) in ``0 .. n_buckets - 1`` (uint8 up to 64 values).

        >>> s = Splitter("a", 0, THRESHOLD, np.array([0.0, 1.0]))
        >>> s.buckets(np.array([-1, 0, .5, 2])).tolist()
        [0, 0, 1, 2]
        """
        b = count_below(np.ascontiguousarray(x, dtype=np.float64), self.values)
        if self.kind == LEVEL:  # a value between levels (not one of them) cannot occur
            np.minimum(b, self.values.size - 1, out=b)
        return b


@dataclass(frozen=True)
class ShiftedSums:
    """Per cell (M,): ``counts``, ``s1 = sum(v - c_k)``, ``s2 = sum((v - c_k)^2)`` for a
    fixed shift ``c_k`` per bin (its mean on all rows, so the sums stay small); any shift
    gives ``s^2 = (S2 - S1^2 / n) / (n - 1)``, and sums of disjoint rows add."""

    counts: np.ndarray
    s1: np.ndarray
    s2: np.ndarray

    @classmethod
    def empty(cls, n_cells: int) -> ShiftedSums:
        return cls(np.zeros(n_cells, dtype=np.int64), np.zeros(n_cells), np.zeros(n_cells))

    def merge(self, other: ShiftedSums) -> ShiftedSums:
        """The sums of the union of two chunks on the same cells.

        >>> a = ShiftedSums(np.array([1]), np.array([0.5]), np.array([0.25]))
        >>> a.merge(a).counts.tolist(), a.merge(a).s2.tolist()
        ([2], [0.5])
        """
        if other.counts.size != self.counts.size:
            raise ValueError(f"cannot merge {self.counts.size} cells with {other.counts.size}")
        return ShiftedSums(self.counts + other.counts, self.s1 + other.s1, self.s2 + other.s2)

    def minus(self, other: ShiftedSums) -> ShiftedSums:
        """The sums of the rows not in ``other`` (a subset): a node's sibling."""
        return ShiftedSums(self.counts - other.counts, self.s1 - other.s1, self.s2 - other.s2)

    def take(self, index: slice) -> ShiftedSums:
        """The sums of the cells ``index``."""
        return ShiftedSums(self.counts[index], self.s1[index], self.s2[index])

    def children(
        self, shape: tuple[int, int, int], j: int, c: int, kind: str, shift: np.ndarray
    ) -> tuple[CellStats, CellStats]:
        """The bins (K) of the two sides of candidate c of input j (cells (J, B, K), as
        :func:`split_scores` reads them) as :class:`CellStats`: ``mean = c_k + S1 / n``,
        ``m2 = S2 - S1^2 / n``, from the sums shifted by ``shift`` (K,).

        >>> cells = ShiftedSums(np.array([2, 1]), np.array([1.0, 0.0]), np.array([1.0, 0.0]))
        >>> left, right = cells.children((1, 2, 1), 0, 0, THRESHOLD, np.array([1.0]))
        >>> left.counts.tolist(), left.mean.tolist(), left.m2.tolist(), right.mean.tolist()
        ([2], [1.5], [0.5], [1.0])
        """
        sums = [a.reshape(shape)[j] for a in (self.counts, self.s1, self.s2)]
        left = [a[: c + 1].sum(axis=0) if kind == THRESHOLD else a[c] for a in sums]
        right = [a.sum(axis=0) - b for a, b in zip(sums, left, strict=True)]
        return _cell_stats(left, shift), _cell_stats(right, shift)


def _cell_stats(sums: list[np.ndarray], shift: np.ndarray) -> CellStats:
    n, s1, s2 = sums
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, shift + s1 / n, 0.0)
        m2 = np.where(n > 0, np.maximum(s2 - s1 * s1 / n, 0.0), 0.0)
    return CellStats(n.astype(np.int64), mean, m2)


def split_cells(
    node: np.ndarray,
    offsets: np.ndarray,
    bins: np.ndarray,
    values: np.ndarray,
    *,
    shape: tuple[int, int, int, int],
) -> ShiftedSums:
    """:class:`ShiftedSums` of ``values`` (N,), already shifted, per (node, input, bucket,
    bin) cell ``((node J + j) B + bucket) K + bin``; ``node`` (N,) each row's node,
    ``offsets`` (J, N) each row's ``bucket_j K``, ``bins`` (N,), ``shape`` (nodes, J, B,
    K). One input at a time, so each ``bincount`` table stays in cache.

    >>> off = np.array([[0, 1]])
    >>> c = split_cells(np.array([0, 0]), off, np.array([0, 0]), np.array([1.0, 3.0]),
    ...                 shape=(1, 1, 2, 1))
    >>> c.counts.tolist(), c.s1.tolist(), c.s2.tolist()
    ([1, 1], [1.0, 3.0], [1.0, 9.0])
    """
    nodes, j, b, k = shape
    base = bins if nodes == 1 else node * (b * k) + bins
    size = nodes * b * k
    squares = values * values
    out = np.empty((3, j, size))
    for i in range(j):
        flat = offsets[i] + base
        out[0, i] = np.bincount(flat, minlength=size)
        out[1, i] = np.bincount(flat, weights=values, minlength=size)
        out[2, i] = np.bincount(flat, weights=squares, minlength=size)
    cells = out.reshape(3, j, nodes, b * k).transpose(0, 2, 1, 3).reshape(3, -1)
    return ShiftedSums(cells[0].astype(np.int64), cells[1], cells[2])


def cell_variance(counts: np.ndarray, s1: np.ndarray, s2: np.ndarray) -> np.ndarray:
    """``s_k^2 = (S2 - S1^2 / n) / (n - 1)`` per cell; NaN where ``n < 2``.

    >>> cell_variance(np.array([2, 1]), np.array([0.0, 0.0]), np.array([2.0, 0.0])).tolist()
    [2.0, nan]
    """
    n = counts.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        var = (s2 - s1 * s1 / n) / (n - 1.0)
    return np.where(counts >= 2, np.maximum(var, 0.0), np.nan)


def heterogeneity(
    var: np.ndarray, dz: np.ndarray, fallback: np.ndarray | None = None
) -> np.ndarray:
    """``sqrt(sum_k dz_k^2 s_k^2)`` over the last axis; a NaN variance takes ``fallback``
    (the parent's), or adds 0.

    >>> heterogeneity(np.array([2.0, np.nan]), np.array([1.0, 1.0])).item()
    1.4142135623730951
    >>> heterogeneity(np.array([2.0, np.nan]), np.array([1.0, 1.0]), np.array([0.0, 2.0])).item()
    2.0
    """
    if fallback is not None:
        var = np.where(np.isnan(var), fallback, var)
    out: np.ndarray = np.sqrt(np.nansum(var * dz**2, axis=-1))
    return out


@dataclass(frozen=True)
class SplitScores:
    """One node's candidate splits: ``before`` its H; per input j and candidate c,
    ``after`` (J, C_max) each ``H_split`` (``inf``: not allowed), ``rows`` and ``parts``
    (J, C_max, 2) the left (condition true) and right child's rows and H; ``candidates``
    how many, on inputs other than the feature's, whatever their rows."""

    before: float
    after: np.ndarray
    rows: np.ndarray
    parts: np.ndarray
    candidates: int = 0

    def best(self) -> tuple[int, int] | None:
        """The allowed candidate with the smallest ``H_split`` (the first of ties, inputs
        then candidates in order), or None."""
        if not np.isfinite(self.after).any():
            return None
        j, c = np.unravel_index(int(np.argmin(self.after)), self.after.shape)
        return int(j), int(c)

    def drop(self, j: int, c: int) -> float:
        """``1 - H_split / H`` (0 when H is 0)."""
        return 0.0 if self.before <= 0 else 1.0 - float(self.after[j, c]) / self.before


def split_scores(
    cells: ShiftedSums,
    *,
    shape: tuple[int, int, int],
    dz: np.ndarray,
    kinds: tuple[str, ...],
    n_candidates: tuple[int, ...],
    min_rows: int,
    excluded: tuple[int, ...] = (),
    rows_cell: bool = False,
) -> SplitScores:
    """Score every candidate split of one node from its cells (J, B, K).

    Candidate c of input j (left: buckets ``0..c`` of a threshold, bucket c of a level) is
    allowed when ``c < n_candidates[j]``, j is not ``excluded`` and both children have
    ``min_rows`` rows, counted over the cells or, with ``rows_cell``, in the last cell alone
    (a per-level feature, whose rows add a jump to one or two cells and a 0 there).

    >>> x3 = np.array([0, 0, 1, 1]); e = np.array([3.0, 3.1, -3.0, -3.1])
    >>> off = x3[None, :]  # bucket_j K, K = 1
    >>> cells = split_cells(np.zeros(4, int), off, np.zeros(4, int), e, shape=(1, 1, 2, 1))
    >>> s = split_scores(cells, shape=(1, 2, 1), dz=np.array([1.0]), kinds=("threshold",),
    ...                  n_candidates=(1,), min_rows=1)
    >>> s.best(), round(s.drop(0, 0), 3)
    ((0, 0), 0.98)
    """
    b_n = shape[1]
    n, s1, s2 = (a.reshape(shape) for a in (cells.counts, cells.s1, cells.s2))
    tot = (n[0].sum(axis=0), s1[0].sum(axis=0), s2[0].sum(axis=0))  # every input: all rows
    parent = cell_variance(*tot)
    before = float(heterogeneity(parent, dz))
    kinds_a = np.array([k == THRESHOLD for k in kinds])[:, None, None]
    left = [np.where(kinds_a, np.cumsum(a, axis=1), a) for a in (n, s1, s2)]
    right = [t[None, None, :] - a for t, a in zip(tot, left, strict=True)]
    h_left = heterogeneity(cell_variance(*left), dz, parent)
    h_right = heterogeneity(cell_variance(*right), dz, parent)
    counted = slice(-1, None) if rows_cell else slice(None)
    rows = np.stack(
        [left[0][..., counted].sum(axis=2), right[0][..., counted].sum(axis=2)], axis=-1
    )
    total = rows.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        after = (rows[..., 0] * h_left + rows[..., 1] * h_right) / total
    exists = np.arange(b_n)[None, :] < np.array(n_candidates)[:, None]
    for j in excluded:
        exists[j] = False
    after = np.where(exists & (rows >= min_rows).all(axis=-1), after, np.inf)
    parts = np.stack([h_left, h_right], axis=-1)
    return SplitScores(before, after, rows, parts, int(exists.sum()))


def sampled(offset: int, n_rows: int, share: float) -> np.ndarray:
    """Whether each of rows ``offset .. offset + n_rows - 1`` is in the search sample, by
    index alone (``(i * 0x9E3779B97F4A7C15 mod 2^64) / 2^64 < share``), whatever the chunks.

    >>> bool(sampled(0, 8, 1.0).all()), int(sampled(0, 100_000, 0.25).sum())
    (True, 25001)
    """
    if share >= 1.0:
        return np.ones(n_rows, dtype=bool)
    i = np.arange(offset, offset + n_rows, dtype=np.uint64)
    with np.errstate(over="ignore"):
        h = i * np.uint64(0x9E3779B97F4A7C15)
    return (h >> np.uint64(11)).astype(np.float64) < share * float(1 << 53)


@dataclass(frozen=True)
class Condition:
    """``X[:, column] <op> value`` on input ``name``; ``shown``: the value as written.

    >>> c = Condition("x3", 0, ">", 0.0, "0")
    >>> c.text, c.holds(np.array([[-1.0], [1.0]])).tolist()
    ('x3 > 0', [False, True])
    """

    name: str
    column: int
    op: str
    value: float
    shown: str

    @property
    def text(self) -> str:
        return f"{self.name} {self.op} {self.shown}"

    def holds(self, X: np.ndarray) -> np.ndarray:
        """Whether each row (N, D) meets the condition, shape (N,)."""
        x = X[:, self.column]
        compare = {"<=": np.less_equal, ">": np.greater, "==": np.equal, "!=": np.not_equal}
        out: np.ndarray = compare[self.op](x, self.value)
        return out


def node_index(X: np.ndarray, regions: tuple[tuple[Condition, ...], ...]) -> np.ndarray:
    """Each row's region in ``regions`` (disjoint conditions), or -1 when in none, (N,):
    each split one compare, a bit of the row's code, a table the region of each code.

    >>> a, b = Condition("x", 0, "<=", 0.0, "0"), Condition("x", 0, ">", 0.0, "0")
    >>> node_index(np.array([[-1.0], [2.0]]), ((a,), (b,))).tolist()
    [0, 1]
    """
    bits: dict[tuple[int, float, str], int] = {}  # a split's "<=" / "==" side: its bit
    for c in (c for conditions in regions for c in conditions):
        bits.setdefault((c.column, c.value, _SIDE[c.op]), len(bits))
    out: np.ndarray
    if len(bits) > _TABLE_BITS:  # too many codes for a table: region by region
        out = np.full(X.shape[0], -1, dtype=np.int64)
        for i, conditions in enumerate(regions):
            inside = np.ones(X.shape[0], dtype=bool)
            for c in conditions:
                inside &= c.holds(X)
            out[inside] = i
        return out
    code = np.zeros(X.shape[0], dtype=np.uint16)
    for (column, value, op), bit in bits.items():
        side = Condition("", column, op, value, "").holds(X)
        code |= np.left_shift(side, bit, dtype=np.uint16)
    codes = np.arange(1 << len(bits))
    table = np.full(codes.size, -1, dtype=np.int64)
    for i, conditions in enumerate(regions):
        held = codes >= 0
        for c in conditions:
            on = (codes >> bits[(c.column, c.value, _SIDE[c.op])]) & 1
            held &= on == (c.op == _SIDE[c.op])
        table[held] = i
    out = table[code]
    return out


#: splits in :func:`node_index`'s table of regions (2^16 codes)
_TABLE_BITS = 16
#: the side of each operator's split that is a bit of :func:`node_index`'s code
_SIDE = {"<=": "<=", ">": "<=", "==": "==", "!=": "=="}
