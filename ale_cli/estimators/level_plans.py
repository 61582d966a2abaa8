"""The plans of the features estimated per level, from passes over a source's chunks.

A discrete feature's levels are its distinct values in numeric order, collected by one
mergeable pass (:class:`Distinct`: at most ``limit + 1`` values a column kept); a
categorical feature's levels the same way, their order from further passes
(:mod:`ale_cli.estimators.level_order`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ale_cli.core.discrete import MAX_DISCRETE_LEVELS, MAX_LEVELS
from ale_cli.estimators.level_order import level_orders
from ale_cli.estimators.levels import AUTO, BINARY, LevelPlan, check_discrete, too_many_levels
from ale_cli.estimators.rows import ROWS, Rows
from ale_cli.passes.engine import LOCAL, Chunk, Engine, Source


@dataclass(frozen=True)
class Distinct:
    """The distinct values of C columns, sorted: all of them, or, for a column with more
    than its ``limits[c]``, the ``limits[c] + 1`` smallest.

    >>> a = Distinct((np.array([1.0, 3.0]),), (2,))
    >>> a.merge(Distinct((np.array([2.0, 3.0, 5.0]),), (2,))).values[0].tolist()
    [1.0, 2.0, 3.0]
    """

    values: tuple[np.ndarray, ...]
    limits: tuple[int, ...]

    def merge(self, other: Distinct) -> Distinct:
        """The distinct values of the rows of both (exact: each keeps its smallest)."""
        return Distinct(
            tuple(
                np.union1d(a, b)[: n + 1]
                for a, b, n in zip(self.values, other.values, self.limits, strict=True)
            ),
            self.limits,
        )


@dataclass(frozen=True)
class DistinctKernel:
    """A chunk ``{"X": (n, D)}`` to the :class:`Distinct` values of its columns ``cols``."""

    cols: tuple[int, ...]
    limits: tuple[int, ...]

    def empty(self) -> Distinct:
        return Distinct(tuple(np.empty(0) for _ in self.cols), self.limits)

    def __call__(self, chunk: Chunk, _: Any) -> Distinct:
        X = chunk[ROWS]
        return Distinct(
            tuple(
                np.unique(np.asarray(X[:, c], dtype=np.float64))[: n + 1]
                for c, n in zip(self.cols, self.limits, strict=True)
            ),
            self.limits,
        )


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
    columns that already have too many values for ``"auto"``/``"binary"``: no pass when
    none is left.

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
    check_discrete(named, names)
    todo = [n for n in chosen if n not in exclude and (auto or n in named)]
    most = 2 if discrete == BINARY else MAX_DISCRETE_LEVELS
    limit = most if auto else MAX_LEVELS
    if auto and head is not None:
        todo = [n for n in todo if _few_values(head[:, list(names).index(n)], most)]
    if not todo:
        return {}
    kernel = DistinctKernel(tuple(list(names).index(n) for n in todo), (limit,) * len(todo))
    found = engine.run(source, kernel, Distinct.merge, kernel.empty(), arrays=[ROWS])
    out: dict[str, LevelPlan | str] = {}
    for name, values in zip(todo, found.values, strict=True):
        if auto and not 2 <= values.size <= most:
            continue
        if values.size > MAX_LEVELS:
            raise too_many_levels("discrete", name)
        if values.size < 2:
            out[name] = "single distinct value"
            continue
        out[name] = LevelPlan(name, "discrete", values, np.arange(values.size, dtype=np.int64))
    return out


def _few_values(column: np.ndarray, most: int) -> bool:
    """Whether ``column`` has at most ``most`` distinct values (a short prefix first:
    a continuous column is ruled out by its first rows)."""
    return all(np.unique(column[:stop]).size <= most for stop in (4 * most, None))


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
    out: dict[str, LevelPlan | str] = {}
    if cats:
        cols = [rows.names.index(name) for name in cats]
        kernel = DistinctKernel(tuple(cols), (MAX_LEVELS,) * len(cols))
        found = engine.run(rows.source, kernel, Distinct.merge, kernel.empty(), arrays=[ROWS])
        todo = []
        for name, col, values in zip(cats, cols, found.values, strict=True):
            if values.size > MAX_LEVELS:
                raise too_many_levels("categorical", name)
            if values.size < 2:
                out[name] = "single distinct value"
            else:
                todo.append((name, col, values))
        others = [rows.names.index(name) for name in categorical if name in rows.names]
        orders = level_orders(rows, [(c, v) for _, c, v in todo], others, engine=engine)
        for (name, _, values), order in zip(todo, orders, strict=True):
            label = (labels or {}).get(name)
            out[name] = LevelPlan(name, "categorical", values, order.astype(np.int64), label)
    found_discrete = discrete_plans(
        rows.source, rows.names, chosen, discrete, exclude=categorical, engine=engine, head=head
    )
    return out | found_discrete
