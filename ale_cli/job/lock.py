"""One ``ale run`` per output directory at a time: an exclusive ``flock`` on ``DIR/.lock``.

The lock is held for the whole run and released by the kernel when the
process ends, however it ends (a crash or ``kill -9`` leaves no stale lock;
the file itself stays and is reused). The holder writes its pid into the file
so the refusal can name it. Without ``wait`` a second run fails at once
(cron: an overrunning job must not pile up copies of itself); with ``wait``
it blocks until the first run is done.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from ale_cli.errors import RunError

LOCK_NAME = ".lock"


class Locked(RunError):
    """Another ``ale run`` holds the output directory (exit code 1)."""


@contextlib.contextmanager
def run_lock(directory: Path, *, wait: bool = False) -> Iterator[Path]:
    """Hold the lock of ``directory`` (created if missing) for the block."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(directory / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise RunError(f"cannot lock '{directory}': {exc.strerror or exc}") from exc
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            raise Locked(f"another 'ale run' holds '{directory}' (pid {holder})") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        try:
            yield directory / LOCK_NAME
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
