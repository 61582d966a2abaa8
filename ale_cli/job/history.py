"""The entries of ``DIR/history/``: which are ours, and writing a new one.

An entry is a directory named by its run's UTC time (``20261123T133405.123456Z``)
holding the summaries, the audit report and :data:`MARKER` (the sha256 of every other
file). Only an entry whose name, marker and files agree is ours, pruned or read.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from ale_cli.io.files import sha256_file
from ale_cli.io.jsonio import dumps

MARKER = "ale-entry.json"
KIND = "ale run history entry"
_LABEL = re.compile(r"^\d{8}T\d{6}\.\d{6}Z$")


def new_label() -> str:
    """The name of an entry made now (sorts in time order)."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")


def _files(entry: Path) -> dict[str, str] | None:
    """The entry's files (name -> sha256) as its marker records them, if it is ours."""
    if entry.is_symlink() or not entry.is_dir() or not _LABEL.match(entry.name):
        return None
    try:
        marker = json.loads((entry / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(marker, dict) or marker.get("kind") != KIND:
        return None
    files = marker.get("files")
    if not isinstance(files, dict) or {p.name for p in entry.iterdir()} - {MARKER} != set(files):
        return None
    for name, digest in files.items():
        path = entry / name
        if path.is_symlink() or not path.is_file() or sha256_file(path) != digest:
            return None
    return dict(files)


def scan(root: Path) -> tuple[list[str], list[str]]:
    """(our entries oldest first, every other name) under ``root`` (hidden names skipped)."""
    if not root.is_dir() or root.is_symlink():
        return [], []
    ours, theirs = [], []
    for path in sorted(root.iterdir()):
        if path.name.startswith("."):
            continue
        (ours if _files(path) is not None else theirs).append(path.name)
    return ours, theirs


def holds(entry: Path, digests: Mapping[str, str]) -> bool:
    """Whether our entry ``entry`` holds exactly the files with these digests."""
    return _files(entry) == dict(digests)


def write_entry(entry: Path, sources: Mapping[str, Path]) -> None:
    """Create ``entry`` (in the staging directory) holding a copy of each source and the marker."""
    entry.mkdir()
    for name, source in sources.items():
        shutil.copy2(source, entry / name)
    files = {name: sha256_file(entry / name) for name in sources}
    marker = {"tool": "ale", "kind": KIND, "schema_version": 1, "files": files}
    (entry / MARKER).write_text(dumps(marker), encoding="utf-8")
