"""Writing a store atomically, whole (:func:`write_store`) or chunk by chunk
(:class:`StoreWriter`); the meta last, with the :func:`~.format.content_digest` of the rest."""

from __future__ import annotations

import contextlib
import json
import zipfile
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from ale_cli.core.statistics import prediction_distribution
from ale_cli.io.files import atomic_write
from ale_cli.io.jsonio import to_jsonable
from ale_cli.store.format import DIGEST, SCHEMA_VERSION, Store, chunk_entry, content_digest
from ale_cli.store.verify import BLOCK


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
