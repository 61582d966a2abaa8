"""Passes over a source: the one way an estimator meets its rows, whole, streamed or on Dask.

Every estimator is ``edges`` + ``engine.run(source, kernel, merge, empty)`` + a summary
builder. A :class:`Source` yields :class:`Chunk` s (arrays of rows and the global offset of
their first row) and splits into independent parts (files, row-group ranges, store parts);
an array, a DataFrame or a store in memory is a one-part, one-chunk source. An
:class:`Engine` runs ``kernel(chunk, shared) -> state`` on every chunk and folds
``merge(state, state)`` in row order, so the result does not depend on how the rows were cut:
:class:`LocalEngine` with ordered threads in this process,
:class:`ale_cli.engines.dask.DaskEngine` on the workers of a cluster. States are shaped like
:class:`~ale_cli.core.binstats.CellStats`: frozen, an ``empty`` value, an exact ``merge``.

``shared`` carries what every chunk needs and is costly to move (a model): a
:class:`Shared` handle whose :meth:`~Shared.get` gives the value. The local engine calls it
once; the Dask engine ships the handle once per worker and calls it there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import numpy as np

from ale_cli.io.threads import ordered_map

S = TypeVar("S")


@dataclass(frozen=True)
class Chunk:
    """Rows ``offset`` to ``offset + n_rows - 1`` of a source: named arrays of equal length."""

    offset: int
    arrays: Mapping[str, np.ndarray]

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


class Shared(Protocol):
    """What every chunk of a run needs, read-only (a model): :meth:`get` gives it."""

    def get(self) -> Any: ...


@dataclass(frozen=True)
class Ready:
    """A :class:`Shared` value already at hand (never shipped anywhere by the local engine)."""

    value: Any

    def get(self) -> Any:
        return self.value


@dataclass(frozen=True)
class ArraySource:
    """Arrays in memory as a one-part, one-chunk source.

    >>> src = ArraySource({"X": np.arange(6.0).reshape(3, 2)})
    >>> [(c.offset, c.n_rows) for c in src.chunks(["X"])]
    [(0, 3)]
    """

    arrays: Mapping[str, np.ndarray]
    offset: int = 0

    def parts(self) -> Sequence[Source]:
        return (self,)

    def chunks(self, arrays: Sequence[str]) -> Iterator[Chunk]:
        yield Chunk(self.offset, {name: self.arrays[name] for name in arrays})


Kernel = Callable[[Chunk, Any], S]
Merge = Callable[[S, S], S]


class Engine(Protocol):
    """Runs a kernel over a source's chunks and folds the states in row order."""

    def run(
        self,
        source: Source,
        kernel: Kernel[S],
        merge: Merge[S],
        empty: S,
        *,
        arrays: Sequence[str],
        shared: Shared | None = None,
    ) -> S: ...


@dataclass(frozen=True)
class LocalEngine:
    """This process: chunks read ahead, kernels on worker threads
    (:func:`~ale_cli.io.threads.ordered_map`), states merged in row order.

    >>> src = ArraySource({"x": np.arange(5.0)})
    >>> LOCAL.run(src, lambda c, _: float(c["x"].sum()), lambda a, b: a + b, 0.0, arrays=["x"])
    10.0
    """

    threads: int | None = None

    def run(
        self,
        source: Source,
        kernel: Kernel[S],
        merge: Merge[S],
        empty: S,
        *,
        arrays: Sequence[str],
        shared: Shared | None = None,
    ) -> S:
        value = None if shared is None else shared.get()
        acc = empty
        for part in source.parts():
            states = ordered_map(
                lambda c: kernel(c, value), part.chunks(arrays), threads=self.threads
            )
            for state in states:
                acc = merge(acc, state)
        return acc


#: the default engine: this process
LOCAL = LocalEngine()
