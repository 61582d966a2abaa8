"""The store, opened one way: a file (:mod:`ale_cli.store.reader`) or a directory store
(:mod:`ale_cli.store.parts`), told apart here and nowhere else."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ale_cli.store.format import DIGEST as DIGEST
from ale_cli.store.format import FINE_EDGES as FINE_EDGES
from ale_cli.store.format import FINE_OFFSETS as FINE_OFFSETS
from ale_cli.store.format import META_KEYS as META_KEYS
from ale_cli.store.format import MIXED as MIXED
from ale_cli.store.format import PAIRS as PAIRS
from ale_cli.store.format import SCHEMA_VERSION as SCHEMA_VERSION
from ale_cli.store.format import Store as Store
from ale_cli.store.format import StoreWriter as StoreWriter
from ale_cli.store.format import cache_key as cache_key
from ale_cli.store.format import write_store as write_store
from ale_cli.store.parts import open_part_store, read_part_meta
from ale_cli.store.parts import store_sha256 as part_store_sha256
from ale_cli.store.reader import StoreFile as StoreFile
from ale_cli.store.reader import file_sha256, open_file_store, read_file_meta


def read_meta(path: str | Path) -> dict[str, Any]:
    """The meta of a store, after checking every byte of it (``DamagedStore`` when the meta
    is intact)."""
    path = Path(path)
    return read_part_meta(path) if path.is_dir() else read_file_meta(path)


def read_store(path: str | Path) -> Store:
    """A store in memory (its chunks or parts concatenated as float64), every byte checked."""
    return open_store(path).read()


def open_store(path: str | Path) -> StoreFile:
    """A store (a file or a directory store) opened for chunk-by-chunk reading."""
    path = Path(path)
    return open_part_store(path) if path.is_dir() else open_file_store(path)


def store_sha256(path: str | Path) -> str:
    """A store's identity, as a summary records it, checked."""
    path = Path(path)
    return part_store_sha256(path) if path.is_dir() else file_sha256(path)
