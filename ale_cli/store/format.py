"""The local-effects store's format (docs/store-and-summary.md): names, the in-memory
:class:`Store`, the cache key, the recorded identity (:func:`content_digest`), and its
atomic writers, whole (:func:`write_store`) or chunk by chunk (:class:`StoreWriter`), the
meta last, holding the digest of the members before it."""

from __future__ import annotations

import contextlib
import hashlib
import json
import zipfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ale_cli.core.statistics import prediction_distribution
from ale_cli.data.source import Chunk
from ale_cli.errors import InputError
from ale_cli.io.files import atomic_write
from ale_cli.io.jsonio import to_jsonable
from ale_cli.store.verify import BLOCK

SCHEMA_VERSION = 3
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
    "content_sha256",
)
PAIRS = "pairs"
MIXED = "mixed_derivatives"
#: optional row arrays (N, L) of the features estimated per level (meta ``levels``)
LEVEL_ARRAYS = ("level_up", "level_down")
#: a store of secants' fine grids, flat, and where each feature's starts (F+1,)
FINE_EDGES = "fine_edges"
FINE_OFFSETS = "fine_offsets"
#: row arrays held once per output (meta ``outputs``; :func:`output_entry`)
PER_OUTPUT = ("local_effects", "prediction", *LEVEL_ARRAYS)


def output_entry(name: str, k: int) -> str:
    """The array of output ``k`` of row array ``name`` (``name`` itself for output 0).

    >>> output_entry("local_effects", 0), output_entry("prediction", 2)
    ('local_effects', 'prediction.out2')
    """
    return name if k == 0 or name not in PER_OUTPUT else f"{name}.out{k}"


def split_outputs(arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Row arrays whose axis 1 is the output as one array per output (:func:`output_entry`)."""
    if arrays["prediction"].ndim < 2:
        return dict(arrays)
    out = {n: a for n, a in arrays.items() if n not in PER_OUTPUT}
    for name in (n for n in PER_OUTPUT if n in arrays):
        for k in range(arrays[name].shape[1]):
            out[output_entry(name, k)] = np.ascontiguousarray(arrays[name][:, k])
    return out


def output_records(meta: Mapping[str, Any]) -> list[Any]:
    """The outputs a store holds, the first the meta's ``output``."""
    return list(meta.get("outputs") or [meta.get("output")])


def one_output(
    meta: Mapping[str, Any],
    where: str,
    what: str,
    fix: str = "compute a store of that output with {param} NAME",
) -> None:
    """InputError when the store of ``meta`` holds several outputs and ``what`` explains one."""
    records = output_records(meta)
    if len(records) > 1:
        names = ", ".join(output_label(r) for r in records)
        raise InputError(
            f"{where} holds {len(records)} outputs ({names}); {what} explains one: {fix}",
            param="output",
        )


def output_label(record: Mapping[str, Any] | None) -> str:
    """How a summary's record names an output (its ``name``, else its ``selector``).

    >>> output_label({"selector": "proba:yes", "name": "proba:1"})
    'proba:1'
    """
    record = record or {}
    return str(record.get("name") or record.get("selector") or "output")


#: the meta key of the store's identity (:func:`content_digest`)
DIGEST = "content_sha256"


class _Columns:
    """Where a store's named columns are (:class:`Store` and ``StoreFile``)."""

    feature_names: tuple[str, ...]
    input_names: tuple[str, ...]

    def feature_index(self, name: str) -> int:
        """Column of ``local_effects`` of feature ``name``; InputError if it is not explained."""
        return _index(self.feature_names, name, "feature")

    def input_index(self, name: str) -> int:
        """Column of X of the model input ``name``; InputError listing the inputs if unknown."""
        return _index(self.input_names, name, "input")


def _index(names: tuple[str, ...], name: str, kind: str) -> int:
    if name not in names:
        raise InputError(f"store has no {kind} '{name}' ({kind}s: {', '.join(names)})")
    return names.index(name)


@dataclass(frozen=True)
class Store(_Columns):
    """A store in memory: ``X`` (N, D), ``local_effects`` (N, F), ``prediction`` (N,),
    ``feature_names`` (F), ``meta``, ``extra`` arrays, ``input_names`` (D; default: F)."""

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
        return int(self.X.shape[0])

    def feature_data(self, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The values (N, F') and local effects (N, F') of the explained features ``names``."""

        def columns(a: np.ndarray, cols: list[int]) -> np.ndarray:
            return a if cols == list(range(a.shape[1])) else np.ascontiguousarray(a[:, cols])

        return (
            columns(self.X, [self.input_index(n) for n in names]),
            columns(self.local_effects, [self.feature_index(n) for n in names]),
        )

    def parts(self) -> tuple[Store, ...]:
        return (self,)

    def chunks(self, arrays: Sequence[str] = ROW_ARRAYS) -> Iterator[Chunk]:
        """The row arrays ``arrays`` as one chunk (mixed derivatives (P, N), as stored)."""
        rows = {"X": self.X, "local_effects": self.local_effects, "prediction": self.prediction}
        yield Chunk(0, {name: rows[name] if name in rows else self.extra[name] for name in arrays})

    def select_output(self, k: int) -> Store:
        """This store as output ``k`` (of :func:`output_records`) alone."""
        records = output_records(self.meta)
        if k == 0 and len(records) == 1:
            return self
        entries = {n: output_entry(n, k) for n in PER_OUTPUT}
        taken = {n: self.extra[e] for n, e in entries.items() if e in self.extra}
        taken |= {n: getattr(self, n) for n in ("local_effects", "prediction") if k == 0}
        kept = {n: a for n, a in self.extra.items() if ".out" not in n and n not in LEVEL_ARRAYS}
        kept |= {n: taken[n] for n in LEVEL_ARRAYS if n in taken}
        return replace(
            self, local_effects=taken["local_effects"], prediction=taken["prediction"],
            extra=kept, meta=self.meta | {"output": records[k], "outputs": None},
        )  # fmt: skip

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


def chunk_entry(name: str, i: int) -> str:
    """The zip entry (without ``.npy``) of chunk ``i`` of the row array ``name``."""
    return f"{name}.{i:05d}"


def content_digest(members: Iterable[tuple[str, int, int]]) -> str:
    """The store's identity: the sha256 of the lines ``name crc size`` of its members but
    the meta, in the archive's order.

    >>> content_digest([("X", 0x1234, 128)])[:12]
    'b64a0da15428'
    """
    listing = "".join(f"{name} {crc:08x} {size}\n" for name, crc, size in members)
    return hashlib.sha256(listing.encode()).hexdigest()


def _entry(zf: zipfile.ZipFile, name: str, array: np.ndarray) -> None:
    """Member ``name`` (``.npy`` added) holding ``array`` as ``np.save`` writes it, from the
    array's own memory in :data:`BLOCK` slices (``write_array`` would copy it first)."""
    with zf.open(f"{name}.npy", "w", force_zip64=True) as f:
        array = np.asarray(array)  # np.ascontiguousarray would make a 0-d array 1-d
        if not array.flags.c_contiguous:
            array = array.copy(order="C")
        if array.dtype.hasobject or array.dtype.names is not None:
            np.lib.format.write_array(f, array, allow_pickle=False)
            return
        np.lib.format.write_array_header_1_0(f, np.lib.format.header_data_from_array_1_0(array))
        data = array.reshape(-1).view(np.uint8)
        for start in range(0, len(data), BLOCK):
            f.write(data[start : start + BLOCK])


def _finish(zf: zipfile.ZipFile, meta: Mapping[str, Any]) -> str:
    """Write the meta as the last member, with the digest of the members before it."""
    digest = content_digest(
        (info.filename.removesuffix(".npy"), info.CRC, info.compress_size) for info in zf.infolist()
    )
    text = json.dumps(to_jsonable({**meta, DIGEST: digest}), allow_nan=False)
    _entry(zf, "meta", np.array(text, dtype=np.str_))
    return digest


def write_store(path: str | Path, store: Store) -> str:
    """Write ``store`` to ``path`` atomically, one array per name (schema 1-2 layout);
    its identity (the recorded digest)."""
    n, d = store.X.shape
    f = len(store.feature_names)
    if store.local_effects.shape != (n, f) or store.prediction.shape != (n,):
        raise ValueError("store arrays have inconsistent shapes")
    if len(store.input_names) != d or not set(store.feature_names) <= set(store.input_names):
        raise ValueError("store feature names are not among its input names")
    # the keys every reader checks, filled in for stores built by hand (tests, the API)
    meta = {"schema_version": SCHEMA_VERSION, "n_rows": n} | store.meta
    arrays = {
        "X": np.ascontiguousarray(store.X, dtype=np.float64),
        "local_effects": np.ascontiguousarray(store.local_effects, dtype=np.float64),
        "prediction": np.ascontiguousarray(store.prediction, dtype=np.float64),
        "feature_names": np.array(store.feature_names, dtype=np.str_),
        "input_names": np.array(store.input_names, dtype=np.str_),
        **store.extra,
    }
    with atomic_write(path) as fh:
        zf = zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True)
        try:
            for name, array in arrays.items():
                _entry(zf, name, array)
            digest = _finish(zf, meta)
        except BaseException:
            with contextlib.suppress(Exception):  # the error that stopped the writing counts
                zf.close()
            raise
        zf.close()
    return digest


class StoreWriter:
    """``with StoreWriter(path) as w``: ``w.add(chunk)`` per chunk (written by a helper
    thread: the arrays must not change afterwards), then ``w.finish(...)``."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.rows: list[int] = []
        self.arrays: list[str] = []
        self._lo: np.ndarray | None = None
        self._hi: np.ndarray | None = None
        self._predictions: list[np.ndarray] = []
        self._finished = False
        #: the store's identity, once the block has ended without an error
        self.sha256: str | None = None
        self._digest: str | None = None

    def __enter__(self) -> StoreWriter:
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ale-write")
        self._pending: Future[None] | None = None
        self._target = atomic_write(self.path)
        fh = self._target.__enter__()
        self._zip = zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True)
        return self

    def add(self, arrays: Mapping[str, np.ndarray]) -> None:
        """Write the next chunk: ``X`` (n, D), ``local_effects`` (n, F), ``prediction`` (n,), ..."""
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
            _entry(self._zip, name, array)

    def _wait(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def add_array(self, name: str, array: np.ndarray) -> None:
        """Write an array that is not split by rows (e.g. ``pairs``)."""
        self._wait()
        _entry(self._zip, name, array)

    def finish(
        self, *, feature_names: Sequence[str], input_names: Sequence[str], meta: dict[str, Any]
    ) -> None:
        self._wait()
        meta = dict(meta)
        meta["chunks"] = {
            "rows": list(self.rows),
            "arrays": list(self.arrays),
            "x_min": [] if self._lo is None else [float(v) for v in self._lo],
            "x_max": [] if self._hi is None else [float(v) for v in self._hi],
        }
        values = np.concatenate(self._predictions or [np.zeros(0)], dtype=np.float64)
        self._predictions.clear()
        if np.isfinite(values).any():  # the predictions' distribution (finite: see add)
            dist = prediction_distribution(prediction=values, scratch=True)
            quantiles = [float(q) for q in dist.quantiles]
            meta["chunks"]["prediction"] = {"n": dist.n, "mean": dist.mean, "quantiles": quantiles}
        _entry(self._zip, "feature_names", np.array(list(feature_names), dtype=np.str_))
        _entry(self._zip, "input_names", np.array(list(input_names), dtype=np.str_))
        self._digest = _finish(self._zip, meta)
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
        if exc_type is not None:  # the block's own exception propagates
            with contextlib.suppress(BaseException):
                self._target.__exit__(exc_type, exc, tb)  # removes the temporary file
            return
        if failure is None:
            self._target.__exit__(None, None, None)  # renames the file into place
            self.sha256 = self._digest
            return
        self._target.__exit__(type(failure), failure, failure.__traceback__)
        raise failure
