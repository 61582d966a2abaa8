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
import time
from collections.abc import Iterator
from pathlib import Path

from ale_cli.errors import RunError

LOCK_NAME = ".lock"


class Locked(RunError):
    """Another ``ale run`` holds the output directory (exit code 1)."""


def _take_or_refuse(fd: int, directory: Path, *, attempts: int = 40) -> None:
    """Take the lock at once or raise :class:`Locked` naming the holder's pid.

    A run that has just taken the lock (or is releasing it) may not have
    written its pid yet, so an empty file is retried for up to about a second
    rather than reported as an unknown holder.
    """
    holder = "unknown"
    for _ in range(attempts):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
        if holder != "unknown":
            break
        time.sleep(0.025)
    raise Locked(f"another 'ale run' holds '{directory}' (pid {holder})")


@contextlib.contextmanager
def run_lock(directory: Path, *, wait: bool = False) -> Iterator[Path]:
    """Hold the lock of ``directory`` (created if missing) for the block."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(directory / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise RunError(f"cannot lock '{directory}': {exc.strerror or exc}") from exc
    try:
        if wait:
            fcntl.flock(fd, fcntl.LOCK_EX)
        else:
            _take_or_refuse(fd, directory)
        pid = f"{os.getpid()}\n".encode("ascii")
        os.pwrite(fd, pid, 0)
        os.ftruncate(fd, len(pid))
        try:
            yield directory / LOCK_NAME
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
