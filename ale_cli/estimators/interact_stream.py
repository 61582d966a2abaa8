"""``ale interact`` over a data file read chunk by chunk, in memory bounded by a chunk.

Both second-order estimators need, per cell of a pair's grid, only the count,
mean and M2 of the per-row values (:func:`~ale_cli.core.second_order.pair_cells`,
mergeable :class:`~ale_cli.core.binstats.CellStats`), so after the edges
(the ranges from a first pass; exact type-1 quantiles out of core in two more,
:func:`~ale_cli.estimators.edges.edges_of`) one pass over the data does, per chunk:

- every row's cell in each pair's grid;
- ``ale``: the model at the four corners of the row's cell
  (:func:`ale_cli.estimators.interact.second_differences`); ``dale``: the mixed derivatives
  d2f/dx_a dx_b by autodiff, every pair of the chunk at once;
- the predictions, and the non-finite screen with the row numbers of the whole
  table (:func:`~.interact.screen_pairs`: refused, or with
  ``drop_nonfinite`` the row leaves every pair);
- the cells merged.

Then :func:`~ale_cli.core.second_order.second_order_from_cells`, as the in-memory
path. The results equal it to rounding (tested to 1e-12) whatever the chunk size.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ale_cli.core.binning import assign
from ale_cli.core.binstats import CellStats
from ale_cli.core.second_order import pair_cells, second_order_from_cells
from ale_cli.errors import InputError
from ale_cli.estimators.bins import FixedBins
from ale_cli.estimators.edges import edges_of
from ale_cli.estimators.inputs_stream import Streamed
from ale_cli.estimators.pairs import Pair, pair_columns
from ale_cli.models.base import Model, ProgressFn
from ale_cli.models.checks import dropped_note, nothing_left
from ale_cli.passes.spool import PredictionSpool
from ale_cli.summary.build import (
    CATEGORICAL_REASON,
    CONSTANT_REASON,
    EstimateResult,
    run_notes,
    utc_now,
)
from ale_cli.summary.model import InteractionSummary, Summary, with_statistics

if TYPE_CHECKING:
    from ale_cli.estimators.interact import InteractRequest
    from ale_cli.models.mixed import MixedFn


def _grid_edges(
    request: InteractRequest,
    fixed: FixedBins,
    streamed: Streamed,
    cols: list[tuple[int, int]],
) -> tuple[dict[int, tuple[np.ndarray, np.ndarray]], dict[int, str]]:
    """Per pair (by position): its two edge arrays, or why it is not estimable; the
    quantile edges of every feature that needs them in one out-of-core run."""
    scan = streamed.scan
    given = fixed.edges_file
    wanted: dict[int, str] = {}  # data column -> name, for the quantile edges
    plan: dict[int, list[int] | str] = {}
    for p, (pair, pc) in enumerate(zip(request.pairs, cols, strict=True)):
        cat = next((n for n in pair if n in scan.categorical), None)
        if cat is not None:
            plan[p] = f"'{cat}': {CATEGORICAL_REASON}"
            continue
        for name, c in zip(pair, pc, strict=True):
            if given is not None:
                if name not in given.edges:
                    raise InputError(f"edges file '{given.path}' has no edges for feature '{name}'")
            elif not scan.hi[c] > scan.lo[c]:
                plan[p] = f"'{name}': {CONSTANT_REASON}"
                break
            elif fixed.binning != "uniform":
                wanted[c] = name
        else:
            plan[p] = list(pc)
    if given is not None:
        by_col = {c: np.asarray(given.edges[n], dtype=np.float64)
                  for pair, pc in zip(request.pairs, cols, strict=True)
                  for n, c in zip(pair, pc, strict=True) if n in given.edges}  # fmt: skip
    else:
        needed = sorted({c for v in plan.values() if not isinstance(v, str) for c in v})
        uniform = [c for c in needed if c not in wanted]
        q = sorted(wanted)
        by_col = dict(
            zip(
                uniform,
                edges_of(streamed, uniform, [], bins=fixed.bins, binning="uniform", given=None),
                strict=True,
            )
        )
        by_col |= dict(
            zip(
                q,
                edges_of(streamed, q, [], bins=fixed.bins, binning="quantile", given=None),
                strict=True,
            )
        )
    reasons = {p: v for p, v in plan.items() if isinstance(v, str)}
    grids = {p: (by_col[v[0]], by_col[v[1]]) for p, v in plan.items() if not isinstance(v, str)}
    return grids, reasons


@dataclass
class PairCells:
    """The cell statistics of every estimable pair, merged chunk by chunk.

    ``grids`` maps a pair's position in the request to its edges (z (K_a+1,),
    w (K_b+1,)); ``cols`` are the pairs' columns in the chunks. Per chunk,
    :meth:`locate` gives each pair's rows inside its grid and their cells (the
    others are counted outside), the caller gets the per-row values of those rows
    and screens them, and :meth:`add` merges the kept ones
    (:func:`~ale_cli.core.second_order.pair_cells`). :meth:`interactions` then makes
    every pair's summary as the in-memory path does.
    """

    grids: dict[int, tuple[np.ndarray, np.ndarray]]
    cols: list[tuple[int, int]]
    cells: dict[int, CellStats] = field(default_factory=dict)
    outside: dict[int, int] = field(default_factory=dict)
    nonzero: dict[int, bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for p in self.todo:
            empty = np.empty(0)
            self.cells[p] = CellStats.from_values(empty, empty, n_cells=self._n_cells(p))
            self.outside[p] = 0
            self.nonzero[p] = False

    @property
    def todo(self) -> list[int]:
        """The estimable pairs, by position in the request."""
        return sorted(self.grids)

    def _shape(self, p: int) -> tuple[int, int]:
        ea, eb = self.grids[p]
        return ea.size - 1, eb.size - 1

    def _n_cells(self, p: int) -> int:
        ka, kb = self._shape(p)
        return ka * kb

    def locate(self, X: np.ndarray) -> list[Located]:
        """Per pair of :attr:`todo`: the rows of X (n, D) inside its grid and their 0-based
        cells along both features; the other rows are counted outside."""
        out = []
        for p in self.todo:
            ea, eb = self.grids[p]
            a, b = self.cols[p]
            ia, ib = assign(X[:, a], ea).index, assign(X[:, b], eb).index
            rows = np.flatnonzero((ia >= 0) & (ib >= 0))
            self.outside[p] += len(X) - len(rows)
            out.append(Located(rows, ia[rows], ib[rows]))
        return out

    def add(self, located: list[Located], values: list[np.ndarray], keep: np.ndarray) -> None:
        """Merge each pair's per-row ``values`` (one per located row) of the rows ``keep``
        (n,) bool over the chunk's rows leaves in."""
        for p, at, v in zip(self.todo, located, values, strict=True):
            kept = keep[at.rows]
            c = pair_cells(at.ia[kept], at.ib[kept], v[kept], shape=self._shape(p))
            self.cells[p] = self.cells[p].merge(c)
            self.nonzero[p] = self.nonzero[p] or bool(np.any(v[kept]))

    def merge_from(
        self,
        cells: dict[int, CellStats],
        outside: dict[int, int],
        nonzero: dict[int, bool],
    ) -> None:
        """Merge another part's statistics of the same pairs (its rows after these)."""
        for p in self.todo:
            self.cells[p] = self.cells[p].merge(cells[p])
            self.outside[p] += outside[p]
            self.nonzero[p] = self.nonzero[p] or nonzero[p]

    def interactions(
        self, pairs: Sequence[Pair], estimator: str, reasons: dict[int, str]
    ) -> list[InteractionSummary]:
        """Every pair's summary: not estimable (``reasons``, or no row inside its grid), else
        :func:`~ale_cli.core.second_order.second_order_from_cells`."""
        from ale_cli.estimators.interact import _ROUTES, pair_summary

        out: list[InteractionSummary] = []
        for p, pair in enumerate(pairs):
            if p in reasons:
                out.append(
                    InteractionSummary(
                        features=pair, estimator=estimator, status="not_estimable",
                        reason=reasons[p],
                    )
                )  # fmt: skip
            elif self.cells[p].total == 0:
                out.append(
                    InteractionSummary(
                        features=pair,
                        estimator=estimator,
                        status="not_estimable",
                        reason="no rows inside the given edges of both features",
                        n_outside=self.outside[p],
                    )
                )
            else:
                ea, eb = self.grids[p]
                res = second_order_from_cells(
                    self.cells[p], edges_a=ea, edges_b=eb, route=_ROUTES[estimator]
                )
                out.append(
                    pair_summary(
                        pair, estimator, res, n_outside=self.outside[p],
                        all_zero=not self.nonzero[p],
                    )
                )  # fmt: skip
        return out


@dataclass(frozen=True)
class Located:
    """A chunk's rows inside one pair's grid (indices into the chunk) and their cells."""

    rows: np.ndarray
    ia: np.ndarray
    ib: np.ndarray


@dataclass(frozen=True)
class Passed:
    """What the pass over the chunks gives besides the pairs' cells: the rows dropped
    (numbers in the whole table), the rows kept, the distribution of their predictions and
    the seconds spent on the per-row values."""

    dropped: np.ndarray
    kept: int
    distribution: dict[str, Any] | None
    model_s: float


def _pair_values(
    model: Model,
    mixed: MixedFn | None,
    X: np.ndarray,
    acc: PairCells,
    located: list[Located],
    bar: ProgressFn | None,
) -> list[np.ndarray]:
    """Per estimable pair, the values of its located rows of the chunk X: the mixed
    derivatives (with ``mixed``), else the second differences at the cell corners."""
    from ale_cli.estimators.interact import second_differences

    todo, cols, grids = acc.todo, acc.cols, acc.grids
    if not todo:
        return []
    if mixed is not None:
        mixed_values = mixed(X, [cols[p] for p in todo], progress=bar)
        return [mixed_values[i][at.rows] for i, at in enumerate(located)]
    return [
        second_differences(
            model.predict, X[at.rows], cols[p], grids[p][0], grids[p][1], at.ia, at.ib,
            progress=bar,
        )
        for p, at in zip(todo, located, strict=True)
    ]  # fmt: skip


def chunk_pairs(
    inputs: Any,
    model: Model,
    mixed: MixedFn | None,
    X: np.ndarray,
    acc: PairCells,
    estimator: str,
    *,
    offset: int,
    bar: ProgressFn | None = None,
) -> tuple[np.ndarray, np.ndarray, float]:
    """The pass on the chunk X (n, D) whose first row is row ``offset`` of the table: merge
    every pair's values of the rows kept into ``acc`` (:func:`~.interact.screen_pairs`
    screens them); the rows dropped (numbers in the whole table), the predictions kept
    and the seconds spent on the per-row values (also run by the Dask engine's workers)."""
    from ale_cli.estimators.interact import screen_pairs

    prediction = model.predict(X)
    located = acc.locate(X)
    t = time.perf_counter()
    values = _pair_values(model, mixed, X, acc, located, bar)
    spent = time.perf_counter() - t
    screened = screen_pairs(
        inputs.model,
        len(X),
        [(at.rows, v) for at, v in zip(located, values, strict=True)],
        estimator,
        prediction,
        drop=inputs.drop_nonfinite,
        offset=offset,
        allow_empty=True,
    )
    acc.add(located, values, screened.keep)
    return screened.dropped + offset, prediction[screened.keep], spent


def _accumulate(
    request: InteractRequest,
    streamed: Streamed,
    acc: PairCells,
    estimator: str,
    mixed: MixedFn | None,
    progress: Callable[[int, str], ProgressFn] | None,
) -> Passed:
    """One pass over the chunks merging every pair's values of the rows kept into ``acc``,
    and what else it gives."""
    what = "mixed derivatives" if estimator == "dale" else "cell corners"
    n_bars = 1 if mixed else len(acc.todo)
    bar = progress(streamed.scan.n_rows * n_bars, what) if progress else None
    t_model = 0.0
    dropped: list[np.ndarray] = []
    offset = 0
    with PredictionSpool(streamed.passes.chunk_rows) as spool:
        for X in streamed.passes():
            rows_out, kept, spent = chunk_pairs(
                request.inputs, streamed.model, mixed, X, acc, estimator, offset=offset, bar=bar
            )
            t_model += spent
            if len(rows_out):
                dropped.append(rows_out)
            spool.add(kept)
            offset += len(X)
        n_kept = spool.n
        distribution = spool.distribution()
    rows_out = np.concatenate(dropped) if dropped else np.empty(0, dtype=np.intp)
    return Passed(rows_out, n_kept, distribution, t_model)


def _summary(
    request: InteractRequest,
    fixed: FixedBins,
    streamed: Streamed,
    estimator: str,
    interactions: list[InteractionSummary],
    passed: Passed,
) -> Summary:
    """The run's summary, its prediction statistics from the spooled distribution."""
    inputs = request.inputs
    from ale_cli.estimators.interact import interaction_params

    params = interaction_params(request.pairs, estimator, fixed, ())  # no store read
    source = streamed.source(inputs, method=streamed.model.method)
    source["data"] |= {"rows_nonfinite": len(passed.dropped)}
    return with_statistics(
        Summary(
            estimator=estimator,
            params=params,
            store=source,
            n_rows=passed.kept,
            features=(),
            interactions=tuple(interactions),
            created=utc_now(),
            prediction=passed.distribution,
        ),
        None,
    )


def interact_streamed(
    request: InteractRequest,
    fixed: FixedBins,
    streamed: Streamed,
    *,
    progress: Callable[[int, str], ProgressFn] | None = None,
    started: float | None = None,
    evaluate: Callable[..., Passed] | None = None,
) -> EstimateResult:
    """``ale interact`` on ``streamed`` data (see the module docstring); the summary is
    the in-memory path's (:func:`ale_cli.estimators.interact.interact`). ``started``: when the run
    began (``perf_counter``), for the result's seconds. ``evaluate``: the pass over the
    rows (default: in this process; the Dask engine's runs on its workers), with the
    signature of :func:`_accumulate`."""
    from ale_cli.models.mixed import require_mixed_derivatives

    t0 = time.perf_counter()
    started = t0 if started is None else started
    inputs, scan, model = request.inputs, streamed.scan, streamed.model
    label = inputs.data_label
    cols = pair_columns(request.pairs, scan.names, param="pairs", where=f"data '{label}'")
    fixed.check_rows(scan.n_rows, f"data '{label}'")
    estimator = request.estimator or ("dale" if model.method == "autodiff" else "ale")
    mixed = None
    if estimator == "dale":
        mixed = require_mixed_derivatives(
            model, inputs.model, param="estimator", value="dale", hint="use {param} ale"
        )
    grids, reasons = _grid_edges(request, fixed, streamed, cols)
    acc = PairCells(grids, cols)
    passed = (evaluate or _accumulate)(request, streamed, acc, estimator, mixed, progress)
    if passed.kept == 0:
        raise nothing_left(inputs.model)
    interactions = acc.interactions(request.pairs, estimator, reasons)
    timings: dict[str, float] = dict(streamed.timings)
    spent = "mixed_derivatives_s" if estimator == "dale" else "model_evaluations_s"
    timings[spent] = passed.model_s
    t_end = time.perf_counter()
    timings |= {"load_s": t0 - started, "estimate_s": t_end - t0}
    summary = _summary(request, fixed, streamed, estimator, interactions, passed)
    notes = (
        *streamed.notes,
        *((dropped_note(inputs.model, passed.dropped),) if len(passed.dropped) else ()),
        *run_notes(interactions),
    )
    return EstimateResult(
        summary=summary, seconds=time.perf_counter() - started, timings=timings, notes=notes
    )
