"""The directory store (``ale compute --engine dask``; docs/store-and-summary.md): a
``manifest.json`` and one store file per data partition, written atomically."""

from __future__ import annotations

import json
import os
import secrets
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ale_cli.data.source import Chunk
from ale_cli.errors import InputError, RunError
from ale_cli.io.files import atomic_write, sha256_file, swap_in
from ale_cli.io.jsonio import loads, to_jsonable
from ale_cli.store.format import DIGEST, PAIRS, ROW_ARRAYS
from ale_cli.store.layout import check_meta
from ale_cli.store.reader import StoreFile, file_sha256, open_file_store, read_file_meta
from ale_cli.store.verify import DamagedStore

MANIFEST = "manifest.json"
LAYOUT = "parts"


def part_name(i: int) -> str:
    """The file name of part ``i``.

    >>> part_name(3)
    'part-00003.npz'
    """
    return f"part-{i:05d}.npz"


def is_part_store(path: Path) -> bool:
    return path.is_dir() and (path / MANIFEST).is_file()


def unlisted(path: Path) -> list[str]:
    """The entries of the directory store ``path`` but its manifest and the parts it lists
    (every other entry when the manifest does not read)."""
    try:
        listed = {MANIFEST} | {p["file"] for p in _manifest(path)["parts"]}
    except InputError:
        listed = {MANIFEST}
    return sorted(e.name for e in os.scandir(path) if e.name not in listed)


@dataclass(frozen=True)
class PartStore(StoreFile):
    """A directory store opened for reading chunk by chunk: ``files`` its parts."""

    files: tuple[StoreFile, ...] = ()

    def parts(self) -> tuple[StoreFile, ...]:
        return tuple(part for file in self.files for part in file.parts())

    def chunks(self, arrays: Sequence[str] = ROW_ARRAYS) -> Iterator[Chunk]:
        for file in self.files:
            yield from file.chunks(arrays)

    def select_output(self, k: int) -> PartStore:
        chosen = super().select_output(k)
        return replace(chosen, files=tuple(file.select_output(k) for file in self.files))

    def pairs(self) -> tuple[tuple[str, str], ...]:
        """The pairs whose mixed derivatives every part holds (``compute --pairs``)."""
        found = {part.pairs() for part in self.files}
        if len(found) != 1:
            raise InputError(f"store '{self.path}': its parts hold different pairs")
        return found.pop()

    def held(self) -> tuple[str, ...]:
        return self.files[0].held()

    def small_arrays(self) -> dict[str, np.ndarray]:
        """The pairs of the mixed derivatives, if any (``compute --pairs``)."""
        pairs = self.pairs()
        return {PAIRS: np.array(pairs, dtype=np.str_)} if pairs else {}


def _manifest(path: Path) -> dict[str, Any]:
    where = f"store '{path}'"
    try:
        meta = loads((path / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(
            f"{where} is a directory, expected an .npz file or a directory store (a "
            f"{MANIFEST} and its parts, from 'ale compute --engine dask')"
        ) from None
    except (OSError, UnicodeDecodeError, ValueError):
        raise InputError(f"{where} has an unreadable {MANIFEST}") from None
    if not isinstance(meta, dict) or meta.get("layout") != LAYOUT:
        raise InputError(f"{where}: its {MANIFEST} is not a directory-store manifest")
    check_meta(where, meta, MANIFEST)
    parts = meta.get("parts")
    chunks = meta.get("chunks")
    if (
        not isinstance(parts, list)
        or not parts
        or not all(
            isinstance(p, dict)
            and isinstance(p.get("file"), str)
            and isinstance(p.get("rows"), int)
            and isinstance(p.get("sha256"), str)
            for p in parts
        )
        or not isinstance(chunks, dict)
        or chunks.get("rows") != [p["rows"] for p in parts]
    ):
        raise InputError(f"{where}: its {MANIFEST} has no valid 'parts' list")
    for key in ("feature_names", "input_names"):
        names = meta.get(key)
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise InputError(f"{where}: its {MANIFEST} has no '{key}' list")
    rows = meta.get("n_rows")
    if isinstance(rows, bool) or not isinstance(rows, int) or rows != sum(chunks["rows"]):
        raise InputError(
            f"{where}: its {MANIFEST} says n_rows {rows}, its parts hold {sum(chunks['rows'])}"
        )
    return meta


def _part(path: Path, entry: dict[str, Any], meta: dict[str, Any]) -> StoreFile:
    name = entry["file"]
    if Path(name).name != name or not name.endswith(".npz"):
        raise InputError(f"store '{path}': its {MANIFEST} names a part '{name}' outside it")
    file = path / name
    if not file.is_file():
        raise InputError(f"store '{path}' lacks its part '{name}'")
    part = open_file_store(file)
    if part.n_rows != entry["rows"]:
        raise InputError(
            f"store '{path}': part '{name}' has {part.n_rows} rows, its {MANIFEST} says "
            f"{entry['rows']}"
        )
    for key in ("feature_names", "input_names"):
        if list(getattr(part, key)) != meta[key]:
            raise InputError(f"store '{path}': part '{name}' has other {key} than the store")
    return part


def _check_ranges(path: Path, meta: dict[str, Any], parts: Sequence[StoreFile]) -> None:
    ranges = [part.x_range() for part in parts]
    if meta["chunks"].get("x_min") is None or any(r is None for r in ranges):
        return
    lo = np.min([r[0] for r in ranges if r is not None], axis=0)
    hi = np.max([r[1] for r in ranges if r is not None], axis=0)
    found_lo = np.asarray(meta["chunks"]["x_min"], dtype=np.float64)
    found_hi = np.asarray(meta["chunks"].get("x_max"), dtype=np.float64)
    if not (np.array_equal(found_lo, lo) and np.array_equal(found_hi, hi)):  # shapes too
        raise InputError(
            f"store '{path}': its {MANIFEST} has other input ranges (x_min, x_max) than its "
            "parts; it was changed after it was written"
        )


def open_part_store(path: str | Path) -> PartStore:
    """Open a directory store for chunk-by-chunk reading, checking its manifest and parts."""
    path = Path(path)
    meta = _manifest(path)
    parts = tuple(_part(path, entry, meta) for entry in meta["parts"])
    starts = np.cumsum([0, *(p.n_rows for p in parts)])
    parts = tuple(replace(p, offset=int(start)) for p, start in zip(parts, starts, strict=False))
    _check_ranges(path, meta, parts)
    return PartStore(  # its names are its parts' (_part), each part's features its inputs
        path=path,
        meta=meta,
        feature_names=tuple(meta["feature_names"]),
        input_names=tuple(meta["input_names"]),
        rows=tuple(int(p["rows"]) for p in meta["parts"]),
        files=parts,
    )


def read_part_meta(path: str | Path) -> dict[str, Any]:
    """The manifest of a directory store, after checking it, every byte of its parts and
    each part's identity against the manifest's (:func:`_check_part`)."""
    handle = open_part_store(path)
    for part, entry in zip(handle.files, handle.meta["parts"], strict=True):
        if read_file_meta(part.path).get(DIGEST) != entry["sha256"]:  # its identity checked
            _check_part(handle.path, entry)
    return handle.meta


def store_sha256(path: str | Path) -> str:
    """The sha256 of a directory store's manifest, every part's identity checked against it."""
    path = Path(path)
    for entry in _manifest(path)["parts"]:
        if not (path / entry["file"]).is_file():
            raise InputError(f"store '{path}' lacks its part '{entry['file']}'")
        _check_part(path, entry)
    return sha256_file(path / MANIFEST)


def _check_part(path: Path, entry: dict[str, Any]) -> None:
    """Part ``entry`` is the one the manifest records (its :func:`file_sha256`, no array
    read; a store written before identities: its file's sha256); DamagedStore else."""
    part = path / entry["file"]
    if file_sha256(part) != entry["sha256"] and sha256_file(part) != entry["sha256"]:
        raise DamagedStore(
            f"store '{path}': part '{entry['file']}' changed since the store was written "
            "(its sha256 differs from the manifest's)"
        )


class PartStoreWriter:
    """Write a directory store atomically: parts into ``part_path(i)`` of a hidden
    directory, then :meth:`finish`; it replaces ``path`` when the block ends without an error."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.tmp = self.path.parent / f".{self.path.name}.{secrets.token_hex(6)}.tmp"
        self._finished = False

    def __enter__(self) -> PartStoreWriter:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.tmp.mkdir()
        except OSError as exc:
            raise RunError(f"cannot write '{self.path}': {exc.strerror or exc}") from None
        return self

    def part_path(self, i: int) -> Path:
        return self.tmp / part_name(i)

    def finish(
        self,
        meta: dict[str, Any],
        *,
        feature_names: Sequence[str],
        input_names: Sequence[str],
        parts: Sequence[dict[str, Any]],
        x_min: np.ndarray,
        x_max: np.ndarray,
        arrays: Sequence[str],
    ) -> None:
        rows = [int(p["rows"]) for p in parts]
        manifest = dict(meta) | {
            "layout": LAYOUT,
            "feature_names": list(feature_names),
            "input_names": list(input_names),
            "parts": [dict(p) for p in parts],
            "chunks": {
                "rows": rows,
                "arrays": list(arrays),
                "x_min": [float(v) for v in x_min],
                "x_max": [float(v) for v in x_max],
            },
            "n_rows": sum(rows),
        }
        text = json.dumps(to_jsonable(manifest), allow_nan=False, indent=1)
        with atomic_write(self.tmp / MANIFEST) as fh:
            fh.write(text.encode())
        self._finished = True

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None or not self._finished:
            shutil.rmtree(self.tmp, ignore_errors=True)
            if exc_type is None:
                raise RuntimeError("PartStoreWriter.finish was not called")
            return
        try:
            swap_in(self.tmp, self.path)
        except OSError as err:
            shutil.rmtree(self.tmp, ignore_errors=True)
            raise RunError(f"cannot write '{self.path}': {err.strerror or err}") from None
