"""The entries of ``DIR/history/``: which are ours, and writing a new one.

An entry ale writes is a directory named by the UTC time of its run
(``20261123T133405.123456Z``) holding that run's summaries and audit report
and the marker :data:`MARKER`, a JSON object naming the tool and the sha256
of every other file in the entry. Only an entry whose name, marker and files
all agree is ours (:func:`scan`): only ours are pruned or read by the report.
A user's folder, a link, or an entry whose files were changed is left as it
is and named in the run's notes.
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
    if not isinstance(files, dict):
        return None
    present = {p.name for p in entry.iterdir()} - {MARKER}
    if present != set(files):
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
    """Create ``entry`` holding a copy of each source (by name) and the marker.

    Written inside the run's staging directory, which is removed on failure.
    """
    entry.mkdir()
    for name, source in sources.items():
        shutil.copy2(source, entry / name)
    files = {name: sha256_file(entry / name) for name in sources}
    marker = {"tool": "ale", "kind": KIND, "schema_version": 1, "files": files}
    (entry / MARKER).write_text(dumps(marker), encoding="utf-8")
