"""``ale rebin`` and ``ale rhale``: DALE on fixed bins and RHALE on a local-effects store,
from cell statistics of passes on the engine (:mod:`ale_cli.estimators.cells`), per level
where the store holds the jumps, from a fine curve for secants."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ale_cli.checks import check_choice, check_count, names_tuple
from ale_cli.core.binning import BINNINGS, assign
from ale_cli.core.binstats import CellStats
from ale_cli.core.effect import effect_from_cells
from ale_cli.core.rhale import (
    DEFAULT_ALPHA,
    DEFAULT_MAX_BINS,
    default_min_points,
    optimal_partition,
)
from ale_cli.errors import InputError
from ale_cli.estimators import secants
from ale_cli.estimators.bands import Bootstrap, with_bands
from ale_cli.estimators.bins import DEFAULT_BINS, FixedBins, check_bins_rows, check_center
from ale_cli.estimators.cells import Passes, array_passes, binned, ranges, store_passes
from ale_cli.estimators.levels import stored_level_names, with_stored_levels
from ale_cli.io.threads import in_background
from ale_cli.passes.engine import LOCAL, Engine
from ale_cli.store.format import output_label, output_records
from ale_cli.store.npz import Store, StoreFile, open_store, read_store, store_sha256
from ale_cli.summary.build import (
    EstimateResult,
    not_estimable,
    run_notes,
    skip_reasons,
    store_info,
    summary_from_cells,
    utc_now,
)
from ale_cli.summary.model import FeatureSummary, Summary, with_statistics
from ale_cli.summary.statistics import statistics_params

if TYPE_CHECKING:
    from concurrent.futures import Future


@dataclass(frozen=True)
class _StoreRequest:
    """The options ``ale rebin`` and ``ale rhale`` share, checked here."""

    store: Path | Store
    center: str = "mean"
    features: tuple[str, ...] | None = None
    bootstrap: Bootstrap = Bootstrap()
    engine: Engine = LOCAL
    #: the statistics' definitions: "ale-cli" or "r" (:mod:`ale_cli.summary.statistics`)
    statistics: str = "ale-cli"

    def __post_init__(self) -> None:
        object.__setattr__(self, "features", names_tuple(self.features, "features"))
        if self.engine.splits and self.bootstrap.replicates:
            raise InputError(
                "{param} resamples the rows in memory; it is not computed by {param:engine} dask",
                param="bootstrap",
            )
        check_center(self.center)
        statistics_params(self.statistics)


@dataclass(frozen=True)
class RebinRequest(_StoreRequest):
    """Options of ``ale rebin``; None: the default (or unused with ``edges``)."""

    bins: int | None = None
    binning: str | None = None
    edges: Path | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.bins is not None:
            check_count(self.bins, "bins")
        check_choice(self.binning, BINNINGS, "binning")


@dataclass(frozen=True)
class RhaleRequest(_StoreRequest):
    """Options of ``ale rhale``; ``min_points`` None means ``ceil(N / 20)``, at least 2."""

    max_bins: int = DEFAULT_MAX_BINS
    min_points: int | None = None
    alpha: float = DEFAULT_ALPHA
    grid: str = "uniform"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_rhale_options(
            max_bins=self.max_bins, min_points=self.min_points, alpha=self.alpha, grid=self.grid
        )


def check_rhale_options(
    *,
    max_bins: int = DEFAULT_MAX_BINS,
    min_points: int | None = None,
    alpha: float = DEFAULT_ALPHA,
    grid: str = "uniform",
    center: str = "mean",
) -> None:
    """InputError naming the first RHALE option out of its range."""
    check_center(center)
    check_choice(grid, BINNINGS, "grid")
    check_count(max_bins, "max_bins")
    if min_points is not None:
        check_count(min_points, "min_points", least=2)
    if isinstance(alpha, bool) or not (
        isinstance(alpha, int | float) and math.isfinite(alpha) and 0.0 <= alpha <= 1.0
    ):
        raise InputError(f"{{param}} must be a number from 0 to 1, got {alpha}", param="alpha")


def binned_features(
    p: Passes,
    *,
    bins: int = DEFAULT_BINS,
    binning: str = "uniform",
    center: str = "mean",
    edges: dict[str, np.ndarray] | None = None,
    rhale: tuple[int, float] | None = None,
    categorical: Sequence[str] = (),
    bootstrap: Bootstrap | None = None,
    rows: tuple[np.ndarray, np.ndarray] | None = None,
) -> list[FeatureSummary]:
    """DALE on fixed bins (or ``edges[name]``, rows outside counted) for every feature of
    ``p`` not skipped, or with ``rhale`` (``min_points``, ``alpha``) RHALE: the optimal
    partition (:func:`~ale_cli.core.rhale.optimal_partition`) of a ``bins``-cell grid, its
    cells summed per bin; with ``bootstrap``, bands from the rows ``(X, E)`` in memory."""
    lo, hi = ranges(p)
    names = p.columns.names
    skip = skip_reasons(names, lo, hi, categorical, edges)
    todo = [j for j, name in enumerate(names) if name not in skip]
    z, cells, outside = binned(p, todo, lo, hi, bins=bins, binning=binning, edges=edges)
    out = [
        not_estimable(name, skip[name])
        if name in skip
        else summary_from_cells(name, z[j], cells[j], n_outside=outside[j], center=center)
        if rhale is None
        else rhale_summary(name, z[j], cells[j], min_points=rhale[0], alpha=rhale[1], center=center)
        for j, name in enumerate(names)
    ]
    if bootstrap is None or not bootstrap.replicates or rows is None:
        return out
    X, E = rows
    index, values = {}, {}
    for j, f in enumerate(out):
        if f.status == "ok":
            index[f.name], values[f.name] = assign(X[:, j], f.edges).index, E[:, j]
    return with_bands(out, index, values, bootstrap, center=center)


def rhale_summary(
    name: str, g: np.ndarray, cell: CellStats, *, min_points: int, alpha: float, center: str
) -> FeatureSummary:
    """One feature's RHALE summary from its statistics on the grid ``g`` (K_max + 1 edges)."""
    part = optimal_partition(g, cell, min_points=min_points, alpha=alpha)
    note = None
    if not part.feasible:
        note = (
            f"no partition has at least {min_points} rows (min_points) in every bin; "
            "one bin over the whole range"
        )
    effect = effect_from_cells(part.edges, cell.coarsen(part.limits), center=center)
    return FeatureSummary.from_effect(
        name, effect, objective=part.objective, note=note, n_outside=0
    )


def rebin_features(
    X: np.ndarray, E: np.ndarray, names: Sequence[str], **kw: Any
) -> list[FeatureSummary]:
    """DALE (:func:`binned_features`, options ``kw``) on values X (N, D) with local effects
    E (N, D)."""
    check_center(kw.get("center", "mean"))
    check_choice(kw.get("binning", "uniform"), BINNINGS, "binning")
    return binned_features(array_passes(X, E, names, LOCAL), rows=(X, E), **kw)


def rhale_features(
    X: np.ndarray,
    E: np.ndarray,
    names: Sequence[str],
    *,
    min_points: int,
    max_bins: int = DEFAULT_MAX_BINS,
    alpha: float = DEFAULT_ALPHA,
    grid: str = "uniform",
    center: str = "mean",
    **common: Any,
) -> list[FeatureSummary]:
    """RHALE (:func:`rebin_features` with ``rhale``) on values X (N, D) with local effects
    E (N, D); ``common``: ``categorical``, ``bootstrap``."""
    check_rhale_options(
        min_points=min_points, max_bins=max_bins, alpha=alpha, grid=grid, center=center
    )
    kw: dict[str, Any] = {"bins": max_bins, "binning": grid, "rhale": (min_points, alpha)}
    return rebin_features(X, E, names, center=center, **kw, **common)


@dataclass(frozen=True)
class _Opened:
    """A store, its path and its sha256 being computed (None for a store in memory)."""

    path: Path | None
    store: Store | StoreFile
    sha256: Future[str] | None = None


def _open(store: Path | Store, *, whole: bool = False) -> _Opened:
    """A store in memory, or opened by path (``whole``: read), its sha256 hashed meanwhile."""
    if isinstance(store, Store):
        return _Opened(None, store)
    handle = read_store(store) if whole else open_store(store)
    path = Path(store) if whole else handle.path
    return _Opened(path, handle, in_background(partial(store_sha256, path)))


def _result(
    request: RebinRequest | RhaleRequest,
    params: dict[str, Any],
    opened: _Opened,
    features: list[FeatureSummary],
    times: tuple[float, float],
) -> EstimateResult:
    """The summary of a run and its timings (``times``: start, store loaded)."""
    t_est = time.perf_counter()
    t0, t_load = times
    params |= request.bootstrap.params() | statistics_params(request.statistics)
    estimator = "dale" if isinstance(request, RebinRequest) else "rhale"
    path, store, digest = opened.path, opened.store, opened.sha256

    def predicted(view: Store | StoreFile) -> np.ndarray:
        return view.prediction() if isinstance(view, StoreFile) else view.prediction

    recorded = store.recorded_prediction() if isinstance(store, StoreFile) else None
    prediction = None if recorded is not None else predicted(store)  # none recorded: read all
    records, by_output = output_records(store.meta), None
    if len(records) > 1:  # each output's predictions (N,) by its label
        by_output = {
            output_label(r): predicted(store.select_output(k)) for k, r in enumerate(records)
        }
    summary = with_statistics(
        Summary(
            estimator=estimator,
            params=params,
            store=store_info(path, store, sha256=digest.result() if digest else None),
            n_rows=store.n_rows,
            features=tuple(features),
            created=utc_now(),
            notes=secants.summary_notes(store.meta),
            prediction=recorded,
        ),
        prediction,
        by_output,
    )
    return EstimateResult(
        summary=summary,
        seconds=time.perf_counter() - t0,
        timings={"load_s": t_load - t0, "estimate_s": t_est - t_load},
        notes=secants.summary_notes(store.meta) + run_notes(features),
    )


def _features(
    request: RebinRequest | RhaleRequest,
    opened: _Opened,
    options: dict[str, Any],
    fixed: FixedBins | None = None,
) -> tuple[list[FeatureSummary], float]:
    """The chosen features' summaries of each output of the store (an edges file's checked
    against it), and when it was ready."""
    records = output_records(opened.store.meta)
    found: list[FeatureSummary] = []
    for k, record in enumerate(records):
        view = opened.store if len(records) == 1 else opened.store.select_output(k)
        levels = stored_level_names(view, request.features or view.feature_names)
        categorical = (*(view.meta.get("categorical_features") or ()), *levels)
        secant = secants.is_secant(view.meta)
        store = secants.whole(view) if secant else view  # secants: whole tables
        with request.engine as engine:
            p = store_passes(store, request.features, engine)
            if fixed is not None:
                where = f"the store '{opened.path}'"
                fixed.check_features(request.features, store.feature_names, where)
            t_load = time.perf_counter()
            rows = None
            if request.bootstrap.replicates:  # bands resample the rows in memory
                rows = secants.whole(store).feature_data(list(p.columns.names))
            kw = {"center": request.center, "categorical": categorical, "rows": rows}
            kw |= {"bootstrap": request.bootstrap, **options}
            if not secant:
                features = binned_features(p, **kw)
            else:  # piecewise-constant model: ale_cli.estimators.secants
                where = "store" if opened.path is None else f"store '{opened.path}'"
                features = secants.estimate(p, secants.fine_grids(store, where), **kw)
        features = with_stored_levels(
            features, view, center=request.center, bootstrap=request.bootstrap
        )
        if len(records) > 1:
            features = [replace(f, output=output_label(record)) for f in features]
        found += features
    return found, t_load


def rebin(request: RebinRequest) -> EstimateResult:
    """``ale rebin``: DALE on fixed bins for the chosen features of a store."""
    t0 = time.perf_counter()
    fixed = FixedBins.from_options(
        bins=request.bins, binning=request.binning, edges=request.edges, default="uniform"
    )
    opened = _open(request.store, whole=request.bootstrap.replicates > 0)
    fixed.check_rows(opened.store.n_rows, f"store '{opened.path}'")
    options = {"bins": fixed.bins, "binning": fixed.binning, "edges": fixed.edges}
    features, t_load = _features(request, opened, options, fixed)
    params = fixed.params(request.center, request.features)
    return _result(request, params, opened, features, (t0, t_load))


def rhale(request: RhaleRequest) -> EstimateResult:
    """``ale rhale``: RHALE with automatic bins for the chosen features of a store."""
    t0 = time.perf_counter()
    opened = _open(request.store, whole=request.bootstrap.replicates > 0)
    n_rows = opened.store.n_rows
    check_bins_rows(
        request.max_bins,
        n_rows,
        f"store '{opened.path}'",
        param="max_bins",
        asked=request.max_bins != DEFAULT_MAX_BINS,  # the default is never refused
    )
    given = request.min_points is not None
    min_points = request.min_points if given else default_min_points(n_rows)
    rhale = {
        "rhale": (min_points, request.alpha),
        "bins": request.max_bins,
        "binning": request.grid,
    }
    features, t_load = _features(request, opened, rhale)
    params: dict[str, Any] = {
        "max_bins": request.max_bins,
        "min_points": min_points,
        "min_points_rule": "given" if given else "ceil(N/20), at least 2",
        "alpha": request.alpha,
        "grid": request.grid,
        "center": request.center,
        "features": list(request.features) if request.features is not None else None,
    }
    return _result(request, params, opened, features, (t0, t_load))
