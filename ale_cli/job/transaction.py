"""A run directory that changes as a whole (one ``ale run`` at a time: :mod:`.lock`).

Guarantee: whatever ends an ``ale run`` (an error, a full disk, SIGINT,
SIGTERM), ``DIR`` holds either the previous run, complete and as its
``run.json`` records it, or the new one, complete; and no temporary file.

How: :meth:`Staging.open` makes ``DIR/.next-<token>/`` holding hard links to the
previous outputs still as recorded (a changed one is missing, so its step runs again);
the steps run there; :meth:`Staging.commit` moves it in by renames only, ``run.json``
last, signals held, the previous files moved aside to ``DIR/.prev-<token>/`` and back
on failure; :meth:`Staging.discard` removes it. Only what the previous ``run.json``
lists and history entries ale wrote are ever moved or removed (:func:`refuse_foreign`).

A history entry, ``DIR/history/<UTC time>/`` (``20261123T133405.123456Z``), holds the
summaries, the audit report and :data:`MARKER` (the sha256 of every other file); only an
entry whose name, marker and files agree is ours, pruned or read.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import secrets
import shutil
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from ale_cli.errors import InputError, RunError
from ale_cli.io.files import sha256_file
from ale_cli.io.jsonio import dumps
from ale_cli.signals import raise_dropped, signals_held

MANIFEST = "run.json"
HISTORY = "history"
_STAGING = re.compile(r"^\.(next|prev)-[0-9a-f]{12}$")
MARKER = "ale-entry.json"
KIND = "ale run history entry"
_LABEL = re.compile(r"^\d{8}T\d{6}\.\d{6}Z$")


def _is_link_or_special(path: Path) -> bool:
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _same_file(a: Path, b: Path) -> bool:
    try:
        sa, sb = os.lstat(a), os.lstat(b)
    except FileNotFoundError:
        return False
    return stat.S_ISREG(sa.st_mode) and (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def _link_or_copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst, follow_symlinks=False)
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EXDEV, errno.EMLINK, errno.ENOTSUP):
            raise
        shutil.copy2(src, dst, follow_symlinks=False)


def remove_stale(directory: Path) -> None:
    """Remove staging directories a killed run (``kill -9``) left (under the lock: ours)."""
    if not directory.is_dir():
        return
    for path in directory.iterdir():
        if _STAGING.match(path.name) and path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)


def recorded_outputs(manifest: dict | None) -> dict[str, tuple[str, str]]:
    """Every output the manifest lists: relative path -> (step name, sha256)."""
    out: dict[str, tuple[str, str]] = {}
    for step in (manifest or {}).get("steps", []):
        for item in step.get("outputs", []):
            out[str(item["path"])] = (str(step["name"]), str(item["sha256"]))
    return out


def _inside(directory: Path, rel: str) -> Path | None:
    """``directory / rel`` when ``rel`` is a plain relative path that stays inside it."""
    parts = Path(rel).parts
    if not parts or Path(rel).is_absolute() or any(p in ("..", ".", "") for p in parts):
        return None
    if any(directory.joinpath(*parts[:i]).is_symlink() for i in range(1, len(parts))):
        return None
    return directory.joinpath(*parts)


def refuse_foreign(
    directory: Path, paths: Iterable[str], recorded: dict[str, tuple[str, str]]
) -> None:
    """InputError when one of ``paths`` (a trailing ``/``: a directory of outputs) exists
    but no earlier run recorded it, or ``plots`` or ``history`` is a link."""
    for name in ("plots", HISTORY):
        if _is_link_or_special(directory / name):
            raise InputError(
                f"'{directory / name}' in the run directory is a link or not a directory; "
                "ale does not follow it (move it away or choose another directory)"
            )
    for rel in paths:
        path = directory / rel.rstrip("/")
        if not os.path.lexists(path):
            continue
        if _is_link_or_special(path):
            raise InputError(
                f"'{path}' in the run directory is a link or not a regular file; ale does "
                "not follow or replace it (move it away or choose another directory)"
            )
        if rel.endswith("/"):
            if not path.is_dir():
                raise InputError(f"'{path}' in the run directory is not a directory")
            found = [p for p in path.rglob("*") if not p.is_dir() or p.is_symlink()]
            theirs = [p for p in found if p.relative_to(directory).as_posix() not in recorded]
        else:
            theirs = [path] if rel not in recorded and rel != MANIFEST else []
        if theirs:
            raise InputError(
                f"'{theirs[0]}' in the run directory was not written by an earlier run "
                f"(not in '{directory / MANIFEST}'); ale does not replace it (move it away)"
            )


@dataclass
class Staging:
    """The new run's directory inside ``final`` and what the previous run recorded."""

    final: Path
    recorded: dict[str, tuple[str, str]]
    entries: tuple[str, ...] = ()
    stage: Path = field(init=False)
    #: step name -> outputs of the previous run that differ from their record
    changed: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.stage = self.final / f".next-{secrets.token_hex(6)}"
        # a manifest edited to name paths outside DIR (or through a link) names nothing ours
        self.recorded = {
            rel: v for rel, v in self.recorded.items() if _inside(self.final, rel) is not None
        }

    def open(self) -> None:
        """Create the staging directory holding what is unchanged of the previous run."""
        self.stage.mkdir()
        for rel, (step, digest) in self.recorded.items():  # each inside final (__post_init__)
            src = self.final / rel
            if not _is_link_or_special(src) and src.is_file() and sha256_file(src) == digest:
                _link_or_copy(src, self.stage / rel)
            else:
                self.changed.setdefault(step, []).append(rel)
        for label in self.entries:
            for item in sorted((self.final / HISTORY / label).iterdir()):
                _link_or_copy(item, self.stage / HISTORY / label / item.name)
        (self.stage / HISTORY).mkdir(exist_ok=True)

    def discard(self) -> None:
        with signals_held():
            shutil.rmtree(self.stage, ignore_errors=True)

    def commit(self, outputs: Iterable[str], entries: Iterable[str]) -> None:
        """Move the staged run (files ``outputs``, history ``entries``, ``run.json``) into
        ``final``, replacing the previous run's files and entries (see the module)."""
        new_files = set(outputs)
        new_entries = {f"{HISTORY}/{e}" for e in entries}
        old_entries = {f"{HISTORY}/{e}" for e in self.entries}
        # an output no longer written is removed, unless it was changed since: then it is
        # someone's work, left where it is
        edited = {rel for rels in self.changed.values() for rel in rels}
        obsolete = set(self.recorded) - new_files - edited
        units = sorted((new_files | obsolete) - {MANIFEST}) + sorted(new_entries ^ old_entries)
        units.append(MANIFEST)
        aside = self.final / f".prev-{self.stage.name[len('.next-') :]}"
        done: list[tuple[Path, Path]] = []
        raise_dropped()
        with signals_held():
            try:
                for unit in units:
                    is_new = unit in new_files or unit in new_entries or unit == MANIFEST
                    self._commit_unit(unit, is_new, aside, done)
            except BaseException as exc:
                for src, dst in reversed(done):
                    with contextlib.suppress(OSError):
                        os.replace(dst, src)
                shutil.rmtree(self.stage, ignore_errors=True)
                shutil.rmtree(aside, ignore_errors=True)
                if isinstance(exc, OSError):
                    raise RunError(
                        f"cannot update the run directory '{self.final}': "
                        f"{exc.strerror or exc}; the previous run is left as it was"
                    ) from None
                raise
            shutil.rmtree(self.stage, ignore_errors=True)
            shutil.rmtree(aside, ignore_errors=True)
            _remove_empty_dirs(self.final, units)

    def _commit_unit(
        self, unit: str, is_new: bool, aside: Path, done: list[tuple[Path, Path]]
    ) -> None:
        staged = self.stage / unit
        dst = self.final / unit
        if is_new and _same_file(staged, dst):
            return
        if os.path.lexists(dst) and (unit in self.recorded or unit == MANIFEST or not is_new):
            (aside / unit).parent.mkdir(parents=True, exist_ok=True)
            os.replace(dst, aside / unit)
            done.append((dst, aside / unit))
        elif os.path.lexists(dst):
            raise InputError(f"'{dst}' appeared in the run directory while the run ran; kept")
        if is_new:
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staged, dst)
            done.append((staged, dst))


def _remove_empty_dirs(root: Path, units: Iterable[str]) -> None:
    """Remove the directories (``plots/classic``) the previous run's files left empty."""
    parents = {
        root.joinpath(*Path(u).parts[:i]) for u in units for i in range(1, len(Path(u).parts))
    }
    for directory in sorted(parents, key=lambda p: len(p.parts), reverse=True):
        if directory.name == HISTORY or directory.is_symlink():
            continue
        with contextlib.suppress(OSError):
            directory.rmdir()  # only when empty


def new_label() -> str:
    """The name of an entry made now (sorts in time order)."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")


def entry_files(entry: Path) -> dict[str, str] | None:
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
        (ours if entry_files(path) is not None else theirs).append(path.name)
    return ours, theirs


def write_entry(entry: Path, sources: Mapping[str, Path]) -> None:
    """Create ``entry`` (in the staging directory) holding a copy of each source and the marker."""
    entry.mkdir()
    for name, source in sources.items():
        shutil.copy2(source, entry / name)
    files = {name: sha256_file(entry / name) for name in sources}
    marker = {"tool": "ale", "kind": KIND, "schema_version": 1, "files": files}
    (entry / MARKER).write_text(dumps(marker), encoding="utf-8")
