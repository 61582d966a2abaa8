"""The passes of ``ale regional`` over a store: candidate splits, then the cells of a level.

- :func:`splitters`: every input's candidate splits. A numeric input's thresholds are its
  exact type-1 quantiles at ``c / C``, c = 1..C-1 (the C-quantiles, as effector's grid of
  C segments but on the data's quantiles; deduplicated, the maximum left out, as
  ``x <= max`` holds for every row), found out of core
  (:func:`~ale_cli.core.outofcore.order_statistics`, each pass on the engine); an input
  the store holds per level (text, categorical, ``discrete``) is split one level against
  the rest, its levels found in one pass (:class:`Distinct`).
- :class:`RegionPass`: one pass for one level of every feature's tree: per feature and
  open node, the statistics of the local effects on the feature's grid (a leaf's record)
  and, when the level is searched, per (input, bucket, bin) cell
  (:func:`~ale_cli.core.regional.split_cells`: counts and sums of the local effects
  shifted by the cell's mean on all rows). States merge by addition (counts exactly),
  so the result does not depend on the chunks (to rounding) and the pass runs on Dask.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ale_cli.core.binning import assign
from ale_cli.core.binstats import CellStats
from ale_cli.core.outofcore import merge_accumulators, order_statistics, quantile_positions
from ale_cli.core.regional import (
    LEVEL,
    THRESHOLD,
    Condition,
    ShiftedSums,
    Splitter,
    bucket_offsets,
    node_index,
    sampled,
    split_cells,
)
from ale_cli.errors import InputError
from ale_cli.estimators.cells import GroupPass, Passes, Ranges, empty_ranges, merge_ranges
from ale_cli.passes.engine import Chunk

#: an input held per level with more distinct values than this is refused as a splitter
MAX_LEVELS = 64


@dataclass(frozen=True)
class Distinct:
    """Kernel: the distinct values of columns ``x`` (at most ``MAX_LEVELS + 1`` kept)."""

    x: tuple[int, ...]

    def __call__(self, chunk: Chunk, _shared: Any) -> tuple[np.ndarray, ...]:
        X = chunk["X"]
        return tuple(np.unique(X[:, j])[: MAX_LEVELS + 1].astype(np.float64) for j in self.x)


def merge_distinct(a: tuple[np.ndarray, ...], b: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    return tuple(np.union1d(u, v)[: MAX_LEVELS + 1] for u, v in zip(a, b, strict=True))


def splitters(
    p: Passes,
    inputs: Sequence[str],
    columns: Sequence[int],
    *,
    per_level: Sequence[str],
    candidates: int,
) -> tuple[Splitter, ...]:
    """Every input's candidate splits (see the module docstring)."""
    cols = tuple(columns)
    if p.recorded is not None:  # the store's record of every input's range: no pass
        lo, hi = (np.asarray(a, dtype=np.float64)[list(cols)] for a in p.recorded)
    else:
        lo, hi = p.run(Ranges(cols), merge_ranges, empty_ranges(len(cols)), arrays=("X",))
    levels_at = [i for i, name in enumerate(inputs) if name in set(per_level)]
    distinct: tuple[np.ndarray, ...] = ()
    if levels_at:
        sel = tuple(cols[i] for i in levels_at)
        empty = tuple(np.empty(0) for _ in sel)
        distinct = p.run(Distinct(sel), merge_distinct, empty, arrays=("X",))
    numeric = [i for i in range(len(cols)) if i not in levels_at and hi[i] > lo[i]]
    thresholds = _thresholds(p, [cols[i] for i in numeric], lo[numeric], hi[numeric], candidates)
    out: list[Splitter] = []
    for i, name in enumerate(inputs):
        if i in levels_at:
            values = distinct[levels_at.index(i)]
            if values.size > MAX_LEVELS:
                raise InputError(
                    f"input '{name}' is held per level but has more than {MAX_LEVELS} "
                    "distinct values; it cannot be split one level against the rest"
                )
            out.append(Splitter(name, cols[i], LEVEL, values))
        elif i in numeric:
            t = thresholds[numeric.index(i)]
            out.append(Splitter(name, cols[i], THRESHOLD, t[t < hi[i]]))
        else:  # a constant input: no candidate
            out.append(Splitter(name, cols[i], THRESHOLD, np.empty(0)))
    return tuple(out)


def _thresholds(
    p: Passes, cols: list[int], lo: np.ndarray, hi: np.ndarray, candidates: int
) -> list[np.ndarray]:
    """Each column's type-1 quantiles at ``c / C``, c = 1..C-1, deduplicated."""
    if not cols or candidates < 2:
        return [np.empty(0) for _ in cols]
    positions = quantile_positions(p.n_rows, candidates)[1:-1]
    x = tuple(cols)

    def run_pass(groups: list[Any], roots: list[Any]) -> list[Any]:
        sent = [g.shipped() for g in groups]
        empty = [g.no_values() for g in sent]
        found: list[Any] = p.run(
            GroupPass(x, sent, roots), merge_accumulators, empty, arrays=("X",)
        )
        return found

    stats = order_statistics(
        lambda: (), n=p.n_rows, positions=positions, lo=lo, hi=hi, run_pass=run_pass
    )
    return [np.unique(row) for row in stats]


def conditions(s: Splitter, c: int, labels: Sequence[str] | None) -> tuple[Condition, Condition]:
    """The two sides of candidate c of splitter ``s``: (condition true, condition false)."""
    value = float(s.values[c])
    if s.kind == THRESHOLD:
        shown = f"{value:.4g}"
        return (
            Condition(s.name, s.column, "<=", value, shown),
            Condition(s.name, s.column, ">", value, shown),
        )
    shown = f"{value:g}"
    if labels is not None and value.is_integer() and 0 <= int(value) < len(labels):
        shown = str(labels[int(value)])
    return (
        Condition(s.name, s.column, "==", value, shown),
        Condition(s.name, s.column, "!=", value, shown),
    )


# -- one level of the trees ----------------------------------------------------------------


@dataclass(frozen=True)
class FeatureTask:
    """One feature's work in a :class:`RegionPass`: its columns of X (``x``) and of the
    local effects (``e``), its open nodes (``regions``), the edges of its cells (``grid``)
    and, when this level is searched, each cell's mean on all rows (``shift``, (K,))."""

    x: int
    e: int
    regions: tuple[tuple[Condition, ...], ...]
    grid: np.ndarray
    shift: np.ndarray | None


@dataclass(frozen=True)
class LevelCells:
    """One feature's statistics of a level: per node on the grid (nodes * K_g cells) and,
    when searched, per (node, input, bucket, bin) cell."""

    grid: CellStats
    split: ShiftedSums | None

    def merge(self, other: LevelCells) -> LevelCells:
        split = None if self.split is None else self.split.merge(other.split)  # type: ignore[arg-type]
        return LevelCells(self.grid.merge(other.grid), split)


def merge_levels(a: tuple[LevelCells, ...], b: tuple[LevelCells, ...]) -> tuple[LevelCells, ...]:
    return tuple(x.merge(y) for x, y in zip(a, b, strict=True))


@dataclass(frozen=True)
class RegionPass:
    """Kernel: :class:`LevelCells` of every task over a chunk (``splitters``: the inputs
    split on, bucketed once per chunk; ``share``: the split cells from the search sample
    of that share of the rows, :func:`~ale_cli.core.regional.sampled`, the grid cells
    from every row)."""

    tasks: tuple[FeatureTask, ...]
    splitters: tuple[Splitter, ...]
    share: float = 1.0

    @property
    def n_buckets(self) -> int:
        return max((s.n_buckets for s in self.splitters), default=1)

    def shape(self, task: FeatureTask) -> tuple[int, int, int, int]:
        k = 0 if task.shift is None else task.grid.size - 1
        return (len(task.regions), len(self.splitters), self.n_buckets, k)

    def empty(self) -> tuple[LevelCells, ...]:
        out = []
        for t in self.tasks:
            grid = CellStats.empty(len(t.regions) * (t.grid.size - 1))
            split = None if t.shift is None else ShiftedSums.empty(int(np.prod(self.shape(t))))
            out.append(LevelCells(grid, split))
        return tuple(out)

    def __call__(self, chunk: Chunk, _shared: Any) -> tuple[LevelCells, ...]:
        X, E = chunk["X"], chunk["local_effects"]
        searched = any(t.shift is not None for t in self.tasks)
        buckets = None
        if searched and self.splitters:
            buckets = np.stack([s.buckets(X[:, s.column]) for s in self.splitters], axis=1)
        offsets: dict[int, np.ndarray] = {}  # per number of cells K: shared by the features
        sample = None
        if searched and self.share < 1.0:
            sample = sampled(chunk.offset, len(X), self.share)
            if buckets is not None:
                buckets = buckets[sample]
        return tuple(self._task(t, X, E, buckets, offsets, sample) for t in self.tasks)

    def _task(
        self,
        t: FeatureTask,
        X: np.ndarray,
        E: np.ndarray,
        buckets: np.ndarray | None,
        offsets: dict[int, np.ndarray],
        sample: np.ndarray | None = None,
    ) -> LevelCells:
        node = node_index(X, t.regions) if t.regions != ((),) else np.zeros(len(X), np.int64)
        keep = node >= 0
        every = bool(keep.all())
        x = np.asarray(X[:, t.x] if every else X[keep, t.x], dtype=np.float64)
        e = np.asarray(E[:, t.e] if every else E[keep, t.e], dtype=np.float64)
        nd = node if every else node[keep]
        k_g = t.grid.size - 1
        gi = assign(x, t.grid).index
        grid = CellStats.from_values(
            np.where(gi >= 0, nd * k_g + gi, -1), e, n_cells=len(t.regions) * k_g
        )
        if t.shift is None or buckets is None:
            return LevelCells(grid, None)
        if k_g not in offsets:
            offsets[k_g] = bucket_offsets(buckets, n_buckets=self.n_buckets, n_bins=k_g)
        if sample is not None:  # the search sample's rows of this feature's open nodes
            kept = keep[sample]
            off = offsets[k_g][kept]
            mine = sample if every else sample[keep]
            nd, gi, e = nd[mine], gi[mine], e[mine]
        else:
            off = offsets[k_g] if every else offsets[k_g][keep]
        inside = gi >= 0
        if not inside.all():
            nd, off, gi, e = nd[inside], off[inside], gi[inside], e[inside]
        return LevelCells(grid, split_cells(nd, off, gi, e - t.shift[gi], shape=self.shape(t)))
