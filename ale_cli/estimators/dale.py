"""``ale rebin`` and ``ale rhale``: the estimators on a cached local-effects store.

The functions :func:`rebin` and :func:`rhale` read a store, run the numeric
core on every chosen feature and return an
:class:`~ale_cli.summary.build.EstimateResult` (the CLI writes its summary and
prints one line). :func:`rebin_features` and :func:`rhale_features` do the
work on arrays (no I/O) and are what the benchmark times.

A feature whose per-row jumps to the adjacent levels the store holds (meta
``levels``: text, categorical and ``discrete`` columns) is reported per level,
as ``ale classic`` reports it (:func:`ale_cli.estimators.stored_levels.with_stored_levels`,
no model call). Otherwise a feature is reported ``not_estimable`` (the run goes
on) when it is listed in the store's ``categorical_features``, when it has a single distinct value,
when the edges file has no edges for it, or when none of its rows lies inside
the given edges.

A store of secants (a piecewise-constant model, store ``method`` "secant") is
estimated by :mod:`ale_cli.estimators.secants`, which accumulates the fine-grid effect to
the coarse edges instead of averaging the secants per bin.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ale_cli.estimators import secants
from ale_cli.store.npz import Store, StoreFile, open_store, read_store

if TYPE_CHECKING:
    from concurrent.futures import Future
from ale_cli.checks import check_choice, check_count, names_tuple
from ale_cli.core.binning import (
    BINNINGS,
    Assignment,
    UniformGrid,
    assign,
    quantile_bins,
    uniform_edges,
)
from ale_cli.core.binstats import CellStats, bin_stats, uniform_cells
from ale_cli.core.effect import effect_from_bins
from ale_cli.core.rhale import (
    DEFAULT_ALPHA,
    DEFAULT_MAX_BINS,
    default_min_points,
    optimal_partition,
)
from ale_cli.errors import InputError
from ale_cli.estimators.bands import Bootstrap, with_bands
from ale_cli.estimators.bins import DEFAULT_BINS, FixedBins, check_bins_rows, check_center
from ale_cli.estimators.dale_stream import LOCAL, Columns, Passes, rebin_store, rhale_cells
from ale_cli.estimators.stored_levels import stored_level_names, with_stored_levels
from ale_cli.summary.build import (
    EstimateResult,
    column_ranges,
    not_estimable,
    run_notes,
    skip_reasons,
    store_info,
    summary_from_cells,
    utc_now,
)
from ale_cli.summary.model import FeatureSummary, Summary, with_statistics


@dataclass(frozen=True)
class RebinRequest:
    """Options of ``ale rebin``; None means the default (or, with ``edges``, not used).

    The options are checked here, naming the parameter at fault.
    """

    store: Path | Store
    bins: int | None = None
    binning: str | None = None
    center: str = "mean"
    features: tuple[str, ...] | None = None
    edges: Path | None = None
    bootstrap: Bootstrap = Bootstrap()
    engine: str = "local"
    scheduler: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "features", names_tuple(self.features, "features"))
        check_engine_request(self.engine, self.scheduler, self.store, self.bootstrap)
        check_center(self.center)
        if self.bins is not None:
            check_count(self.bins, "bins")
        check_choice(self.binning, BINNINGS, "binning")


@dataclass(frozen=True)
class RhaleRequest:
    """Options of ``ale rhale``; ``min_points`` None means ``ceil(N / 20)``, at least 2."""

    store: Path | Store
    max_bins: int = DEFAULT_MAX_BINS
    min_points: int | None = None
    alpha: float = DEFAULT_ALPHA
    grid: str = "uniform"
    center: str = "mean"
    features: tuple[str, ...] | None = None
    bootstrap: Bootstrap = Bootstrap()
    engine: str = "local"
    scheduler: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "features", names_tuple(self.features, "features"))
        check_engine_request(self.engine, self.scheduler, self.store, self.bootstrap)
        check_rhale_options(
            max_bins=self.max_bins,
            min_points=self.min_points,
            alpha=self.alpha,
            grid=self.grid,
            center=self.center,
        )


def check_engine_request(
    engine: str, scheduler: str | None, store: Path | Store, bootstrap: Bootstrap
) -> None:
    """InputError naming ``engine`` (or ``scheduler``/``bootstrap``) when the Dask engine is
    asked for what it does not do: a store in memory, bootstrap bands."""
    from ale_cli.engines import check_engine

    check_engine(engine, scheduler)
    if engine != "dask":
        return
    if isinstance(store, Store):
        raise InputError(
            "{param} dask estimates from a store on disk, not in memory", param="engine"
        )
    if bootstrap.replicates:
        raise InputError(
            "{param} resamples the rows in memory; it is not computed by {param:engine} dask",
            param="bootstrap",
        )


@contextmanager
def _passes(engine: str, scheduler: str | None) -> Iterator[Passes]:
    """How the streaming estimators gather cells: here, or on Dask workers."""
    if engine != "dask":
        yield LOCAL
        return
    from ale_cli.engines.dask import dask_passes

    with dask_passes(scheduler) as passes:
        yield passes


def check_rhale_options(
    *, max_bins: int, min_points: int | None, alpha: float, grid: str, center: str
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


def _uniform_cells(
    X: np.ndarray, E: np.ndarray, cols: list[int], lo: np.ndarray, hi: np.ndarray, bins: int
) -> dict[int, CellStats] | None:
    """Cell statistics of columns ``cols`` on their uniform edges, all columns at once."""
    if not cols:
        return {}
    if len(cols) == X.shape[1]:
        Xs, Es = X, E
    else:
        Xs, Es = np.ascontiguousarray(X[:, cols]), np.ascontiguousarray(E[:, cols])
    grid = UniformGrid.build(lo[cols], hi[cols], bins=bins)
    if grid is None:
        return None
    stats = uniform_cells(Xs, Es, grid)
    return dict(zip(cols, stats, strict=True))


def _column_cells(
    x: np.ndarray, e: np.ndarray, edges: np.ndarray, a: Assignment | None = None
) -> tuple[CellStats, int]:
    a = assign(x, edges) if a is None else a
    return CellStats.from_values(a.index, e, n_cells=edges.size - 1), a.n_outside


# -- rebin -----------------------------------------------------------------------------------


def rebin_features(
    X: np.ndarray,
    E: np.ndarray,
    names: Sequence[str],
    *,
    bins: int = DEFAULT_BINS,
    binning: str = "uniform",
    center: str = "mean",
    edges: dict[str, np.ndarray] | None = None,
    categorical: Sequence[str] = (),
    bootstrap: Bootstrap | None = None,
) -> list[FeatureSummary]:
    """DALE on fixed bins for every column of X (N, D) with local effects E (N, D).

    Bins are ``bins`` uniform or type-1 quantile bins of each feature, or the
    given ``edges[name]`` (rows outside them are left out and counted). With
    ``bootstrap``, percentile bands on the same bins (:mod:`ale_cli.estimators.bands`).
    """
    check_center(center)
    check_choice(binning, BINNINGS, "binning")
    lo, hi = column_ranges(X)
    skip = skip_reasons(names, lo, hi, categorical, edges)
    todo = [j for j, name in enumerate(names) if name not in skip]
    cells: dict[int, CellStats] | None = None
    if edges is None and binning == "uniform":
        cells = _uniform_cells(X, E, todo, lo, hi, bins)
    out: list[FeatureSummary] = []
    for j, name in enumerate(names):
        if name in skip:
            out.append(not_estimable(name, skip[name]))
            continue
        n_outside = 0
        if cells is not None:
            z = np.linspace(lo[j], hi[j], bins + 1)
            cell = cells[j]
        else:
            known: Assignment | None = None
            if edges is not None:
                z = edges[name]
            elif binning == "uniform":
                z = uniform_edges(lo[j], hi[j], bins=bins)
            else:
                z, known = quantile_bins(X[:, j], bins=bins)
            cell, n_outside = _column_cells(X[:, j], E[:, j], z, known)
        out.append(summary_from_cells(name, z, cell, n_outside=n_outside, center=center))
    return _banded(out, X, E, names, bootstrap, center)


def _banded(
    features: list[FeatureSummary],
    X: np.ndarray,
    E: np.ndarray,
    names: Sequence[str],
    bootstrap: Bootstrap | None,
    center: str,
) -> list[FeatureSummary]:
    """The features with bootstrap bands on their own edges (unchanged without replicates)."""
    if bootstrap is None or not bootstrap.replicates:
        return features
    index, values = {}, {}
    for j, (name, f) in enumerate(zip(names, features, strict=True)):
        if f.status == "ok":
            index[name], values[name] = assign(X[:, j], f.edges).index, E[:, j]
    return with_bands(features, index, values, bootstrap, center=center)


# -- rhale -----------------------------------------------------------------------------------


def rhale_features(
    X: np.ndarray,
    E: np.ndarray,
    names: Sequence[str],
    *,
    max_bins: int = DEFAULT_MAX_BINS,
    min_points: int,
    alpha: float = DEFAULT_ALPHA,
    grid: str = "uniform",
    center: str = "mean",
    categorical: Sequence[str] = (),
    bootstrap: Bootstrap | None = None,
) -> list[FeatureSummary]:
    """RHALE with automatic bins for every column of X (N, D) with local effects E (N, D).

    Each feature's grid has ``max_bins`` uniform (or type-1 quantile) cells
    over its range; the optimal partition (:func:`~ale_cli.core.rhale.optimal_partition`)
    is found from the per-cell statistics, which are then summed per bin (no
    second pass over the rows). With ``bootstrap``, percentile bands on the
    chosen bins (the partition itself is not resampled).
    """
    check_rhale_options(
        max_bins=max_bins, min_points=min_points, alpha=alpha, grid=grid, center=center
    )
    lo, hi = column_ranges(X)
    skip = skip_reasons(names, lo, hi, categorical)
    todo = [j for j, name in enumerate(names) if name not in skip]
    cells = _uniform_cells(X, E, todo, lo, hi, max_bins) if grid == "uniform" else None
    out: list[FeatureSummary] = []
    for j, name in enumerate(names):
        if name in skip:
            out.append(not_estimable(name, skip[name]))
            continue
        if cells is not None:
            g = np.linspace(lo[j], hi[j], max_bins + 1)
            cell = cells[j]
        else:
            if grid == "uniform":
                g, known = uniform_edges(lo[j], hi[j], bins=max_bins), None
            else:
                g, known = quantile_bins(X[:, j], bins=max_bins)
            cell, _ = _column_cells(X[:, j], E[:, j], g, known)
        out.append(rhale_summary(name, g, cell, min_points=min_points, alpha=alpha, center=center))
    return _banded(out, X, E, names, bootstrap, center)


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
    stats = bin_stats(cell.coarsen(part.limits))
    effect = effect_from_bins(part.edges, stats, center=center)
    return FeatureSummary.from_effect(
        name, effect, objective=part.objective, note=note, n_outside=0
    )


# -- from a store ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Opened:
    """A store to estimate from: its path (None in memory), the store, and its file's
    sha256 being computed in the background (None in memory)."""

    path: Path | None
    store: Store | StoreFile
    sha256: Future[str] | None = None


def _open(store: Path | Store, *, whole: bool = False) -> _Opened:
    """A store given by path (opened for reading chunk by chunk: only its meta and names
    are read here; ``whole``: read into memory) or in memory (a :class:`Store`)."""
    if isinstance(store, Store):
        return _Opened(None, store)
    if whole:
        return _Opened(Path(store), read_store(store), _hash_in_background(Path(store)))
    handle = open_store(store)
    return _Opened(handle.path, handle, _hash_in_background(handle.path))


def _hash_in_background(path: Path) -> Future[str]:
    """sha256 of ``path`` in a helper thread (hashlib releases the GIL): on a large store
    it takes seconds, which then overlap with the estimator's passes."""
    from concurrent.futures import Future
    from threading import Thread

    from ale_cli.store.npz import store_sha256

    future: Future[str] = Future()

    def run() -> None:
        try:
            future.set_result(store_sha256(path))  # a file's, or a directory store's
        except BaseException as exc:
            future.set_exception(exc)

    Thread(target=run, name="ale-hash", daemon=True).start()
    return future


def _select(
    store: Store, features: tuple[str, ...] | None
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The features asked for (default: every explained feature), their values and effects."""
    names = list(store.feature_names) if features is None else list(features)
    X, E = store.feature_data(names)
    return names, X, E


def _result(
    estimator: str,
    params: dict[str, Any],
    opened: _Opened,
    features: list[FeatureSummary],
    times: tuple[float, float, float],
) -> EstimateResult:
    """The summary of a run and its timings (start, store loaded, estimates done)."""
    t0, t_load, t_est = times
    path, store, digest = opened.path, opened.store, opened.sha256
    if isinstance(store, StoreFile):  # the manifest's distribution, else read them all
        recorded = store.recorded_prediction()
        prediction = None if recorded is not None else store.prediction()
    else:
        recorded, prediction = None, store.prediction
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
    )
    return EstimateResult(
        summary=summary,
        seconds=time.perf_counter() - t0,
        timings={"load_s": t_load - t0, "estimate_s": t_est - t_load},
        notes=secants.summary_notes(store.meta) + run_notes(features),
    )


def rebin(request: RebinRequest) -> EstimateResult:
    """``ale rebin``: DALE on fixed bins for the chosen features of a store (a store file is
    read chunk by chunk, :func:`ale_cli.estimators.dale_stream.rebin_store`)."""
    t0 = time.perf_counter()
    fixed = FixedBins.from_options(
        bins=request.bins, binning=request.binning, edges=request.edges, default="uniform"
    )
    # bootstrap replicates resample rows: the store is read whole, else chunk by chunk
    opened = _open(request.store, whole=request.bootstrap.replicates > 0)
    path, store = opened.path, opened.store
    levels = stored_level_names(store, request.features or store.feature_names)
    # features with stored per-level jumps are skipped here and estimated per level below
    categorical = (*(store.meta.get("categorical_features") or ()), *levels)
    fixed.check_rows(store.n_rows, f"store '{path}'")
    if secants.is_secant(store.meta):  # piecewise-constant model: ale_cli.estimators.secants
        fixed.check_features(request.features, store.feature_names, f"the store '{path}'")
        t_load = time.perf_counter()
        features = secants.rebin(
            store,
            path,
            features=request.features,
            bins=fixed.bins,
            binning=fixed.binning,
            center=request.center,
            edges=fixed.edges,
            categorical=categorical,
            bootstrap=request.bootstrap,
        )
    elif isinstance(store, StoreFile):
        cols = Columns.of(store, request.features)
        fixed.check_features(request.features, store.feature_names, f"the store '{path}'")
        t_load = time.perf_counter()
        with _passes(request.engine, request.scheduler) as passes:
            features = rebin_store(
                store,
                cols,
                bins=fixed.bins,
                binning=fixed.binning,
                center=request.center,
                edges=fixed.edges,
                categorical=categorical,
                passes=passes,
            )
    else:
        names, X, E = _select(store, request.features)
        fixed.check_features(request.features, store.feature_names, f"the store '{path}'")
        t_load = time.perf_counter()
        features = rebin_features(
            X,
            E,
            names,
            bins=fixed.bins,
            binning=fixed.binning,
            center=request.center,
            edges=fixed.edges,
            categorical=categorical,
            bootstrap=request.bootstrap,
        )
    if levels:
        features = with_stored_levels(
            features, store, center=request.center, bootstrap=request.bootstrap
        )
    t_est = time.perf_counter()
    params = fixed.params(request.center, request.features) | request.bootstrap.params()
    return _result("dale", params, opened, features, (t0, t_load, t_est))


def _rhale_store(
    store: StoreFile, request: RhaleRequest, min_points: int, categorical: Sequence[str]
) -> list[FeatureSummary]:
    """:func:`rhale_features` over a store file's chunks."""
    cols = Columns.of(store, request.features)
    with _passes(request.engine, request.scheduler) as passes:
        skip, grids, cells = rhale_cells(
            store,
            cols,
            max_bins=request.max_bins,
            grid=request.grid,
            categorical=categorical,
            passes=passes,
        )
    out: list[FeatureSummary] = []
    for j, name in enumerate(cols.names):
        if name in skip:
            out.append(not_estimable(name, skip[name]))
            continue
        out.append(
            rhale_summary(
                name,
                grids[j],
                cells[j],
                min_points=min_points,
                alpha=request.alpha,
                center=request.center,
            )
        )
    return out


def rhale(request: RhaleRequest) -> EstimateResult:
    """``ale rhale``: RHALE with automatic bins for the chosen features of a store (a store
    file is read chunk by chunk)."""
    t0 = time.perf_counter()
    # bootstrap replicates resample rows: the store is read whole, else chunk by chunk
    opened = _open(request.store, whole=request.bootstrap.replicates > 0)
    store = opened.store
    n_rows = store.n_rows
    check_bins_rows(
        request.max_bins,
        n_rows,
        f"store '{opened.path}'",
        param="max_bins",
        asked=request.max_bins != DEFAULT_MAX_BINS,  # the default is never refused
    )
    min_points = (
        request.min_points if request.min_points is not None else default_min_points(n_rows)
    )
    levels = stored_level_names(store, request.features or store.feature_names)
    # features with stored per-level jumps are skipped here and estimated per level below
    categorical = (*(store.meta.get("categorical_features") or ()), *levels)
    if secants.is_secant(store.meta):  # piecewise-constant model: ale_cli.estimators.secants
        t_load = time.perf_counter()
        features = secants.rhale(
            store,
            opened.path,
            features=request.features,
            min_points=min_points,
            alpha=request.alpha,
            center=request.center,
            categorical=categorical,
            bootstrap=request.bootstrap,
        )
    elif isinstance(store, StoreFile):
        t_load = time.perf_counter()
        features = _rhale_store(store, request, min_points, categorical)
    else:
        names, X, E = _select(store, request.features)
        t_load = time.perf_counter()
        features = rhale_features(
            X,
            E,
            names,
            max_bins=request.max_bins,
            min_points=min_points,
            alpha=request.alpha,
            grid=request.grid,
            center=request.center,
            categorical=categorical,
            bootstrap=request.bootstrap,
        )
    if levels:
        features = with_stored_levels(
            features, store, center=request.center, bootstrap=request.bootstrap
        )
    t_est = time.perf_counter()
    params: dict[str, Any] = {
        "max_bins": request.max_bins,
        "min_points": min_points,
        "min_points_rule": "given" if request.min_points is not None else "ceil(N/20), at least 2",
        "alpha": request.alpha,
        "grid": request.grid,
        "center": request.center,
        "features": list(request.features) if request.features is not None else None,
        **request.bootstrap.params(),
    }
    return _result("rhale", params, opened, features, (t0, t_load, t_est))
