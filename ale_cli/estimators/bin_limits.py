"""The chunk kernel of classic ALE: ``D_i``, the model at both limits of each row's bin,
per feature, or its jumps to the adjacent levels for a feature estimated per level."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np

from ale_cli.core.binning import Assignment, assign
from ale_cli.core.binstats import CellStats
from ale_cli.core.discrete import level_cells
from ale_cli.estimators.cells import Cells
from ale_cli.estimators.levels import LevelPlan, level_jumps, predict_chunked
from ale_cli.estimators.rows import ROWS
from ale_cli.models.base import ProgressFn
from ale_cli.models.checks import screen_rows
from ale_cli.models.evaluate import Lookup, Move, evaluate_moved
from ale_cli.models.finite_diff import DEFAULT_EVAL_ROWS, PredictFn
from ale_cli.passes.engine import Chunk


@dataclass(frozen=True)
class BinnedFeature:
    """A feature to estimate: its row of Xs, its column of X, its edges and the rows' bins."""

    j: int
    col: int
    edges: np.ndarray
    bins: Assignment


def limit_differences(
    f: PredictFn,
    X: np.ndarray,
    Xs: np.ndarray,
    todo: Sequence[BinnedFeature],
    diffs: np.ndarray,
    *,
    eval_rows: int,
    progress: ProgressFn | None,
) -> None:
    """``diffs[t.j, i] = f(x_i with x_s = z_k) - f(x_i with x_s = z_{k-1})`` for the rows
    inside the edges; the features with no row outside share one stack per chunk."""
    shared = [t for t in todo if t.bins.n_outside == 0]
    runs = [(shared, None)] + [
        ([t], np.flatnonzero(t.bins.index >= 0)) for t in todo if t.bins.n_outside
    ]
    for feats, rows in runs:
        k = [t.bins.index if rows is None else t.bins.index[rows] for t in feats]
        groups = [
            [Move((t.col,), Lookup(t.edges[:-1], kt)), Move((t.col,), Lookup(t.edges[1:], kt))]
            for t, kt in zip(feats, k, strict=True)
        ]
        rows_x = X if rows is None else X[rows]
        columns = {t.col: Xs[t.j] for t in feats} if rows is None else None
        moved = evaluate_moved(
            f, rows_x, groups, eval_rows=eval_rows, progress=progress, columns=columns
        )
        for i, sl, out in moved:
            j = feats[i].j
            if rows is None:
                np.subtract(out[1], out[0], out=diffs[j, sl])
            else:
                diffs[j, rows[sl]] = out[1] - out[0]


@dataclass(frozen=True)
class RowValues:
    """Every row's values of a chunk, kept for bootstrap bands: ``index`` (F, n) its bin
    (-1: outside or screened out), ``diffs`` (F, n) its ``D_i`` (0 where -1); ``position``
    (-1: screened out), ``up``, ``down`` (L, n) per level feature."""

    index: np.ndarray
    diffs: np.ndarray
    position: np.ndarray
    up: np.ndarray
    down: np.ndarray

    @classmethod
    def joined(cls, parts: Sequence[RowValues]) -> RowValues:
        """The rows of ``parts`` (in row order) as one."""
        return cls(*(np.concatenate([getattr(p, f.name) for p in parts], 1) for f in fields(cls)))


@dataclass(frozen=True)
class LimitCells:
    """The state of a pass of :class:`LimitKernel`, mergeable in row order: the binned
    features' :class:`~ale_cli.estimators.cells.Cells` of ``D_i`` (K); per level feature its
    jumps' cells (K-1) and ``n_k`` (K,); per chunk the rows ``dropped`` (numbered in the
    whole table), the ``predictions`` kept and (``keep_rows``) the :class:`RowValues`."""

    binned: Cells
    levels: tuple[tuple[CellStats, np.ndarray], ...] = ()
    dropped: tuple[np.ndarray, ...] = ()
    predictions: tuple[np.ndarray, ...] = ()
    rows: tuple[RowValues, ...] = ()

    def merge(self, other: LimitCells) -> LimitCells:
        """The state of the rows of ``self`` followed by those of ``other``."""
        return LimitCells(
            binned=self.binned.merge(other.binned),
            levels=tuple(
                (a[0].merge(b[0]), a[1] + b[1])
                for a, b in zip(self.levels, other.levels, strict=True)
            ),
            dropped=self.dropped + other.dropped,
            predictions=self.predictions + other.predictions,
            rows=self.rows + other.rows,
        )

    @property
    def rows_dropped(self) -> np.ndarray:
        """The rows screened out, numbered in the whole table, in order."""
        return np.concatenate(self.dropped) if self.dropped else np.empty(0, dtype=np.intp)

    @property
    def kept(self) -> int:
        return sum(len(p) for p in self.predictions)


@dataclass(frozen=True)
class LimitKernel:
    """One chunk of rows to :class:`LimitCells` (the model is the run's ``shared``): the
    binned features' columns ``cols`` and ``edges`` (K+1,), the level features' columns and
    plans. Non-finite predictions or ``D_i`` are refused or, with ``drop_nonfinite``,
    dropped (:func:`~ale_cli.models.checks.screen_rows`); ``progress`` is not shipped."""

    cols: tuple[int, ...] = ()
    edges: tuple[np.ndarray, ...] = ()
    levels: tuple[tuple[int, LevelPlan], ...] = ()
    eval_rows: int = DEFAULT_EVAL_ROWS
    model_label: str = "model"
    drop_nonfinite: bool = False
    predictions: bool = True
    keep_rows: bool = False
    progress: ProgressFn | None = field(default=None, compare=False)

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "progress"}

    def empty(self) -> LimitCells:
        return LimitCells(
            binned=Cells.empty([e.size - 1 for e in self.edges]),
            levels=tuple(
                (CellStats.empty(p.n_levels - 1), np.zeros(p.n_levels, dtype=np.int64))
                for _, p in self.levels
            ),
        )

    def __call__(self, chunk: Chunk, model: Any) -> LimitCells:
        X = np.asarray(chunk[ROWS], dtype=np.float64)
        if not len(X):
            return self.empty()
        f = model.predict
        Xs = np.ascontiguousarray(X.T[list(self.cols)])
        feats = [
            BinnedFeature(j, c, e, assign(Xs[j], e))
            for j, (c, e) in enumerate(zip(self.cols, self.edges, strict=True))
        ]
        diffs = np.empty(Xs.shape, dtype=np.float64)  # rows outside the edges: never read
        bar = self.progress
        limit_differences(f, X, Xs, feats, diffs, eval_rows=self.eval_rows, progress=bar)
        # the model on the rows, once: the predictions kept and the levels' base
        base = predict_chunked(f, X, self.eval_rows) if self.predictions or self.levels else None
        checks = [("predictions", base, 0)] if self.predictions else []  # refused or dropped
        if feats:
            inside = np.stack([np.where(t.bins.index >= 0, diffs[t.j], 0.0) for t in feats])
            checks.append(("evaluations at the bin limits", inside, 1))
        jumps = [  # per level feature: position, up, down
            level_jumps(f, X, col, plan, base=base, eval_rows=self.eval_rows)
            for col, plan in self.levels
        ]
        if jumps:
            moved = np.stack([a for _, up, down in jumps for a in (up, down)])
            checks.append(("evaluations at the other levels", moved, 1))
        found = screen_rows(
            self.model_label,
            len(X),
            checks,
            drop=self.drop_nonfinite,
            offset=chunk.offset,
            allow_empty=True,
        )
        dropped, index, keep = found.dropped, [t.bins.index for t in feats], found.keep
        if len(dropped):  # the rows screened out are in no bin and at no level
            index = [np.where(keep, i, -1) for i in index]
            jumps = [
                (np.where(keep, p, -1), np.where(keep, u, 0.0), np.where(keep, d, 0.0))
                for p, u, d in jumps
            ]
        cells = tuple(
            CellStats.from_values(i, diffs[t.j], n_cells=t.edges.size - 1)
            for i, t in zip(index, feats, strict=True)
        )
        return LimitCells(
            binned=Cells(cells, tuple(t.bins.n_outside for t in feats)),
            levels=tuple(
                level_cells(position=p[keep], up=u[keep], down=d[keep], n_levels=plan.n_levels)
                for (_, plan), (p, u, d) in zip(self.levels, jumps, strict=True)
            ),
            dropped=(dropped + chunk.offset,) if len(dropped) else (),
            predictions=(base[keep],) if self.predictions else (),
            rows=(self._rows(index, diffs, jumps, len(X)),) if self.keep_rows else (),
        )

    def _rows(
        self, index: list[np.ndarray], diffs: np.ndarray, jumps: list[Any], n: int
    ) -> RowValues:
        inside = [np.where(i >= 0, d, 0.0) for i, d in zip(index, diffs, strict=False)]
        found = (index, inside, *([j[a] for j in jumps] for a in range(3)))
        kinds = (np.int64, np.float64, np.int64, np.float64, np.float64)
        return RowValues(
            *(np.array(a, t).reshape(len(a), n) for a, t in zip(found, kinds, strict=True))
        )


@dataclass(frozen=True)
class Function:
    """A bare function (M, D) -> (M,) as a model: ``predict``."""

    predict: PredictFn


@dataclass(frozen=True)
class PerOutput:
    """:class:`LimitKernel` for each of a model's ``count`` outputs on one set of model
    calls: the first run calls the model ((M, K) answers) and keeps its answers, each
    other run replays column k of them in call order (the kernel calls the model the
    same way for every output). The state: a :class:`LimitCells` per output."""

    kernel: LimitKernel
    count: int

    def empty(self) -> tuple[LimitCells, ...]:
        return (self.kernel.empty(),) * self.count

    def __call__(self, chunk: Chunk, model: Any) -> tuple[LimitCells, ...]:
        answers: list[np.ndarray] = []

        def first(X: np.ndarray) -> np.ndarray:
            answers.append(np.asarray(model.predict(X)))
            return answers[-1][:, 0]

        states = [self.kernel(chunk, Function(first))]
        quiet = replace(self.kernel, progress=None)
        for k in range(1, self.count):
            replay = iter(answers)
            states.append(quiet(chunk, Function(lambda X, k=k, r=replay: next(r)[:, k])))
        return tuple(states)
