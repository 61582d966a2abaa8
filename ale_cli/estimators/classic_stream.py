"""``ale classic`` over a data file read chunk by chunk, in memory bounded by a chunk.

Apley-Zhu's first-order estimate needs, per bin of each feature, only the
count, mean and M2 of the differences ``D_i = f(x_i, x_s = z_k) - f(x_i, x_s = z_{k-1})``
(:class:`~ale_cli.core.binstats.CellStats`, which merge exactly across chunks).
So the data are read in passes (:class:`~ale_cli.passes.spool.DataPasses`):

1. each column's range and the row count (the model is loaded on the first chunk);
2. for quantile bins, exact type-1 quantile edges out of core in two passes
   (:func:`~ale_cli.core.outofcore.chunked_quantile_edges`); uniform edges come from
   the ranges, given edges from the file;
3. per chunk: every row's bin, the model at both limits of it (the chunk's rows
   stacked as in the in-memory path, :func:`ale_cli.estimators.classic.limit_differences`),
   the predictions, the non-finite screen with the row numbers of the whole table
   (refused at the first chunk holding one, or with ``drop_nonfinite`` those rows
   leave every feature's bins), and the cells merged.

Then the same filling, accumulation and centering as the in-memory path
(:func:`~ale_cli.summary.build.summary_from_cells` on the statistics of ``D_i / dz_k``).
The predictions on the rows used go to a temporary file for the summary's
prediction distribution (:class:`~ale_cli.passes.spool.PredictionSpool`).
The results equal the in-memory path's to rounding (tested to 1e-12) whatever
the chunk size.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ale_cli.core.binning import assign, uniform_edges
from ale_cli.core.binstats import CellStats
from ale_cli.core.outofcore import chunked_quantile_edges
from ale_cli.estimators.bins import FixedBins
from ale_cli.estimators.inputs_stream import Streamed
from ale_cli.models.base import ProgressFn
from ale_cli.models.checks import Screened, nothing_left, row_list, screen_rows
from ale_cli.models.finite_diff import DEFAULT_EVAL_ROWS
from ale_cli.passes.spool import PredictionSpool
from ale_cli.summary.build import (
    EstimateResult,
    not_estimable,
    run_notes,
    skip_reasons,
    summary_from_cells,
    utc_now,
)
from ale_cli.summary.model import FeatureSummary, Summary, with_statistics

if TYPE_CHECKING:
    from ale_cli.estimators.classic import BinnedFeature, ClassicRequest
    from ale_cli.estimators.inputs import ModelInputs


def edges_of(
    streamed: Streamed,
    cols: list[int],
    names: list[str],
    *,
    bins: int,
    binning: str,
    given: dict[str, np.ndarray] | None,
) -> list[np.ndarray]:
    """The edges of the data columns ``cols``: given, uniform over the scanned range, or
    exact type-1 quantiles out of core (two passes over the data for all of them)."""
    scan = streamed.scan
    if given is not None:
        return [np.asarray(given[n], dtype=np.float64) for n in names]
    if binning == "uniform":
        return [uniform_edges(float(scan.lo[c]), float(scan.hi[c]), bins=bins) for c in cols]
    if not cols:
        return []
    return chunked_quantile_edges(
        lambda: streamed.passes.columns(cols),
        n=scan.n_rows,
        bins=bins,
        lo=scan.lo[cols],
        hi=scan.hi[cols],
    )


def dropped_note(path: object, rows: np.ndarray) -> str:
    """The note of :func:`~ale_cli.models.checks.screen_rows` for the rows left out."""
    count = f"{len(rows)} row{'' if len(rows) == 1 else 's'}"
    return f"dropped {count} where model '{path}' gave NaN or infinite values ({row_list(rows)})"


@dataclass(frozen=True)
class Passed:
    """What the pass over the chunks gives: per estimable feature (by position among the
    features) its merged cells of the differences ``D_i`` and its rows outside the edges;
    the rows dropped (numbers in the whole table), the rows kept and the distribution of
    their predictions."""

    cells: dict[int, CellStats]
    outside: dict[int, int]
    dropped: np.ndarray
    kept: int
    distribution: dict[str, Any] | None


def _feature_edges(
    fixed: FixedBins, streamed: Streamed, chosen: list[str], skip: dict[str, str]
) -> dict[int, np.ndarray]:
    """The edges of every feature not in ``skip``, by its position in ``chosen``."""
    cols = list(streamed.columns)
    todo = [j for j, name in enumerate(chosen) if name not in skip]
    found = edges_of(
        streamed,
        [cols[j] for j in todo],
        [chosen[j] for j in todo],
        bins=fixed.bins,
        binning=fixed.binning,
        given=fixed.edges,
    )
    return dict(zip(todo, found, strict=True))


def _screened(
    inputs: ModelInputs,
    n_rows: int,
    prediction: np.ndarray,
    feats: list[BinnedFeature],
    diffs: np.ndarray,
    offset: int,
) -> Screened:
    """The chunk's ``n_rows`` rows screened for non-finite predictions or evaluations at
    the bin limits (:func:`~ale_cli.models.checks.screen_rows`, numbered from ``offset``)."""
    from ale_cli.estimators.classic import inside_differences

    checks = [("predictions", prediction, 0)]
    if feats:
        checks.append(("evaluations at the bin limits", inside_differences(feats, diffs), 1))
    return screen_rows(
        inputs.model,
        n_rows,
        checks,
        drop=inputs.drop_nonfinite,
        offset=offset,
        allow_empty=True,
    )


@dataclass(frozen=True)
class ChunkCells:
    """One chunk's part of the evaluation pass: per feature (by position) the cells of its
    differences without the rows screened out and its rows outside the edges; the rows
    dropped (numbers in the whole table) and the predictions on the rows kept."""

    cells: dict[int, CellStats]
    outside: dict[int, int]
    dropped: np.ndarray
    prediction: np.ndarray


def chunk_cells(
    inputs: ModelInputs,
    model: Any,
    X: np.ndarray,
    cols: list[int],
    edges: dict[int, np.ndarray],
    *,
    offset: int,
    bar: ProgressFn | None = None,
) -> ChunkCells:
    """The evaluation pass on the chunk X (n, D) whose first row is row ``offset`` of the
    table: the model at both limits of every row's bin, its predictions, the non-finite
    screen and the cells (also run by the Dask engine's workers on their partitions)."""
    from ale_cli.estimators.classic import BinnedFeature, limit_differences, without_rows

    Xs = np.ascontiguousarray(X.T[cols])
    feats = [BinnedFeature(j, cols[j], edges[j], assign(Xs[j], edges[j])) for j in edges]
    diffs = np.empty(Xs.shape, dtype=np.float64)
    eval_rows = inputs.batch_size or DEFAULT_EVAL_ROWS
    limit_differences(model.predict, X, Xs, feats, diffs, eval_rows=eval_rows, progress=bar)
    prediction = model.predict(X)
    found = _screened(inputs, len(X), prediction, feats, diffs, offset)
    cells = {
        t.j: CellStats.from_values(
            without_rows(t.bins.index, found.dropped), diffs[t.j], n_cells=t.edges.size - 1
        )
        for t in feats
    }
    outside = {t.j: t.bins.n_outside for t in feats}
    return ChunkCells(cells, outside, found.dropped + offset, prediction[found.keep])


def empty_cells(edges: dict[int, np.ndarray]) -> dict[int, CellStats]:
    """No rows yet in the cells of every feature of ``edges``."""
    return {j: CellStats.empty(e.size - 1) for j, e in edges.items()}


def _difference_cells(
    inputs: ModelInputs,
    streamed: Streamed,
    edges: dict[int, np.ndarray],
    progress: Callable[[int], ProgressFn] | None,
) -> Passed:
    """One pass over the chunks: the cells of the differences of every feature of ``edges``
    merged without the rows screened out, and the distribution of the kept predictions."""
    cols = list(streamed.columns)
    cells = empty_cells(edges)
    outside = dict.fromkeys(edges, 0)
    bar = progress(streamed.scan.n_rows * len(edges)) if progress is not None else None
    dropped: list[np.ndarray] = []
    offset = 0
    with PredictionSpool(streamed.passes.chunk_rows) as spool:
        for X in streamed.passes():
            part = chunk_cells(inputs, streamed.model, X, cols, edges, offset=offset, bar=bar)
            if len(part.dropped):
                dropped.append(part.dropped)
            for j, c in part.cells.items():
                cells[j] = cells[j].merge(c)
                outside[j] += part.outside[j]
            spool.add(part.prediction)
            offset += len(X)
        kept = spool.n
        distribution = spool.distribution()
    rows_out = np.concatenate(dropped) if dropped else np.empty(0, dtype=np.intp)
    return Passed(cells, outside, rows_out, kept, distribution)


def _summary(
    request: ClassicRequest,
    fixed: FixedBins,
    streamed: Streamed,
    features: list[FeatureSummary],
    passed: Passed,
) -> Summary:
    """The run's summary, its prediction statistics from the spooled distribution."""
    from ale_cli.estimators.classic import METHOD, discrete_param, with_nonfinite

    inputs = request.inputs
    return with_statistics(
        Summary(
            estimator="ale",
            params=fixed.params(request.center, inputs.features)
            | request.bootstrap.params()
            | discrete_param(request.discrete),
            store=with_nonfinite(streamed.source(inputs, method=METHOD), len(passed.dropped)),
            n_rows=passed.kept,
            features=tuple(features),
            created=utc_now(),
            prediction=passed.distribution,
        ),
        None,
    )


def classic_streamed(
    request: ClassicRequest,
    fixed: FixedBins,
    streamed: Streamed,
    *,
    progress: Callable[[int], ProgressFn] | None = None,
    started: float | None = None,
    evaluate: Callable[..., Passed] | None = None,
) -> EstimateResult:
    """``ale classic`` on ``streamed`` data (see the module docstring); the summary is the
    in-memory path's (:func:`ale_cli.estimators.classic.classic`). ``started``: when the run began
    (``perf_counter``), for the result's seconds. ``evaluate``: the evaluation pass
    (default: in this process; the Dask engine's runs on its workers), with the
    signature of :func:`_difference_cells`."""
    t0 = time.perf_counter()
    started = t0 if started is None else started
    inputs, scan = request.inputs, streamed.scan
    label = inputs.data_label
    fixed.check_features(inputs.features, scan.names, f"the data '{label}'")
    fixed.check_rows(scan.n_rows, f"data '{label}'")
    chosen, cols = list(streamed.features), list(streamed.columns)
    skip = skip_reasons(chosen, scan.lo[cols], scan.hi[cols], (), fixed.edges)
    edges = _feature_edges(fixed, streamed, chosen, skip)
    passed = (evaluate or _difference_cells)(inputs, streamed, edges, progress)
    if passed.kept == 0:
        raise nothing_left(inputs.model)
    features: list[FeatureSummary] = [
        summary_from_cells(
            name,
            edges[j],
            passed.cells[j].divided_by(np.diff(edges[j])),
            n_outside=passed.outside[j],
            center=request.center,
        )
        if j in edges
        else not_estimable(name, skip[name])
        for j, name in enumerate(chosen)
    ]
    summary = _summary(request, fixed, streamed, features, passed)
    rows_out = passed.dropped
    notes = (
        *streamed.notes,
        *((dropped_note(inputs.model, rows_out),) if len(rows_out) else ()),
        *run_notes(features),
    )
    if scan.rows_dropped:
        notes = (f"dropped {scan.rows_dropped} rows with NaN or infinite values (dropna)", *notes)
    timings = {**streamed.timings, "estimate_s": time.perf_counter() - t0}
    return EstimateResult(
        summary=summary, seconds=time.perf_counter() - started, timings=timings, notes=notes
    )
