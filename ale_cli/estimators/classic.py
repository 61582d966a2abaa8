"""``ale classic``: Apley-Zhu first-order ALE by finite differences at the bin edges.

For feature s with edges ``z_0 < ... < z_K`` and row i in bin k, the interval
``(z_{k-1}, z_k]`` (the first bin also holds ``z_0``)::

    D_i      = f(x_i with x_s = z_k) - f(x_i with x_s = z_{k-1})
    ALE(z_k) = sum_{j <= k} (1 / n_j) sum_{i in bin j} D_i           (Apley & Zhu, Eq. 11-12)

Since ``mean_j(D_i / dz_j) dz_j = mean_j(D_i)``, the quotients ``e_i = D_i / dz_k`` fed to
the DALE estimator on the same edges give exactly this estimate; their bin statistics are
those of ``D_i`` divided by the bin width (:meth:`~ale_cli.core.binstats.CellStats.divided_by`).
Categorical and discrete features are estimated per level (:mod:`ale_cli.estimators.levels`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ale_cli.estimators.bands import Bootstrap, with_bands
from ale_cli.estimators.bin_limits import (
    Function,
    LimitCells,
    LimitKernel,
    PerOutput,
    RowValues,
)
from ale_cli.estimators.bins import DEFAULT_BINS, FixedBins, check_center
from ale_cli.estimators.inputs import (
    feature_columns,
    object_notes,
    table_columns,
)
from ale_cli.estimators.inputs_stream import Streamed, shipped
from ale_cli.estimators.level_plans import level_plans
from ale_cli.estimators.levels import (
    LevelPlan,
    binary_note,
    discrete_mode,
    effective_discrete,
    level_summary,
)
from ale_cli.estimators.model_rows import DEFAULT_BINNING, ModelRequest, open_model_rows
from ale_cli.estimators.rows import ROWS, Rows, merge_each
from ale_cli.models.base import ProgressFn
from ale_cli.models.checks import dropped_note, nothing_left
from ale_cli.models.finite_diff import DEFAULT_EVAL_ROWS, PredictFn
from ale_cli.passes.engine import LOCAL, Engine, Ready, Shared
from ale_cli.passes.shipped import ShippedModel
from ale_cli.store.format import output_label, output_records
from ale_cli.summary.build import (
    EstimateResult,
    not_estimable,
    run_notes,
    skip_reasons,
    summary_from_cells,
    utc_now,
)
from ale_cli.summary.model import FeatureSummary, Summary, with_statistics
from ale_cli.summary.statistics import statistics_params

METHOD = "model at the bin limits (Apley-Zhu finite differences)"


@dataclass(frozen=True)
class ClassicRequest(ModelRequest):
    """Options of ``ale classic``."""

    center: str = "mean"
    bootstrap: Bootstrap = Bootstrap()
    #: features estimated per value: names ("a,b" or a tuple), "auto", "none" (numeric
    #: columns get slopes), or None: the binary ones (:func:`~.levels.effective_discrete`)
    discrete: tuple[str, ...] | str | None = None
    #: the statistics' definitions: "ale-cli" or "r" (:mod:`ale_cli.summary.statistics`)
    statistics: str = "ale-cli"

    def __post_init__(self) -> None:
        check_center(self.center)
        statistics_params(self.statistics)
        object.__setattr__(self, "discrete", discrete_mode(self.discrete))
        super().__post_init__()


@dataclass(frozen=True)
class Settings:
    """How :func:`estimate` bins and centres (``levels``: the per-level plans or why not
    estimable; ``edges`` by feature replace ``bins``/``binning``) and the pass's ``kernel``."""

    levels: Mapping[str, LevelPlan | str]
    bins: int = DEFAULT_BINS
    binning: str = DEFAULT_BINNING
    edges: Mapping[str, np.ndarray] | None = None
    center: str = "mean"
    bootstrap: Bootstrap | None = None
    kernel: LimitKernel = LimitKernel()


def estimate(
    rows: Rows,
    shared: Shared,
    chosen: Sequence[str],
    settings: Settings,
    *,
    progress: Callable[[int], ProgressFn] | None = None,
    engine: Engine = LOCAL,
    outputs: int = 1,
) -> tuple[list[list[FeatureSummary]], tuple[LimitCells, ...]]:
    """Classic ALE of ``chosen`` on ``rows`` with the model ``shared``: per output (of
    ``outputs``, one model call for all) one FeatureSummary per feature, and the pass's
    states (rows dropped, predictions kept)."""
    s = settings
    cols = [rows.names.index(name) for name in chosen]
    skip = skip_reasons(chosen, rows.lo[cols], rows.hi[cols], (), s.edges)
    todo = [j for j, name in enumerate(chosen) if name not in skip and name not in s.levels]
    binned = [cols[j] for j in todo]
    if s.edges is not None:
        edges = [np.asarray(s.edges[chosen[j]], dtype=np.float64) for j in todo]
    else:
        edges = rows.edges(binned, bins=s.bins, binning=s.binning)
    plans = [(n, p) for n, p in s.levels.items() if isinstance(p, LevelPlan)]
    why = skip | {name: p for name, p in s.levels.items() if isinstance(p, str)}
    kernel = replace(
        s.kernel,
        cols=tuple(binned),
        edges=tuple(edges),
        levels=tuple((rows.names.index(n), p) for n, p in plans),
        keep_rows=bool(s.bootstrap is not None and s.bootstrap.replicates),
        progress=progress(rows.n_rows * len(todo)) if progress is not None else None,
    )
    run: Any = kernel if outputs == 1 else PerOutput(kernel, outputs)
    merge = LimitCells.merge if outputs == 1 else merge_each
    found = engine.run(rows.source, run, merge, run.empty(), arrays=[ROWS], shared=shared)
    states: tuple[LimitCells, ...] = (found,) if outputs == 1 else found
    if kernel.predictions and states[0].kept == 0:
        raise nothing_left(kernel.model_label)

    def records(state: LimitCells) -> list[FeatureSummary]:
        """The records of ``chosen`` from a pass's ``state``."""
        by_name = {
            chosen[j]: summary_from_cells(
                chosen[j], e, cells.divided_by(np.diff(e)), n_outside=outside, center=s.center
            )
            for j, e, cells, outside in zip(
                todo, edges, state.binned.stats, state.binned.outside, strict=True
            )
        }
        kept = RowValues.joined(state.rows) if state.rows else None
        for i, ((name, plan), (cells, counts)) in enumerate(zip(plans, state.levels, strict=True)):
            jumps = None if kept is None else (kept.position[i], kept.up[i], kept.down[i])
            by_name[name] = level_summary(
                plan, cells, counts, center=s.center, bootstrap=s.bootstrap, rows=jumps
            )
        feats = [by_name.get(name) or not_estimable(name, why[name]) for name in chosen]
        if kept is None or s.bootstrap is None:
            return feats
        index = {chosen[j]: kept.index[i] for i, j in enumerate(todo)}
        values = {chosen[j]: kept.diffs[i] for i, j in enumerate(todo)}
        return with_bands(feats, index, values, s.bootstrap, center=s.center, differences=True)

    return [records(st) for st in states], states


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
) -> list[FeatureSummary]:
    """Classic ALE of ``features`` (default: all) of ``f`` ((M, D) -> (M,)) on X (N, D) in
    memory (:func:`estimate` on one chunk), in the order asked; no predictions kept."""
    FixedBins.from_options(bins=bins, binning=binning, edges=None, default=DEFAULT_BINNING)
    check_center(center)
    chosen, _ = feature_columns(features, names, where="the data")
    X = np.asarray(X, dtype=np.float64)
    rows = Rows.of(X, names)
    levels = level_plans(
        rows, chosen, categorical=categorical, discrete=tuple(discrete), labels=labels
    )
    settings = Settings(
        bins=bins,
        binning=binning,
        edges=edges,
        center=center,
        levels=levels,
        bootstrap=bootstrap,
        kernel=LimitKernel(eval_rows=eval_rows, predictions=False),
    )
    return estimate(rows, Ready(Function(f)), chosen, settings, progress=progress)[0][0]


@dataclass(frozen=True)
class Loaded:
    """A run's rows, model, features, level plans, summary ``store`` part, timings, notes."""

    rows: Rows
    model: ShippedModel
    features: tuple[str, ...]
    levels: dict[str, LevelPlan | str]
    source: dict[str, Any]
    timings: dict[str, float]
    notes: tuple[str, ...]


def load(request: ClassicRequest, fixed: FixedBins, engine: Engine = LOCAL) -> Loaded:
    """The data and model of ``request`` (:func:`~.model_rows.open_model_rows`), the level plans."""
    inputs = request.inputs
    rows, opened, reading = open_model_rows(inputs, request.chunk_rows, engine)
    table: Any
    if isinstance(opened, Streamed):
        table, columns, first = opened.scan, opened.model_columns, opened.scan.first
    else:
        table = opened.table
        columns, first = table_columns(table), table.X
    fixed.check_features(inputs.features, rows.names, f"the data '{inputs.data_label}'")
    fixed.check_rows(rows.n_rows, f"data '{inputs.data_label}'")
    levels = level_plans(
        rows, opened.features, categorical=rows.categorical,
        discrete=effective_discrete(request.discrete), labels=table.levels, engine=engine,
    )  # fmt: skip
    source = opened.source(inputs, method=METHOD)
    dropped = table.rows_dropped
    return Loaded(
        rows=rows,
        model=shipped(inputs, opened.model, columns, first, sha256=source["model"]["sha256"]),
        features=opened.features,
        levels=levels,
        source=source,
        timings=dict(opened.timings),
        notes=(
            *((reading.reason,) if reading.reason else ()),
            *((f"dropped {dropped} rows with NaN or infinite values (dropna)",) if dropped else ()),
            *opened.notes,
        ),
    )


def classic(
    request: ClassicRequest,
    *,
    progress: Callable[[int], ProgressFn] | None = None,
    engine: Engine = LOCAL,
) -> EstimateResult:
    """``ale classic``: :func:`load`, :func:`estimate` on ``engine``, the summary."""
    started = time.perf_counter()
    fixed = request.fixed_bins()
    inputs = request.inputs
    with engine:
        loaded = load(request, fixed, engine)
        t = time.perf_counter()
        settings = Settings(
            bins=fixed.bins,
            binning=fixed.binning,
            edges=fixed.edges,
            center=request.center,
            levels=loaded.levels,
            bootstrap=request.bootstrap,
            kernel=LimitKernel(
                eval_rows=inputs.batch_size or DEFAULT_EVAL_ROWS,
                model_label=str(inputs.model),
                drop_nonfinite=inputs.drop_nonfinite,
            ),
        )
        records = output_records(loaded.source)
        found, states = estimate(
            loaded.rows, loaded.model, loaded.features, settings, progress=progress,
            engine=engine, outputs=len(records),
        )  # fmt: skip
    labels = [output_label(r) for r in records] if len(records) > 1 else [None]
    features = [
        replace(with_empty_bins_note(f), output=label)
        for label, feats in zip(labels, found, strict=True)
        for f in feats
    ]
    state = states[0]
    dropped = state.rows_dropped
    d = request.discrete  # None: the binary columns per level, named in a note
    by_default = [
        n for n, p in loaded.levels.items() if isinstance(p, LevelPlan) and p.kind == "discrete"
    ]
    binary = (binary_note(by_default),) if by_default and d is None else ()
    summary = Summary(
        estimator="ale",
        params=fixed.params(request.center, inputs.features)
        | request.bootstrap.params()
        | ({} if d is None else {"discrete": d if isinstance(d, str) else list(d)})
        | statistics_params(request.statistics),
        store=loaded.source | {"data": loaded.source["data"] | {"rows_nonfinite": len(dropped)}},
        n_rows=state.kept,
        features=tuple(features),
        created=utc_now(),
        notes=(*binary, *object_notes(inputs)),
    )
    notes = (
        *loaded.notes,
        *binary,
        *((dropped_note(inputs.model, dropped),) if len(dropped) else ()),
        *run_notes(features),
        *object_notes(inputs),
    )
    return EstimateResult(
        summary=with_statistics(
            summary,
            np.concatenate(state.predictions),
            {
                label: np.concatenate(st.predictions)
                for label, st in zip(labels, states, strict=True)
                if label
            },
        ),
        seconds=time.perf_counter() - started,
        timings={**loaded.timings, "estimate_s": time.perf_counter() - t},
        notes=notes,
    )


def with_empty_bins_note(feature: FeatureSummary) -> FeatureSummary:
    """``feature`` with a note when bins between rows hold none: classic ALE moves a row to
    the limits of its own bin only, so the model's change across empty bins is not
    measured (a binary column on uniform bins gets an effect of 0)."""
    counts = feature.counts
    if feature.status != "ok" or feature.note is not None or counts is None or counts.ndim != 1:
        return feature
    held = np.flatnonzero(counts > 0)
    if held.size < 2 or held[-1] - held[0] + 1 == held.size:
        return feature
    empty = int(held[-1] - held[0] + 1 - held.size)
    return replace(
        feature,
        note=(
            f"{empty} of {counts.size} bins between rows are empty: the model's change "
            "across them is not measured (taken as 0); use quantile bins, or estimate a "
            "column with few values per level (discrete)"
        ),
    )
