"""Rows that arrive in chunks: the :class:`Source` protocol, its :class:`Chunk` and the
in-memory sources. A source splits into independent parts in row order, each yielding
chunks of named arrays with the global offset of their first row."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np


@dataclass(frozen=True)
class Chunk:
    """Rows ``offset`` to ``offset + n_rows - 1`` of a source: named arrays of equal length;
    ``end`` on a part's last chunk only: what is known only at the end of the read."""

    offset: int
    arrays: Mapping[str, np.ndarray]
    end: Mapping[str, Any] = field(default_factory=dict)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.arrays[name]

    @property
    def n_rows(self) -> int:
        return len(next(iter(self.arrays.values()))) if self.arrays else 0


class Source(Protocol):
    """Rows that arrive in chunks: a data file, a dataset, a store, or arrays in memory."""

    def parts(self) -> Sequence[Source]:
        """Independent parts in row order (a source that does not split: ``(self,)``)."""
        ...

    def chunks(self, arrays: Sequence[str]) -> Iterator[Chunk]:
        """The chunks of this source with the ``arrays`` asked for, in row order."""
        ...


@dataclass(frozen=True)
class ArraySource:
    """Arrays in memory as a one-part source, cut into chunks of ``chunk_rows`` rows
    (None: one chunk).

    >>> src = ArraySource({"X": np.arange(6.0).reshape(3, 2)})
    >>> [(c.offset, c.n_rows) for c in src.chunks(["X"])]
    [(0, 3)]
    >>> [(c.offset, c.n_rows) for c in ArraySource({"x": np.arange(5)}, chunk_rows=2).chunks(["x"])]
    [(0, 2), (2, 2), (4, 1)]
    """

    arrays: Mapping[str, np.ndarray]
    offset: int = 0
    chunk_rows: int | None = None

    def parts(self) -> Sequence[Source]:
        return (self,)

    def chunks(self, arrays: Sequence[str]) -> Iterator[Chunk]:
        picked = {name: self.arrays[name] for name in arrays}
        n = len(next(iter(picked.values()))) if picked else 0
        step = self.chunk_rows or max(n, 1)
        for start in range(0, max(n, 1), step):
            yield Chunk(
                self.offset + start, {k: v[start : start + step] for k, v in picked.items()}
            )


@dataclass(frozen=True)
class Held:
    """A source's chunks read once and held in memory, its parts and chunk boundaries kept.

    >>> two = Parts((ArraySource({"x": np.arange(2)}), ArraySource({"x": np.ones(1)}, 2)))
    >>> src = Held.read(two, ["x"])
    >>> len(src.parts()), [(c.offset, c["x"].tolist()) for c in src.chunks(["x"])]
    (2, [(0, [0, 1]), (2, [1.0])])
    """

    held: tuple[tuple[Chunk, ...], ...]

    @classmethod
    def read(cls, source: Source, arrays: Sequence[str]) -> Held:
        return cls(tuple(tuple(part.chunks(arrays)) for part in source.parts()))

    def parts(self) -> Sequence[Source]:
        return (self,) if len(self.held) == 1 else tuple(Held((p,)) for p in self.held)

    def chunks(self, arrays: Sequence[str]) -> Iterator[Chunk]:
        for part in self.held:
            for c in part:
                yield Chunk(c.offset, {name: c[name] for name in arrays}, c.end)


@dataclass(frozen=True)
class Parts:
    """Sources one after the other as one source: its parts are theirs, in order.

    >>> src = Parts((ArraySource({"x": np.arange(2)}), ArraySource({"x": np.arange(3)}, 2)))
    >>> [(c.offset, c.n_rows) for c in src.chunks(["x"])]
    [(0, 2), (2, 3)]
    """

    sources: tuple[Source, ...]

    def parts(self) -> Sequence[Source]:
        return tuple(p for source in self.sources for p in source.parts())

    def chunks(self, arrays: Sequence[str]) -> Iterator[Chunk]:
        for part in self.parts():
            yield from part.chunks(arrays)
