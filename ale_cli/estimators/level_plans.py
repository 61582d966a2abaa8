"""The plans of the features estimated per level, from passes over a source's chunks: the
levels by one pass (:class:`Distinct`), a categorical feature's order (docs/estimators.md)
from counts that merge across chunks (:class:`LevelCounts`), equal to the whole table's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ale_cli.core.discrete import (
    KS_POINTS,
    MAX_DISCRETE_LEVELS,
    MAX_LEVELS,
    ks_points,
    lerp,
    max_abs_differences,
    order_of,
    total_variation,
)
from ale_cli.core.outofcore import order_statistics
from ale_cli.errors import InputError
from ale_cli.estimators.levels import AUTO, BINARY, LevelPlan
from ale_cli.estimators.rows import ROWS, Rows, merge_each
from ale_cli.passes.engine import LOCAL, Chunk, Engine, Source

#: (level, value, rows) of the pairs present, sorted by level then value
Pairs = tuple[np.ndarray, np.ndarray, np.ndarray]


def pair_counts(level: np.ndarray, value: np.ndarray, counts: np.ndarray) -> Pairs:
    """The rows of each (level, value) pair, sorted by level then value.

    >>> [a.tolist() for a in pair_counts(np.array([1, 0, 1]), np.array([2.0, 5.0, 2.0]),
    ...                                  np.array([1, 1, 1]))]
    [[0, 1], [5.0, 2.0], [1, 2]]
    """
    order = np.lexsort((value, level))
    level, value, counts = level[order], value[order], counts[order]
    new = np.ones(len(level), dtype=bool)
    new[1:] = (level[1:] != level[:-1]) | (value[1:] != value[:-1])
    at = np.flatnonzero(new)
    total = np.add.reduceat(counts, at) if len(at) else counts[:0]
    return level[at], value[at], total


@dataclass(frozen=True)
class LevelCounts:
    """A categorical feature's counts per level, mergeable: ``rows`` (K,); per other numeric
    column the rows just below each of P points, ``below`` (K, P+1); per other categorical
    column the :data:`Pairs`."""

    rows: np.ndarray
    below: tuple[np.ndarray, ...]
    pairs: tuple[Pairs, ...]

    def merge(self, other: LevelCounts) -> LevelCounts:
        return LevelCounts(
            self.rows + other.rows,
            tuple(a + b for a, b in zip(self.below, other.below, strict=True)),
            tuple(
                pair_counts(*(np.concatenate([x, y]) for x, y in zip(a, b, strict=True)))
                for a, b in zip(self.pairs, other.pairs, strict=True)
            ),
        )


@dataclass(frozen=True)
class LevelCountsKernel:
    """A chunk to the :class:`LevelCounts` of each of ``features`` (column, sorted levels)."""

    features: tuple[tuple[int, np.ndarray], ...]
    numeric: tuple[tuple[int, np.ndarray], ...]
    categorical: tuple[int, ...]

    def __call__(self, chunk: Chunk, _: Any) -> tuple[LevelCounts, ...]:
        X = np.asarray(chunk[ROWS], dtype=np.float64)
        out = []
        for col, values in self.features:
            k = values.size
            code = np.searchsorted(values, X[:, col])
            below = tuple(
                np.bincount(
                    code * (KS_POINTS + 1) + np.searchsorted(points, X[:, c], side="left"),
                    minlength=k * (KS_POINTS + 1),
                ).reshape(k, KS_POINTS + 1)
                for c, points in self.numeric
            )
            ones = np.ones(len(X), dtype=np.int64)
            pairs = tuple(pair_counts(code, X[:, c], ones) for c in self.categorical if c != col)
            out.append(LevelCounts(np.bincount(code, minlength=k), below, pairs))
        return tuple(out)


def level_orders(
    rows: Rows,
    features: Sequence[tuple[int, np.ndarray]],
    categorical: Sequence[int],
    *,
    engine: Engine = LOCAL,
) -> list[np.ndarray]:
    """The order of the levels of each of ``features`` (column, K sorted levels), as
    :func:`~ale_cli.core.discrete.order_of` finds it from the levels' distances, from
    passes over ``rows``."""
    numeric = [c for c in range(len(rows.names)) if c not in categorical]
    # the KS_POINTS type-7 quantiles of each numeric column, as np.quantile gives them
    below, above, gamma = ks_points(rows.n_rows)
    lo, hi = rows.lo[numeric], rows.hi[numeric]
    spread = [i for i in range(len(numeric)) if hi[i] > lo[i]]
    points = [np.full(KS_POINTS, lo[i]) for i in range(len(numeric))]
    if spread:
        positions = np.unique(np.concatenate([below, above]))
        stats = order_statistics(
            rows.columns([numeric[i] for i in spread]),
            n=rows.n_rows,
            positions=positions,
            lo=lo[spread],
            hi=hi[spread],
        )
        ia, ib = np.searchsorted(positions, below), np.searchsorted(positions, above)
        for i, s in zip(spread, stats, strict=True):
            points[i] = lerp(s[ia], s[ib], gamma)
    kernel = LevelCountsKernel(
        tuple((c, np.asarray(v, dtype=np.float64)) for c, v in features),
        tuple(zip(numeric, points, strict=True)),
        tuple(categorical),
    )
    # () is neutral: a source with levels to order has rows, so every feature's counts
    found = engine.run(rows.source, kernel, merge_each, (), arrays=[ROWS])
    orders = []
    for (_, values), counts in zip(features, found, strict=True):
        k = values.size
        dist = np.zeros((k, k))
        for below in counts.below:
            dist += max_abs_differences(
                np.cumsum(below, axis=1)[:, :KS_POINTS] / counts.rows[:, None]
            )
        for level, value, n in counts.pairs:
            codes = np.searchsorted(np.unique(value), value)
            dist += total_variation(level, codes, n, k)
        orders.append(order_of(dist))
    return orders


@dataclass(frozen=True)
class Distinct:
    """Kernel and state: the sorted distinct values of the columns ``cols`` of chunks
    ``{"X": (n, D)}``: all of them, or, for a column with more than ``limit``, the
    ``limit + 1`` smallest.

    >>> a = Distinct((0,), 2, (np.array([1.0, 3.0]),))
    >>> a.merge(Distinct((0,), 2, (np.array([2.0, 3.0, 5.0]),))).values[0].tolist()
    [1.0, 2.0, 3.0]
    """

    cols: tuple[int, ...]
    limit: int
    values: tuple[np.ndarray, ...] = ()

    def merge(self, other: Distinct) -> Distinct:
        pairs = zip(self.values, other.values, strict=True)
        return replace(self, values=tuple(np.union1d(a, b)[: self.limit + 1] for a, b in pairs))

    def __call__(self, chunk: Chunk, _: Any) -> Distinct:
        X = chunk[ROWS]
        found = (np.unique(np.asarray(X[:, c], dtype=np.float64)) for c in self.cols)
        return replace(self, values=tuple(v[: self.limit + 1] for v in found))


def distinct_values(
    source: Source, cols: Sequence[int], limit: int, engine: Engine
) -> tuple[np.ndarray, ...]:
    """Each column's :class:`Distinct` values, from one pass over ``source`` on ``engine``."""
    kernel = Distinct(tuple(cols), limit)
    empty = replace(kernel, values=tuple(np.empty(0) for _ in cols))
    return engine.run(source, kernel, Distinct.merge, empty, arrays=[ROWS]).values


def _distinct(
    source: Source,
    names: Sequence[str],
    todo: Sequence[str],
    kind: str,
    limit: int,
    engine: Engine,
    most: int | None = None,
) -> dict[str, LevelPlan | str]:
    """The plan of each of ``todo`` with 2 to ``most`` sorted distinct values, in their
    order, or why not estimable."""
    if not todo:
        return {}
    found = distinct_values(source, [list(names).index(n) for n in todo], limit, engine)
    out: dict[str, LevelPlan | str] = {}
    for name, values in zip(todo, found, strict=True):
        if most is not None and not 2 <= values.size <= most:
            continue
        if values.size > MAX_LEVELS:
            raise InputError(
                f"{kind} feature '{name}' has more than {MAX_LEVELS:,} levels, the most ale "
                "estimates an effect per level for; group its levels, or leave it out of {param}",
                param="features",
            )
        order = np.arange(values.size, dtype=np.int64)
        plan = LevelPlan(name, kind, values, order)
        out[name] = plan if values.size >= 2 else "single distinct value"
    return out


def discrete_plans(
    source: Source,
    names: Sequence[str],
    chosen: Sequence[str],
    discrete: Sequence[str] | str | None,
    *,
    exclude: Sequence[str] = (),
    engine: Engine = LOCAL,
    head: np.ndarray | None = None,
) -> dict[str, LevelPlan | str]:
    """The plans of the features of ``chosen`` outside ``exclude`` estimated per value
    (named in ``discrete``, with ``"auto"`` those with 2 to ``MAX_DISCRETE_LEVELS``
    values, with ``"binary"`` exactly 2), or why not estimable, from one pass over ``source``.
    ``head``: some of the source's rows (columns ``names``), which rule out beforehand the
    columns that already have too many values for ``"auto"``/``"binary"``.

    >>> from ale_cli.passes.engine import ArraySource
    >>> X = np.column_stack([[1.0, 2.0, 1.0] * 5, np.arange(15.0), np.ones(15)])
    >>> plans = discrete_plans(ArraySource({ROWS: X}), "sbc", "sbc", "auto")
    >>> list(plans), plans["s"].values.tolist()
    (['s'], [1.0, 2.0])
    >>> discrete_plans(ArraySource({ROWS: X}), "sbc", "sc", ("c",))
    {'c': 'single distinct value'}
    """
    if discrete is None:
        return {}
    auto = isinstance(discrete, str) and discrete in (AUTO, BINARY)
    named = () if auto else (discrete,) if isinstance(discrete, str) else tuple(discrete)
    unknown = [name for name in named if name not in names]
    if unknown:
        raise InputError(
            f"{{param}} names '{unknown[0]}', which is not an input column "
            f"(inputs: {', '.join(names)})",
            param="discrete",
        )
    todo = [n for n in chosen if n not in exclude and (auto or n in named)]
    most = 2 if discrete == BINARY else MAX_DISCRETE_LEVELS
    # at most ``most`` values in head, its first rows first (a continuous column fails fast)
    for stop in (4 * most, None) if auto and head is not None else ():
        todo = [n for n in todo if np.unique(head[:stop, list(names).index(n)]).size <= most]
    limit = most if auto else MAX_LEVELS
    return _distinct(source, names, todo, "discrete", limit, engine, most if auto else None)


def level_plans(
    rows: Rows,
    chosen: Sequence[str],
    *,
    categorical: Sequence[str] = (),
    discrete: Sequence[str] | str | None = None,
    labels: Mapping[str, tuple[Any, ...]] | None = None,
    engine: Engine = LOCAL,
    head: np.ndarray | None = None,
) -> dict[str, LevelPlan | str]:
    """The plans of the features of ``chosen`` estimated per level, from passes over
    ``rows``: the ``categorical`` ones (in ALEPlot's order; ``labels``: a text column's
    values by code) and the discrete ones (:func:`discrete_plans`, ``head`` its)."""
    cats = [name for name in chosen if name in categorical]
    out = _distinct(rows.source, rows.names, cats, "categorical", MAX_LEVELS, engine)
    todo = [p for p in out.values() if isinstance(p, LevelPlan)]
    others = [rows.names.index(name) for name in categorical if name in rows.names]
    cols = [(rows.names.index(p.name), p.values) for p in todo]
    orders = level_orders(rows, cols, others, engine=engine) if todo else []
    for plan, order in zip(todo, orders, strict=True):
        label = (labels or {}).get(plan.name)
        out[plan.name] = replace(plan, order=order.astype(np.int64), labels=label)
    return out | discrete_plans(
        rows.source, rows.names, chosen, discrete, exclude=categorical, engine=engine, head=head
    )
