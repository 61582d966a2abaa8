"""Atomic writes (a failure, Ctrl-C or SIGTERM never leaves a partial file; a killed
process's temporaries are removed by the next write) and content hashes."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import secrets
import shutil
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from ale_cli.errors import InputError, RunError
from ale_cli.signals import raise_dropped, signals_held

#: a temporary file older than this is not this process's
STARTED = time.time()


def sha256_file(path: str | os.PathLike[str], what: str = "file") -> str:
    """Hex SHA-256 of a regular file's bytes (else an InputError naming ``what``)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InputError(f"{what} '{path}' does not exist") from None
    except OSError as exc:
        raise InputError(f"cannot read {what} '{path}': {exc.strerror or exc}") from None
    kind = what_is(mode)
    if kind is not None:
        raise InputError(f"{what} '{path}' is {kind}, expected a regular file")
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


_KINDS = {stat.S_IFDIR: "a directory", stat.S_IFCHR: "a device", stat.S_IFBLK: "a device"}
_KINDS |= {stat.S_IFIFO: "a FIFO (named pipe)", stat.S_IFSOCK: "a socket"}


def what_is(mode: int) -> str | None:
    """What a non-regular file is ("a directory", ...); None for a regular file."""
    return None if stat.S_ISREG(mode) else _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def output_mode(path: Path, given: Path | None = None) -> int | None:
    """The mode of what ``path`` names (links followed), None when nothing is there; an
    InputError naming ``given`` (default: ``path``) when it cannot be told."""
    given = given or path
    try:
        return os.stat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError(f"cannot write '{given}': it is a symlink loop") from None
        raise InputError(f"cannot write '{given}': {exc.strerror or exc}") from None


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike[str], mode: str = "wb") -> Iterator[IO[bytes]]:
    """Open a temporary file beside ``path``; rename it onto ``path`` only on success (a
    symlink written through, the mode kept or ``0666 & ~umask``, an OSError a RunError)."""
    given = target = Path(path)
    if given.is_symlink():  # written through to the link's final target
        try:
            target = given.resolve(strict=False)
        except (OSError, RuntimeError):
            raise InputError(f"cannot write '{given}': it is a symlink loop") from None
    found = output_mode(target, given)
    if found is not None and (what := what_is(found)) is not None:
        raise InputError(f"cannot write '{given}': it is {what}, not a regular file")
    existing = None if found is None else found & 0o7777
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunError(f"cannot write '{given}': {exc.strerror or exc}") from None
    remove_stale_temporaries(target)
    tmp: Path | None = None
    try:
        fd = -1
        for _ in range(100):
            tmp = target.parent / temporary_name(target.name)
            try:
                fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
                break
            except FileExistsError:
                tmp = None
        if tmp is None:
            raise OSError(errno.EEXIST, "no free temporary file name")
        if existing is None:
            os.umask(umask := os.umask(0o022))
            existing = 0o666 & ~umask
        os.fchmod(fd, existing)
        with os.fdopen(fd, mode) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        raise_dropped()
        os.replace(tmp, target)
    except BaseException as exc:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise RunError(f"cannot write '{given}': {exc.strerror or exc}") from None
        raise


def temporary_name(name: str) -> str:
    """The name of a temporary file for ``name``: ``.NAME.<12 hex digits>.tmp``."""
    return f".{name}.{secrets.token_hex(6)}.tmp"


def remove_stale_temporaries(target: Path) -> list[Path]:
    """Remove ``target``'s temporary files last changed before :data:`STARTED`; those removed."""
    pattern = re.compile(rf"\.{re.escape(target.name)}\.[0-9a-f]{{12}}\.tmp")
    removed = []
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return removed
    for entry in entries:
        if not pattern.fullmatch(entry.name):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISREG(info.st_mode) and info.st_mtime < STARTED:
                os.unlink(entry.path)
                removed.append(Path(entry.path))
        except OSError:
            continue
    return removed


def swap_in(new: Path, target: Path) -> None:
    """Put ``new`` (a file or directory) at ``target`` by renames only, Ctrl-C and SIGTERM
    held: in one step where the system can exchange the two, else with the old one renamed
    aside first (and back if the second rename fails); the old one is then removed."""
    raise_dropped()
    with signals_held():
        if not target.exists() and not target.is_symlink():
            os.rename(new, target)
            return
        if _exchange(new, target):  # new now holds the old one
            old = new
        else:
            old = target.parent / f".{target.name}.{secrets.token_hex(6)}.old"
            os.rename(target, old)
            try:
                os.rename(new, target)
            except BaseException:
                os.rename(old, target)
                raise
    if old.is_dir() and not old.is_symlink():
        shutil.rmtree(old, ignore_errors=True)
    else:
        old.unlink(missing_ok=True)


def _exchange(a: Path, b: Path) -> bool:
    """Swap ``a`` and ``b`` in one step (Linux renameat2); False if the system cannot or
    would not (the renames then say why, if they fail too)."""
    import ctypes
    import ctypes.util

    libc_name = ctypes.util.find_library("c")
    if libc_name is None:
        return False
    renameat2 = getattr(ctypes.CDLL(libc_name, use_errno=True), "renameat2", None)
    at_fdcwd, rename_exchange = -100, 2
    flags = (at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange)
    return renameat2 is not None and renameat2(*flags) == 0
