"""Passes over a source: the one way an estimator meets its rows, whole, streamed or on Dask.

Every estimator is ``edges`` + ``engine.run(source, kernel, merge, empty)`` + a summary
builder. An :class:`Engine` runs ``kernel(chunk, shared) -> state`` on every chunk of a
:class:`Source` and folds ``merge(state, state)`` in row order, so the result does not
depend on how the rows were cut (states are shaped like
:class:`~ale_cli.core.binstats.CellStats`: frozen, an ``empty`` value, an exact merge).
For the Dask engine, kernels, merges, states and sources must pickle; ``shared`` (a
model) is shipped once per worker; a :class:`Sink` writes the rows a run computes."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from ale_cli.data.source import ArraySource, Chunk, Parts, Source
from ale_cli.io.threads import ordered_map, prefetched

__all__ = [
    "LOCAL",
    "ArraySource",
    "Chunk",
    "Engine",
    "LocalEngine",
    "Parts",
    "PartWriter",
    "Ready",
    "Shared",
    "Sink",
    "Source",
    "fold_part",
]

S = TypeVar("S")


class Shared(Protocol):
    """What every chunk of a run needs, read-only (a model): :meth:`get` gives it."""

    def get(self) -> Any: ...


@dataclass(frozen=True)
class Ready:
    """A :class:`Shared` value already at hand (shipped as it is by the Dask engine)."""

    value: Any

    def get(self) -> Any:
        return self.value


class PartWriter(Protocol[S]):
    """Where one part's rows go: :meth:`write` each chunk's state (its rows written, the
    state to fold given back), :meth:`done` once with the part's folded state."""

    def write(self, state: S) -> S: ...

    def done(self, state: S) -> S: ...


class Sink(Protocol[S]):
    """Where a run's rows go: a :class:`PartWriter` per part (discarding what it wrote
    when the part fails); :meth:`stop` when a part failed, so the others stop."""

    def part(self, index: int) -> AbstractContextManager[PartWriter[S]]: ...

    def stop(self) -> None: ...


Kernel = Callable[[Chunk, Any], S]
Merge = Callable[[S, S], S]
#: told the rows of each chunk (local) or part (Dask) as it is done
Progress = Callable[[int], None]


class Engine(Protocol):
    """Runs a kernel over a source's chunks and folds the states in row order.

    ``splits``: True when the parts of a source run apart, in other processes (Dask):
    sources are then planned in parts, sources read whole are refused, and ``shared`` and
    the kernels travel. ``slots``: how many parts run at once (None: the engine does not
    split sources; a source planned for it is one part). An engine is a context manager:
    inside one ``with`` block its runs share their resources (a cluster). ``describe()``:
    what a result records of where it ran (None for this process)."""

    splits: bool

    @property
    def slots(self) -> int | None: ...

    def describe(self) -> dict[str, Any] | None: ...

    def __enter__(self) -> Engine: ...

    def __exit__(self, *exc: object) -> None: ...

    def run(
        self,
        source: Source,
        kernel: Kernel[S],
        merge: Merge[S],
        empty: S,
        *,
        arrays: Sequence[str],
        shared: Shared | None = None,
        sink: Sink[S] | None = None,
        progress: Progress | None = None,
    ) -> S: ...


def fold_part(
    part: Source,
    index: int,
    kernel: Kernel[S],
    merge: Merge[S],
    empty: S,
    arrays: Sequence[str],
    value: Any,
    sink: Sink[S] | None = None,
) -> tuple[S, int]:
    """One part's state (its chunks' states folded in order from ``empty``, through the
    sink's writer for part ``index`` when there is one) and its rows, in one thread: what
    a Dask task does."""
    acc, rows = empty, 0
    if sink is None:
        for chunk in part.chunks(arrays):
            acc = merge(acc, kernel(chunk, value))
            rows += chunk.n_rows
        return acc, rows
    with sink.part(index) as writer:
        for chunk in part.chunks(arrays):
            acc = merge(acc, writer.write(kernel(chunk, value)))
            rows += chunk.n_rows
        return writer.done(acc), rows


@dataclass(frozen=True)
class LocalEngine:
    """This process: chunks read ahead, kernels on worker threads
    (:func:`~ale_cli.io.threads.ordered_map`; in a run with ``shared``, a model, which
    uses the cores itself: here, one chunk at a time, the next read meanwhile), states
    merged in row order.

    >>> import numpy as np
    >>> src = ArraySource({"x": np.arange(5.0)})
    >>> LOCAL.run(src, lambda c, _: float(c["x"].sum()), lambda a, b: a + b, 0.0, arrays=["x"])
    10.0
    """

    threads: int | None = None
    splits = False

    @property
    def slots(self) -> int | None:
        return None

    def describe(self) -> dict[str, Any] | None:
        return None

    def __enter__(self) -> LocalEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def run(
        self,
        source: Source,
        kernel: Kernel[S],
        merge: Merge[S],
        empty: S,
        *,
        arrays: Sequence[str],
        shared: Shared | None = None,
        sink: Sink[S] | None = None,
        progress: Progress | None = None,
    ) -> S:
        value = None if shared is None else shared.get()
        acc = empty
        for index, part in enumerate(source.parts()):
            part_acc = empty
            with _writer(sink, index) as writer:
                states = _states(part.chunks(arrays), kernel, value, self.threads, shared)
                for state, rows in states:
                    part_acc = merge(part_acc, state if writer is None else writer.write(state))
                    if progress is not None:
                        progress(rows)
                if writer is not None:
                    part_acc = writer.done(part_acc)
            acc = merge(acc, part_acc)
        return acc


def _states(
    chunks: Iterator[Chunk], kernel: Kernel[S], value: Any, threads: int | None, shared: Any
) -> Iterator[tuple[S, int]]:
    """Each chunk's state and rows in order: on worker threads, or, in a run with
    ``shared`` (a model, which uses the cores itself), here one chunk at a time while a
    thread reads the next (the model's threads stay those of the thread that loaded it)."""
    if shared is None:
        return ordered_map(lambda c: (kernel(c, value), c.n_rows), chunks, threads=threads)
    return ((kernel(c, value), c.n_rows) for c in prefetched(chunks))


def _writer(sink: Sink[S] | None, index: int) -> AbstractContextManager[PartWriter[S] | None]:
    return nullcontext(None) if sink is None else sink.part(index)


#: the default engine: this process
LOCAL = LocalEngine()
