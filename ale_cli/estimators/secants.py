"""``rebin`` and ``rhale`` on a store of secants (piecewise-constant models).

``ale compute`` stores, for a model detected as piecewise constant, each row's
secant across its bin of a fine grid and the fine grids themselves
(:mod:`ale_cli.models.secant`). From such a store the estimators do not average
the secants over a coarse bin (that would weight the fine bins by their row
counts): they accumulate the fine-grid ALE and read it at the coarse edges
(:mod:`ale_cli.core.finegrid`):

- ``rebin``: any edges; quantile edges at K dividing K_fine are fine edges, other
  edges (uniform bins, other K, an edges file) get the fine curve interpolated
  linearly inside their fine bin, and the feature's note says so;
- ``rhale``: the candidate limits are the fine edges (``max_bins`` and ``grid``
  do not apply); the optimiser merges fine bins;
- the heterogeneity ``s_k`` is the std of the secants of the rows in the coarse
  bin, the standard error ``s_k / sqrt(n_k)``, the centering counts those rows;
- bootstrap bands resample the rows and recompute the fine curve per replicate.

A feature whose median fine bin holds fewer than
:data:`~ale_cli.core.finegrid.MIN_ROWS_PER_FINE_BIN` rows is refused (not
estimable, with a one-line pointer to ``ale classic``): each fine slope then
rests on a few rows and the fine curve drifts from the ALE on coarse bins
(the threshold and its measurement: :func:`~ale_cli.core.finegrid.sparse_reason`;
bench/bench_secant.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ale_cli.core.binning import assign, check_edges, quantile_bins, uniform_edges
from ale_cli.core.binstats import CellStats
from ale_cli.core.bootstrap import percentile_band
from ale_cli.core.finegrid import (
    MIN_ROWS_PER_FINE_BIN,
    FineCurve,
    fine_curve,
    on_grid,
    secant_effect,
    sparse_reason,
)
from ale_cli.core.rhale import optimal_partition
from ale_cli.errors import InputError
from ale_cli.estimators.bands import Bootstrap, replicate_cells
from ale_cli.store.npz import FINE_EDGES, FINE_OFFSETS, Store, StoreFile, read_store
from ale_cli.summary.build import column_ranges, not_estimable, skip_reasons
from ale_cli.summary.model import FeatureSummary, Replicates

METHOD = "secant"
NO_GRID_REASON = "no fine grid in the store for this feature"


def is_secant(meta: Mapping[str, Any]) -> bool:
    """True for the meta of a store of secants."""
    return meta.get("method") == METHOD


def whole(store: Store | StoreFile) -> Store:
    """The store in memory (a store of secants comes from a table that fit in memory)."""
    return store if isinstance(store, Store) else read_store(store.path)


def summary_notes(meta: Mapping[str, Any]) -> tuple[str, ...]:
    """The notes a summary from this store carries (the method note for secants)."""
    if not is_secant(meta):
        return ()
    note = (meta.get("secant") or {}).get("note")
    return (str(note),) if note else ()


def fine_grids(store: Store, where: str) -> dict[str, np.ndarray]:
    """The fine edges of each explained feature that has secants, checked.

    InputError naming the store when the offsets do not cut ``fine_edges`` into
    strictly increasing runs of at least 2 edges (or none)."""
    flat = store.extra.get(FINE_EDGES)
    offsets = store.extra.get(FINE_OFFSETS)
    if flat is None or offsets is None:
        raise InputError(f"{where}: a store of secants lacks 'fine_edges' or 'fine_offsets'")
    offsets = np.asarray(offsets, dtype=np.int64)
    if offsets[0] != 0 or offsets[-1] != flat.size or np.any(np.diff(offsets) < 0):
        raise InputError(f"{where}: array 'fine_offsets' does not cut 'fine_edges' in order")
    out: dict[str, np.ndarray] = {}
    for k, name in enumerate(store.feature_names):
        edges = np.asarray(flat[offsets[k] : offsets[k + 1]], dtype=np.float64)
        if edges.size == 0:
            continue
        try:
            out[name] = check_edges(edges)
        except ValueError as exc:
            raise InputError(f"{where}: fine edges of feature '{name}': {exc}") from None
    return out


@dataclass(frozen=True)
class _Fine:
    """One feature's fine grid, each row's fine bin and the fine curve."""

    edges: np.ndarray
    index: np.ndarray
    curve: FineCurve

    @classmethod
    def of(cls, x: np.ndarray, e: np.ndarray, edges: np.ndarray) -> tuple[_Fine, CellStats]:
        index = assign(x, edges).index
        cells = CellStats.from_values(index, e, n_cells=edges.size - 1)
        return cls(edges, index, fine_curve(edges, cells)), cells


def _note(fine: np.ndarray, z: np.ndarray) -> str:
    """What the feature's curve is, and whether its edges needed interpolation."""
    text = f"secants on a fine grid of {fine.size - 1} quantile bins, accumulated to the edges"
    if on_grid(z, fine):
        return text
    return text + "; edges not on the fine grid: the fine curve is interpolated linearly there"


def _todo(
    X: np.ndarray,
    E: np.ndarray,
    names: Sequence[str],
    grids: Mapping[str, np.ndarray],
    categorical: Sequence[str],
    edges: Mapping[str, np.ndarray] | None,
    min_rows: int,
) -> tuple[dict[str, str], dict[int, tuple[_Fine, CellStats]]]:
    """Skip reasons and, for the others, the fine grid and fine cell statistics."""
    lo, hi = column_ranges(X)
    skip = skip_reasons(names, lo, hi, categorical, edges)
    fine: dict[int, tuple[_Fine, CellStats]] = {}
    for j, name in enumerate(names):
        if name in skip:
            continue
        if name not in grids:
            skip[name] = NO_GRID_REASON
            continue
        found = _Fine.of(X[:, j], E[:, j], grids[name])
        reason = sparse_reason(found[1].counts, min_rows=min_rows)
        if reason is not None:
            skip[name] = reason
            continue
        fine[j] = found
    return skip, fine


def _summary(
    name: str,
    z: np.ndarray,
    fine: _Fine,
    coarse: CellStats,
    *,
    center: str,
    n_outside: int = 0,
    **more: Any,
) -> FeatureSummary:
    """One feature's summary on coarse edges ``z`` from its fine curve and the secants'
    statistics per coarse bin (``more``: ``objective``, ``note``)."""
    if coarse.total == 0:
        return not_estimable(
            name,
            f"no rows inside the given edges [{float(z[0]):g}, {float(z[-1]):g}]",
            n_outside=n_outside,
        )
    effect = secant_effect(z, fine.curve, coarse, center=center)
    return FeatureSummary.from_effect(
        name,
        effect,
        n_outside=n_outside,
        note=more.pop("note", None) or _note(fine.edges, z),
        method=METHOD,
        **more,
    )


def rebin_features(
    X: np.ndarray,
    E: np.ndarray,
    names: Sequence[str],
    grids: Mapping[str, np.ndarray],
    *,
    bins: int,
    binning: str,
    center: str,
    edges: Mapping[str, np.ndarray] | None = None,
    categorical: Sequence[str] = (),
    bootstrap: Bootstrap | None = None,
    min_rows: int = MIN_ROWS_PER_FINE_BIN,
) -> list[FeatureSummary]:
    """``ale rebin`` on secants: values X (N, F), secants E (N, F) of features ``names``
    with fine edges ``grids[name]``; coarse bins as :func:`ale_cli.estimators.dale.rebin_features`.
    Features with fewer than ``min_rows`` rows in their median fine bin are not estimable."""
    skip, fine = _todo(X, E, names, grids, categorical, edges, min_rows)
    lo, hi = column_ranges(X)
    out: list[FeatureSummary] = []
    coarse_index: dict[int, np.ndarray] = {}
    for j, name in enumerate(names):
        if name in skip:
            out.append(not_estimable(name, skip[name]))
            continue
        if edges is not None:
            z = edges[name]
        elif binning == "uniform":
            z = uniform_edges(lo[j], hi[j], bins=bins)
        else:
            z, _ = quantile_bins(X[:, j], bins=bins)
        a = assign(X[:, j], z)
        coarse_index[j] = a.index
        cells = CellStats.from_values(a.index, E[:, j], n_cells=z.size - 1)
        out.append(_summary(name, z, fine[j][0], cells, center=center, n_outside=a.n_outside))
    return _banded(out, E, fine, coarse_index, bootstrap, center)


def rhale_features(
    X: np.ndarray,
    E: np.ndarray,
    names: Sequence[str],
    grids: Mapping[str, np.ndarray],
    *,
    min_points: int,
    alpha: float,
    center: str,
    categorical: Sequence[str] = (),
    bootstrap: Bootstrap | None = None,
    min_rows: int = MIN_ROWS_PER_FINE_BIN,
) -> list[FeatureSummary]:
    """``ale rhale`` on secants: the optimal partition of each feature's fine grid
    (:func:`~ale_cli.core.rhale.optimal_partition` on the secants' fine-bin statistics),
    the effect from the fine curve at its limits; ``min_rows`` as in :func:`rebin_features`."""
    skip, fine = _todo(X, E, names, grids, categorical, None, min_rows)
    out: list[FeatureSummary] = []
    coarse_index: dict[int, np.ndarray] = {}
    for j, name in enumerate(names):
        if name in skip:
            out.append(not_estimable(name, skip[name]))
            continue
        f, cells = fine[j]
        part = optimal_partition(f.edges, cells, min_points=min_points, alpha=alpha)
        note = _note(f.edges, part.edges) + "; candidate limits: the fine edges"
        if not part.feasible:
            note += (
                f"; no partition has at least {min_points} rows (min_points) in every bin: "
                "one bin over the whole range"
            )
        # fine bin j lies in coarse bin k when limits[k] <= j < limits[k + 1]
        owner = np.repeat(np.arange(part.limits.size - 1), np.diff(part.limits))
        coarse_index[j] = np.where(f.index >= 0, owner[np.maximum(f.index, 0)], -1)
        coarse = cells.coarsen(part.limits)
        out.append(
            _summary(
                name, part.edges, f, coarse, center=center, objective=part.objective, note=note
            )
        )
    return _banded(out, E, fine, coarse_index, bootstrap, center)


def _banded(
    features: list[FeatureSummary],
    E: np.ndarray,
    fine: Mapping[int, tuple[_Fine, CellStats]],
    coarse_index: Mapping[int, np.ndarray],
    bootstrap: Bootstrap | None,
    center: str,
) -> list[FeatureSummary]:
    """Bootstrap bands: rows resampled (the same rows for every feature), the fine curve
    and the coarse counts recomputed per replicate, edges fixed; no model call."""
    if bootstrap is None or not bootstrap.replicates:
        return features
    from ale_cli.core.finegrid import replicate_curves

    cols = [j for j in fine if j in coarse_index and features[j].status == "ok"]
    if not cols:
        return features
    index = np.column_stack([c for j in cols for c in (fine[j][0].index, coarse_index[j])])
    values = np.column_stack([c for j in cols for c in (E[:, j], np.zeros(len(E)))])
    sizes = [s for j in cols for s in (fine[j][0].edges.size - 1, features[j].n_bins)]
    rng = np.random.default_rng(bootstrap.seed)
    cells = replicate_cells(index, values, sizes, replicates=bootstrap.replicates, rng=rng)
    out = list(features)
    for k, j in enumerate(cols):
        f, rc_fine, rc_coarse = features[j], cells[2 * k], cells[2 * k + 1]
        value = replicate_curves(fine[j][0].edges, rc_fine.counts, rc_fine.sums, f.edges)
        n = rc_coarse.counts
        if center == "mean":
            mids = (value[:, :-1] + value[:, 1:]) / 2.0
            total = n.sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                offset = np.where(total > 0, (n * mids).sum(axis=1) / total, 0.0)
            value = value - offset[:, None]
        low, high = percentile_band(value, ci=bootstrap.ci)
        reps = Replicates(effect=value, counts=n, ci=bootstrap.ci)
        out[j] = replace(f, ci_low=low, ci_high=high, replicates=reps)
    return out


def store_features(
    store: Store, features: Sequence[str] | None, path: Path | None
) -> tuple[list[str], np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """The chosen features' names, values, secants and fine grids."""
    names = list(store.feature_names) if features is None else list(features)
    X, E = store.feature_data(names)
    where = f"store '{path}'" if path is not None else "store"
    return names, X, E, fine_grids(store, where)


def rebin(
    store: Store | StoreFile,
    path: Path | None,
    *,
    features: Sequence[str] | None,
    bins: int,
    binning: str,
    center: str,
    edges: Mapping[str, np.ndarray] | None,
    categorical: Sequence[str],
    bootstrap: Bootstrap | None,
) -> list[FeatureSummary]:
    """:func:`rebin_features` on a store of secants (read whole)."""
    names, X, E, grids = store_features(whole(store), features, path)
    return rebin_features(
        X,
        E,
        names,
        grids,
        bins=bins,
        binning=binning,
        center=center,
        edges=edges,
        categorical=categorical,
        bootstrap=bootstrap,
    )


def rhale(
    store: Store | StoreFile,
    path: Path | None,
    *,
    features: Sequence[str] | None,
    min_points: int,
    alpha: float,
    center: str,
    categorical: Sequence[str],
    bootstrap: Bootstrap | None,
) -> list[FeatureSummary]:
    """:func:`rhale_features` on a store of secants (read whole)."""
    names, X, E, grids = store_features(whole(store), features, path)
    return rhale_features(
        X,
        E,
        names,
        grids,
        min_points=min_points,
        alpha=alpha,
        center=center,
        categorical=categorical,
        bootstrap=bootstrap,
    )
