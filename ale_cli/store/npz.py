"""The local-effects store: one ``.npz`` file per (model, data, options).

Arrays (all loadable with ``np.load(path, allow_pickle=False)``), for N rows,
D model inputs and F explained features (``ale compute --features``; F = D by
default):

=================  ===========  ==========================================
``X``              (N, D) f8    every model input at each row, in the
                                model's column order
``input_names``    (D,) unicode the model's inputs (schema 2; a schema-1
                                store has none: its inputs are its features)
``local_effects``  (N, F) f8    d prediction / d x_j of each explained feature
``prediction``     (N,) f8      the model output that was differentiated
``feature_names``  (F,) unicode the explained features, in the order of
                                the columns of ``local_effects``
``meta``           0-d unicode  JSON text, see :data:`META_KEYS`
=================  ===========  ==========================================

Optional arrays (``ale compute --pairs a,b``; the meta's ``pairs`` lists them):

=====================  ===========  ======================================
``pairs``              (P, 2) str   feature pairs (a, b)
``mixed_derivatives``  (P, N) f8    d2 prediction / dx_a dx_b at each row
=====================  ===========  ======================================

Optional arrays of the features estimated per level (``ale compute`` on text,
``categorical`` or ``discrete`` columns; the meta's ``levels`` lists, per
column, the feature, its kind, its sorted distinct ``values``, their estimated
``order`` and the text ``labels`` of a text column):

================  ===========  ===========================================
``level_up``      (N, L) f8    f(row moved to its next level) - f(row);
                               0 at the last level
``level_down``    (N, L) f8    f(row) - f(row moved to its previous
                               level); 0 at the first level
================  ===========  ===========================================

Stores are written atomically (temporary file, then rename) and are reused as
a cache only when their ``cache_key`` (a hash of the model bytes, the data
bytes and every option that changes the result) matches.

Chunked stores (schema 3, written by ``ale compute`` through
:class:`StoreWriter`): the row arrays are split into chunks of consecutive
rows, one zip entry per chunk and array, ``X.00000``, ``local_effects.00000``,
``prediction.00000`` (and ``mixed_derivatives.00000``, shape (P, n_i)), ...;
the meta's ``chunks`` manifest lists ``rows`` (n_i per chunk), ``arrays``,
the per-input ``x_min`` / ``x_max`` over all rows and ``prediction``: the count,
mean and 101 percentiles of the finite predictions, as every estimator's summary
reports them (so that they do not read and sort N predictions again; absent when
no prediction is finite, and in stores written before). The archive is zip64 (no
4 GiB limit) and written entry by entry, so compute never holds more than
one chunk. ``X`` keeps the source dtype (float32 data stay float32: the values
are those float32 numbers exactly). ``local_effects`` and ``prediction`` are
float32 when a float32 model is differentiated by autodiff (its gradients and
outputs are float32 numbers, held exactly, in half the space) and float64
otherwise (finite-difference quotients carry float64 digits); estimators
accumulate in float64 either way. ``mixed_derivatives`` are float64.
:func:`read_store` concatenates the chunks as float64 (as the older layouts
hold them); :func:`iter_store_chunks` yields them one at a time, as stored, for
the streaming estimators.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import zipfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ale_cli.data.source import Chunk
from ale_cli.errors import InputError
from ale_cli.io.files import atomic_write
from ale_cli.io.jsonio import loads, to_jsonable
from ale_cli.store.meta import meta_problem
from ale_cli.store.verify import Archive, DamagedStore
from ale_cli.summary.validate import check_finite, load_npz, validate_npz

if TYPE_CHECKING:
    from concurrent.futures import Future

SCHEMA_VERSION = 3
REQUIRED_ARRAYS = ("X", "local_effects", "prediction", "feature_names", "meta")
#: the arrays split into row chunks in a schema-3 store
ROW_ARRAYS = ("X", "local_effects", "prediction")
META_KEYS = (
    "schema_version",
    "tool",
    "created",
    "model",
    "data",
    "feature_names",
    "inputs",
    "features",
    "method",
    "output",
    "options",
    "n_rows",
    "timings",
    "cache_key",
)
PAIRS = "pairs"
MIXED = "mixed_derivatives"
#: optional row arrays (N, L) of the features estimated per level (meta ``levels``)
LEVEL_ARRAYS = ("level_up", "level_down")
#: optional arrays of a store of secants (method "secant", :mod:`ale_cli.models.secant`):
#: the fine grids of the explained features, flat, and where each feature's starts (F+1,)
FINE_EDGES = "fine_edges"
FINE_OFFSETS = "fine_offsets"


class _Columns:
    """Where a store's named columns are: shared by :class:`Store` (in memory) and
    :class:`StoreFile` (read chunk by chunk)."""

    feature_names: tuple[str, ...]
    input_names: tuple[str, ...]

    def feature_index(self, name: str) -> int:
        """Column of ``local_effects`` of feature ``name``; InputError if it is not explained."""
        try:
            return self.feature_names.index(name)
        except ValueError:
            raise InputError(
                f"store has no feature '{name}' (features: {', '.join(self.feature_names)})"
            ) from None

    def input_index(self, name: str) -> int:
        """Column of X of the model input ``name``; InputError listing the inputs if unknown."""
        try:
            return self.input_names.index(name)
        except ValueError:
            raise InputError(
                f"store has no input '{name}' (inputs: {', '.join(self.input_names)})"
            ) from None


@dataclass(frozen=True)
class Store(_Columns):
    """The contents of a store file.

    Attributes
    ----------
    X : ndarray, shape (N, D), float64
        Every model input.
    local_effects : ndarray, shape (N, F), float64
        The local effects of the explained features.
    prediction : ndarray, shape (N,), float64
    feature_names : tuple of str, length F
        The explained features.
    meta : dict
        Provenance and settings, keys :data:`META_KEYS`.
    extra : dict of str to ndarray
        Optional further arrays (later schema additions), kept on round trip.
    input_names : tuple of str, length D
        The model's inputs, the columns of X (default: ``feature_names``).
    """

    X: np.ndarray
    local_effects: np.ndarray
    prediction: np.ndarray
    feature_names: tuple[str, ...]
    meta: dict[str, Any]
    extra: dict[str, np.ndarray] = field(default_factory=dict)
    input_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.input_names:
            object.__setattr__(self, "input_names", tuple(self.feature_names))

    @property
    def n_rows(self) -> int:
        """N, the rows of X."""
        return int(self.X.shape[0])

    def feature_data(self, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The values (N, F') and local effects (N, F') of the explained features ``names``."""
        e_cols = [self.feature_index(n) for n in names]
        x_cols = [self.input_index(n) for n in names]
        if x_cols == list(range(self.X.shape[1])) and e_cols == x_cols:
            return self.X, self.local_effects
        if e_cols == list(range(self.local_effects.shape[1])):
            return np.ascontiguousarray(self.X[:, x_cols]), self.local_effects
        return (
            np.ascontiguousarray(self.X[:, x_cols]),
            np.ascontiguousarray(self.local_effects[:, e_cols]),
        )

    def parts(self) -> tuple[Store, ...]:
        """A store in memory is one part (:class:`~ale_cli.data.source.Source`)."""
        return (self,)

    def chunks(self, arrays: Sequence[str] = ROW_ARRAYS) -> Iterator[Chunk]:
        """The row arrays ``arrays`` as one chunk (mixed derivatives (P, N), as stored)."""
        rows = {"X": self.X, "local_effects": self.local_effects, "prediction": self.prediction}
        yield Chunk(0, {name: rows[name] if name in rows else self.extra[name] for name in arrays})

    def mixed_derivatives(self) -> dict[tuple[str, str], np.ndarray]:
        """The cached mixed derivatives by pair (a, b), each (N,); empty if there are none."""
        if PAIRS not in self.extra or MIXED not in self.extra:
            return {}
        pairs = self.extra[PAIRS].reshape(-1, 2)
        values = self.extra[MIXED].reshape(len(pairs), -1)
        return {(str(a), str(b)): values[p] for p, (a, b) in enumerate(pairs)}


def cache_key(model_sha256: str, data_sha256: str, options: Mapping[str, Any]) -> str:
    """Hash of everything that determines a store's arrays."""
    payload = json.dumps(
        {"model": model_sha256, "data": data_sha256, "options": to_jsonable(options)},
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def write_store(path: str | Path, store: Store) -> None:
    """Write ``store`` to ``path`` atomically (never a partial file at ``path``), as one
    array per name (the layout of schema 1 and 2; ``ale compute`` writes chunks with
    :class:`StoreWriter`)."""
    n, d = store.X.shape
    f = len(store.feature_names)
    if store.local_effects.shape != (n, f) or store.prediction.shape != (n,):
        raise ValueError("store arrays have inconsistent shapes")
    if len(store.input_names) != d or not set(store.feature_names) <= set(store.input_names):
        raise ValueError("store feature names are not among its input names")
    # the keys every reader checks, filled in for stores built by hand (tests, the API)
    defaults = {"schema_version": SCHEMA_VERSION, "n_rows": n}
    meta = json.dumps(to_jsonable(defaults | store.meta), allow_nan=False)
    arrays = {
        "X": np.ascontiguousarray(store.X, dtype=np.float64),
        "local_effects": np.ascontiguousarray(store.local_effects, dtype=np.float64),
        "prediction": np.ascontiguousarray(store.prediction, dtype=np.float64),
        "feature_names": np.array(store.feature_names, dtype=np.str_),
        "input_names": np.array(store.input_names, dtype=np.str_),
        "meta": np.array(meta, dtype=np.str_),
        **store.extra,
    }
    with atomic_write(path) as fh:
        np.savez(fh, **arrays)


def _open(path: Path) -> Archive:
    """The store file at ``path`` opened for verified reading (:class:`Archive`)."""
    if not path.exists():
        raise InputError(f"store '{path}' does not exist; create it with 'ale compute'")
    if path.is_dir():
        raise InputError(f"store '{path}' is a directory, expected an .npz file")
    try:
        return Archive(path)
    except OSError as exc:
        raise InputError(f"cannot read store '{path}': {exc.strerror or exc}") from None


def _parse_meta(path: Path, npz: Any) -> dict[str, Any]:
    if "meta" not in npz.files:
        raise InputError(f"'{path}' is not a local-effects store: it has no 'meta' array")
    try:
        meta = loads(str(npz["meta"][()]))
    except DamagedStore as exc:  # without its meta, nothing says ale wrote it
        raise InputError(str(exc)) from None
    except (ValueError, TypeError, RecursionError):
        raise InputError(f"store '{path}' has an unreadable 'meta' array") from None
    if not isinstance(meta, dict):
        raise InputError(f"store '{path}' has an unreadable 'meta' array")
    version = meta.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int) or version > SCHEMA_VERSION:
        raise InputError(
            f"store '{path}' has schema_version {str(version)[:40]}; "
            f"this ale reads up to {SCHEMA_VERSION}"
        )
    problem = meta_problem(meta)
    if problem is not None:
        raise InputError(f"store '{path}': its meta is malformed: {problem}")
    return meta


#: members of chunked stores CRC-checked in this process: (file identity, member)
_VERIFIED: set[tuple[tuple[int, ...], str]] = set()
_ROW_MEMBERS = (*ROW_ARRAYS, MIXED, "level_up", "level_down")

#: stores checked whole in this process: (path, device, inode, size, mtime, ctime) -> meta
_CHECKED: dict[tuple[str, int, int, int, int, int], dict[str, Any]] = {}
#: a file changed less than this long ago is always read (file times may be as coarse as a
#: clock tick: a change within the same tick would keep them)
SETTLED_SECONDS = 2.0


def read_meta(path: str | Path) -> dict[str, Any]:
    """The meta of a store, after checking the whole file (:func:`validate_npz`: one read
    of the file, the big arrays are not kept); a damaged store is an InputError.

    A file already checked by this process and unchanged since (same inode, size, mtime
    and ctime, the last change over :data:`SETTLED_SECONDS` ago) is not read again:
    ``ale compute`` checks the store at ``-o`` before any work and again for a cache
    hit, two reads of every byte (seconds at 1e7 rows)."""
    path = Path(path)
    if path.is_dir():  # a directory store (ale compute --engine dask)
        from ale_cli.store.parts import read_part_meta

        return read_part_meta(path)
    key: tuple[str, int, int, int, int, int] | None = None
    try:
        st = path.stat()
        if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) > SETTLED_SECONDS * 1e9:
            key = (
                str(path.resolve()),
                st.st_dev,
                st.st_ino,
                st.st_size,
                st.st_mtime_ns,
                st.st_ctime_ns,
            )
    except OSError:
        pass
    if key is not None and key in _CHECKED:
        return json.loads(json.dumps(_CHECKED[key]))  # a copy: callers may change theirs
    with _open(path) as npz:
        meta = _parse_meta(path, npz)
        validate_npz(path, npz, meta)
    if key is not None:
        _CHECKED[key] = json.loads(json.dumps(meta))
    return meta


def _chunk_names(meta: dict[str, Any]) -> list[int] | None:
    """Rows per chunk of a chunked (schema-3) store, None for a single-array store."""
    chunks = meta.get("chunks")
    if not isinstance(chunks, dict):
        return None
    return [int(n) for n in chunks.get("rows", [])]


def chunk_entry(name: str, i: int) -> str:
    """The zip entry (without ``.npy``) of chunk ``i`` of the row array ``name``."""
    return f"{name}.{i:05d}"


def _concatenated(path: Path, npz: Any, rows: list[int]) -> dict[str, np.ndarray]:
    """The row arrays of a chunked store, concatenated (X as float64)."""
    names = [
        n for n in (*ROW_ARRAYS, MIXED, *LEVEL_ARRAYS) if chunk_entry(n, 0) in npz.files or n == "X"
    ]
    out: dict[str, np.ndarray] = {}
    for name in names:
        entries = [chunk_entry(name, i) for i in range(len(rows))]
        missing = [e for e in entries if e not in npz.files]
        if missing:
            raise InputError(f"store '{path}' lacks the array(s) {', '.join(missing[:3])}")
        labels = _labels(npz, name)
        parts = []
        for entry in entries:  # each chunk checked as the chunked read checks it
            part = npz[entry]
            check_finite(path, entry, part, labels)
            parts.append(part.astype(np.float64, copy=False))
        out[name] = np.concatenate(parts, axis=1 if name == MIXED else 0)
    return out


def _labels(npz: Archive, name: str) -> list[str]:
    """The names of the columns of row array ``name`` (X: the inputs), for messages."""
    if name == "X" and "input_names" in npz.files:
        return [str(n) for n in npz["input_names"]]
    return [str(n) for n in npz["feature_names"]] if name in ("X", "local_effects") else []


def read_store(path: str | Path) -> Store:
    """Load a store written by :func:`write_store` or :class:`StoreWriter` (its chunks
    concatenated; or a directory store's parts), checking its arrays and shapes."""
    path = Path(path)
    if path.is_dir():
        from ale_cli.store.parts import read_part_store

        return read_part_store(path)
    with _open(path) as npz:
        meta = _parse_meta(path, npz)
        rows = _chunk_names(meta)
        arrays = _concatenated(path, npz, rows) if rows is not None else {}
        missing = [name for name in REQUIRED_ARRAYS if name not in npz.files and name not in arrays]
        if missing:
            raise InputError(f"store '{path}' lacks the array(s) {', '.join(missing)}")
        arrays = load_npz(path, npz, meta, whole=arrays)
    X = arrays.pop("X")
    effects = arrays.pop("local_effects")
    prediction = arrays.pop("prediction")
    names = tuple(str(s) for s in arrays.pop("feature_names"))
    inputs = tuple(str(s) for s in arrays.pop("input_names", names))
    arrays.pop("meta")
    if (
        X.ndim != 2
        or effects.ndim != 2
        or effects.shape[0] != X.shape[0]
        or prediction.shape != (X.shape[0],)
    ):
        raise InputError(f"store '{path}' has arrays of inconsistent shapes")
    if len(inputs) != X.shape[1]:
        raise InputError(f"store '{path}' has {len(inputs)} input names for {X.shape[1]} columns")
    if len(names) != effects.shape[1]:
        raise InputError(
            f"store '{path}' has {len(names)} feature names for {effects.shape[1]} "
            "columns of local effects"
        )
    unknown = [n for n in names if n not in inputs]
    if unknown:
        raise InputError(f"store '{path}': feature '{unknown[0]}' is not one of its inputs")
    return Store(
        input_names=inputs,
        X=X,
        local_effects=effects,
        prediction=prediction,
        feature_names=names,
        meta=meta,
        extra=arrays,
    )


@dataclass(frozen=True)
class StoreFile(_Columns):
    """A store on disk, opened for reading chunk by chunk (:func:`open_store`).

    Holds the meta and the names, not the row arrays: peak memory of a reader
    that walks :meth:`chunks` is one chunk.
    """

    path: Path
    meta: dict[str, Any]
    feature_names: tuple[str, ...]
    input_names: tuple[str, ...]
    rows: tuple[int, ...]
    #: the index of its first row in the store it is a part of (0: a whole store)
    offset: int = 0

    @property
    def n_rows(self) -> int:
        return int(sum(self.rows))

    def parts(self) -> tuple[StoreFile, ...]:
        """The store as a :class:`~ale_cli.data.source.Source`: ranges of
        :data:`CHUNKS_PER_PART` chunks in row order (:class:`ChunkRange`; a store of one
        array per name, schema 1-2, is one part); empty ones left out."""
        if self.meta.get("chunks") is None:
            return (self,) if self.n_rows else ()
        starts = np.cumsum([0, *self.rows])
        return tuple(
            ChunkRange(
                path=self.path,
                meta={},
                feature_names=self.feature_names,
                input_names=self.input_names,
                rows=tuple(self.rows[i : i + CHUNKS_PER_PART]),
                offset=self.offset + int(starts[i]),
                first=i,
            )
            for i in range(0, len(self.rows), CHUNKS_PER_PART)
            if sum(self.rows[i : i + CHUNKS_PER_PART])
        )

    def x_range(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Per-input minimum and maximum over all rows from the manifest (None if absent)."""
        chunks = self.meta.get("chunks") or {}
        if "x_min" not in chunks or "x_max" not in chunks:
            return None
        return np.asarray(chunks["x_min"], dtype=np.float64), np.asarray(
            chunks["x_max"], dtype=np.float64
        )

    def chunks(self, arrays: Sequence[str] = ROW_ARRAYS) -> Iterator[Chunk]:
        """The row arrays ``arrays`` chunk by chunk (a single-array store is one chunk),
        each :class:`~ale_cli.data.source.Chunk` with the index of its first row.

        X keeps its stored dtype; mixed derivatives are (P, n_i).
        """
        if self.meta.get("chunks") is None:
            with _open(self.path) as npz:
                chunk = {name: npz[name] for name in arrays}
            for name, array in chunk.items():
                check_finite(self.path, name, array, self.labels(name))
            yield Chunk(self.offset, chunk)
            return
        yield from self.read_chunks(range(len(self.rows)), arrays)

    def labels(self, name: str) -> Sequence[str]:
        """What the columns of row array ``name`` are, for messages (X: the inputs, the
        local effects: the features; the others' are numbered)."""
        return {"X": self.input_names, "local_effects": self.feature_names}.get(name, ())

    def read_chunks(
        self, indices: Iterable[int], arrays: Sequence[str] = ROW_ARRAYS
    ) -> Iterator[Chunk]:
        """Chunks ``indices`` of a chunked store: the row arrays ``arrays`` of each, every
        member read whole and checked (CRC-32, finite values); the chunk's other members
        are CRC-checked too, once per process while the file is unchanged, so a reader
        never gets a chunk of a store with a damaged member there."""
        offset = self.offset
        with _open(self.path) as archive:
            identity = archive.identity()
            for n, i in enumerate(indices):
                chunk = {}
                for name in arrays:
                    entry = chunk_entry(name, i)
                    chunk[name] = archive.array(entry)
                    check_finite(self.path, entry, chunk[name], self.labels(name))
                    _VERIFIED.add((identity, entry))
                for other in _ROW_MEMBERS:
                    entry = chunk_entry(other, i)
                    if entry in archive.members and (identity, entry) not in _VERIFIED:
                        archive.verify(entry)
                        _VERIFIED.add((identity, entry))
                yield Chunk(offset, chunk)
                offset += self.rows[n]

    def recorded_prediction(self) -> dict[str, Any] | None:
        """The distribution of the predictions the manifest records (see
        :func:`recorded_prediction`), or None."""
        return recorded_prediction(self.path, self.meta)

    def prediction(self) -> np.ndarray:
        """The (N,) predictions, concatenated, as float64."""
        parts = [c["prediction"] for c in self.chunks(("prediction",))]
        return np.concatenate(parts).astype(np.float64, copy=False)

    def pairs(self) -> tuple[tuple[str, str], ...]:
        """The pairs (a, b) whose mixed derivatives the store holds (``ale compute --pairs``),
        in the order of the rows of ``mixed_derivatives`` (read with :meth:`chunks`); empty
        when it holds none."""
        with _open(self.path) as npz:
            held = MIXED in npz.files or chunk_entry(MIXED, 0) in npz.files
            if PAIRS not in npz.files or not held:
                return ()
            pairs = npz[PAIRS].reshape(-1, 2)
        return tuple((str(a), str(b)) for a, b in pairs)


#: chunks per part of a chunked store file (16 chunks of 65536 rows: about 1e6 rows, one
#: task of the Dask engine)
CHUNKS_PER_PART = 16


@dataclass(frozen=True)
class ChunkRange(StoreFile):
    """Chunks ``first, first + 1, ...`` (``rows`` of them) of a single-file chunked store:
    a part of it (:meth:`StoreFile.parts`)."""

    first: int = 0

    def parts(self) -> tuple[StoreFile, ...]:
        return (self,)

    def chunks(self, arrays: Sequence[str] = ROW_ARRAYS) -> Iterator[Chunk]:
        """The chunks of the range, every member verified as the store's reader does."""
        return self.read_chunks(range(self.first, self.first + len(self.rows)), arrays)


def open_store(path: str | Path) -> StoreFile:
    """Open a store of any schema for chunk-by-chunk reading.

    A single-array store (schema 1, 2) is checked whole, as :func:`read_meta` does;
    a chunked one by its zip structure, headers, layout, names and small members here,
    and each chunk's members (CRC-32, finite values) as :meth:`StoreFile.chunks`
    reads them: the bytes are read once. A directory store
    (:mod:`ale_cli.store.parts`) is opened as its parts."""
    path = Path(path)
    if path.is_dir():
        from ale_cli.store.parts import open_part_store

        return open_part_store(path)
    with _open(path) as npz:
        meta = _parse_meta(path, npz)
        rows = _chunk_names(meta)
        validate_npz(path, npz, meta, full=rows is None)
        needed = ["feature_names"] + (["X"] if rows is None else [])
        missing = [name for name in needed if name not in npz.files]
        if missing:
            raise InputError(f"store '{path}' lacks the array(s) {', '.join(missing)}")
        names = tuple(str(s) for s in npz["feature_names"])
        inputs = tuple(str(s) for s in npz["input_names"]) if "input_names" in npz.files else names
        if rows is None:
            n = int(meta.get("n_rows") or npz.spec("X")[0][0])
            rows = [n]
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
        path=path, meta=meta, feature_names=names, input_names=inputs, rows=tuple(rows)
    )


def store_sha256(path: str | Path) -> str:
    """A store's identity: the sha256 of its file (hashed once, then recorded with the
    file: :mod:`ale_cli.store.digest`), or of a directory store's manifest after
    checking its parts' bytes (:func:`ale_cli.store.parts.store_sha256`)."""
    from ale_cli.store.digest import store_file_sha256

    path = Path(path)
    if path.is_dir():
        from ale_cli.store.parts import store_sha256 as parts_sha256

        return parts_sha256(path)
    return store_file_sha256(path)


def iter_store_chunks(
    path: str | Path, arrays: Sequence[str] = ROW_ARRAYS
) -> Iterator[dict[str, np.ndarray]]:
    """The row arrays of the store at ``path``, one chunk at a time (:meth:`StoreFile.chunks`)."""
    return open_store(path).chunks(arrays)


def _distribution(parts: list[np.ndarray]) -> dict[str, Any] | None:
    """The manifest's ``prediction``: count, mean and percentiles of the finite values of
    the chunks, as :func:`~ale_cli.core.statistics.prediction_distribution` gives them on
    the whole column (the same numbers: the same values in the same order)."""
    from ale_cli.core.statistics import prediction_distribution

    if not parts:
        return None
    values = np.concatenate(parts, dtype=np.float64)
    parts.clear()  # the chunks' own arrays can go: peak N float64 values, not three copies
    if not np.isfinite(values).any():
        return None
    dist = prediction_distribution(prediction=values, scratch=True)
    return {"n": dist.n, "mean": dist.mean, "quantiles": [float(q) for q in dist.quantiles]}


def recorded_prediction(path: Path, meta: Mapping[str, Any]) -> dict[str, Any] | None:
    """The distribution of the predictions a chunked store's manifest records (None for a
    store without one); a damaged one is refused with one line."""
    from ale_cli.core.statistics import N_QUANTILES

    found = (meta.get("chunks") or {}).get("prediction")
    if found is None:
        return None
    try:
        n, mean = int(found["n"]), float(found["mean"])
        quantiles = np.asarray(found["quantiles"], dtype=np.float64)
    except (TypeError, KeyError, ValueError):
        quantiles, n, mean = np.zeros(0), 0, 0.0
    total = sum(int(r) for r in meta["chunks"].get("rows", ()))
    if (
        quantiles.shape != (N_QUANTILES,)
        or not np.isfinite(quantiles).all()
        or np.any(np.diff(quantiles) < 0)
        or not 0 < n <= total
        or not quantiles[0] <= mean <= quantiles[-1]
    ):
        raise InputError(
            f"store '{path}': its manifest's prediction distribution is damaged (expected the "
            f"count, mean and {N_QUANTILES} increasing percentiles of the predictions)"
        )
    return {"n": n, "mean": mean, "quantiles": quantiles}


class StoreWriter:
    """Write a chunked store entry by entry into a zip64 ``.npz``, atomically.

    ::

        with StoreWriter(path) as w:
            for X, effects, prediction in ...:
                w.add({"X": X, "local_effects": effects, "prediction": prediction})
            w.finish(feature_names=..., input_names=..., meta=meta)

    ``add`` hands the chunk to a helper thread that writes it while the caller goes on
    (the arrays must not change afterwards); the next ``add`` waits for it.
    Nothing appears at ``path`` before the block ends without an error (the
    entries go to a temporary file beside it that is then renamed), so an
    interrupted compute leaves an older store at ``path`` as it was.
    ``finish`` adds the manifest (``meta["chunks"]``: rows per chunk, the row
    arrays, per-input ``x_min``/``x_max``) and must be called.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.rows: list[int] = []
        self.arrays: list[str] = []
        self._lo: np.ndarray | None = None
        self._hi: np.ndarray | None = None
        self._predictions: list[np.ndarray] = []
        self._finished = False
        #: the written file's sha256, once the block has ended without an error
        self.sha256: str | None = None

    def __enter__(self) -> StoreWriter:
        from concurrent.futures import ThreadPoolExecutor

        # chunks are written by a helper thread while the next one is computed (writing
        # and the zip's CRC release the GIL); one chunk at a time, so at most one waits
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ale-write")
        self._pending: Future[None] | None = None
        self._target = atomic_write(self.path)
        fh = self._target.__enter__()
        self._fh = fh
        self._zip = zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True)
        # the file's sha256, of its bytes as they are final (see _hash_written)
        self._digest = hashlib.sha256()
        self._hashed = 0
        return self

    def _entry(self, name: str, array: np.ndarray) -> None:
        with self._zip.open(f"{name}.npy", "w", force_zip64=True) as f:
            array = np.asarray(array)  # np.ascontiguousarray would make a 0-d array 1-d
            if not array.flags.c_contiguous:
                array = array.copy(order="C")
            np.lib.format.write_array(f, array, allow_pickle=False)
        self._hash_written()

    def _hash_written(self) -> None:
        """Hash the bytes written since the last call: every entry before the file's end is
        final (zipfile patches an entry's header before the next one starts), so they are
        read back (from the page cache) on the writing thread, which the model's thread
        leaves idle; the file is then never read again to learn its digest."""
        self._fh.flush()
        end = self._fh.tell()
        fd = self._fh.fileno()
        while self._hashed < end:
            block = os.pread(fd, min(end - self._hashed, 1 << 20), self._hashed)
            if not block:
                raise OSError(f"store '{self.path}': could not read back what was written")
            self._digest.update(block)
            self._hashed += len(block)

    def add(self, arrays: Mapping[str, np.ndarray]) -> None:
        """Write the next chunk: ``X`` (n, D), ``local_effects`` (n, F), ``prediction`` (n,)
        and optionally ``mixed_derivatives`` (P, n)."""
        i = len(self.rows)
        for name, array in arrays.items():  # what every reader refuses (check_finite)
            if np.asarray(array).dtype.kind == "f" and not np.isfinite(array).all():
                raise ValueError(f"chunk {i} of '{name}' holds NaN or infinite values")
        if not self.arrays:
            self.arrays = list(arrays)
        X = arrays["X"]
        if len(X):
            lo, hi = X.min(axis=0).astype(np.float64), X.max(axis=0).astype(np.float64)
            self._lo = lo if self._lo is None else np.minimum(self._lo, lo)
            self._hi = hi if self._hi is None else np.maximum(self._hi, hi)
        if "prediction" in arrays:
            self._predictions.append(arrays["prediction"])
        self._wait()
        entries = [(chunk_entry(name, i), array) for name, array in arrays.items()]
        self._pending = self._writer.submit(self._entries, entries)
        self.rows.append(int(len(X)))

    def _entries(self, entries: list[tuple[str, np.ndarray]]) -> None:
        for name, array in entries:
            self._entry(name, array)

    def _wait(self) -> None:
        """Wait for the chunk being written (its error is raised here)."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def add_array(self, name: str, array: np.ndarray) -> None:
        """Write an array that is not split by rows (e.g. ``pairs``)."""
        self._wait()
        self._entry(name, array)

    def finish(
        self, *, feature_names: Sequence[str], input_names: Sequence[str], meta: dict[str, Any]
    ) -> None:
        """Write the names and the meta with the chunk manifest."""
        self._wait()
        meta = dict(meta)
        meta["chunks"] = {
            "rows": list(self.rows),
            "arrays": list(self.arrays),
            "x_min": [] if self._lo is None else [float(v) for v in self._lo],
            "x_max": [] if self._hi is None else [float(v) for v in self._hi],
        }
        recorded = _distribution(self._predictions)  # empties the list
        if recorded is not None:
            meta["chunks"]["prediction"] = recorded
        self._entry("feature_names", np.array(list(feature_names), dtype=np.str_))
        self._entry("input_names", np.array(list(input_names), dtype=np.str_))
        text = json.dumps(to_jsonable(meta), allow_nan=False)
        self._entry("meta", np.array(text, dtype=np.str_))
        self._finished = True

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        failure: BaseException | None = None
        try:
            self._wait()
        except BaseException as err:  # the helper's write failed (a full disk)
            failure = err
        self._writer.shutdown(wait=True)
        try:
            self._zip.close()
        except BaseException as err:  # a full disk while writing the central directory
            failure = failure or err
        if failure is None and not self._finished:
            failure = RuntimeError("StoreWriter.finish was not called")
        if exc_type is None and failure is None:
            try:
                self._hash_written()  # the central directory
            except OSError as err:
                failure = err
        if exc_type is None and failure is None:
            from ale_cli.store.digest import record_written

            self.sha256 = self._digest.hexdigest()
            record_written(self._fh.fileno(), self.sha256)
            self._target.__exit__(None, None, None)  # renames the file into place
            return
        if exc_type is None and failure is not None:
            exc_type, exc, tb = type(failure), failure, failure.__traceback__
        try:
            self._target.__exit__(exc_type, exc, tb)  # removes the temporary file
        except BaseException:
            if exc is failure:
                raise
            # else the block's own exception, re-raised by the helper: it propagates
        if exc is failure:
            raise failure
        # returning None: the block's own exception propagates
