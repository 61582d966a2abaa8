"""Passes over a source: an :class:`Engine` runs ``kernel(chunk, shared) -> state`` on every
chunk of a :class:`Source` and folds ``merge(state, state)`` in row order, so the result does
not depend on how the rows were cut. On Dask, kernels, merges, states and sources pickle."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from ale_cli.data.source import ArraySource as ArraySource
from ale_cli.data.source import Chunk as Chunk
from ale_cli.data.source import Parts as Parts
from ale_cli.data.source import Source as Source
from ale_cli.io.threads import ordered_map, prefetched
from ale_cli.models.checks import NonFinite

S = TypeVar("S")


class Shared(Protocol):
    """What every chunk of a run needs, read-only (a model)."""

    def get(self) -> Any: ...


@dataclass(frozen=True)
class Ready:
    """A :class:`Shared` value already at hand (shipped as it is by the Dask engine)."""

    value: Any

    def get(self) -> Any:
        return self.value


class PartWriter(Protocol[S]):
    """Where one part's rows go: :meth:`write` per chunk state (returns the state to fold),
    :meth:`done` once with the part's state."""

    def write(self, state: S) -> S: ...

    def done(self, state: S) -> S: ...


class Sink(Protocol[S]):
    """A :class:`PartWriter` per part (discarding its rows if the part fails); :meth:`stop`:
    a part failed, the others stop."""

    def part(self, index: int) -> AbstractContextManager[PartWriter[S]]: ...

    def stop(self) -> None: ...


Kernel = Callable[[Chunk, Any], S]
Merge = Callable[[S, S], S]
#: told the rows of each chunk (local) or part (Dask) as it is done
Progress = Callable[[int], None]


class Engine:
    """Runs ``kernel`` over a source's chunks, states folded in row order, in this process
    unless a subclass runs elsewhere. ``splits``: parts run in other processes (sources
    planned in parts, ``shared`` and kernels travel); ``slots``: parts run at once (None:
    not split); a ``with`` block shares a cluster between runs; ``describe()``: where a
    result ran (None: here)."""

    splits = False
    threads: int | None = None

    @property
    def slots(self) -> int | None:
        return None

    def describe(self) -> dict[str, Any] | None:
        return None

    def __enter__(self) -> Any:
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
        job = (kernel, merge, empty, tuple(arrays), shared, sink)
        return self.fold(list(source.parts()), job, progress)

    def fold(self, parts: list[Source], job: tuple[Any, ...], progress: Progress | None) -> Any:
        """The states of :func:`fold_part` of each part with ``job`` folded in part order."""

        def run(i: int, part: Source) -> tuple[Any, int]:
            try:
                return fold_part(part, i, *job, threads=self.threads, progress=progress)
            except NonFinite as exc:
                return exc, 0

        return fold_screened(job[2], (run(i, p) for i, p in enumerate(parts)), job[1])[0]


def fold_screened(
    acc: S,
    states: Iterable[tuple[Any, int]],
    add: Callable[[S, Any], S],
    progress: Progress | None = None,
) -> tuple[S, int]:
    """``add`` each state of ``states`` (state, rows) in order, and the rows. A refusal of
    non-finite rows (a :class:`NonFinite` state) does not stop the fold: the later
    refusals are merged into it (nothing more is added), so it counts every row, raised
    at the end (also when a later state fails)."""
    refused, rows = None, 0
    try:
        for state, n in states:
            if isinstance(state, NonFinite):
                refused = state.after(refused)
            elif refused is None:
                acc = add(acc, state)
            rows += n
            if progress is not None:
                progress(n)
    except Exception:
        if refused is None:
            raise
    if refused is not None:
        raise refused
    return acc, rows


def fold_part(
    part: Source,
    index: int,
    kernel: Kernel[S],
    merge: Merge[S],
    empty: S,
    arrays: Sequence[str],
    shared: Shared | None = None,
    sink: Sink[S] | None = None,
    *,
    threads: int | None = 0,
    progress: Progress | None = None,
) -> tuple[S, int]:
    """Part ``index``'s folded state (through the sink's writer, if any) and its rows.
    ``threads`` 0: in this thread (a Dask task); else kernels on worker threads (None: one
    per core), or, with ``shared`` (a model using the cores itself), here while a thread
    reads the next chunk."""
    value = None if shared is None else shared.get()

    def run(chunk: Chunk) -> tuple[Any, int]:
        try:
            return kernel(chunk, value), chunk.n_rows
        except NonFinite as exc:  # the next chunks are screened all the same
            return exc, chunk.n_rows

    with nullcontext(None) if sink is None else sink.part(index) as writer:
        chunks = part.chunks(arrays)  # read from here on (prefetched reads at once)
        if threads == 0 or shared is not None:
            chunks = chunks if threads == 0 else prefetched(chunks)
            states: Iterable[tuple[Any, int]] = map(run, chunks)
        else:
            states = ordered_map(run, chunks, threads=threads)
        acc, rows = fold_screened(
            empty, states, lambda a, s: merge(a, s if writer is None else writer.write(s)), progress
        )
        return (acc if writer is None else writer.done(acc)), rows


@dataclass(frozen=True)
class LocalEngine(Engine):
    """This process, kernels on ``threads`` worker threads (:func:`fold_part`).

    >>> import numpy as np
    >>> src = ArraySource({"x": np.arange(5.0)})
    >>> LOCAL.run(src, lambda c, _: float(c["x"].sum()), lambda a, b: a + b, 0.0, arrays=["x"])
    10.0
    """

    threads: int | None = None


#: the default engine: this process
LOCAL = LocalEngine()
