"""A figure directory's manifest (``.ale-plots.json``): the sha256 of each figure file
``ale plot -o DIR`` / ``ale diff -o DIR`` wrote; DIR is replaced whole, so only when it
holds nothing else (:func:`unlisted`) and the files are unchanged (or ``--force``)."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from ale_cli import __version__
from ale_cli.io.files import atomic_write, sha256_file
from ale_cli.io.jsonio import TOOL, ale_object

MANIFEST = ".ale-plots.json"
_KIND = "figures"


def write_manifest(directory: Path, files: Sequence[Path]) -> Path:
    """Write the manifest of ``files`` (inside ``directory``) into ``directory``."""
    listed = {p.name: sha256_file(p) for p in sorted(files, key=lambda p: p.name)}
    data = {"tool": {"name": TOOL, "version": __version__}, "kind": _KIND, "files": listed}
    path = directory / MANIFEST
    with atomic_write(path) as fh:
        fh.write((json.dumps(data, indent=1) + "\n").encode("utf-8"))
    return path


def read_manifest(directory: Path) -> dict[str, str] | None:
    """The files (name -> sha256) the manifest in ``directory`` lists; None without one."""
    path = directory / MANIFEST
    try:
        data = ale_object(path, 1 << 24) if stat.S_ISREG(os.lstat(path).st_mode) else None
    except OSError:
        return None
    files = data.get("files") if data is not None and data.get("kind") == _KIND else None
    if not isinstance(files, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in files.items()
    ):
        return None
    return files


def unlisted(directory: Path) -> list[str]:
    """The entries of ``directory`` but the manifest and the regular files it lists."""
    listed = read_manifest(directory) or {}
    extra = []
    for entry in sorted(os.scandir(directory), key=lambda e: e.name):
        if entry.name == MANIFEST and listed:
            continue
        if entry.name in listed and entry.is_file(follow_symlinks=False):
            continue
        extra.append(entry.name)
    return extra


def is_figure_directory(directory: Path) -> bool:
    """True for an empty directory, or one holding only its manifest and its unchanged files."""
    if unlisted(directory):
        return False
    listed = read_manifest(directory) or {}
    for name, digest in listed.items():
        path = directory / name
        if path.exists() and sha256_file(path) != digest:
            return False
    return True


def refusal(directory: Path) -> str | None:
    """Why ``directory`` cannot be replaced whatever ``--force`` says (None: it can)."""
    return foreign(directory, unlisted(directory), MANIFEST, "the figures replace")


def foreign(directory: Path, extra: Sequence[str], manifest: str, what: str) -> str | None:
    """The refusal of a directory that is replaced whole (``what``: "the figures replace")
    when it holds ``extra`` entries its ``manifest`` does not list (None: it holds none)."""
    if not extra:
        return None
    more = f" and {len(extra) - 1} more" if len(extra) > 1 else ""
    return (
        f"output directory '{directory}' holds '{extra[0]}'{more}, which ale did not write "
        f"there (not in its {manifest}); {what} the whole directory, so "
        "choose a new or empty one"
    )
