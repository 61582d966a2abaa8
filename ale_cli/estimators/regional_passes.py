"""The passes of ``ale regional`` over a store: candidate splits (:func:`splitters`), the
search sample (:func:`search_sample`) and one depth of every feature's tree
(:class:`RegionPass`; its states merge by addition, so it runs on Dask).
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from ale_cli.core.binning import UniformGrid, assign
from ale_cli.core.binstats import CellStats
from ale_cli.core.outofcore import order_statistics, quantile_positions
from ale_cli.core.regional import (
    LEVEL,
    THRESHOLD,
    Condition,
    ShiftedSums,
    Splitter,
    node_index,
    sampled,
    split_cells,
)
from ale_cli.errors import InputError
from ale_cli.estimators.cells import Passes, group_passes, ranges
from ale_cli.estimators.level_plans import distinct_values
from ale_cli.estimators.levels import LEVEL_DOWN, LEVEL_UP, LevelPlan
from ale_cli.passes.engine import LOCAL, ArraySource, Chunk
from ale_cli.summary.model import FeatureSummary

#: an input held per level with more distinct values than this is refused as a splitter
MAX_LEVELS = 64
#: a split's two sides: (condition true, condition false), of a threshold and of a level
OPS = (("<=", ">"), ("==", "!="))
#: rows of a block in :func:`grid_codes`
_BLOCK = 8192


def splitters(
    p: Passes,
    inputs: Sequence[str],
    *,
    per_level: Sequence[str],
    candidates: int,
) -> tuple[Splitter, ...]:
    """Every input's candidate splits (input i is column i): a numeric input's type-1
    quantiles at ``c / C``, c = 1..C-1 (deduplicated, the maximum left out); an input held
    per level (text, categorical, ``discrete``), each level against the rest."""
    lo, hi = ranges(p, range(len(inputs)))
    levels_at = [i for i, name in enumerate(inputs) if name in set(per_level)]
    distinct: tuple[np.ndarray, ...] = ()
    if levels_at:
        distinct = distinct_values(p.source, levels_at, MAX_LEVELS, p.engine)
    numeric = [i for i in range(len(inputs)) if i not in levels_at and hi[i] > lo[i]]
    cut = {i: np.empty(0) for i in range(len(inputs))}  # a constant input: no candidate
    if numeric and candidates >= 2:  # type-1 quantiles at c / C, c = 1..C-1, deduplicated
        at, run = quantile_positions(p.n_rows, candidates)[1:-1], group_passes(p, numeric)
        stats = order_statistics(
            lambda: (), n=p.n_rows, positions=at, lo=lo[numeric], hi=hi[numeric], run_pass=run
        )
        cut |= {i: np.unique(row) for i, row in zip(numeric, stats, strict=True)}
    out: list[Splitter] = []
    for i, name in enumerate(inputs):
        if i not in levels_at:
            out.append(Splitter(name, i, THRESHOLD, cut[i][cut[i] < hi[i]]))
            continue
        values = distinct[levels_at.index(i)]
        if values.size > MAX_LEVELS:
            raise InputError(
                f"input '{name}' is held per level but has more than {MAX_LEVELS} "
                "distinct values; it cannot be split one level against the rest"
            )
        out.append(Splitter(name, i, LEVEL, values))
    return tuple(out)


def conditions(s: Splitter, c: int, labels: Sequence[str] | None) -> tuple[Condition, Condition]:
    """The two sides of candidate c of splitter ``s``: (condition true, condition false)."""
    value, level = float(s.values[c]), s.kind == LEVEL
    shown = f"{value:g}" if level else f"{value:.4g}"
    if level and labels is not None and value.is_integer() and 0 <= int(value) < len(labels):
        shown = str(labels[int(value)])
    true, false = (Condition(s.name, s.column, op, value, shown) for op in OPS[level])
    return true, false


def _sample(share: float, chunk: Chunk, _shared: Any) -> tuple[dict[str, np.ndarray], ...]:
    """Kernel: a chunk's rows in the search sample, a one-element tuple (merged by ``+``)."""
    keep = sampled(chunk.offset, chunk.n_rows, share)
    return ({a: np.compress(keep, v, axis=0) for a, v in chunk.arrays.items()},)


def search_sample(p: Passes, share: float, arrays: Sequence[str]) -> Passes:
    """The search sample's rows held as one chunk, its passes run in this process."""
    found = p.run(partial(_sample, share), operator.add, (), arrays=arrays)
    rows = {a: by_column(np.concatenate([f[a] for f in found])) for a in arrays}
    return Passes(ArraySource(rows), p.columns, len(rows["X"]), LOCAL)


@dataclass(frozen=True)
class Feature:
    """One estimable feature: its columns of X (``x``) and of the local effects (``e``), its
    global record (None: from the leaves' cells, after a sampled search), its cells' edges
    (``grid``), each cell's mean local effect on all rows (``shift``, (K,)), its level plan
    when held per level, its global grid cells, the open nodes a :class:`RegionPass`
    counts (``regions``) and the heterogeneity its rounding alone can give (``noise``: a
    node below it is not split); never split on its own input.

    A feature held per level (``plan``; ``e`` its column of the jumps) has its K-1 jumps
    between adjacent levels for cells (a row at level p adds its jump up to cell p, down
    to cell p-1) and a last split cell where each row adds a 0 (its rows)."""

    name: str
    x: int
    e: int
    record: FeatureSummary | None
    grid: np.ndarray
    shift: np.ndarray
    plan: LevelPlan | None = None
    cells: CellStats | None = None
    regions: tuple[tuple[Condition, ...], ...] = ((),)
    noise: float = 0.0

    @property
    def n_cells(self) -> int:
        """K: the cells of the split statistics."""
        return self.plan.n_levels if self.plan is not None else int(self.grid.size) - 1


@dataclass(frozen=True)
class LevelCells:
    """One feature's statistics of a level: per node on the grid (nodes * K_g cells; held
    per level: its jumps, nodes * (K-1), and ``levels`` its rows per level, nodes * K)
    and, when searched, per (node, input, bucket, bin) cell."""

    grid: CellStats
    split: ShiftedSums | None
    levels: np.ndarray | None = None

    def merge(self, other: LevelCells) -> LevelCells:
        split = None if self.split is None else self.split.merge(other.split)  # type: ignore[arg-type]
        levels = None if self.levels is None else self.levels + other.levels
        return LevelCells(self.grid.merge(other.grid), split, levels)

    def node(self, pos: int, nodes: int) -> LevelCells:
        """The cells of node ``pos`` of the ``nodes`` a pass counted one after the other."""

        def at(n: int) -> slice:
            return slice(pos * n // nodes, (pos + 1) * n // nodes)

        split = None if self.split is None else self.split.take(at(self.split.counts.size))
        levels = None if self.levels is None else self.levels[at(self.levels.size)]
        return LevelCells(self.grid.take(at(self.grid.n_cells)), split, levels)


@dataclass(frozen=True)
class RegionPass:
    """Kernel: :class:`LevelCells` of every task over a chunk (``splitters``: the inputs
    split on, bucketed once per chunk; none: the grid cells alone, no search)."""

    tasks: tuple[Feature, ...]
    splitters: tuple[Splitter, ...]

    def shape(self, t: Feature) -> tuple[int, int, int, int]:
        """(nodes, J, B, K): the split cells of ``t``'s nodes (B: an input's most buckets)."""
        b = max((s.n_buckets for s in self.splitters), default=1)
        return (len(t.regions), len(self.splitters), b, t.n_cells)

    def empty(self) -> tuple[LevelCells, ...]:
        out = []
        for t in self.tasks:
            nodes = len(t.regions)
            k_g = (t.grid.size - 1 if t.plan is None else t.n_cells - 1) if self.records(t) else 0
            grid = CellStats.empty(nodes * k_g)
            split = ShiftedSums.empty(int(np.prod(self.shape(t)))) if self.splitters else None
            levels = None if t.plan is None else np.zeros(nodes * t.n_cells, dtype=np.int64)
            out.append(LevelCells(grid, split, levels))
        return tuple(out)

    def __call__(self, chunk: Chunk, _shared: Any) -> tuple[LevelCells, ...]:
        rows = {a: by_column(v) for a, v in chunk.arrays.items()}
        X = rows["X"]
        buckets = None
        if self.splitters:
            buckets = np.stack([s.buckets(X[:, s.column]) for s in self.splitters])
        offsets: dict[int, np.ndarray] = {}  # per number of cells K: shared by the features
        codes = grid_codes(self.tasks, X)  # every task's grid cells of the rows, at once
        return tuple(self._task(t, rows, buckets, offsets, codes) for t in self.tasks)

    def records(self, t: Feature) -> bool:
        """Whether the pass counts ``t``'s grid cells (a search knows a numeric one's)."""
        return t.plan is not None or not self.splitters

    @property
    def arrays(self) -> tuple[str, ...]:
        """The row arrays the pass reads."""
        per_level = any(t.plan is not None for t in self.tasks)
        return ("X", "local_effects", *((LEVEL_UP, LEVEL_DOWN) if per_level else ()))

    def _task(
        self,
        t: Feature,
        chunk: Mapping[str, np.ndarray],
        buckets: np.ndarray | None,
        offsets: dict[int, np.ndarray],
        codes: dict[int, np.ndarray],
    ) -> LevelCells:
        """Feature ``t``'s cells of a chunk's rows (held per level: its jumps between levels)."""
        X = chunk["X"]
        node = node_index(X, t.regions) if t.regions != ((),) else np.zeros(len(X), np.int64)
        keep = node >= 0
        every = bool(keep.all())
        nd = node if every else node[keep]
        if t.x not in codes:
            x = np.asarray(X[:, t.x] if every else X[keep, t.x], dtype=np.float64)
        if t.plan is not None:
            up, down = (np.asarray(chunk[a][:, t.e], np.float64) for a in (LEVEL_UP, LEVEL_DOWN))
            if not every:
                up, down = up[keep], down[keep]
            pos, k = t.plan.positions(x), t.n_cells  # pooled per node as ``level_cells`` does
            rise, fall = pos < k - 1, pos > 0
            grid = CellStats.from_values(
                np.concatenate([(nd * (k - 1) + pos)[rise], (nd * (k - 1) + pos - 1)[fall]]),
                np.concatenate([up[rise], down[fall]]),
                n_cells=len(t.regions) * (k - 1),
            )
            levels = np.bincount(nd * k + pos, minlength=len(t.regions) * k).astype(np.int64)
            if buckets is None:
                return LevelCells(grid, None, levels)
            off = _offsets(offsets, buckets, k, keep)
            rows = np.arange(pos.size)
            at = np.concatenate([rows[rise], rows[fall], rows])
            cell = np.concatenate([pos[rise], pos[fall] - 1, np.full(pos.size, k - 1)])
            shift = np.append(t.shift, 0.0)
            jump = np.concatenate([up[rise], down[fall], np.zeros(pos.size)]) - shift[cell]
            split = split_cells(nd[at], off[:, at], cell, jump, shape=self.shape(t))
            return LevelCells(grid, split, levels)
        E = chunk["local_effects"]
        e = np.asarray(E[:, t.e] if every else E[keep, t.e], dtype=np.float64)
        k_g = t.grid.size - 1
        gi = assign(x, t.grid).index if t.x not in codes else codes[t.x]
        if t.x in codes and not every:
            gi = gi[keep]
        grid = CellStats.empty(0)
        if self.records(t):  # codes: every row inside the grid
            cell = nd * k_g + gi if t.x in codes else np.where(gi >= 0, nd * k_g + gi, -1)
            n_cells = len(t.regions) * k_g
            grid = CellStats.from_values(cell, e, n_cells=n_cells, all_inside=t.x in codes)
        if buckets is None:
            return LevelCells(grid, None)
        off = _offsets(offsets, buckets, k_g, keep)
        inside = gi >= 0
        if not inside.all():
            nd, off, gi, e = nd[inside], np.compress(inside, off, axis=1), gi[inside], e[inside]
        return LevelCells(grid, split_cells(nd, off, gi, e - t.shift[gi], shape=self.shape(t)))


def by_column(A: np.ndarray, block: int = 256) -> np.ndarray:
    """A 2-D ``A`` in Fortran order (each column in a run), copied in cache-sized blocks.

    >>> by_column(np.arange(6.0).reshape(3, 2)).flags.f_contiguous
    True
    """
    if A.ndim != 2 or A.flags.f_contiguous:
        return A
    out = np.empty(A.shape[::-1], dtype=A.dtype)
    for a in range(0, len(A), block):
        out[:, a : a + block] = A[a : a + block].T
    return out.T


def grid_codes(tasks: Sequence[Feature], X: np.ndarray) -> dict[int, np.ndarray]:
    """Each task's grid cell of every row of ``X`` by its column, all at once (the cells
    of :func:`~ale_cli.core.binning.assign`) when their grids are uniform on the same
    number of cells and hold every row; else {} (each task assigns its own)."""
    ts = [t for t in tasks if t.plan is None]
    if len(ts) < 2 or len({t.grid.size for t in ts}) > 1:
        return {}
    edges = np.stack([t.grid for t in ts])
    grid = UniformGrid.build(edges[:, 0], edges[:, -1], bins=edges.shape[1] - 1)
    cols = [t.x for t in ts]
    x = X if cols == list(range(X.shape[1])) else X[:, cols]
    if grid is None or not np.array_equal(grid.edges, edges):
        return {}
    if len(x) and ((x.min(axis=0) < edges[:, 0]).any() or (x.max(axis=0) > edges[:, -1]).any()):
        return {}
    out = np.empty((len(cols), len(x)), dtype=np.int64)  # each column's codes in a run
    for a in range(0, len(x), _BLOCK):  # temporaries that stay in cache: twice as fast
        out[:, a : a + _BLOCK] = grid.index(x[a : a + _BLOCK]).T
    return dict(zip(cols, out, strict=True))


def _offsets(
    offsets: dict[int, np.ndarray], buckets: np.ndarray, k: int, keep: np.ndarray
) -> np.ndarray:
    """The bucket offsets (J, n) on ``k`` cells of the rows ``keep`` (all: once per K)."""
    if not keep.all():
        return np.multiply(np.compress(keep, buckets, axis=1), k, dtype=np.intp)
    if k not in offsets:
        offsets[k] = np.multiply(buckets, k, dtype=np.intp)
    return offsets[k]
