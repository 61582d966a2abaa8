"""The rows an estimator that calls the model explains: chunks of a source and its ranges.

:class:`Rows` is a :class:`~ale_cli.passes.engine.Source` of chunks ``{"X": (n, D)}``
(every model input, float64) with what a first pass over them found: the columns' names,
the number of rows and each column's range. An array in memory is one chunk
(:meth:`Rows.of`); a data file is a :class:`~ale_cli.data.sources.DataSource`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ale_cli.passes.engine import ArraySource, Source
from ale_cli.summary.build import column_ranges

#: the name of the rows' matrix (n, D) in a chunk
ROWS = "X"


@dataclass(frozen=True)
class Rows:
    """The rows a run explains: a source of chunks ``{"X": (n, D)}`` and what a first pass
    over them found (the columns' names, the rows, each column's range)."""

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
        """A pass over the columns ``cols`` of every chunk (float64, (n_i, len(cols)); chunks
        of no rows left out), per call."""
        return lambda: (
            np.asarray(c[ROWS][:, list(cols)], dtype=np.float64)
            for c in self.source.chunks([ROWS])
            if c.n_rows
        )
