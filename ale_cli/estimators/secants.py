"""``rebin`` and ``rhale`` on a store of secants (piecewise-constant models): the fine-grid
ALE read at the coarse edges (:mod:`ale_cli.core.finegrid`; formulas in
docs/estimators.md, "Secants for tree models")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ale_cli.core.binning import assign, check_edges
from ale_cli.core.binstats import CellStats
from ale_cli.core.bootstrap import centered_replicates
from ale_cli.core.finegrid import (
    MIN_ROWS_PER_FINE_BIN,
    FineCurve,
    fine_curve,
    replicate_curves,
    secant_effect,
    sparse_reason,
)
from ale_cli.core.rhale import optimal_partition
from ale_cli.errors import InputError
from ale_cli.estimators.bands import Bootstrap, banded, replicate_cells
from ale_cli.estimators.bins import DEFAULT_BINS
from ale_cli.estimators.cells import Passes, binned, on_edges, ranges, store_passes
from ale_cli.passes.engine import LOCAL
from ale_cli.store.npz import FINE_EDGES, FINE_OFFSETS, Store, StoreFile, read_store
from ale_cli.summary.build import no_rows_reason, not_estimable, skip_reasons
from ale_cli.summary.model import FeatureSummary

METHOD = "secant"
NO_GRID_REASON = "no fine grid in the store for this feature"


def is_secant(meta: Mapping[str, Any]) -> bool:
    """True for the meta of a store of secants."""
    return meta.get("method") == METHOD


def whole(store: Store | StoreFile) -> Store:
    """The store in memory (a store of secants comes from a table that fit in memory)."""
    return store if isinstance(store, Store) else read_store(store.path).select_output(store.output)


def summary_notes(meta: Mapping[str, Any]) -> tuple[str, ...]:
    """The notes a summary from this store carries (the method note for secants)."""
    if not is_secant(meta):
        return ()
    note = (meta.get("secant") or {}).get("note")
    return (str(note),) if note else ()


def fine_grids(store: Store, where: str) -> dict[str, np.ndarray]:
    """The fine edges of each explained feature that has secants; InputError naming the
    store when the offsets do not cut ``fine_edges`` into increasing runs (or none)."""
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
    """One feature's fine grid, the secants' statistics on it, and the fine curve."""

    edges: np.ndarray
    cells: CellStats
    curve: FineCurve


def _note(fine: np.ndarray, z: np.ndarray) -> str:
    """What the feature's curve is, and whether its edges needed interpolation."""
    text = f"secants on a fine grid of {fine.size - 1} quantile bins, accumulated to the edges"
    if np.isin(z, fine).all():
        return text
    return text + "; edges not on the fine grid: the fine curve is interpolated linearly there"


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
    """One feature's summary on coarse edges ``z`` (``more``: ``objective``, ``note``)."""
    if coarse.total == 0:
        return not_estimable(name, no_rows_reason(z), n_outside=n_outside)
    effect = secant_effect(z, fine.curve, coarse, center=center)
    return FeatureSummary.from_effect(
        name,
        effect,
        n_outside=n_outside,
        note=more.pop("note", None) or _note(fine.edges, z),
        method=METHOD,
        **more,
    )


def estimate(
    p: Passes,
    grids: Mapping[str, np.ndarray],
    *,
    center: str,
    bins: int = DEFAULT_BINS,
    binning: str = "uniform",
    edges: Mapping[str, np.ndarray] | None = None,
    rhale: tuple[int, float] | None = None,
    categorical: Sequence[str] = (),
    bootstrap: Bootstrap | None = None,
    rows: tuple[np.ndarray, np.ndarray] | None = None,
    min_rows: int = MIN_ROWS_PER_FINE_BIN,
) -> list[FeatureSummary]:
    """``ale rebin`` on secants (coarse bins as
    :func:`~ale_cli.estimators.dale.binned_features`), or with ``rhale`` (``min_points``,
    ``alpha``) ``ale rhale``: the optimal partition of each feature's fine grid (``bins``,
    ``binning`` unused); the effect from the fine curve at the coarse edges, bootstrap bands
    from the rows in memory (``rows``). Skipped: as :func:`skip_reasons`, features without
    a fine grid or too sparse on it."""
    names = p.columns.names
    lo, hi = ranges(p)
    skip = {n: NO_GRID_REASON for n in names if n not in grids}
    skip |= skip_reasons(names, lo, hi, categorical, edges)
    todo = [j for j, name in enumerate(names) if name not in skip]
    _, cells, _ = on_edges(p, todo, {j: grids[names[j]] for j in todo})
    fine: dict[int, _Fine] = {}  # the fine grid, its statistics and curve of each feature
    for j in todo:
        reason = sparse_reason(cells[j].counts, min_rows=min_rows)
        if reason is not None:
            skip[names[j]] = reason
        else:
            fine[j] = _Fine(grids[names[j]], cells[j], fine_curve(grids[names[j]], cells[j]))
    if rhale is None:
        z, coarse, outside = binned(p, list(fine), lo, hi, bins=bins, binning=binning, edges=edges)
    out = [
        not_estimable(name, skip[name])
        if name in skip
        else _summary(name, z[j], fine[j], coarse[j], center=center, n_outside=outside[j])
        if rhale is None
        else _rhale(name, fine[j], *rhale, center=center)
        for j, name in enumerate(names)
    ]
    return _banded(out, rows, fine, bootstrap, center)


def _rhale(name: str, f: _Fine, min_points: int, alpha: float, center: str) -> FeatureSummary:
    """One feature's RHALE summary: the optimal partition of its fine grid."""
    part = optimal_partition(f.edges, f.cells, min_points=min_points, alpha=alpha)
    note = _note(f.edges, part.edges) + "; candidate limits: the fine edges"
    if not part.feasible:
        note += (
            f"; no partition has at least {min_points} rows (min_points) in every bin: "
            "one bin over the whole range"
        )
    coarse = f.cells.coarsen(part.limits)
    return _summary(name, part.edges, f, coarse, center=center, objective=part.objective, note=note)


def _banded(
    features: list[FeatureSummary],
    rows: tuple[np.ndarray, np.ndarray] | None,
    fine: Mapping[int, _Fine],
    bootstrap: Bootstrap | None,
    center: str,
) -> list[FeatureSummary]:
    """Bootstrap bands: the fine curve and coarse counts recomputed per replicate."""
    cols = [j for j in fine if features[j].status == "ok"]
    if bootstrap is None or not bootstrap.replicates or rows is None or not cols:
        return features
    X, E = rows
    index = np.column_stack(
        [assign(X[:, j], edges).index for j in cols for edges in (fine[j].edges, features[j].edges)]
    )
    values = np.column_stack([c for j in cols for c in (E[:, j], np.zeros(len(E)))])
    sizes = [s for j in cols for s in (fine[j].edges.size - 1, features[j].n_bins)]
    rng = np.random.default_rng(bootstrap.seed)
    cells = replicate_cells(index, values, sizes, replicates=bootstrap.replicates, rng=rng)
    out = list(features)
    for k, j in enumerate(cols):
        f, rc_fine, rc_coarse = features[j], cells[2 * k], cells[2 * k + 1]
        value = replicate_curves(fine[j].edges, rc_fine.counts, rc_fine.sums, f.edges)
        n = rc_coarse.counts
        out[j] = banded(f, centered_replicates(value, n, center), n, bootstrap.ci)
    return out


def in_memory(store: Store, **kw: Any) -> list[FeatureSummary]:
    """:func:`estimate` (options ``kw``) on every feature of a store of secants in memory,
    bands from its rows."""
    p = store_passes(store, None, LOCAL)
    rows = store.feature_data(list(p.columns.names))
    return estimate(p, fine_grids(store, "store"), rows=rows, **kw)
