"""File helpers shared by every writer: safe atomic writes, output checks, content hashes.

Every file ``ale`` writes goes through :func:`atomic_write`, and every command
checks its outputs first with :func:`check_output`, so that

- a failure, Ctrl-C or SIGTERM never leaves a partial file or a temporary file;
- nothing that is not a regular file (a directory, a device such as
  ``/dev/full``, a FIFO, a socket) is ever replaced by a file;
- no input of the same run is overwritten by its output;
- an existing file that is not an ``ale`` output of the same kind is replaced
  only when the caller says so (``force``);
- permissions are those of an ordinary new file (``0666 & ~umask``), and a
  rewritten file keeps its mode.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import secrets
import stat
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO

from ale_cli.adapters.verify import DamagedStore
from ale_cli.errors import InputError, RunError

_HASH_CHUNK = 1 << 20
_SNIFF = 4096


def sha256_file(path: str | os.PathLike[str], what: str = "file") -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB chunks.

    Only a regular file is read (a FIFO would block, a directory fails): anything
    else is an InputError naming ``what`` (e.g. "data file") and the path.
    """
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InputError(f"{what} '{path}' does not exist") from None
    except OSError as exc:
        raise InputError(f"cannot read {what} '{path}': {exc.strerror or exc}") from None
    kind = _what(mode)
    if kind is not None:
        raise InputError(f"{what} '{path}' is {kind}, expected a regular file")
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _what(mode: int) -> str | None:
    """What a non-regular file is ("a directory", ...); None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_target(path: str | os.PathLike[str]) -> Path:
    """The file a write to ``path`` replaces: ``path`` itself, or a symlink's final target.

    InputError (one line) when ``path`` exists and is not a regular file, or is a
    symlink loop.
    """
    given = Path(path)
    target = given
    if given.is_symlink():
        try:
            target = given.resolve(strict=False)
        except (OSError, RuntimeError):
            raise InputError(f"cannot write '{given}': it is a symlink loop") from None
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        return target
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError(f"cannot write '{given}': it is a symlink loop") from None
        raise InputError(f"cannot write '{given}': {exc.strerror or exc}") from None
    what = _what(mode)
    if what is not None:
        raise InputError(f"cannot write '{given}': it is {what}, not a regular file")
    return target


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike[str], mode: str = "wb") -> Iterator[IO[bytes]]:
    """Open a temporary file beside ``path``; rename it onto ``path`` only on success.

    A failure inside the block (an exception, Ctrl-C, SIGTERM once
    :mod:`ale_cli.signals` turns it into an exception) never leaves a partial
    file at ``path``: the temporary file is removed and an existing ``path`` is
    untouched.

    - ``path`` that exists and is not a regular file (a directory, a device, a
      FIFO, a socket) is refused with an :class:`InputError` (exit 2).
    - A **symlink is written through**: the new content replaces the link's
      final target (created if the link dangles), the link itself stays. This
      keeps links such as ``latest.json -> runs/42.json`` working.
    - A new file gets mode ``0666 & ~umask`` (as ``open()`` would give it); a
      rewritten file keeps its mode.
    - An ``OSError`` while writing (a full disk, a quota, a read-only file
      system) is a one-line :class:`RunError` naming the file.
    """
    given = Path(path)
    target = write_target(given)
    try:
        existing: int | None = os.stat(target).st_mode & 0o7777
    except OSError:
        existing = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunError(f"cannot write '{given}': {exc.strerror or exc}") from None
    # The temporary file's name is known before it exists, so an exception raised by a
    # signal handler at any point after its creation (even inside os.open's return) finds
    # it to remove; tempfile.mkstemp would leave it behind in that window.
    tmp: Path | None = None
    try:
        fd = -1
        for _ in range(100):
            tmp = target.parent / f".{target.name}.{secrets.token_hex(6)}.tmp"
            try:
                fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
                break
            except FileExistsError:
                tmp = None
        if tmp is None:
            raise OSError(errno.EEXIST, "no free temporary file name")
        os.fchmod(fd, existing if existing is not None else 0o666 & ~_umask())
        with os.fdopen(fd, mode) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        raise RunError(f"cannot write '{given}': {exc.strerror or exc}") from None
    except BaseException:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        raise


# -- what an existing output is -------------------------------------------------------------


def _head(path: Path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(_SNIFF)


def _is_json_object(path: Path, *keys: str) -> bool:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    return isinstance(data, dict) and all(k in data for k in keys)


def _is_text(path: Path) -> bool:
    try:
        head = _head(path)
    except OSError:
        return False
    if b"\0" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:  # a multi-byte character cut at the end is fine
        return exc.start >= len(head) - 3
    return True


def _is_store(path: Path) -> bool:
    from ale_cli.adapters.store import read_meta

    try:
        read_meta(path)
    except DamagedStore:  # ours (its meta is intact) with damaged bytes: compute redoes it
        return True
    except InputError:
        return False
    return True


def _is_png(path: Path) -> bool:
    return _head(path).startswith(b"\x89PNG\r\n\x1a\n")


def _is_svg(path: Path) -> bool:
    return _is_text(path) and b"<svg" in _head(path)


def _is_html(path: Path) -> bool:
    head = _head(path).lstrip().lower()
    return _is_text(path) and (head.startswith(b"<!doctype html") or head.startswith(b"<html"))


#: What each output kind of :func:`check_output` accepts as "an ale output of that kind".
OUTPUT_KINDS: dict[str, tuple[str, Callable[[Path], bool]]] = {
    "store": ("local-effects store (.npz with a readable meta)", _is_store),
    "summary": (
        "summary (JSON with schema_version and estimator)",
        lambda p: _is_json_object(p, "schema_version", "estimator"),
    ),
    "json": ("JSON file", _is_json_object),
    "csv": ("CSV (text) file", _is_text),
    "text": ("text file", _is_text),
    "png": ("PNG image", _is_png),
    "svg": ("SVG image", _is_svg),
    "html": ("HTML page", _is_html),
    "parquet": ("Parquet file", lambda p: _starts_with(p, b"PAR1")),
    "xml": ("XML file", lambda p: _starts_with(p, b"<?xml") or _starts_with(p, b"<")),
}


def _starts_with(path: Path, magic: bytes) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(len(magic)) == magic
    except OSError:
        return False


def check_output(
    path: str | os.PathLike[str],
    *,
    inputs: Sequence[str | os.PathLike[str]] = (),
    kind: str,
    force: bool = False,
) -> None:
    """Refuse (InputError, exit 2, one line) to write ``path`` when that would lose data.

    Call it for every output before any work is done. Refused, whatever ``force``:

    - ``path`` exists and is not a regular file (directory, device, FIFO, socket)
      or is a symlink loop;
    - ``path`` is the same file as one of ``inputs`` (same device and inode, so
      another spelling, a hard link or a symlink to an input is caught too).

    Refused unless ``force``: ``path`` exists and is not an ``ale`` output of
    ``kind`` (one of :data:`OUTPUT_KINDS`: ``"store"`` is an ``.npz`` whose meta
    parses, ``"summary"`` a JSON object with ``schema_version`` and
    ``estimator``, ``"json"`` a JSON object, ``"csv"``/``"text"`` UTF-8 text,
    ``"png"``/``"svg"``/``"html"`` by their first bytes).

    The message names ``force`` as ``{param}`` so the CLI can name its flag.
    """
    if kind not in OUTPUT_KINDS:
        raise ValueError(f"unknown output kind '{kind}' (kinds: {', '.join(OUTPUT_KINDS)})")
    out = Path(path)
    target = write_target(out)
    if not target.exists():
        return
    for item in inputs:
        try:
            same = os.path.samefile(target, item)
        except OSError:
            continue
        if same:
            raise InputError(
                f"output '{out}' is the same file as the input '{item}'; choose another output"
            )
    description, accepts = OUTPUT_KINDS[kind]
    if not force and not accepts(target):
        raise InputError(
            f"output '{out}' exists and is not an ale {description}; remove it, choose "
            "another output, or pass {param} to overwrite it",
            param="force",
        )
