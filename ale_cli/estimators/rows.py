"""The rows an estimator that calls the model explains: a source of chunks ``{"X": (n, D)}``
and what a first pass found (names, rows, ranges); an array in memory is one chunk.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ale_cli.passes.engine import ArraySource, Source
from ale_cli.summary.build import column_ranges

ROWS = "X"


@dataclass(frozen=True)
class Rows:
    """The rows a run explains: a source of chunks ``{"X": (n, D)}``, names, rows, ranges."""

    source: Source
    names: tuple[str, ...]
    n_rows: int
    lo: np.ndarray
    hi: np.ndarray

    @classmethod
    def of(cls, X: np.ndarray, names: Sequence[str]) -> Rows:
        """The rows X (N, D) in memory: one chunk."""
        lo, hi = column_ranges(X)
        return cls(ArraySource({ROWS: X}), tuple(names), len(X), lo, hi)

    def columns(self, cols: Sequence[int]) -> Callable[[], Any]:
        """A pass over the columns ``cols`` of every non-empty chunk (float64), per call."""
        return lambda: (
            np.asarray(c[ROWS][:, list(cols)], dtype=np.float64)
            for c in self.source.chunks([ROWS])
            if c.n_rows
        )
