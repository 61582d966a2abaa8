"""Reading a store file: its meta, chunk by chunk (:class:`StoreFile`, a Source), whole,
and its identity; every byte through :class:`~ale_cli.store.verify.Archive` (CRC-checked)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ale_cli.core.statistics import N_QUANTILES
from ale_cli.data.source import Chunk
from ale_cli.errors import InputError
from ale_cli.io.jsonio import loads
from ale_cli.store.format import (
    DIGEST,
    LEVEL_ARRAYS,
    MIXED,
    PAIRS,
    PER_OUTPUT,
    ROW_ARRAYS,
    Store,
    _Columns,
    chunk_entry,
    content_digest,
    output_entry,
    output_records,
)
from ale_cli.store.layout import ROW_MEMBER, check_finite, check_meta, check_span, validate_npz
from ale_cli.store.verify import Archive, DamagedStore

_ROW_MEMBERS = (*ROW_ARRAYS, MIXED, *LEVEL_ARRAYS)
_NAMES = ("feature_names", "input_names", "meta")


def _row_members(count: int) -> tuple[str, ...]:
    more = (output_entry(n, k) for k in range(1, count) for n in PER_OUTPUT)
    return (*_ROW_MEMBERS, *more)


def _open(path: Path) -> Archive:
    if not path.exists():
        raise InputError(f"store '{path}' does not exist; create it with 'ale compute'")
    try:
        return Archive(path)
    except OSError as exc:
        raise InputError(f"cannot read store '{path}': {exc.strerror or exc}") from None


def _parse_meta(path: Path, npz: Any) -> dict[str, Any]:
    if "meta" not in npz.files:
        raise InputError(f"'{path}' is not a local-effects store: it has no 'meta' array")
    try:
        meta = loads(str(npz.array("meta")[()]))
    except DamagedStore as exc:  # without its meta, nothing says ale wrote it
        raise InputError(str(exc)) from None
    except (ValueError, TypeError, RecursionError):
        meta = None
    if not isinstance(meta, dict):
        raise InputError(f"store '{path}' has an unreadable 'meta' array")
    check_meta(f"store '{path}'", meta)
    return meta


def read_file_meta(path: Path) -> dict[str, Any]:
    """The meta of a store file, after checking every byte of it (:func:`validate_npz`)
    and its members against the identity its meta records (:func:`_identity`)."""
    with _open(path) as npz:
        meta = _parse_meta(path, npz)
        validate_npz(path, npz, meta)
        _identity(path, npz, meta)
    return meta


def file_sha256(path: Path) -> str:
    """A store file's identity (:func:`content_digest`, no array read), checked against
    the one its meta records."""
    with _open(path) as npz:
        return _identity(path, npz, _parse_meta(path, npz))


def _identity(path: Path, npz: Archive, meta: dict[str, Any]) -> str:
    """The members' :func:`content_digest` (their CRCs and sizes: no array read), checked
    against the one ``meta`` records (a member rewritten with a valid CRC: DamagedStore)."""
    listed = content_digest(
        (m.name, m.crc, m.size) for m in npz.members.values() if m.name != "meta"
    )
    recorded = meta.get(DIGEST)
    if recorded is not None and recorded != listed:
        raise DamagedStore(f"store '{path}': its members differ from those its meta records")
    return listed


@dataclass(frozen=True)
class StoreFile(_Columns):
    """A store on disk, read chunk by chunk. ``verified``: the members this handle has
    CRC-checked."""

    path: Path
    meta: dict[str, Any]
    feature_names: tuple[str, ...]
    input_names: tuple[str, ...]
    rows: tuple[int, ...]
    #: the index of its first row in the store it is a part of
    offset: int = 0
    #: the output read (of ``outputs`` the store holds; :meth:`select_output`)
    output: int = 0
    outputs: int = 1
    #: the first chunk of a part of a chunked store (:meth:`parts`; None: the whole store)
    first: int | None = None
    #: its member names, and the members that are not row arrays, names or the meta (pairs,
    #: secant grids), read and checked when it was opened
    members: frozenset[str] = field(default=frozenset(), compare=False, repr=False)
    small: dict[str, np.ndarray] = field(default_factory=dict, compare=False, repr=False)
    verified: set[str] = field(default_factory=set, init=False, compare=False, repr=False)

    @property
    def n_rows(self) -> int:
        return int(sum(self.rows))

    def parts(self) -> tuple[StoreFile, ...]:
        """Ranges of :data:`CHUNKS_PER_PART` chunks in row order, empty ones left out."""
        if self.first is not None:
            return (self,)
        if self.meta.get("chunks") is None:
            return (self,) if self.n_rows else ()
        starts = [int(n) for n in np.cumsum([0, *self.rows])]
        step = CHUNKS_PER_PART
        return tuple(
            replace(
                self, meta={}, rows=self.rows[i : i + step], offset=self.offset + starts[i], first=i
            )
            for i in range(0, len(self.rows), step)
            if sum(self.rows[i : i + step])
        )

    def x_range(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Per-input minimum and maximum over all rows from the manifest (None if absent)."""
        chunks = self.meta.get("chunks") or {}
        if chunks.get("x_min") is None or chunks.get("x_max") is None:
            return None
        return np.asarray(chunks["x_min"], dtype=np.float64), np.asarray(
            chunks["x_max"], dtype=np.float64
        )

    def chunks(self, arrays: Sequence[str] = ROW_ARRAYS) -> Iterator[Chunk]:
        """The row arrays ``arrays`` chunk by chunk (a schema 1-2 store: one chunk)."""
        first = self.first or 0
        yield from self.read_chunks(range(first, first + len(self.rows)), arrays)

    def read_chunks(
        self, indices: Iterable[int], arrays: Sequence[str] = ROW_ARRAYS
    ) -> Iterator[Chunk]:
        """Chunks ``indices``: their ``arrays`` read and checked, their other members
        CRC-checked (once per handle)."""
        offset = self.offset
        whole = self.first is None and self.meta.get("chunks") is None  # no chunk entries
        labels = {"X": self.input_names, "local_effects": self.feature_names}
        with _open(self.path) as archive:
            for n, i in enumerate(indices):
                chunk = {}
                for name in arrays:
                    entry = output_entry(name, self.output)
                    entry = entry if whole else chunk_entry(entry, i)
                    chunk[name] = archive.array(entry)
                    check_finite(self.path, entry, chunk[name], labels.get(name, ()))
                    self.verified.add(entry)
                for other in _row_members(self.outputs):
                    entry = other if whole else chunk_entry(other, i)
                    if entry in archive.members and entry not in self.verified:
                        archive.verify(entry)
                        self.verified.add(entry)
                yield Chunk(offset, chunk)
                offset += self.rows[n]

    def recorded_prediction(self) -> dict[str, Any] | None:
        """The predictions' distribution the manifest records (None: none, or not output 0's),
        checked."""
        found = (self.meta.get("chunks") or {}).get("prediction")
        if found is None or self.output:
            return None
        try:
            n, mean = int(found["n"]), float(found["mean"])
            quantiles = np.asarray(found["quantiles"], dtype=np.float64)
        except (TypeError, KeyError, ValueError):
            quantiles, n, mean = np.zeros(0), 0, 0.0
        total = sum(int(r) for r in self.meta["chunks"].get("rows", ()))
        if (
            quantiles.shape != (N_QUANTILES,)
            or not np.isfinite(quantiles).all()
            or np.any(np.diff(quantiles) < 0)
            or not 0 < n <= total
            or not quantiles[0] <= mean <= quantiles[-1]
        ):
            raise InputError(
                f"store '{self.path}': its manifest's prediction distribution is damaged "
                f"(expected the count, mean and {N_QUANTILES} increasing percentiles of the "
                "predictions)"
            )
        return {"n": n, "mean": mean, "quantiles": quantiles}

    def select_output(self, k: int) -> StoreFile:
        """This store read as output ``k`` alone."""
        record = output_records(self.meta)[k]
        return replace(self, output=k, meta=self.meta | {"output": record})

    def prediction(self) -> np.ndarray:
        """The (N,) predictions, concatenated, as float64."""
        parts = [c["prediction"] for c in self.chunks(("prediction",))]
        return np.concatenate(parts).astype(np.float64, copy=False)

    def pairs(self) -> tuple[tuple[str, str], ...]:
        """The pairs (a, b) of the rows of ``mixed_derivatives`` (empty: none)."""
        if PAIRS not in self.small or not {MIXED, chunk_entry(MIXED, 0)} & self.members:
            return ()
        return tuple((str(a), str(b)) for a, b in self.small[PAIRS].reshape(-1, 2))

    def held(self) -> tuple[str, ...]:
        """The row arrays the store holds (every output's)."""
        held = self.members
        return tuple(n for n in _row_members(self.outputs) if {n, chunk_entry(n, 0)} & held)

    def small_arrays(self) -> dict[str, np.ndarray]:
        """The members that are not row arrays, names or the meta (pairs, secant grids)."""
        return self.small

    def read(self) -> Store:
        """The whole store in memory (its chunks or parts concatenated as float64)."""
        names = self.held()
        parts: dict[str, list[np.ndarray]] = {name: [] for name in names}
        for chunk in self.chunks(names):
            for name in names:
                parts[name].append(chunk[name].astype(np.float64, copy=False))
        whole = {n: np.concatenate(p, axis=1 if n == MIXED else 0) for n, p in parts.items()}
        check_span(self.path, whole["X"], self.input_names)
        extra = self.small_arrays() | {n: a for n, a in whole.items() if n not in ROW_ARRAYS}
        return Store(
            X=whole["X"], local_effects=whole["local_effects"], prediction=whole["prediction"],
            feature_names=self.feature_names, input_names=self.input_names, meta=self.meta,
            extra=extra,
        )  # fmt: skip


#: chunks per part of a store file (16 of 65536 rows: one Dask task)
CHUNKS_PER_PART = 16


def open_file_store(path: Path) -> StoreFile:
    """Open a store file for chunk-by-chunk reading: a schema 1-2 store checked whole, a
    chunked one's headers and small members here and each chunk as it is read."""
    with _open(path) as npz:
        meta = _parse_meta(path, npz)
        chunks = meta.get("chunks")
        # the layout: n_rows, X, names
        names, inputs = validate_npz(path, npz, meta, full=chunks is None)
        rows = [int(meta["n_rows"])] if chunks is None else [int(n) for n in chunks["rows"]]
        small = {n: npz.array(n) for n in npz.files if not ROW_MEMBER.match(n) and n not in _NAMES}
        members = frozenset(npz.files)
    unknown = [n for n in names if n not in inputs]
    if unknown:
        raise InputError(f"store '{path}': feature '{unknown[0]}' is not one of its inputs")
    x_min = (meta.get("chunks") or {}).get("x_min")
    if x_min is not None and len(x_min) != len(inputs):
        raise InputError(
            f"store '{path}': its meta is malformed: 'chunks.x_min' has {len(x_min)} values "
            f"for {len(inputs)} inputs"
        )
    return StoreFile(
        path=path, meta=meta, feature_names=names, input_names=inputs, rows=tuple(rows),
        outputs=len(output_records(meta)), members=members, small=small,
    )  # fmt: skip
