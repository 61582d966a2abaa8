"""Per-level records from a store: ``rebin`` and ``rhale`` turn every row's jumps to the
adjacent levels that ``compute`` recorded (:data:`~ale_cli.estimators.levels.LEVEL_UP`,
``LEVEL_DOWN``, plans in the meta's ``levels``) into ``ale classic``'s records, no model call.
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
    """The plans in a store's meta ``levels``, in the order of its jump arrays' columns."""
    items = meta.get("levels") or []
    if not isinstance(items, list):
        raise InputError(f"{where}: its meta's 'levels' is not a list")
    return tuple(LevelPlan.from_meta(item, where) for item in items)


def stored_level_names(store: Store | StoreFile, names: Sequence[str]) -> tuple[str, ...]:
    """The features among ``names`` whose per-row jumps the store holds."""
    held = {p.name for p in stored_plans(store.meta, f"store '{_label(store)}'")}
    return tuple(n for n in names if n in held)


def _label(store: Store | StoreFile) -> str:
    return str(getattr(store, "path", "in memory"))


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
    """``features`` with each one whose jumps the store holds replaced by its per-level
    record, equal to ``ale classic``'s on the rows and model the store came from: a store
    in memory whole (with ``bootstrap`` bands), a store file chunk by chunk."""
    where = f"store '{_label(store)}'"
    plans = {p.name: (i, p) for i, p in enumerate(stored_plans(store.meta, where))}
    todo = [f.name for f in features if f.name in plans]
    if not todo:
        return list(features)
    cols = {n: store.input_index(n) for n in todo}
    if isinstance(store, Store):
        arrays = store.extra
        if LEVEL_UP not in arrays or LEVEL_DOWN not in arrays:
            raise InputError(f"{where} lacks the array(s) {LEVEL_UP}, {LEVEL_DOWN}")
        found = {}
        for n in todo:
            i, plan = plans[n]
            position = _positions(plan, store.X[:, cols[n]], where)
            up, down = arrays[LEVEL_UP][:, i], arrays[LEVEL_DOWN][:, i]
            found[n] = level_record(plan, position, up, down, center=center, bootstrap=bootstrap)
        return [found.get(f.name, f) for f in features]
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
    found = {n: level_summary(plans[n][1], *acc[n], center=center) for n in todo}
    return [found.get(f.name, f) for f in features]
