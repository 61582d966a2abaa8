"""Discrete and categorical features: the effect per level (docs/estimators.md). Each row
is moved to the adjacent levels (:func:`level_jumps`), which ``compute`` stores for
``rebin`` and ``rhale`` (:func:`with_stored_levels`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ale_cli.checks import names_tuple
from ale_cli.core.binstats import CellStats
from ale_cli.core.bootstrap import centered_replicates
from ale_cli.core.discrete import level_cells, level_effect_from_cells
from ale_cli.errors import InputError
from ale_cli.estimators.bands import Bootstrap, banded, replicate_cells
from ale_cli.models.finite_diff import DEFAULT_EVAL_ROWS, PredictFn
from ale_cli.store.layout import level_problem
from ale_cli.store.npz import Store, StoreFile
from ale_cli.summary.model import FeatureSummary

#: store arrays (N, L): each row's difference to the next and from the previous level of
#: each of the L features in the meta's ``levels``
LEVEL_UP = "level_up"
LEVEL_DOWN = "level_down"
#: ``discrete`` modes: every binary numeric column (the default), every column with few
#: values, none (numeric columns get slopes)
BINARY, AUTO, NONE = "binary", "auto", "none"


def effective_discrete(discrete: Sequence[str] | str | None) -> Sequence[str] | str | None:
    """The ``discrete`` the estimators apply: None (not given) is :data:`BINARY`, ``"none"``
    is None.

    >>> effective_discrete(None), effective_discrete("none"), effective_discrete(("a",))
    ('binary', None, ('a',))
    """
    if discrete is None:
        return BINARY
    if isinstance(discrete, str) and discrete == NONE:
        return None
    return discrete


def binary_note(names: Sequence[str]) -> str:
    """The note announcing the binary columns estimated per level by default.

    >>> binary_note(["sex"])[:40]
    'sex has two values: estimated per level '
    """
    which = ", ".join(names)
    verb = "has" if len(names) == 1 else "have"
    return (
        f"{which} {verb} two values: estimated per level (a binary column is a level "
        "by default; discrete 'none' gives its slope instead)"
    )


def discrete_mode(discrete: tuple[str, ...] | str | None) -> tuple[str, ...] | str | None:
    """``discrete`` as a request holds it: None, ``"auto"``, ``"none"`` or a tuple of names."""
    if discrete is None or discrete in (AUTO, NONE):
        return discrete
    return names_tuple(discrete, "discrete")


def predict_chunked(f: PredictFn, X: np.ndarray, eval_rows: int) -> np.ndarray:
    """``f(X)`` (N,), ``eval_rows`` rows per call."""
    parts = [f(X[start : start + eval_rows]) for start in range(0, len(X), eval_rows)]
    return np.concatenate(parts, dtype=np.float64) if parts else np.empty(0)


@dataclass(frozen=True)
class LevelPlan:
    """One feature estimated per level (``kind`` "discrete" or "categorical"): its sorted
    distinct ``values`` (K,) (codes for a text column), their estimated ``order`` (K,)
    (``values[order]``), and a text column's ``labels`` by code."""

    name: str
    kind: str
    values: np.ndarray
    order: np.ndarray
    labels: tuple[Any, ...] | None = None

    @property
    def n_levels(self) -> int:
        return int(self.values.size)

    def positions(self, x: np.ndarray) -> np.ndarray:
        """Each row's level in the estimated order, (n,) int64; ValueError naming the first
        value that is not a level.

        >>> plan = LevelPlan("s", "discrete", np.array([1.0, 2.0, 5.0]), np.array([0, 1, 2]))
        >>> plan.positions(np.array([5.0, 1.0, 2.0])).tolist()
        [2, 0, 1]
        """
        x = np.asarray(x, dtype=np.float64)
        code = np.minimum(np.searchsorted(self.values, x), self.n_levels - 1)
        unknown = self.values[code] != x
        if unknown.any():
            raise ValueError(f"value {float(x[unknown][0]):.10g} is not one of its levels")
        position = np.empty(self.n_levels, dtype=np.int64)
        position[self.order] = np.arange(self.n_levels)
        return position[code]

    def level_names(self) -> tuple[Any, ...]:
        """The levels in the estimated order: the text of a text column, else the values."""
        shown = self.values[self.order]
        if self.labels is not None:
            return tuple(self.labels[int(c)] for c in shown)
        return tuple(float(v) for v in shown)

    def to_meta(self) -> dict[str, Any]:
        """The store meta's record of this plan (an item of ``levels``)."""
        return {
            "feature": self.name,
            "kind": self.kind,
            "values": [float(v) for v in self.values],
            "order": [int(i) for i in self.order],
            "labels": None if self.labels is None else list(self.labels),
        }

    @classmethod
    def from_meta(cls, item: Any, where: str) -> LevelPlan:
        """The plan in a store meta's ``levels`` item (InputError naming ``where``)."""
        if not isinstance(item, Mapping) or not isinstance(item.get("feature"), str):
            raise InputError(f"{where}: a 'levels' record of its meta names no feature")
        problem = level_problem(item)
        if problem is not None:
            raise InputError(f"{where}: the levels of feature '{item['feature']}': {problem}")
        labels = item.get("labels")
        return cls(
            item["feature"],
            item["kind"],
            np.asarray(item["values"], dtype=np.float64),
            np.asarray(item["order"], dtype=np.int64),
            None if labels is None else tuple(labels),
        )


def level_jumps(
    f: PredictFn,
    X: np.ndarray,
    column: int,
    plan: LevelPlan,
    *,
    base: np.ndarray,
    eval_rows: int = DEFAULT_EVAL_ROWS,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every row's level (:meth:`LevelPlan.positions`) and differences to the adjacent
    levels (in ``plan.order``)::

        up_i   = f(x_i with x_s = next level) - f(x_i)      0 at the last level
        down_i = f(x_i) - f(x_i with x_s = previous level)  0 at the first level

    for X (N, D) with ``base = f(X)``; ``position``, ``up``, ``down`` (N,).

    >>> plan = LevelPlan("s", "discrete", np.array([0.0, 1.0, 3.0]), np.array([0, 1, 2]))
    >>> X = np.array([[0.0], [1.0], [3.0]])
    >>> _, up, down = level_jumps(lambda Z: Z[:, 0] ** 2, X, 0, plan, base=X[:, 0] ** 2)
    >>> up.tolist(), down.tolist()
    ([1.0, 8.0, 0.0], [0.0, 1.0, 8.0])
    """
    k = plan.n_levels
    pos = plan.positions(X[:, column])
    up, down = np.zeros(base.shape), np.zeros(base.shape)  # K outputs: (N, K)
    for step, target in ((1, up), (-1, down)):
        rows = np.flatnonzero((pos + step >= 0) & (pos + step < k))
        if not len(rows):
            continue
        moved = X[rows].copy()
        moved[:, column] = plan.values[plan.order[pos[rows] + step]]
        pred = predict_chunked(f, moved, eval_rows)
        with np.errstate(invalid="ignore", over="ignore"):  # non-finite: screened after
            target[rows] = pred - base[rows] if step == 1 else base[rows] - pred
    return pos, up, down


def level_arrays(
    f: PredictFn,
    X: np.ndarray,
    names: Sequence[str],
    plans: Sequence[LevelPlan],
    *,
    eval_rows: int = DEFAULT_EVAL_ROWS,
) -> dict[str, np.ndarray]:
    """A store chunk's ``level_up``, ``level_down`` (n, L; K outputs: n, K, L) for X (n, D)."""
    base = predict_chunked(f, X, eval_rows) if len(X) and plans else np.empty(len(X))
    up, down = np.zeros((*base.shape, len(plans))), np.zeros((*base.shape, len(plans)))
    for i, plan in enumerate(plans):
        j = list(names).index(plan.name)
        _, up[..., i], down[..., i] = level_jumps(f, X, j, plan, base=base, eval_rows=eval_rows)
    return {LEVEL_UP: up, LEVEL_DOWN: down}


def level_summary(
    plan: LevelPlan,
    cells: CellStats,
    counts: np.ndarray,
    *,
    center: str = "mean",
    bootstrap: Bootstrap | None = None,
    rows: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> FeatureSummary:
    """One feature's per-level record from its jumps' ``cells`` (K-1) and ``counts`` (K,);
    with ``bootstrap``, bands from every row's ``rows`` (position, up, down), (N,) each."""
    eff = level_effect_from_cells(cells, counts, center=center)
    record = FeatureSummary(
        name=plan.name,
        kind=plan.kind,
        levels=plan.level_names(),
        order=plan.order.astype(np.int64),
        edges=plan.values[plan.order].astype(np.float64),
        counts=eff.counts,
        bin_effect=eff.jump,
        bin_std=cells.std,
        bin_stderr=cells.stderr,
        bin_filled=cells.counts == 0,
        effect=eff.effect,
        std=eff.std,
        stderr=eff.stderr,
        center_offset=eff.center_offset,
    )
    if bootstrap is None or rows is None:
        return record
    return banded(
        record, *level_bands(*rows, plan.n_levels, bootstrap, center=center), bootstrap.ci
    )


def level_bands(
    position: np.ndarray,
    up: np.ndarray,
    down: np.ndarray,
    n_levels: int,
    boot: Bootstrap,
    *,
    center: str,
) -> tuple[np.ndarray, np.ndarray]:
    """The replicates' per-level effect (B, K) and rows per level (B, K), rows resampled:
    a row at level k holds ``up`` for jump k and ``down`` for jump k-1 (two "features" on
    the K-1 jumps), and a third counts each replicate's rows per level for its centering."""
    k = n_levels
    rise = np.where(position < k - 1, position, -1)
    fall = np.where(position > 0, position - 1, -1)
    cells = replicate_cells(
        np.column_stack([rise, fall, position]),
        np.column_stack([up, down, np.zeros(len(position))]),
        [k - 1, k - 1, k],
        replicates=boot.replicates,
        rng=np.random.default_rng(boot.seed),
    )
    counts = cells[0].counts + cells[1].counts
    with np.errstate(invalid="ignore", divide="ignore"):
        jump = (cells[0].sums + cells[1].sums) / counts
    jump = np.where(counts > 0, jump, 0.0)  # a jump no drawn row crosses: no change
    effect = np.zeros((boot.replicates, k))
    np.cumsum(jump, axis=1, out=effect[:, 1:])
    n_level = cells[2].counts
    return centered_replicates(effect, n_level, center, per_level=True), n_level


def stored_plans(meta: Mapping[str, Any], where: str) -> tuple[LevelPlan, ...]:
    """The plans in a store's meta ``levels``, in the order of its jump arrays' columns."""
    items = meta.get("levels") or []
    if not isinstance(items, list):
        raise InputError(f"{where}: its meta's 'levels' is not a list")
    return tuple(LevelPlan.from_meta(item, where) for item in items)


def _where(store: Store | StoreFile) -> str:
    return f"store '{getattr(store, 'path', 'in memory')}'"


def stored_level_names(store: Store | StoreFile, names: Sequence[str]) -> tuple[str, ...]:
    """The features among ``names`` whose per-row jumps the store holds."""
    held = {p.name for p in stored_plans(store.meta, _where(store))}
    return tuple(n for n in names if n in held)


def with_stored_levels(
    features: Sequence[FeatureSummary],
    store: Store | StoreFile,
    *,
    center: str = "mean",
    bootstrap: Bootstrap | None = None,
) -> list[FeatureSummary]:
    """``features`` with each one whose jumps the store holds replaced by its per-level
    record, equal to ``ale classic``'s on the rows and model the store came from (bootstrap
    bands only of a store in memory), no model call."""
    where = _where(store)
    plans = {p.name: (i, p) for i, p in enumerate(stored_plans(store.meta, where))}
    todo = [(*plans[f.name], store.input_index(f.name)) for f in features if f.name in plans]
    if not todo:
        return list(features)
    boot = bootstrap is not None and bootstrap.replicates
    if isinstance(store, Store):
        if LEVEL_UP not in store.extra or LEVEL_DOWN not in store.extra:
            raise InputError(f"{where} lacks the array(s) {LEVEL_UP}, {LEVEL_DOWN}")
    elif boot:
        raise ValueError("bootstrap bands of a store need it in memory (read_store)")
    acc: dict[str, tuple[CellStats, np.ndarray]] = {}
    rows: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for chunk in store.chunks(("X", LEVEL_UP, LEVEL_DOWN)):
        for i, plan, col in todo:
            try:
                position = plan.positions(chunk["X"][:, col])
            except ValueError as exc:
                raise InputError(f"{where}: feature '{plan.name}': {exc}") from None
            up, down = chunk[LEVEL_UP][:, i], chunk[LEVEL_DOWN][:, i]
            cells = level_cells(position=position, up=up, down=down, n_levels=plan.n_levels)
            old = acc.get(plan.name)
            acc[plan.name] = cells if old is None else (old[0].merge(cells[0]), old[1] + cells[1])
            if boot:  # a store in memory: one chunk
                rows[plan.name] = (position, up, down)
    found = {
        p.name: level_summary(
            p, *acc[p.name], center=center, bootstrap=bootstrap, rows=rows.get(p.name)
        )
        for _, p, _ in todo
    }
    return [found.get(f.name, f) for f in features]
