"""The Dask engine: partitions on the workers of a Dask cluster (``--engine dask``).

``ale compute``: each partition of the data (a file of a partitioned Parquet dataset,
or a range of row groups of a large Parquet file: :mod:`ale_cli.data.partitions`)
is read, differentiated and written on a worker, as the local engine's streaming
compute does it chunk by chunk (the same :func:`~ale_cli.estimators.local_effects._chunk_arrays` and
NaN/inf screening). The model file is
sent to every worker once (``Client.scatter(broadcast=True)``) and loaded once per
worker process (a cache keyed by its sha256). Each worker writes its part of a
directory store (:mod:`ale_cli.store.parts`) on a path every worker and this
process share; this process writes the manifest and moves the store into place.
The data hash is the local engine's: a worker reading a whole file hashes it as it
reads; a file read in row-group ranges is hashed by a task of its own
(:func:`~ale_cli.io.files.sha256_file`, started first, beside the partitions).
ONNX and scikit-learn models choose their finite-difference steps and checks from a
profile of all rows (:mod:`ale_cli.models.profile`): this process reads the data once
for it, as the local engine's first pass does, and sends it with the model, so every
worker loads the same model with the same steps (and the store is the local one's).
Tree models (secants on a fine grid of all rows), scikit-learn pipelines that read
text columns and features estimated per level are refused: they need the whole table.

``ale classic`` / ``ale interact``: the model calls per partition on the workers
(:mod:`ale_cli.engines.dask_model`).

``ale rebin`` / ``ale rhale``: each part of a directory store (or each chunk of a
single-file store) is a task; the workers compute its cell statistics with the same
functions the local engine uses (:mod:`ale_cli.estimators.dale_stream`), and this process merges
them in part order (:meth:`~ale_cli.core.binstats.CellStats.merge`). Exact type-1
quantile edges take the out-of-core passes of :mod:`ale_cli.core.outofcore`: the
workers count (and then gather) each part's values per bucket
(:func:`~ale_cli.core.outofcore.pass_accumulators`), this process adds the counts
(:func:`~ale_cli.core.outofcore.absorb`) and selects. The results equal the local
engine's (counts and selections exactly; merged means and M2 to rounding).

Without a scheduler address a :class:`distributed.LocalCluster` of worker processes
(one thread each) is started on this machine for the run.
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ale_cli.engines.cluster import client, worker_slots
from ale_cli.engines.cluster import environ_kept as _environ_kept  # noqa: F401
from ale_cli.engines.options import require_dask
from ale_cli.errors import InputError, RunError
from ale_cli.models.checks import nothing_left
from ale_cli.store.npz import PAIRS, StoreFile, StoreWriter
from ale_cli.store.parts import PartStore, PartStoreWriter

if TYPE_CHECKING:
    from distributed import Client

    from ale_cli.core.binstats import CellStats
    from ale_cli.data.partitions import Partition
    from ale_cli.data.stream import TableStream
    from ale_cli.estimators.dale_stream import Columns, Passes
    from ale_cli.estimators.local_effects import ComputeRequest, ComputeResult, _Hashes, _Screen
    from ale_cli.models.base import ProgressFn


# -- compute: one task per partition ----------------------------------------------------------


@dataclass(frozen=True)
class _PartSpec:
    """What a worker needs to compute one partition (the model comes as bytes)."""

    model_path: str
    model_sha256: str
    load_options: Any
    names: tuple[str, ...]
    categorical: tuple[str, ...]
    features: tuple[str, ...]
    columns: tuple[int, ...]
    data_format: str
    dropna: bool
    drop_nonfinite: bool
    chunk_rows: int
    model_format: str = "torchscript"
    #: pairs of ``--pairs`` and their columns (mixed derivatives stored per part)
    pairs: tuple[tuple[str, str], ...] = ()
    pair_cols: tuple[tuple[int, int], ...] = ()
    #: an ONNX or scikit-learn model's profile of all rows, its columns' dtypes and the
    #: data hash of the read that made it (None, {}, None for TorchScript)
    profile: Any = None
    dtypes: dict[str, str] = field(default_factory=dict)
    data_sha256: str | None = None


#: a file the client puts in the store's temporary directory when the run fails: the
#: workers still computing a partition stop at their next chunk
STOP = ".stop"

_MODELS: dict[str, Any] = {}
_MODELS_LOCK = threading.Lock()


def _worker_model(model_bytes: bytes, spec: _PartSpec, first: np.ndarray) -> Any:
    """The model, loaded once per worker process and set of load options (checked on the
    first chunk it sees).

    Loaded from the user's path when the worker sees the same bytes there (messages
    then name that path), else from the bytes sent, written to a temporary file."""
    from ale_cli.io.files import sha256_file
    from ale_cli.models import Columns, load_model

    # a long-lived worker may serve runs with other options (output, batch size, columns)
    # and, for a model whose steps come from the data, other data
    key = repr(
        (spec.model_sha256, spec.load_options, spec.names, spec.categorical, spec.data_sha256)
    )
    with _MODELS_LOCK:
        model = _MODELS.get(key)
        if model is not None:
            return model
        path = Path(spec.model_path)
        try:
            same = path.is_file() and sha256_file(path) == spec.model_sha256
        except OSError:
            same = False
        if not same:
            path = Path(tempfile.mkdtemp(prefix="ale-model-")) / path.name
            path.write_bytes(model_bytes)
        model = load_model(
            path,
            model_format=spec.model_format,
            options=spec.load_options,
            columns=Columns(names=spec.names, fixed=spec.categorical, dtypes=spec.dtypes),
            X=first if spec.profile is None else spec.profile.head,
            profile=spec.profile,
        )
        _MODELS[key] = model
        return model


def open_partition(spec: _PartSpec, file: str, row_groups: tuple[int, int] | None) -> TableStream:
    """On a worker: the partition ``file`` (its row groups ``row_groups``, None: all of it)
    opened for reading chunk by chunk as the local engine reads the data, without the
    check of 2 rows left (the client checks the whole dataset's count)."""
    from ale_cli.data.stream import open_stream

    return open_stream(
        file,
        fmt=spec.data_format,
        inputs=spec.names,
        dropna=spec.dropna,
        categorical=spec.categorical,
        chunk_rows=spec.chunk_rows,
        min_rows=0,
        row_groups=row_groups,
    )


def compute_part(
    model_bytes: bytes,
    spec: _PartSpec,
    file: str,
    out: str,
    offset: int,
    row_groups: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """On a worker: read partition ``file`` (its row groups ``row_groups``, None: all of
    it) chunk by chunk, compute its local effects and write them as the part store
    ``out`` (no file when every row was dropped).

    ``offset`` is the partition's first row in the dataset (for row numbers in messages).
    Returns what the manifest and the meta need (rows, hashes, ranges, dtypes, timings);
    the file's hash only when the whole file was read.
    """
    from ale_cli.estimators.local_effects import _chunk_arrays, _Screen

    stream = open_partition(spec, file, row_groups)
    timings: dict[str, float] = {}
    screen = _Screen(Path(spec.model_path), drop=spec.drop_nonfinite)
    writer: StoreWriter | None = None
    lo = hi = None
    model = None
    pairs: tuple[list[tuple[int, int]], Any] = ([], None)
    n_rows = read = 0
    stop = Path(out).parent / STOP
    with ExitStack() as stack:  # the part file appears only when the block ends cleanly
        for X in stream:
            if stop.exists() or not stop.parent.is_dir():  # another partition failed
                raise RunError(f"stopped computing {stream.where}: the run failed")
            if model is None:
                t = time.perf_counter()
                model = _worker_model(model_bytes, spec, X)
                timings["load_model_s"] = time.perf_counter() - t
                pairs = _pair_fn(spec, model)
            # finite differences on float64 rows, as the local engine gives them; X as read
            model_X = X if spec.profile is None else X.astype(np.float64, copy=False)
            arrays = _chunk_arrays(model, model_X, spec.columns, pairs, (None, None), timings)
            arrays = screen.apply(arrays | {"X": X}, offset + read)
            read += len(X)
            if not len(arrays["prediction"]):
                continue
            if writer is None:
                writer = stack.enter_context(StoreWriter(out))
            writer.add(arrays)
            n_rows += len(arrays["prediction"])
            x = arrays["X"]
            c_lo, c_hi = x.min(axis=0).astype(np.float64), x.max(axis=0).astype(np.float64)
            lo = c_lo if lo is None else np.minimum(lo, c_lo)
            hi = c_hi if hi is None else np.maximum(hi, c_hi)
        if writer is not None:
            if spec.pairs:
                writer.add_array(PAIRS, np.array(spec.pairs, dtype=np.str_).reshape(-1, 2))
            writer.finish(
                feature_names=spec.features,
                input_names=spec.names,
                meta={"schema_version": 3, "n_rows": n_rows, "source": file}
                | ({} if row_groups is None else {"row_groups": list(row_groups)}),
            )
    dropped = np.concatenate(screen.rows) if screen.rows else np.empty(0, dtype=np.int64)
    return {
        "file": file,
        "row_groups": row_groups,
        "rows": n_rows,
        "sha256": writer.sha256 if writer is not None else None,
        "data_sha256": stream.sha256,
        "rows_read": stream.rows_read,
        "rows_dropped": stream.rows_dropped,
        "dropped_columns": list(stream.dropped_columns),
        "dtypes": dict(stream.dtypes),
        "nonfinite_rows": dropped,
        "x_min": lo,
        "x_max": hi,
        "arrays": list(writer.arrays) if writer is not None else [],
        "model": None
        if model is None
        else {"describe": model.describe(), "method": model.method, "format": model.format},
        "timings": timings,
    }


def _pair_fn(spec: _PartSpec, model: Any) -> tuple[list[tuple[int, int]], Any]:
    """The pairs' columns and the model's mixed-derivative function (none without pairs)."""
    if not spec.pairs:
        return [], None
    from ale_cli.models.mixed import require_mixed_derivatives

    mixed = require_mixed_derivatives(
        model,
        spec.model_path,
        param="pairs",
        hint="leave out {param} and use 'ale interact --estimator ale'",
    )
    return list(spec.pair_cols), mixed


@dataclass(frozen=True)
class _Described:
    """The model as the meta sees it, from a worker's answer (no model in this process)."""

    format: str
    method: str
    details: dict[str, Any]

    def describe(self) -> dict[str, Any]:
        return self.details


@dataclass
class _Partitioned:
    """The data read by the workers, as the meta records it (a TableStream after its end)."""

    format: str
    feature_names: tuple[str, ...]
    categorical: tuple[str, ...]
    rows_read: int = 0
    rows_dropped: int = 0
    dropped_columns: tuple[str, ...] = ()
    dtypes: dict[str, str] = field(default_factory=dict)

    @property
    def levels(self) -> dict[str, tuple[Any, ...]]:
        return {}


def compute_dask(
    request: ComputeRequest,
    *,
    force: bool = False,
    progress: Callable[[int], ProgressFn] | None = None,
) -> ComputeResult:
    """:func:`~.local_effects.compute` with the partitions computed on Dask workers; the
    store at ``request.out`` is a directory store (a cache hit is found as locally)."""
    from ale_cli.estimators import local_effects as local

    t0 = time.perf_counter()
    _check_request(request)
    hashes = None
    cached = None
    if not force and request.out.exists():
        hashes = local._Hashes.of(request)
        cached = local._cached(request, hashes, t0)
        if isinstance(cached, local.ComputeResult):
            return cached
    timings: dict[str, float] = {"hash_inputs_s": time.perf_counter() - t0}
    plan = _with_profile(request, _plan_parts(request, hashes), timings)
    bar = progress(plan.total_rows) if progress is not None and plan.total_rows else None
    t = time.perf_counter()
    with client(request.scheduler) as dask_client, PartStoreWriter(request.out) as writer:
        timings["start_cluster_s"] = time.perf_counter() - t
        plan = _partitioned(plan, dask_client)
        t = time.perf_counter()
        results, file_hashes = _run_parts(dask_client, writer, plan, bar)
        timings["parts_s"] = time.perf_counter() - t
        merged = _merge_parts(results, plan, writer, request.inputs.model, timings)
        _check_rows_left(merged, plan.data_path, request.inputs.model)
        data_sha = _data_sha256(plan, results, file_hashes)
        if plan.spec.data_sha256 not in (None, data_sha):
            raise RunError(
                f"data file '{request.inputs.data_label}' changed while it was read (its "
                "two reads differ); run again once it is written"
            )
        hashes = hashes or local._Hashes.of(request, data=data_sha)
        stored = _store_meta(request, plan, merged, results, hashes, timings)
        stored.meta["engine"] = {
            "name": "dask",
            "workers": len(dask_client.scheduler_info().get("workers", {})),
            "partitions": len(plan.partitions),
        }
        _finish_store(writer, stored.meta, plan, merged, results)
    return local.ComputeResult(
        out=request.out,
        cache_hit=False,
        n_rows=merged.n_rows,
        n_features=len(plan.spec.features),
        method=stored.method,
        seconds=time.perf_counter() - t0,
        rows_dropped=merged.source.rows_dropped,
        reason=cached if isinstance(cached, str) else None,
        notes=(*stored.notes, cached.note) if isinstance(cached, local.Damaged) else stored.notes,
        rows_nonfinite=merged.screen.count,
    )


def _check_request(request: ComputeRequest) -> None:
    """Refuse (InputError) what the Dask engine does not compute; return None otherwise."""
    from ale_cli.estimators import local_effects as local
    from ale_cli.models import detect_format

    inputs = request.inputs
    inputs.check_files()
    fmt = detect_format(inputs.model, inputs.model_format)
    if not local.streams(inputs):
        raise InputError(
            "{param} dask computes models on data files whose columns they take by "
            "position; a model that matches columns by name reads the whole table, use "
            "{param} local",
            param="engine",
        )
    if fmt == "onnx" and inputs.step is None and local._onnx_trees(inputs.model):
        raise _whole_table("a tree-ensemble ONNX model")
    if local._needs_levels(request):
        raise InputError(
            "{param} dask does not store the jumps of features estimated per level "
            "(discrete, or explained categorical ones); use {param} local",
            param="engine",
        )
    require_dask()


def _whole_table(what: str) -> InputError:
    return InputError(
        f"{{param}} dask cannot compute {what}: its secants on a fine grid (or the levels "
        "of its text columns) need every row at once; use {param} local",
        param="engine",
    )


def _with_profile(request: ComputeRequest, plan: _Plan, timings: dict[str, float]) -> _Plan:
    """The plan with an ONNX or scikit-learn model's profile of all rows (one read of the
    data in this process, :func:`~.local_effects._fd_model`); TorchScript: as it is."""
    from dataclasses import replace

    from ale_cli.estimators import local_effects as local
    from ale_cli.models import detect_format

    inputs = request.inputs
    fmt = detect_format(inputs.model, inputs.model_format)
    if fmt == "torchscript":
        return plan
    first = local._fd_model(request, fmt, local._open_stream(request), timings)
    if first is None:
        raise _whole_table("this model (piecewise constant, or reading text columns)")
    spec = replace(
        plan.spec,
        model_format=fmt,
        profile=first.profile,
        dtypes=first.dtypes,
        data_sha256=first.sha256,
    )
    return replace(plan, spec=spec)


@dataclass(frozen=True)
class _Plan:
    """The partitions of a :func:`compute_dask` run and what every task is given."""

    spec: _PartSpec
    model_bytes: bytes
    data_path: Path
    files: tuple[Path, ...]
    #: rows of the whole dataset when the footers tell (for the progress bar)
    total_rows: int | None
    #: the tasks' data in row order (:func:`_partitioned`, once the cluster's size is known)
    partitions: tuple[Partition, ...] = ()


def _partitioned(plan: _Plan, dask_client: Client) -> _Plan:
    """The plan with its partitions for the cluster of ``dask_client``."""
    from dataclasses import replace

    from ale_cli.data.partitions import plan_partitions

    parts = plan_partitions(plan.files, fmt=plan.spec.data_format, slots=worker_slots(dask_client))
    return replace(plan, partitions=parts)


def _plan_parts(request: ComputeRequest, hashes: _Hashes | None) -> _Plan:
    """The run's plan: the data's files, the model's bytes and the task spec."""
    from ale_cli.data.stream import dataset_files, open_stream
    from ale_cli.estimators.inputs import feature_columns
    from ale_cli.estimators.local_effects import pair_plan_columns
    from ale_cli.io.files import sha256_file

    inputs = request.inputs
    header = open_stream(
        inputs.data,
        fmt=inputs.data_format,
        inputs=inputs.inputs,
        exclude=inputs.exclude,
        dropna=inputs.dropna,
        categorical=inputs.categorical,
        chunk_rows=request.chunk_rows,
    )
    header.close()
    names = header.feature_names
    features, columns = feature_columns(
        inputs.features, names, where=f"data file '{inputs.data_label}'"
    )
    data_path = Path(inputs.data)
    files = dataset_files(data_path)
    model_bytes = inputs.model.read_bytes()
    model_sha = hashes.model if hashes is not None else sha256_file(inputs.model)
    spec = _PartSpec(
        model_path=str(inputs.model),
        model_sha256=model_sha,
        load_options=inputs.load_options(),
        names=names,
        categorical=header.categorical,
        features=features,
        columns=columns,
        data_format=header.format,
        dropna=inputs.dropna,
        drop_nonfinite=inputs.drop_nonfinite,
        chunk_rows=request.chunk_rows,
        pairs=tuple(request.pairs),
        pair_cols=tuple(pair_plan_columns(request, names, header.categorical)),
    )
    return _Plan(
        spec=spec,
        model_bytes=model_bytes,
        data_path=data_path,
        files=tuple(files),
        total_rows=header.total_rows,
    )


def _run_parts(
    dask_client: Client, writer: PartStoreWriter, plan: _Plan, bar: ProgressFn | None
) -> tuple[list[dict[str, Any]], dict[int, str]]:
    """Every partition's answer (:func:`compute_part`) in partition order, and the sha256
    of each file read in row-group ranges (by its index); a failure stops all."""
    from ale_cli.io.files import sha256_file

    split = sorted({p.file_index for p in plan.partitions if p.row_groups is not None})
    hashing = {  # submitted first, with priority: a worker hashes while the others compute
        i: dask_client.submit(
            sha256_file,
            str(plan.files[i]),
            "data file",
            pure=False,
            priority=1,
            key=f"ale-hash-file-{i}-{writer.tmp.name}",
        )
        for i in split
    }
    sent = dask_client.scatter(plan.model_bytes, broadcast=True, hash=False)
    futures = [
        dask_client.submit(
            compute_part,
            sent,
            plan.spec,
            str(part.file),
            str(writer.part_path(i)),
            part.offset,
            part.row_groups,
            pure=False,
            key=f"ale-compute-part-{i}-{writer.tmp.name}",
        )
        for i, part in enumerate(plan.partitions)
    ]
    rows = [p.rows for p in plan.partitions]
    try:
        results = _gather_in_order(dask_client, futures, bar, rows, cancel=False)
        return results, {i: future.result() for i, future in hashing.items()}
    except BaseException:
        dask_client.cancel(list(hashing.values()))  # they write nothing: no need to wait
        _stop(dask_client, futures, writer.tmp)
        raise


@dataclass(frozen=True)
class _Merged:
    """The partitions' answers added up, as the meta and the manifest need them."""

    source: _Partitioned
    screen: _Screen
    #: the manifest's entries of the parts that hold rows, in file order
    parts: list[dict[str, Any]]
    #: every input's minimum and maximum over the rows kept (None: no row kept)
    lo: np.ndarray | None
    hi: np.ndarray | None

    @property
    def n_rows(self) -> int:
        return sum(p["rows"] for p in self.parts)


def _merge_parts(
    results: list[dict[str, Any]],
    plan: _Plan,
    writer: PartStoreWriter,
    model_path: Path,
    timings: dict[str, float],
) -> _Merged:
    """The answers merged in partition order (the workers' timings are added to ``timings``)."""
    from ale_cli.data.stream import _combined_dtype
    from ale_cli.estimators import local_effects as local

    names = plan.spec.names
    source = _Partitioned(format="parquet", feature_names=names, categorical=plan.spec.categorical)
    kept_before = 0
    screen = local._Screen(model_path, drop=plan.spec.drop_nonfinite)
    lo = hi = None
    parts: list[dict[str, Any]] = []
    for i, res in enumerate(results):
        source.rows_read += res["rows_read"]
        source.rows_dropped += res["rows_dropped"]
        for c, dt in res["dtypes"].items():
            source.dtypes[c] = _combined_dtype(source.dtypes.get(c, dt), dt)
        source.dropped_columns = tuple(
            c for c in names if c in source.dropped_columns or c in res["dropped_columns"]
        )
        if len(res["nonfinite_rows"]):  # partition rows -> rows read before screening
            offset = plan.partitions[i].offset
            screen.rows.append(res["nonfinite_rows"] - offset + kept_before)
        kept_before += res["rows_read"] - res["rows_dropped"]
        for key, value in res["timings"].items():
            timings[key] = timings.get(key, 0.0) + value
        if not res["rows"]:
            continue
        entry = {
            "file": writer.part_path(i).name,
            "rows": res["rows"],
            "sha256": res["sha256"],
            "source": Path(res["file"]).as_posix(),
        }
        if res["row_groups"] is not None:
            entry["row_groups"] = list(res["row_groups"])
        parts.append(entry)
        lo = res["x_min"] if lo is None else np.minimum(lo, res["x_min"])
        hi = res["x_max"] if hi is None else np.maximum(hi, res["x_max"])
    return _Merged(source=source, screen=screen, parts=parts, lo=lo, hi=hi)


def _check_rows_left(merged: _Merged, data_path: Path, model_path: Path) -> None:
    """Refuse under 2 rows left or no finite model output; return None otherwise."""
    source = merged.source
    n_left = source.rows_read - source.rows_dropped
    if n_left < 2:  # the local engine's check, on the whole dataset
        left = (
            f" left after dropping {source.rows_dropped} with NaN or infinite values"
            if source.rows_dropped
            else ""
        )
        raise InputError(
            f"data file '{data_path}' has {n_left} row{'s' if n_left != 1 else ''}"
            f"{left}; at least 2 are needed"
        )
    if merged.n_rows == 0:
        raise nothing_left(model_path)


def _data_sha256(plan: _Plan, results: list[dict[str, Any]], file_hashes: dict[int, str]) -> str:
    """The dataset's sha256 (:func:`~ale_cli.data.stream.dataset_sha256`), combined
    from the files' hashes the workers computed: as they read a whole file, or in a task
    of its own for a file read in row-group ranges (``file_hashes``, by file index)."""
    from ale_cli.data.stream import combine_hashes, is_dataset

    hashes = dict(file_hashes)
    for part, res in zip(plan.partitions, results, strict=True):
        if part.row_groups is None:
            hashes[part.file_index] = res["data_sha256"]
    if not is_dataset(plan.data_path):
        return hashes[0]
    return combine_hashes(plan.data_path, [(f, hashes[i]) for i, f in enumerate(plan.files)])


@dataclass(frozen=True)
class _StoreMeta:
    """The store's meta with the method and notes the result reports."""

    meta: dict[str, Any]
    method: str
    notes: tuple[str, ...]


def _store_meta(
    request: ComputeRequest,
    plan: _Plan,
    merged: _Merged,
    results: list[dict[str, Any]],
    hashes: _Hashes,
    timings: dict[str, float],
) -> _StoreMeta:
    """The store's meta as the local engine writes it, with the result's method and notes."""
    from ale_cli.estimators import local_effects as local
    from ale_cli.models.columns import ColumnOrder, order_note

    names = plan.spec.names
    first = next(r["model"] for r in results if r["model"] is not None)
    model = _Described(first["format"], first["method"], first["describe"])
    note = order_note(ColumnOrder(), names, names, positional=True)
    written = local._Written(
        merged.source,
        model,  # type: ignore[arg-type]
        plan.spec.features,
        merged.n_rows,
        merged.screen,
        (note,) if note is not None and request.inputs.inputs is None else (),
    )
    meta = local._meta(request, written, hashes, timings)
    meta["data"]["rows_nonfinite"] = merged.screen.count
    notes = (*model.describe().get("notes", ()), *written.notes)
    notes += (merged.screen.note(),) if merged.screen.count else ()
    meta["notes"] = list(notes)
    return _StoreMeta(meta=meta, method=model.method, notes=notes)


def _finish_store(
    writer: PartStoreWriter,
    meta: dict[str, Any],
    plan: _Plan,
    merged: _Merged,
    results: list[dict[str, Any]],
) -> None:
    """Write the directory store's manifest (``meta``, parts, ranges); return None."""
    if merged.lo is None or merged.hi is None:  # unreachable: n_rows > 0, so a part has rows
        raise RuntimeError("no part holds rows")
    writer.finish(
        meta,
        feature_names=plan.spec.features,
        input_names=plan.spec.names,
        parts=merged.parts,
        x_min=merged.lo,
        x_max=merged.hi,
        arrays=next(r["arrays"] for r in results if r["arrays"]),
    )


def _stop(dask_client: Client, futures: list[Any], folder: Path) -> None:
    """After a failed partition: tell the tasks to stop (:data:`STOP`) and wait until they
    have (a cancelled task would go on running on its worker), so that no worker writes
    into ``folder`` once it is removed."""
    from distributed import wait

    try:
        (folder / STOP).touch()
    except OSError:
        pass
    try:
        wait(futures, timeout=120)  # the tasks end at their next chunk (or fail at once)
    except Exception:  # a timeout: the folder is removed anyway
        pass
    dask_client.cancel(futures)


def _gather_in_order(
    dask_client: Client,
    futures: list[Any],
    bar: ProgressFn | None,
    rows: Sequence[int],
    *,
    cancel: bool = True,
) -> list[Any]:
    """The futures' results in submission order; the first error is raised (with
    ``cancel`` the other tasks are cancelled); ``bar`` is told each partition's rows as
    it finishes."""
    from distributed import as_completed

    index = {f.key: i for i, f in enumerate(futures)}
    results: list[Any] = [None] * len(futures)
    try:
        for future in as_completed(futures):
            i = index[future.key]
            results[i] = future.result()
            if bar is not None:
                bar(rows[i])
    except BaseException:
        if cancel:
            dask_client.cancel(futures)
        raise
    return results


def _as_completed(dask_client: Client, futures: list[Any]) -> Iterator[Any]:
    """The futures' results as they finish, each released once taken (the client holds
    one at a time); the first error is raised and the other tasks are cancelled."""
    from distributed import as_completed

    try:
        for future in as_completed(futures):
            result = future.result()
            future.release()
            yield result
    except BaseException:
        dask_client.cancel(futures)
        raise


# -- estimators: one task per part (or chunk) of a store --------------------------------------


@dataclass(frozen=True)
class ChunkRange(StoreFile):
    """Chunks ``first, first + 1, ...`` (``rows`` of them) of a single-file chunked store."""

    first: int = 0

    def chunks(self, arrays: Sequence[str] = ("X", "local_effects", "prediction")) -> Any:
        """The chunks of the range, every member verified as the store's reader does."""
        return self.read_chunks(range(self.first, self.first + len(self.rows)), arrays)


#: chunks per task of the estimators (16 chunks of 65536 rows: about 1e6 rows a task)
CHUNKS_PER_TASK = 16


def _ranges(store: StoreFile) -> list[StoreFile]:
    """A single-file store as ranges of :data:`CHUNKS_PER_TASK` chunks (a store of one
    array per name, schema 1-2, is one range)."""
    if store.meta.get("chunks") is None:
        return [store]
    return [
        ChunkRange(
            path=store.path,
            meta={},
            feature_names=store.feature_names,
            input_names=store.input_names,
            rows=tuple(store.rows[i : i + CHUNKS_PER_TASK]),
            first=i,
        )
        for i in range(0, len(store.rows), CHUNKS_PER_TASK)
    ]


def store_parts(store: StoreFile) -> list[StoreFile]:
    """The pieces a store is reduced in, one task each, in row order: ranges of chunks of
    each part of a directory store, or of a single-file store; empty ones left out."""
    files = list(store.parts) if isinstance(store, PartStore) else [store]
    return [piece for f in files for piece in _ranges(f) if piece.n_rows]


def _merge_cells(acc: dict[int, CellStats], cells: dict[int, CellStats]) -> dict[int, CellStats]:
    for j, c in cells.items():
        acc[j] = c if j not in acc else acc[j].merge(c)
    return acc


@contextmanager
def dask_passes(scheduler: str | None) -> Iterator[Passes]:
    """The streaming estimators' passes (:class:`~.dale_stream.Passes`) run per store
    part on the workers of the cluster at ``scheduler`` (None: a LocalCluster)."""
    from ale_cli.core.outofcore import absorb, chunked_quantile_edges, shipped
    from ale_cli.estimators.dale_stream import Passes, _cells_on_edges, _uniform, with_slower

    with client(scheduler) as dask_client:

        def cells_on_edges(
            store: StoreFile, cols: Columns, todo: list[int], edges: dict[int, np.ndarray]
        ) -> tuple[dict[int, CellStats], dict[int, int]]:
            futures = [
                dask_client.submit(_cells_on_edges, part, cols, todo, edges, pure=False)
                for part in store_parts(store)
            ]
            cells: dict[int, CellStats] = {}
            outside = dict.fromkeys(todo, 0)
            for part_cells, part_outside in _gather_in_order(dask_client, futures, None, ()):
                _merge_cells(cells, part_cells)
                for j, n in part_outside.items():
                    outside[j] += n
            return cells, outside

        def uniform(
            store: StoreFile, cols: Columns, todo: list[int], lo: Any, hi: Any, bins: int
        ) -> tuple[dict[int, np.ndarray], dict[int, CellStats]]:
            if not todo:
                return {}, {}
            futures = [
                dask_client.submit(_uniform, part, cols, todo, lo, hi, bins, pure=False)
                for part in store_parts(store)
            ]
            edges: dict[int, np.ndarray] = {}
            cells: dict[int, CellStats] = {}
            for part_edges, part_cells in _gather_in_order(dask_client, futures, None, ()):
                edges = part_edges  # the same on every part: from lo, hi and bins
                _merge_cells(cells, part_cells)
            return edges, cells

        def quantile(
            store: StoreFile, cols: Columns, todo: list[int], lo: Any, hi: Any, bins: int
        ) -> tuple[dict[int, np.ndarray], dict[int, CellStats]]:
            """The local engine's two passes (:func:`~.dale_stream._quantile`) per part:
            bucket counts, then cells and gathered rows, merged in part order; the columns
            they cannot finish take :func:`quantile_slow`."""
            if not todo:
                return {}, {}
            found = _two_pass_quantiles(dask_client, store, cols, todo, lo, hi, bins)
            return with_slower(
                todo, found, lambda rest: quantile_slow(store, cols, rest, lo, hi, bins)
            )

        def quantile_slow(
            store: StoreFile, cols: Columns, todo: list[int], lo: Any, hi: Any, bins: int
        ) -> tuple[dict[int, np.ndarray], dict[int, CellStats]]:
            x_cols = [cols.x[j] for j in todo]
            parts = store_parts(store)

            def run_pass(groups: list[Any], roots: list[Any]) -> None:
                sent = shipped(groups)
                futures = [
                    dask_client.submit(_part_pass, part, x_cols, sent, roots, pure=False)
                    for part in parts
                ]
                for result in _as_completed(dask_client, futures):  # any order: sums
                    absorb(groups, result)

            found = chunked_quantile_edges(
                lambda: (), n=store.n_rows, bins=bins, lo=lo[todo], hi=hi[todo], run_pass=run_pass
            )
            edges = dict(zip(todo, found, strict=True))
            return edges, cells_on_edges(store, cols, todo, edges)[0]

        yield Passes(cells_on_edges=cells_on_edges, uniform=uniform, quantile=quantile)


def _two_pass_quantiles(
    dask_client: Client,
    store: StoreFile,
    cols: Columns,
    todo: list[int],
    lo: Any,
    hi: Any,
    bins: int,
) -> list[Any]:
    """:func:`~ale_cli.core.outofcore.quantile_cells` with each pass run per store part on
    the workers: the counts added up (exact), the scans merged in part order."""
    from ale_cli.core import outofcore
    from ale_cli.core.outofcore import QuantilePlan, bucket_grid

    parts = store_parts(store)
    x_cols, e_cols = [cols.x[j] for j in todo], [cols.e[j] for j in todo]
    dtype = next(parts[0].chunks(("X",)))["X"].dtype  # as the local pass 1 builds its grid
    grid = bucket_grid(n=store.n_rows, lo=lo[todo], hi=hi[todo], dtype=dtype)
    futures = [dask_client.submit(_part_counts, p, x_cols, grid, pure=False) for p in parts]
    counts = np.zeros(len(todo) * grid.size, dtype=np.int64)
    for part_counts in _as_completed(dask_client, futures):  # any order: integer sums
        counts += part_counts
    plan = QuantilePlan.build(
        grid,
        counts,
        n=store.n_rows,
        bins=bins,
        max_bucket=outofcore.MAX_BUCKET_ROWS,  # read now, as quantile_cells reads them
        max_gathered=outofcore.MAX_GATHERED_ROWS,
    )
    futures = [dask_client.submit(_part_scan, p, x_cols, e_cols, plan, pure=False) for p in parts]
    scan = plan.empty_scan()
    for part_scan in _gather_in_order(dask_client, futures, None, ()):
        scan = scan.merge(part_scan)
    return plan.finish(scan, lo[todo], hi[todo])


def _part_counts(part: StoreFile, x_cols: list[int], grid: Any) -> np.ndarray:
    """On a worker: pass 1 over a store part, its values per bucket of ``grid``."""
    from ale_cli.estimators.dale_stream import _select

    counts = np.zeros(len(x_cols) * grid.size, dtype=np.int64)
    for chunk in part.chunks(("X",)):
        counts += grid.counts(_select(chunk["X"], x_cols))
    return counts


def _part_scan(part: StoreFile, x_cols: list[int], e_cols: list[int], plan: Any) -> Any:
    """On a worker: pass 2 over a store part (:meth:`~ale_cli.core.outofcore.QuantilePlan.
    scan` of each chunk, merged in order)."""
    from ale_cli.estimators.dale_stream import _select

    scan = plan.empty_scan()
    for chunk in part.chunks(("X", "local_effects")):
        X, E = _select(chunk["X"], x_cols), _select(chunk["local_effects"], e_cols)
        scan = scan.merge(plan.scan(X, E))
    return scan


def _part_pass(part: StoreFile, x_cols: list[int], groups: list[Any], roots: list[Any]) -> Any:
    """On a worker: one quantile pass over a store part's columns ``x_cols`` of X."""
    from ale_cli.core.outofcore import pass_accumulators

    def chunks() -> Iterator[np.ndarray]:
        for chunk in part.chunks(("X",)):
            yield chunk["X"][:, x_cols]

    out = pass_accumulators(chunks, groups, roots)
    # counts travel as uint32 when they fit (half the bytes: 65536 buckets per column)
    return [
        (c.astype(np.uint32) if c is not None and c.max(initial=0) < 2**32 else c, *rest)
        for c, *rest in out
    ]
