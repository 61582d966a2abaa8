"""SIGTERM handled like Ctrl-C: an exception, so every ``finally`` cleans up.

While :func:`sigterm_raises` is active, SIGTERM raises :class:`Terminated` (a
``KeyboardInterrupt``) in the main thread; the CLI exits with 143 (128 + SIGTERM).
A C extension may report a signal's exception as its own (a ``ValueError``):
:func:`arrived` remembers the last signal handled, so the CLI still exits 143 or 130.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

EXIT_TERMINATED = 128 + signal.SIGTERM
EXIT_INTERRUPTED = 128 + signal.SIGINT

_ARRIVED: list[int] = []


def arrived() -> int | None:
    """The last SIGTERM or SIGINT handled by this module's handlers (None: none yet)."""
    return _ARRIVED[-1] if _ARRIVED else None


class Terminated(KeyboardInterrupt):
    """The process received SIGTERM (exit code 143)."""

    exit_code = EXIT_TERMINATED


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    # a second SIGTERM during the clean-up must not abort the clean-up
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _ARRIVED.append(signal.SIGTERM)
    raise Terminated()


def _raise_interrupted(signum: int, frame: FrameType | None) -> None:
    _ARRIVED.append(signal.SIGINT)
    raise KeyboardInterrupt()


def install() -> None:
    """From now on SIGTERM raises :class:`Terminated` (main thread only; else a no-op)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_terminated)


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` inside the block; the previous handler after it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _ARRIVED.clear()  # a block remembers its own signals only
    previous: Any = signal.signal(signal.SIGTERM, _raise_terminated)
    previous_int: Any = signal.getsignal(signal.SIGINT)
    if previous_int is signal.default_int_handler:  # only Python's own: keep a test's
        signal.signal(signal.SIGINT, _raise_interrupted)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        if previous_int is signal.default_int_handler:
            signal.signal(signal.SIGINT, previous_int)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait until the block ends (main thread on POSIX only)."""
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not (
        threading.main_thread()
    ):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
