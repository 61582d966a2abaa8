"""The order of a categorical feature's levels from passes over the rows, as ALEPlot's.

:func:`~ale_cli.core.discrete.level_order` compares the levels by the Kolmogorov-Smirnov
distance of each numeric column (ECDFs at its :data:`~ale_cli.core.discrete.KS_POINTS`
type-7 quantiles) and the total variation distance of each categorical column. Every piece
is a count that merges across chunks (:class:`LevelCounts`), so the order equals the
whole table's to the last bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ale_cli.core.discrete import (
    KS_POINTS,
    ks_points,
    lerp,
    max_abs_differences,
    order_of,
    total_variation,
)
from ale_cli.core.outofcore import order_statistics
from ale_cli.estimators.rows import ROWS, Rows
from ale_cli.passes.engine import LOCAL, Chunk, Engine

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


def merge_counts(a: tuple[LevelCounts, ...], b: tuple[LevelCounts, ...]) -> tuple[LevelCounts, ...]:
    """The counts of every feature merged (the engine's ``merge``)."""
    return tuple(x.merge(y) for x, y in zip(a, b, strict=True))


@dataclass(frozen=True)
class LevelCountsKernel:
    """A chunk to the :class:`LevelCounts` of each of ``features`` (column, sorted levels)."""

    features: tuple[tuple[int, np.ndarray], ...]
    numeric: tuple[tuple[int, np.ndarray], ...]
    categorical: tuple[int, ...]

    def empty(self) -> tuple[LevelCounts, ...]:
        none = (np.empty(0, dtype=np.int64), np.empty(0), np.empty(0, dtype=np.int64))
        return tuple(
            LevelCounts(
                np.zeros(v.size, dtype=np.int64),
                tuple(np.zeros((v.size, KS_POINTS + 1), dtype=np.int64) for _ in self.numeric),
                tuple(none for c in self.categorical if c != col),
            )
            for col, v in self.features
        )

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


def ks_quantiles(rows: Rows, cols: Sequence[int]) -> list[np.ndarray]:
    """The :data:`~ale_cli.core.discrete.KS_POINTS` type-7 quantiles of the columns
    ``cols`` of ``rows``, as ``np.quantile`` gives them on each whole column."""
    below, above, gamma = ks_points(rows.n_rows)
    lo, hi = rows.lo[list(cols)], rows.hi[list(cols)]
    spread = [i for i, c in enumerate(cols) if hi[i] > lo[i]]
    out = [np.full(KS_POINTS, lo[i]) for i in range(len(cols))]
    if spread:
        positions = np.unique(np.concatenate([below, above]))
        stats = order_statistics(
            rows.columns([cols[i] for i in spread]),
            n=rows.n_rows,
            positions=positions,
            lo=lo[spread],
            hi=hi[spread],
        )
        at = {int(p): j for j, p in enumerate(positions)}
        for i, s in zip(spread, stats, strict=True):
            a = s[[at[int(p)] for p in below]]
            b = s[[at[int(p)] for p in above]]
            out[i] = lerp(a, b, gamma)
    return out


def level_orders(
    rows: Rows,
    features: Sequence[tuple[int, np.ndarray]],
    categorical: Sequence[int],
    *,
    engine: Engine = LOCAL,
) -> list[np.ndarray]:
    """The order of the levels of each of ``features`` (column, K sorted levels), as
    :func:`~ale_cli.core.discrete.level_order` finds it, from passes over ``rows``."""
    numeric = [c for c in range(len(rows.names)) if c not in categorical]
    points = ks_quantiles(rows, numeric)
    kernel = LevelCountsKernel(
        tuple((c, np.asarray(v, dtype=np.float64)) for c, v in features),
        tuple(zip(numeric, points, strict=True)),
        tuple(categorical),
    )
    found = engine.run(rows.source, kernel, merge_counts, kernel.empty(), arrays=[ROWS])
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
