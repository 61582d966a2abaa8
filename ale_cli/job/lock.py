"""One ``ale run`` per output directory at a time: an exclusive ``flock`` on ``DIR/.lock``.

Released by the kernel however the process ends (no stale lock). The holder writes its
pid so a refusal can name it. Opened with ``O_NOFOLLOW`` and must be a regular file, so
a planted link is never truncated. Without ``wait`` a second run fails at once.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

from ale_cli.errors import InputError, RunError

LOCK_NAME = ".lock"


class Locked(RunError):
    """Another ``ale run`` holds the output directory (exit code 1)."""


def _take_or_refuse(fd: int, directory: Path) -> None:
    """Take the lock or raise :class:`Locked` naming the holder (retried ~1 s for its pid)."""
    holder = "unknown"
    for _ in range(40):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
        if holder != "unknown":
            break
        time.sleep(0.025)
    raise Locked(f"another 'ale run' holds '{directory}' (pid {holder})")


def _open_lock(directory: Path) -> int:
    """The descriptor of ``directory/.lock``, created if missing (never through a link)."""
    lock = directory / LOCK_NAME
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    if directory.exists() and not directory.is_dir():
        raise InputError(f"run directory '{directory}' exists and is not a directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP or lock.is_symlink():
            raise InputError(
                f"the lock file '{lock}' is a symbolic link; ale does not follow it "
                "(remove the link)"
            ) from None
        if exc.errno in (errno.ENXIO, errno.EISDIR):
            raise InputError(f"the lock file '{lock}' is not a regular file; remove it") from None
        raise RunError(f"cannot lock '{directory}': {exc.strerror or exc}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
        os.close(fd)
        what = "not a regular file" if not stat.S_ISREG(info.st_mode) else "a hard link"
        raise InputError(f"the lock file '{lock}' is {what}; ale does not write it (remove it)")
    return fd


@contextlib.contextmanager
def run_lock(directory: Path, *, wait: bool = False) -> Iterator[Path]:
    """Hold the lock of ``directory`` (created if missing) for the block."""
    fd = _open_lock(directory)
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
