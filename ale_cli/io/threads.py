"""Overlapping work on chunks with threads: reading ahead, and mapping chunks in order;
``ALE_THREADS`` sets the worker threads of :func:`ordered_map`."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

#: at most this many worker threads by default
MAX_THREADS = 4


def thread_count() -> int:
    """``ALE_THREADS`` if set, else the usable CPUs, at most :data:`MAX_THREADS`."""
    given = os.environ.get("ALE_THREADS", "").strip()
    if given.isdigit() and int(given) > 0:
        return int(given)
    return max(1, min(available_cpus(), MAX_THREADS))


def in_background(fn: Callable[[], R]) -> Future[R]:
    """``fn()`` run by a daemon thread (an exit does not wait for it), its result a Future.

    >>> in_background(lambda: 6 * 7).result()
    42
    """
    from threading import Thread

    future: Future[R] = Future()

    def run() -> None:
        try:
            future.set_result(fn())
        except BaseException as exc:  # handed to whoever waits on the result
            future.set_exception(exc)

    Thread(target=run, name="ale-background", daemon=True).start()
    return future


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def prefetched(chunks: Iterator[T]) -> Iterator[T]:
    """The items of ``chunks``, the next one read by a helper thread meanwhile; the first from
    the call on (a caller imports torch while it is read), not from the first ``next``.

    >>> list(prefetched(iter([1, 2, 3])))
    [1, 2, 3]
    """
    from concurrent.futures import ThreadPoolExecutor

    end = object()
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ale-read")
    first = pool.submit(next, chunks, end)

    def items() -> Iterator[T]:
        ahead = first
        try:
            while (item := ahead.result()) is not end:
                ahead = pool.submit(next, chunks, end)
                yield item  # type: ignore[misc]
        finally:  # a consumer that stops (or Ctrl-C) does not wait for the read in flight
            pool.shutdown(wait=False, cancel_futures=True)

    return items()


def ordered_map(
    fn: Callable[[T], R], items: Iterable[T], *, threads: int | None = None
) -> Iterator[R]:
    """``map(fn, items)`` with ``fn`` run by worker threads, results in order.

    >>> list(ordered_map(lambda x: x * x, range(5), threads=2))
    [0, 1, 4, 9, 16]
    """
    from concurrent.futures import ThreadPoolExecutor

    n = thread_count() if threads is None else max(1, threads)
    pending: deque[Future[R]] = deque()
    with ThreadPoolExecutor(max_workers=n, thread_name_prefix="ale-chunk") as pool:
        try:
            for item in items:
                pending.append(pool.submit(fn, item))
                while len(pending) > n:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()
