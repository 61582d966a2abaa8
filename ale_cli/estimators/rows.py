"""The rows an estimator that calls the model explains: chunks of a source and its ranges.

:class:`Rows` is a :class:`~ale_cli.passes.engine.Source` of chunks ``{"X": (n, D)}``
(every model input, float64) with what a first pass over them found: the columns' names,
the number of rows and each column's range. An array in memory is one chunk
(:meth:`Rows.of`); a data file read in passes is :class:`FileChunks`. :class:`WholeTable`
says that the data are read whole, and why.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ale_cli.passes.engine import ArraySource, Chunk, Source
from ale_cli.passes.spool import DataPasses
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
        """A pass over the columns ``cols`` of every chunk, (n_i, len(cols)), per call."""
        return lambda: (c[ROWS][:, list(cols)] for c in self.source.chunks([ROWS]))


@dataclass(frozen=True)
class WholeTable:
    """The data are read whole, as one chunk; ``note`` says why ("" when nothing needs
    saying: a DataFrame, or no chunk size)."""

    note: str = ""


@dataclass(frozen=True)
class FileChunks:
    """A data file read in passes (:class:`~ale_cli.passes.spool.DataPasses`) as a
    one-part source of chunks ``{"X": (n, D)}``."""

    passes: DataPasses

    def parts(self) -> Sequence[Source]:
        return (self,)

    def chunks(self, arrays: Sequence[str]) -> Iterator[Chunk]:
        offset = 0
        for X in self.passes():
            yield Chunk(offset, {ROWS: X})
            offset += len(X)
