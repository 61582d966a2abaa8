"""Per-level records from a store: the jumps to the adjacent levels ``compute`` recorded.

``ale compute`` records, for the features estimated per level, every row's differences
to the adjacent levels (the arrays :data:`~ale_cli.estimators.levels.LEVEL_UP` and
:data:`~ale_cli.estimators.levels.LEVEL_DOWN`, their plans in the meta's ``levels``);
``rebin`` and ``rhale`` turn them into the per-level records ``ale classic`` reports,
with no model call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ale_cli.core.binstats import CellStats
from ale_cli.core.discrete import level_cells
from ale_cli.errors import InputError
from ale_cli.estimators.bands import Bootstrap
from ale_cli.estimators.levels import LEVEL_DOWN, LEVEL_UP, LevelPlan, level_record, level_summary
from ale_cli.store.npz import Store, StoreFile
from ale_cli.summary.model import FeatureSummary


def stored_plans(meta: Mapping[str, Any], where: str) -> tuple[LevelPlan, ...]:
    """The plans in a store's meta ``levels``, in the order of the columns of its
    ``level_up``/``level_down`` arrays (empty for a store without them)."""
    items = meta.get("levels") or []
    if not isinstance(items, list):
        raise InputError(f"{where}: its meta's 'levels' is not a list")
    return tuple(LevelPlan.from_meta(item, where) for item in items)


def stored_level_names(store: Store | StoreFile, names: Sequence[str]) -> tuple[str, ...]:
    """The features among ``names`` whose per-row jumps the store holds (estimated per
    level by ``rebin``/``rhale``)."""
    held = {p.name for p in stored_plans(store.meta, f"store '{_label(store)}'")}
    return tuple(n for n in names if n in held)


def _label(store: Store | StoreFile) -> str:
    return str(getattr(store, "path", "in memory"))


def stored_level_features(
    store: Store | StoreFile,
    names: Sequence[str],
    *,
    center: str = "mean",
    bootstrap: Bootstrap | None = None,
) -> dict[str, FeatureSummary]:
    """The per-level records of the features among ``names`` whose jumps the store holds,
    from its ``level_up``/``level_down`` arrays and X (no model call): equal to
    :func:`level_features` on the rows and model the store was computed from.

    An in-memory :class:`~ale_cli.store.npz.Store` runs :func:`level_record` on the
    whole arrays (with ``bootstrap`` bands); a store file is read chunk by chunk, its
    jump statistics merged (:func:`~ale_cli.core.discrete.level_cells`; bootstrap bands
    need the whole store).
    """
    where = f"store '{_label(store)}'"
    plans = {p.name: (i, p) for i, p in enumerate(stored_plans(store.meta, where))}
    todo = [n for n in names if n in plans]
    if not todo:
        return {}
    cols = {n: store.input_index(n) for n in todo}
    if isinstance(store, Store):
        arrays = store.extra
        if LEVEL_UP not in arrays or LEVEL_DOWN not in arrays:
            raise InputError(f"{where} lacks the array(s) {LEVEL_UP}, {LEVEL_DOWN}")
        out = {}
        for n in todo:
            i, plan = plans[n]
            position = _positions(plan, store.X[:, cols[n]], where)
            up, down = arrays[LEVEL_UP][:, i], arrays[LEVEL_DOWN][:, i]
            out[n] = level_record(plan, position, up, down, center=center, bootstrap=bootstrap)
        return out
    if bootstrap is not None and bootstrap.replicates:
        raise ValueError("bootstrap bands of a store need it in memory (read_store)")
    acc: dict[str, tuple[CellStats, np.ndarray]] = {}
    for chunk in store.chunks(("X", LEVEL_UP, LEVEL_DOWN)):
        for n in todo:
            i, plan = plans[n]
            position = _positions(plan, chunk["X"][:, cols[n]], where)
            cells, counts = level_cells(
                position=position,
                up=chunk[LEVEL_UP][:, i],
                down=chunk[LEVEL_DOWN][:, i],
                n_levels=plan.n_levels,
            )
            if n in acc:
                cells, counts = acc[n][0].merge(cells), acc[n][1] + counts
            acc[n] = (cells, counts)
    return {n: level_summary(plans[n][1], *acc[n], center=center) for n in todo}


def _positions(plan: LevelPlan, x: np.ndarray, where: str) -> np.ndarray:
    try:
        return plan.positions(x)
    except ValueError as exc:
        raise InputError(f"{where}: feature '{plan.name}': {exc}") from None


def with_stored_levels(
    features: Sequence[FeatureSummary],
    store: Store | StoreFile,
    *,
    center: str = "mean",
    bootstrap: Bootstrap | None = None,
) -> list[FeatureSummary]:
    """``features`` with the record of each feature whose jumps the store holds replaced by
    its per-level record (:func:`stored_level_features`)."""
    found = stored_level_features(
        store, [f.name for f in features], center=center, bootstrap=bootstrap
    )
    return [found.get(f.name, f) for f in features]
