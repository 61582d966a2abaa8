"""``ale classic``: Apley-Zhu first-order ALE by finite differences at the bin edges.

For feature s with edges ``z_0 < ... < z_K`` and row i in bin k, the interval
``(z_{k-1}, z_k]`` (the first bin also holds ``z_0``), the model is evaluated
with ``x_s`` moved to both limits of the row's bin (2 evaluations per row and
feature, all rows of a chunk stacked into one model call by
:func:`~ale_cli.models.evaluate.evaluate_moved`)::

    D_i      = f(x_i with x_s = z_k) - f(x_i with x_s = z_{k-1})
    ALE(z_k) = sum_{j <= k} (1 / n_j) sum_{i in bin j} D_i           (Apley & Zhu, Eq. 11-12)

Since ``mean_j(D_i / dz_j) dz_j = mean_j(D_i)``, the per-row quotients
``e_i = D_i / dz_k`` ("pseudo local effects") fed to the DALE estimator on the
same edges give exactly this estimate. Their bin statistics are those of the
``D_i`` divided by the bin width (:meth:`~ale_cli.core.binstats.CellStats.divided_by`),
so no pass over the rows divides; the filling of empty bins, the accumulation
and the centering (count-weighted trapezoid mean by default) are then the ones
every estimator shares (:func:`~ale_cli.summary.build.summary_from_cells`), and the
heterogeneity is the per-bin std of ``D_i / dz_k``. The summary has the same
schema as DALE's and RHALE's, with ``estimator: "ale"``.

Rows outside given edges are not evaluated; they are counted in ``n_outside``.
The model calls go chunk by chunk, one call per feature on a stack of the
chunk's rows copied once for all features (quantile edges and bin membership
come from :func:`~ale_cli.core.binning.quantile_bins`, in a few passes).
Constant features are reported not estimable. Categorical features (text
columns, ``categorical``) and the ``discrete`` ones are estimated per level
(:mod:`ale_cli.estimators.levels`: ALEPlot's adjacent-level differences, nominal
levels ordered by Apley-Zhu's method).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ale_cli.checks import check_count, names_tuple
from ale_cli.core.binning import Assignment, assign, quantile_bins, uniform_edges
from ale_cli.core.binstats import CellStats
from ale_cli.data.stream import DEFAULT_CHUNK_ROWS
from ale_cli.estimators.bands import Bootstrap, with_bands
from ale_cli.estimators.bins import DEFAULT_BINS, FixedBins, check_center
from ale_cli.estimators.inputs import ModelInputs, feature_columns, model_source, open_inputs
from ale_cli.estimators.levels import discrete_names, level_features
from ale_cli.models.base import ProgressFn
from ale_cli.models.checks import Screened, screen_rows
from ale_cli.models.evaluate import Lookup, Move, evaluate_moved
from ale_cli.models.finite_diff import DEFAULT_EVAL_ROWS, PredictFn
from ale_cli.summary.build import (
    EstimateResult,
    column_ranges,
    not_estimable,
    run_notes,
    skip_reasons,
    summary_from_cells,
    utc_now,
)
from ale_cli.summary.model import FeatureSummary, Summary, with_statistics

#: Default binning of ``ale classic``: quantile bins, as ALEPlot and PyALE.
DEFAULT_BINNING = "quantile"
METHOD = "model at the bin limits (Apley-Zhu finite differences)"


@dataclass(frozen=True)
class ClassicRequest:
    """Options of ``ale classic``.

    ``inputs`` describes the model, the data and the features to explain
    (default: every model input); None for ``bins``/``binning`` means the
    default (20 quantile bins) or, with ``edges``, not used.
    """

    inputs: ModelInputs
    bins: int | None = None
    binning: str | None = None
    edges: Path | None = None
    center: str = "mean"
    bootstrap: Bootstrap = Bootstrap()
    #: features estimated per value: names ("a,b" or a tuple), "auto" or None
    discrete: tuple[str, ...] | str | None = None
    #: rows read at a time from a data file (:mod:`ale_cli.estimators.classic_stream`);
    #: None reads the whole table at once
    chunk_rows: int | None = DEFAULT_CHUNK_ROWS
    #: where the model evaluations run: local, or dask (:mod:`ale_cli.engines.dask_model`)
    engine: str = "local"
    scheduler: str | None = None

    def __post_init__(self) -> None:
        from ale_cli.engines import check_engine

        check_engine(self.engine, self.scheduler)
        check_center(self.center)
        if self.discrete is not None and self.discrete != "auto":
            object.__setattr__(self, "discrete", names_tuple(self.discrete, "discrete"))
        if self.chunk_rows is not None:
            check_count(self.chunk_rows, "chunk_rows", least=2)
        if self.edges is None:  # the edges file is read (and checked) when the run starts
            FixedBins.from_options(
                bins=self.bins, binning=self.binning, edges=None, default=DEFAULT_BINNING
            )


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
    """``diffs[t.j, i] = f(x_i with x_s = z_k) - f(x_i with x_s = z_{k-1})``.

    Only for the rows inside the feature's edges (the others are left as they
    are). The features whose rows are all inside share one stack per chunk
    (:func:`evaluate_moved`: the chunk is copied once, then each feature's
    column moved in turn and put back from ``Xs``); a feature with rows
    outside given edges is evaluated on its inside rows alone.
    """
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


def with_nonfinite(source: dict[str, Any], count: int) -> dict[str, Any]:
    """A summary's ``store`` part counting the rows dropped for non-finite model values."""
    return source | {"data": source["data"] | {"rows_nonfinite": count}}


def inside_differences(todo: Sequence[BinnedFeature], diffs: np.ndarray) -> np.ndarray:
    """(T, N): the differences of the features ``todo``, 0 for rows outside their edges
    (``diffs`` is not written there)."""
    return np.stack([np.where(t.bins.index >= 0, diffs[t.j], 0.0) for t in todo])


def without_rows(index: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``index`` with ``rows`` set to -1 (in no bin)."""
    if not len(rows):
        return index
    index = index.copy()
    index[rows] = -1
    return index


def classic_features(
    f: PredictFn,
    X: np.ndarray,
    names: Sequence[str],
    *,
    features: Sequence[str] | None = None,
    bins: int = DEFAULT_BINS,
    binning: str = DEFAULT_BINNING,
    edges: dict[str, np.ndarray] | None = None,
    center: str = "mean",
    categorical: Sequence[str] = (),
    eval_rows: int = DEFAULT_EVAL_ROWS,
    progress: Callable[[int], ProgressFn] | None = None,
    bootstrap: Bootstrap | None = None,
    discrete: Sequence[str] = (),
    labels: dict[str, tuple[Any, ...]] | None = None,
    screen: Callable[[list[tuple[str, np.ndarray, int]]], Screened] | None = None,
) -> list[FeatureSummary]:
    """Classic first-order ALE of ``features`` (default: all) of the model ``f`` on X:
    one FeatureSummary per feature, in the order asked.

    Parameters
    ----------
    f : callable
        (M, D) float64 -> (M,) float64, the model output (``model.predict``).
    X : ndarray, shape (N, D)
        Every input column of the model.
    names : sequence of str, length D
    bins, binning : int, {"quantile", "uniform"}
        K bins per feature (type-1 quantiles, deduplicated, or equal widths).
    edges : dict of str to ndarray (K+1,), optional
        Given edges per feature instead (a feature without edges is not estimable).
    eval_rows : int
        Stacked evaluation rows per model call.
    progress : callable, optional
        ``progress(total_rows)`` returns a callable told the rows finished per call.
    bootstrap : Bootstrap, optional
        Percentile bands from the same differences (:mod:`ale_cli.estimators.bands`).
    discrete, labels : sequence of str, dict of str to tuple
        Features estimated per level (:mod:`ale_cli.estimators.levels`); text levels by code.
    screen : callable, optional
        Checks the differences for NaN/inf (:func:`_screened`); rows it drops leave
        every feature's bins.
    """
    FixedBins.from_options(bins=bins, binning=binning, edges=None, default=DEFAULT_BINNING)
    check_center(center)
    chosen_t, cols_t = feature_columns(features, names, where="the data")
    chosen, cols = list(chosen_t), list(cols_t)
    # one row per feature: the column operations below (quantiles, binary search,
    # bincount) then read contiguous memory
    Xs = np.ascontiguousarray(X.T[cols])
    lo, hi = column_ranges(Xs.T)
    kinds = {
        name: "categorical" if name in categorical else "discrete"
        for name in chosen
        if name in categorical or name in discrete
    }
    by_level = level_features(
        f, X, list(names), kinds, categorical=categorical, labels=labels, center=center,
        eval_rows=eval_rows, bootstrap=bootstrap,
    )  # fmt: skip
    skip = skip_reasons(chosen, lo, hi, (), edges)
    todo = _binned(Xs, cols, chosen, lo, hi, skip, kinds, bins=bins, binning=binning, edges=edges)
    total = sum(len(X) - t.bins.n_outside for t in todo)
    diffs = np.empty(Xs.shape, dtype=np.float64)  # rows outside the edges are never read
    bar = progress(total) if progress is not None else None
    limit_differences(f, X, Xs, todo, diffs, eval_rows=eval_rows, progress=bar)
    dropped = _screened(todo, diffs, len(X), screen)
    out = _summaries(todo, diffs, chosen, center=center, dropped=dropped)
    feats = [
        out[j] if j in out else by_level.get(name) or not_estimable(name, skip[name])
        for j, name in enumerate(chosen)
    ]
    return _banded(feats, todo, diffs, chosen, bootstrap, center=center, dropped=dropped)


def _screened(
    todo: list[BinnedFeature],
    diffs: np.ndarray,
    n_rows: int,
    screen: Callable[[list[tuple[str, np.ndarray, int]]], Screened] | None,
) -> np.ndarray:
    """The rows to leave out: ``screen`` gets ``[(label, values (T, N), 1)]``, the
    differences at the bin limits (0 outside a feature's edges), and returns the
    :class:`~ale_cli.models.checks.Screened` rows or raises; by default
    :func:`~ale_cli.models.checks.screen_rows` refuses any NaN or infinite one."""
    checks = [("evaluations at the bin limits", inside_differences(todo, diffs), 1)] if todo else []
    return (screen or partial(screen_rows, "model", n_rows, drop=False))(checks).dropped


def _banded(
    feats: list[FeatureSummary],
    todo: list[BinnedFeature],
    diffs: np.ndarray,
    chosen: list[str],
    bootstrap: Bootstrap | None,
    *,
    center: str,
    dropped: np.ndarray,
) -> list[FeatureSummary]:
    """The summaries with bootstrap bands from the same differences (when asked; rows
    left out for non-finite values stay out)."""
    if bootstrap is None or not bootstrap.replicates:
        return feats
    index = {chosen[t.j]: without_rows(t.bins.index, dropped) for t in todo}
    values = {chosen[t.j]: diffs[t.j] for t in todo}
    return with_bands(feats, index, values, bootstrap, center=center, differences=True)


def _binned(
    Xs: np.ndarray,
    cols: list[int],
    chosen: list[str],
    lo: np.ndarray,
    hi: np.ndarray,
    skip: Mapping[str, str],
    kinds: Mapping[str, str],
    *,
    bins: int,
    binning: str,
    edges: dict[str, np.ndarray] | None,
) -> list[BinnedFeature]:
    """The features estimated on bins (not skipped, not per level), with their edges
    and every row's bin: type-1 quantile bins, uniform bins or the given edges."""
    todo: list[BinnedFeature] = []
    for j, (col, name) in enumerate(zip(cols, chosen, strict=True)):
        if name in skip or name in kinds:
            continue  # reported with the reason, or estimated per level
        if edges is None and binning == "quantile":
            z, a = quantile_bins(Xs[j], bins=bins)
        else:
            z = edges[name] if edges is not None else uniform_edges(lo[j], hi[j], bins=bins)
            a = assign(Xs[j], z)
        todo.append(BinnedFeature(j, col, z, a))
    return todo


def _summaries(
    todo: list[BinnedFeature],
    diffs: np.ndarray,
    chosen: list[str],
    *,
    center: str,
    dropped: np.ndarray,
) -> dict[int, FeatureSummary]:
    """Each feature's summary: the bins' statistics of D_i / dz_k (those of the
    differences divided by the bin widths), then DALE's filling, accumulation and
    centering."""
    return {
        t.j: summary_from_cells(
            chosen[t.j],
            t.edges,
            CellStats.from_values(
                without_rows(t.bins.index, dropped), diffs[t.j], n_cells=t.edges.size - 1
            ).divided_by(np.diff(t.edges)),
            n_outside=t.bins.n_outside,
            center=center,
        )
        for t in todo
    }


def discrete_param(discrete: tuple[str, ...] | str | None) -> dict[str, Any]:
    """``params["discrete"]`` when asked (absent otherwise: summaries as before)."""
    if discrete is None:
        return {}
    return {"discrete": discrete if isinstance(discrete, str) else list(discrete)}


def whole_table_reason(request: ClassicRequest) -> str | None:
    """Why ``request`` reads the whole table (a note; "" when that needs none), None when
    it streams the data (:mod:`ale_cli.estimators.classic_stream`)."""
    from ale_cli.estimators.inputs_stream import whole_table_reason as inputs_reason

    reason = inputs_reason(request.inputs, request.chunk_rows)
    if reason is not None:
        return reason
    inputs = request.inputs
    explained = inputs.features
    cats = [c for c in inputs.categorical if explained is None or c in explained]
    if cats:
        return f"read the whole table: categorical feature '{cats[0]}' is estimated per level"
    if request.discrete is not None:
        return "read the whole table: discrete features are estimated per level"
    if request.bootstrap.replicates:
        return "read the whole table: bootstrap bands resample every row's differences"
    return None


def classic(
    request: ClassicRequest, *, progress: Callable[[int], ProgressFn] | None = None
) -> EstimateResult:
    """``ale classic``: load the model and data, estimate, and return the summary.

    A data file is read chunk by chunk (:func:`~ale_cli.estimators.classic_stream.classic_streamed`,
    the same numbers in memory bounded by ``request.chunk_rows``) unless
    :func:`whole_table_reason` says why not; that reason is then a note.
    """
    started = time.perf_counter()
    fixed = FixedBins.from_options(
        bins=request.bins, binning=request.binning, edges=request.edges, default=DEFAULT_BINNING
    )
    from ale_cli.estimators.inputs_stream import Streamed, streamed_or_reason

    opened = streamed_or_reason(
        request.inputs,
        chunk_rows=request.chunk_rows,
        reason=whole_table_reason(request),
        engine=request.engine,
    )
    if isinstance(opened, Streamed):
        from ale_cli.estimators.classic_stream import classic_streamed

        evaluate = None
        if request.engine == "dask":
            from ale_cli.engines.dask_model import dask_evaluate

            evaluate = dask_evaluate(request.scheduler)
        return classic_streamed(
            request, fixed, opened, progress=progress, started=started, evaluate=evaluate
        )
    reason = opened
    result = _whole_table(request, fixed, progress)
    if reason:
        return replace(result, notes=(reason, *result.notes))
    return result


def _whole_table(
    request: ClassicRequest,
    fixed: FixedBins,
    progress: Callable[[int], ProgressFn] | None,
) -> EstimateResult:
    """``ale classic`` on the whole table in memory."""
    t0 = time.perf_counter()
    opened = open_inputs(request.inputs)
    table = opened.table
    fixed.check_features(
        request.inputs.features, table.feature_names, f"the data '{request.inputs.data_label}'"
    )
    fixed.check_rows(len(table.X), f"data '{request.inputs.data_label}'")
    t_load = time.perf_counter()
    prediction = opened.model.predict(table.X)  # for the normalised statistics (NALED)
    found: list[Screened] = []

    def screen(checks: list[tuple[str, np.ndarray, int]]) -> Screened:
        done = screen_rows(
            request.inputs.model,
            len(table.X),
            [("predictions", prediction, 0), *checks],
            drop=request.inputs.drop_nonfinite,
        )
        found.append(done)
        return done

    features = classic_features(
        opened.model.predict,
        table.X,
        table.feature_names,
        features=opened.features,
        bins=fixed.bins,
        binning=fixed.binning,
        edges=fixed.edges,
        center=request.center,
        categorical=table.categorical,
        eval_rows=request.inputs.batch_size or DEFAULT_EVAL_ROWS,
        progress=progress,
        bootstrap=request.bootstrap,
        discrete=discrete_names(
            table.X, table.feature_names, request.discrete, exclude=table.categorical
        ),
        labels=table.levels,
        screen=screen,
    )
    screened = found[0] if found else screen([])
    keep = screened.keep
    timings = {**opened.timings, "estimate_s": time.perf_counter() - t_load}
    summary = with_statistics(
        Summary(
            estimator="ale",
            params=fixed.params(request.center, request.inputs.features)
            | request.bootstrap.params()
            | discrete_param(request.discrete),
            store=with_nonfinite(
                model_source(request.inputs, opened, method=METHOD), len(screened.dropped)
            ),
            n_rows=int(keep.sum()),
            features=tuple(features),
            created=utc_now(),
        ),
        prediction[keep],
    )
    notes = (*opened.notes, *((screened.note,) if screened.note else ()), *run_notes(features))
    if table.rows_dropped:
        notes = (f"dropped {table.rows_dropped} rows with NaN or infinite values (dropna)", *notes)
    return EstimateResult(
        summary=summary, seconds=time.perf_counter() - t0, timings=timings, notes=notes
    )
