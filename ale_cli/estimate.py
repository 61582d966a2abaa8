"""``ale rebin`` and ``ale rhale``: the estimators on a cached local-effects store.

The functions :func:`rebin` and :func:`rhale` read a store, run the numeric
core on every chosen feature and return a :class:`~ale_cli.adapters.summary.Summary`
(the CLI writes it and prints one line). :func:`rebin_features` and
:func:`rhale_features` do the work on arrays (no I/O) and are what the
benchmark times.

A feature is reported ``not_estimable`` (the run goes on) when it is listed
in the store's ``categorical_features``, when it has a single distinct value,
when ``--edges`` has no edges for it, or when none of its rows lies inside
the given edges.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from ale_cli.adapters.edges import EdgesFile, read_edges
from ale_cli.adapters.files import sha256_file
from ale_cli.adapters.store import Store, read_store
from ale_cli.adapters.summary import FeatureSummary, InteractionSummary, Summary
from ale_cli.core.accumulate import CENTER_MODES
from ale_cli.core.binning import (
    BINNINGS,
    Assignment,
    UniformGrid,
    assign,
    quantile_bins,
    uniform_edges,
)
from ale_cli.core.binstats import CellStats, bin_stats, uniform_cells
from ale_cli.core.effect import FirstOrderEffect, effect_from_bins, effect_from_cells
from ale_cli.core.rhale import (
    DEFAULT_ALPHA,
    DEFAULT_MAX_BINS,
    default_min_points,
    optimal_partition,
)
from ale_cli.errors import InputError

DEFAULT_BINS = 20
CATEGORICAL_REASON = "categorical feature (held fixed)"
CONSTANT_REASON = "single distinct value"
NO_EDGES_REASON = "no edges for this feature in the --edges file"


@dataclass(frozen=True)
class RebinRequest:
    """Options of ``ale rebin``; None means the default (or, with ``edges``, not used)."""

    store: Path
    bins: int | None = None
    binning: str | None = None
    center: str = "mean"
    features: tuple[str, ...] | None = None
    edges: Path | None = None


@dataclass(frozen=True)
class RhaleRequest:
    """Options of ``ale rhale``; ``min_points`` None means ``ceil(N / 20)``, at least 2."""

    store: Path
    max_bins: int = DEFAULT_MAX_BINS
    min_points: int | None = None
    alpha: float = DEFAULT_ALPHA
    grid: str = "uniform"
    center: str = "mean"
    features: tuple[str, ...] | None = None


@dataclass(frozen=True)
class EstimateResult:
    """One estimator run: the summary, timings and notes for the user (stderr)."""

    summary: Summary
    seconds: float
    timings: dict[str, float]
    notes: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class FixedBins:
    """Fixed bins as asked on the command line: K bins of a binning, or an edges file.

    Shared by ``ale rebin`` and ``ale classic``; :meth:`from_options` checks
    the options before anything is loaded.
    """

    bins: int
    binning: str
    edges_file: EdgesFile | None = None

    @classmethod
    def from_options(
        cls,
        *,
        bins: int | None,
        binning: str | None,
        edges: Path | None,
        default: str,
        default_bins: int = DEFAULT_BINS,
    ) -> FixedBins:
        """Check ``--bins/--binning/--edges`` (None = not given) and read the edges file;
        ``default``/``default_bins`` are the command's defaults."""
        if edges is not None:
            if bins is not None or binning is not None:
                raise InputError(
                    f"--edges takes the bins from '{edges}'; leave out --bins and --binning"
                )
            return cls(bins=default_bins, binning=default, edges_file=read_edges(edges))
        k = default_bins if bins is None else bins
        if k < 1:
            raise InputError(f"--bins must be at least 1, got {k}")
        chosen = binning or default
        if chosen not in BINNINGS:
            raise InputError(f"--binning must be one of {', '.join(BINNINGS)}, got '{chosen}'")
        return cls(bins=k, binning=chosen)

    def check_features(
        self, features: Sequence[str] | None, available: Sequence[str], source: str
    ) -> None:
        """With an edges file: every feature asked for has edges, and when none were
        asked for, the file names no feature that ``source`` lacks."""
        if self.edges_file is None:
            return
        missing = [n for n in features or () if n not in self.edges_file.edges]
        if missing:
            raise InputError(
                f"edges file '{self.edges_file.path}' has no edges for feature '{missing[0]}'"
            )
        unknown = [n for n in self.edges_file.edges if n not in available]
        if features is None and unknown:
            raise InputError(
                f"edges file '{self.edges_file.path}' has edges for '{unknown[0]}', which "
                f"{source} does not have; choose features with --features"
            )

    def params(self, center: str, features: Sequence[str] | None) -> dict[str, Any]:
        """The binning part of a summary's ``params`` (defaults included)."""
        by_file = self.edges_file is not None
        return {
            "bins": None if by_file else self.bins,
            "binning": "edges" if by_file else self.binning,
            "center": center,
            "features": list(features) if features is not None else None,
            "edges": self.edges_file.describe() if self.edges_file is not None else None,
        }


# -- shared ----------------------------------------------------------------------------------


def _feature_summary(
    name: str,
    effect: FirstOrderEffect,
    *,
    n_outside: int = 0,
    objective: float | None = None,
    note: str | None = None,
) -> FeatureSummary:
    return FeatureSummary(
        name=name,
        edges=effect.edges,
        counts=effect.counts,
        bin_effect=effect.bin_effect,
        bin_std=effect.bin_std,
        bin_stderr=effect.bin_stderr,
        bin_filled=effect.bin_filled,
        effect=effect.effect,
        std=effect.std,
        stderr=effect.stderr,
        center_offset=effect.center_offset,
        n_outside=n_outside,
        objective=objective,
        note=note,
    )


def not_estimable(name: str, reason: str, *, n_outside: int = 0) -> FeatureSummary:
    return FeatureSummary(name=name, status="not_estimable", reason=reason, n_outside=n_outside)


def check_center(center: str) -> None:
    if center not in CENTER_MODES:
        raise InputError(f"--center must be one of {', '.join(CENTER_MODES)}, got '{center}'")


def column_ranges(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if X.shape[0] == 0:
        return np.zeros(X.shape[1]), np.zeros(X.shape[1])
    return X.min(axis=0), X.max(axis=0)


def skip_reasons(
    names: Sequence[str],
    lo: np.ndarray,
    hi: np.ndarray,
    categorical: Sequence[str],
    edges: Mapping[str, np.ndarray] | None = None,
) -> dict[str, str]:
    """Features that are not estimable, with the reason; the others are absent.

    With given ``edges``, a feature that has none is not estimable either.
    """
    cats = set(categorical)
    skip: dict[str, str] = {}
    for j, name in enumerate(names):
        if name in cats:
            skip[name] = CATEGORICAL_REASON
        elif not hi[j] > lo[j]:
            skip[name] = CONSTANT_REASON
        elif edges is not None and name not in edges:
            skip[name] = NO_EDGES_REASON
    return skip


def summary_from_cells(
    name: str, edges: np.ndarray, cells: CellStats, *, n_outside: int, center: str
) -> FeatureSummary:
    """A feature's summary from the statistics of its bins (not estimable if all are empty)."""
    if cells.total == 0:
        return not_estimable(
            name,
            f"no rows inside the given edges [{edges[0]!r}, {edges[-1]!r}]",
            n_outside=n_outside,
        )
    return _feature_summary(
        name, effect_from_cells(edges, cells, center=center), n_outside=n_outside
    )


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
) -> list[FeatureSummary]:
    """DALE on fixed bins for every column of X (N, D) with local effects E (N, D).

    Bins are ``bins`` uniform or type-1 quantile bins of each feature, or the
    given ``edges[name]`` (rows outside them are left out and counted).
    """
    check_center(center)
    if binning not in BINNINGS:
        raise InputError(f"--binning must be one of {', '.join(BINNINGS)}, got '{binning}'")
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
    return out


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
) -> list[FeatureSummary]:
    """RHALE with automatic bins for every column of X (N, D) with local effects E (N, D).

    Each feature's grid has ``max_bins`` uniform (or type-1 quantile) cells
    over its range; the optimal partition (:func:`~ale_cli.core.rhale.optimal_partition`)
    is found from the per-cell statistics, which are then summed per bin (no
    second pass over the rows).
    """
    check_center(center)
    if grid not in BINNINGS:
        raise InputError(f"--grid must be one of {', '.join(BINNINGS)}, got '{grid}'")
    if max_bins < 1:
        raise InputError(f"--max-bins must be at least 1, got {max_bins}")
    if min_points < 2:
        raise InputError(f"--min-points must be at least 2, got {min_points}")
    if not 0.0 <= alpha <= 1.0:
        raise InputError(f"--alpha must be between 0 and 1, got {alpha}")
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
        part = optimal_partition(g, cell, min_points=min_points, alpha=alpha)
        note = None
        if not part.feasible:
            note = (
                f"no partition has at least {min_points} rows (--min-points) in every bin; "
                "one bin over the whole range"
            )
        stats = bin_stats(cell.coarsen(part.limits))
        effect = effect_from_bins(part.edges, stats, center=center)
        out.append(_feature_summary(name, effect, objective=part.objective, note=note))
    return out


# -- from a store ----------------------------------------------------------------------------


def _select(store: Store, features: tuple[str, ...] | None) -> tuple[list[int], list[str]]:
    if features is None:
        return list(range(len(store.feature_names))), list(store.feature_names)
    if len(set(features)) != len(features):
        dup = next(f for f in features if features.count(f) > 1)
        raise InputError(f"--features names feature '{dup}' more than once")
    return [store.feature_index(f) for f in features], list(features)


def _columns(store: Store, cols: list[int]) -> tuple[np.ndarray, np.ndarray]:
    if cols == list(range(store.X.shape[1])):
        return store.X, store.local_effects
    return (
        np.ascontiguousarray(store.X[:, cols]),
        np.ascontiguousarray(store.local_effects[:, cols]),
    )


def store_info(path: Path, store: Store) -> dict[str, Any]:
    """The store's identity and the parts of its meta a summary's reader needs."""
    meta = store.meta
    model = meta.get("model") or {}
    data = meta.get("data") or {}
    return {
        "path": str(path),
        "sha256": sha256_file(path),
        "model": {k: model.get(k) for k in ("path", "sha256", "format")},
        "data": {k: data.get(k) for k in ("path", "sha256")},
        "method": meta.get("method"),
        "output": meta.get("output"),
        "n_rows": int(store.X.shape[0]),
    }


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def run_notes(features: Sequence[FeatureSummary | InteractionSummary]) -> tuple[str, ...]:
    """One line per not-estimable item, per item with rows outside its edges, per note."""
    notes: list[str] = []
    for f in features:
        if f.status != "ok":
            notes.append(f"{f.name}: not estimable ({f.reason})")
        if f.n_outside:
            notes.append(
                f"{f.name}: {f.n_outside} row{'s' if f.n_outside != 1 else ''} outside the "
                "given edges left out"
            )
        if f.note:
            notes.append(f"{f.name}: {f.note}")
    return tuple(notes)


def _result(
    estimator: str,
    params: dict[str, Any],
    path: Path,
    store: Store,
    features: list[FeatureSummary],
    times: tuple[float, float, float],
) -> EstimateResult:
    """The summary of a run and its timings (start, store loaded, estimates done)."""
    t0, t_load, t_est = times
    summary = Summary(
        estimator=estimator,
        params=params,
        store=store_info(path, store),
        n_rows=int(store.X.shape[0]),
        features=tuple(features),
        created=utc_now(),
    )
    return EstimateResult(
        summary=summary,
        seconds=time.perf_counter() - t0,
        timings={"load_s": t_load - t0, "estimate_s": t_est - t_load},
        notes=run_notes(features),
    )


def rebin(request: RebinRequest) -> EstimateResult:
    """``ale rebin``: DALE on fixed bins for the chosen features of a store."""
    t0 = time.perf_counter()
    fixed = FixedBins.from_options(
        bins=request.bins, binning=request.binning, edges=request.edges, default="uniform"
    )
    store = read_store(request.store)
    cols, names = _select(store, request.features)
    fixed.check_features(request.features, store.feature_names, f"the store '{request.store}'")
    X, E = _columns(store, cols)
    t_load = time.perf_counter()
    features = rebin_features(
        X,
        E,
        names,
        bins=fixed.bins,
        binning=fixed.binning,
        center=request.center,
        edges=fixed.edges_file.edges if fixed.edges_file is not None else None,
        categorical=store.meta.get("categorical_features") or (),
    )
    t_est = time.perf_counter()
    params = fixed.params(request.center, request.features)
    return _result("dale", params, request.store, store, features, (t0, t_load, t_est))


def rhale(request: RhaleRequest) -> EstimateResult:
    """``ale rhale``: RHALE with automatic bins for the chosen features of a store."""
    t0 = time.perf_counter()
    store = read_store(request.store)
    cols, names = _select(store, request.features)
    X, E = _columns(store, cols)
    n_rows = int(X.shape[0])
    min_points = (
        request.min_points if request.min_points is not None else default_min_points(n_rows)
    )
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
        categorical=store.meta.get("categorical_features") or (),
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
    }
    return _result("rhale", params, request.store, store, features, (t0, t_load, t_est))
