"""SIGTERM handled like Ctrl-C: an exception, so every ``finally`` cleans up.

``timeout``, cron and CI cancellation stop a program with SIGTERM, whose default
action kills the process at once: temporary files stay behind. While
:func:`sigterm_raises` is active, SIGTERM raises :class:`Terminated` (a
``KeyboardInterrupt``, so code that cleans up after Ctrl-C cleans up after it
too) in the main thread; the CLI prints one line and exits with 143
(128 + SIGTERM), as a shell reports a terminated program.
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


class Terminated(KeyboardInterrupt):
    """The process received SIGTERM (exit code 143)."""

    exit_code = EXIT_TERMINATED


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    # a second SIGTERM during the clean-up must not abort the clean-up
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise Terminated()


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
    previous: Any = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
