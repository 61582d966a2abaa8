"""SIGTERM handled like Ctrl-C: an exception, so every ``finally`` cleans up.

While :func:`sigterm_raises` is active, SIGTERM raises :class:`Terminated` (a
``KeyboardInterrupt``) in the main thread; the CLI exits with 143 (128 + SIGTERM).
A C extension may report a signal's exception as its own (a ``ValueError``):
:func:`arrived` remembers the last signal handled, so the CLI still exits 143 or 130.
Python drops an exception raised in a finaliser or a weakref callback (as a garbage
collection may run one at any moment): such a signal is kept and raised again by
:func:`raise_dropped`, before a file is put in place and when the command ends.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

EXIT_TERMINATED = 128 + signal.SIGTERM
EXIT_INTERRUPTED = 128 + signal.SIGINT
#: the error line of each exit by signal
STOPPED = {EXIT_INTERRUPTED: "interrupted", EXIT_TERMINATED: "terminated"}

_ARRIVED: list[int] = []
_DROPPED: list[KeyboardInterrupt] = []


def arrived() -> int | None:
    """The last SIGTERM or SIGINT handled by this module's handlers (None: none yet)."""
    return _ARRIVED[-1] if _ARRIVED else None


def raise_dropped() -> None:
    """Raise a signal's exception that Python dropped inside :func:`sigterm_raises`."""
    if _DROPPED:
        raise _DROPPED.pop()


def _keep_dropped(hook: Any) -> Any:
    def unraisable(info: Any) -> None:
        if isinstance(info.exc_value, KeyboardInterrupt):
            _DROPPED.append(info.exc_value)
        else:
            hook(info)

    return unraisable


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
    _DROPPED.clear()
    hook, sys.unraisablehook = sys.unraisablehook, _keep_dropped(sys.unraisablehook)
    previous: Any = signal.signal(signal.SIGTERM, _raise_terminated)
    previous_int: Any = signal.getsignal(signal.SIGINT)
    if previous_int is signal.default_int_handler:  # only Python's own: keep a test's
        signal.signal(signal.SIGINT, _raise_interrupted)
    try:
        yield
    finally:
        sys.unraisablehook = hook
        signal.signal(signal.SIGTERM, previous)
        if previous_int is signal.default_int_handler:
            signal.signal(signal.SIGINT, previous_int)


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM wait until the block ends, then reach their handlers (main thread
    only). Held by handlers, not by a signal mask: Python runs a handler in the main thread
    whichever thread the kernel gave the signal to, so masking the main thread holds
    nothing while another thread runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    wanted = (signal.SIGINT, signal.SIGTERM)
    previous = {s: signal.signal(s, lambda signum, _: held.append(signum)) for s in wanted}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, signal.SIG_DFL if handler is None else handler)
        if held:
            signal.raise_signal(held[0])
