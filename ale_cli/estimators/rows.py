"""The rows an estimator that calls the model explains (a source of chunks ``{"X": (n, D)}``
with what a first pass found; an array in memory is one chunk) and their bin edges."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ale_cli.core.binning import uniform_edges
from ale_cli.core.outofcore import chunked_quantile_edges
from ale_cli.passes.engine import LOCAL, ArraySource, Chunk, Engine, Source
from ale_cli.summary.build import column_ranges

ROWS = "X"


@dataclass(frozen=True)
class Rows:
    """The rows a run explains: chunks ``{"X": (n, D)}``, names, rows, ranges, categoricals."""

    source: Source
    names: tuple[str, ...]
    n_rows: int
    lo: np.ndarray
    hi: np.ndarray
    categorical: tuple[str, ...] = ()

    @classmethod
    def of(cls, X: np.ndarray, names: Sequence[str], categorical: Sequence[str] = ()) -> Rows:
        """The rows X (N, D) in memory: one chunk."""
        lo, hi = column_ranges(X)
        return cls(ArraySource({ROWS: X}), tuple(names), len(X), lo, hi, tuple(categorical))

    @classmethod
    def scanned(cls, source: Source, names: Sequence[str], engine: Engine = LOCAL) -> Rows:
        """The rows of ``source``: their number and ranges from one pass on ``engine``."""
        n, lo, hi = extent(source, range(len(names)), engine)
        if not n:  # as column_ranges has it
            lo, hi = np.zeros(len(names)), np.zeros(len(names))
        return cls(source, tuple(names), n, lo, hi)

    def columns(self, cols: Sequence[int]) -> Callable[[], Any]:
        """A pass over the columns ``cols`` of every non-empty chunk (float64), per call."""
        return lambda: (
            np.asarray(c[ROWS][:, list(cols)], dtype=np.float64)
            for c in self.source.chunks([ROWS])
            if c.n_rows
        )

    def edges(self, cols: Sequence[int], *, bins: int, binning: str) -> list[np.ndarray]:
        """The edges (K+1,) of the columns ``cols``: uniform over their range, or type-1
        quantiles in two passes.

        >>> X = np.array([[5.0], [1.0], [2.0], [2.0], [3.0], [4.0]])
        >>> Rows.of(X, ["a"]).edges([0], bins=3, binning="quantile")[0].tolist()
        [1.0, 2.0, 3.0, 5.0]
        >>> Rows.of(X, ["a"]).edges([0], bins=2, binning="uniform")[0].tolist()
        [1.0, 3.0, 5.0]
        """
        lo, hi = self.lo[list(cols)], self.hi[list(cols)]
        if binning == "uniform":
            return [uniform_edges(float(lo[i]), float(hi[i]), bins=bins) for i in range(len(lo))]
        if not len(cols):
            return []
        return chunked_quantile_edges(self.columns(cols), n=self.n_rows, bins=bins, lo=lo, hi=hi)


Extent = tuple[int, np.ndarray, np.ndarray]


def select(A: np.ndarray, cols: Sequence[int]) -> np.ndarray:
    """``A[:, cols]`` in A's dtype, without a copy when cols are all of A's columns."""
    return A if list(cols) == list(range(A.shape[1])) else A[:, list(cols)]


@dataclass(frozen=True)
class Ranges:
    """Kernel: a chunk's rows and the minimum and maximum of its columns ``cols``."""

    cols: tuple[int, ...]

    def empty(self) -> Extent:
        return 0, np.full(len(self.cols), np.inf), np.full(len(self.cols), -np.inf)

    def __call__(self, chunk: Chunk, _shared: Any) -> Extent:
        X = select(chunk[ROWS], self.cols)
        if not len(X):
            return self.empty()
        return len(X), X.min(axis=0).astype(np.float64), X.max(axis=0).astype(np.float64)


def merge_each(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[Any, ...]:
    """Two tuples of states merged item by item; ``()`` (no rows yet) is neutral."""
    if not a or not b:
        return a or b
    return tuple(x.merge(y) for x, y in zip(a, b, strict=True))


def merge_extents(a: Extent, b: Extent) -> Extent:
    return a[0] + b[0], np.minimum(a[1], b[1]), np.maximum(a[2], b[2])


def extent(source: Source, cols: Sequence[int], engine: Engine) -> Extent:
    """The rows of ``source`` and the ranges of its columns ``cols`` (none: inf, -inf)."""
    kernel = Ranges(tuple(cols))
    found: Extent = engine.run(source, kernel, merge_extents, kernel.empty(), arrays=[ROWS])
    return found
