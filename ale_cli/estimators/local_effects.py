"""``ale compute``: model + data -> local-effects store: one run of the kernel
(:mod:`~ale_cli.estimators.local_effects_kernel`) on the engine handed down, into a sink
writing the store; a store made from the same model bytes, data bytes and result options
is reused (:func:`cached_result`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from ale_cli import __version__
from ale_cli.data.sources import Reads
from ale_cli.data.stream import TableStream, inputs_sha256
from ale_cli.data.table import Table
from ale_cli.errors import InputError, RunError
from ale_cli.estimators.inputs import model_record, model_sha256, object_notes
from ale_cli.estimators.local_effects_kernel import Computed, store_output
from ale_cli.estimators.local_effects_plan import (
    AFTER_ALL,
    ComputeRequest,
    ComputeResult,
    ComputeRun,
    compute_reading,
    data_sha256,
    streamed_run,
    whole_run,
)
from ale_cli.models.base import ProgressFn
from ale_cli.models.checks import dropped_note, nothing_left
from ale_cli.models.secant import outdated, store_extras
from ale_cli.passes.engine import LOCAL, Engine
from ale_cli.store.npz import SCHEMA_VERSION, cache_key, read_meta
from ale_cli.store.verify import DamagedStore

__all__ = [
    "ComputeRequest",
    "ComputeResult",
    "Damaged",
    "cached_result",
    "compute",
    "compute_reading",
]


@dataclass(frozen=True)
class Hashes:
    """The inputs' content hashes and the cache key they make with the options."""

    model: str | None  # None: a model object without a content hash, never a cache hit
    data: str
    key: str

    @classmethod
    def of(
        cls, request: ComputeRequest, data: str | None = None, model: str | None = None
    ) -> Hashes:
        """The hashes (``data``, ``model``: when they were hashed already)."""
        if model is None:
            model = model_sha256(request.inputs.model)
        if data is None:
            data = inputs_sha256(request.inputs.data)
        return cls(model, data, cache_key(model, data, request.result_options()))

    def stale_reason(self, meta: dict[str, Any]) -> str | None:
        """Why a store with this meta is not a cache hit (None when it is)."""
        if self.model is None:
            return "the model is an object without a content hash"
        if meta.get("cache_key") == self.key:
            return None
        if meta.get("model", {}).get("sha256") != self.model:
            return "the model file changed"
        if meta.get("data", {}).get("sha256") != self.data:
            return "the data file changed"
        return "the options changed"


@dataclass(frozen=True)
class Damaged:
    """The store at the output is ours but its bytes changed: recomputed, saying ``note``."""

    note: str


def cached_result(
    request: ComputeRequest, hashes: Hashes, t0: float
) -> ComputeResult | Damaged | str | None:
    """The cache hit at ``request.out``, else why the store there is stale (None: no store;
    :class:`Damaged`: a damaged store of ours, never a cache hit)."""
    if not request.out.exists():
        return None
    try:
        meta = read_meta(request.out)  # checked whole once per process (see read_meta)
    except DamagedStore as exc:  # ours (its meta is intact), its bytes changed
        detail = str(exc).removeprefix(f"store '{request.out}': ")
        return Damaged(f"store '{request.out}' was damaged; recomputed ({detail})")
    except InputError:
        raise InputError(
            f"output '{request.out}' exists and is not a local-effects store; "
            "remove it, choose another output, or pass {param} to overwrite it",
            param="force",
        ) from None
    reason = hashes.stale_reason(meta) or outdated(meta)
    if reason is not None:
        return reason
    return ComputeResult(
        out=request.out,
        cache_hit=True,
        n_rows=int(meta["n_rows"]),
        n_features=len(meta["feature_names"]),
        method=str(meta["method"]),
        seconds=time.perf_counter() - t0,
        rows_dropped=int(meta["data"].get("rows_dropped", 0)),
        rows_nonfinite=int(meta["data"].get("rows_nonfinite", 0)),
    )


def _meta(
    request: ComputeRequest,
    run: ComputeRun,
    table: Any,
    n_rows: int,
    hashes: Hashes,
    timings: dict[str, float],
) -> dict[str, Any]:
    """The store's meta of ``run`` over the data ``table``."""
    model, inputs = run.model, request.inputs
    details = model.describe()
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "ale", "version": __version__},
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "model": model_record(inputs, model.format, hashes.model),
        "data": {
            "path": inputs.data_label,
            "sha256": hashes.data,
            "format": table.format,
            "rows_read": table.rows_read,
            "rows_dropped": table.rows_dropped,
            "dropped_columns": list(table.dropped_columns),
            "dtypes": table.dtypes,
        },
        "feature_names": list(run.columns.features),
        "features": list(run.columns.features),
        "inputs": list(table.feature_names),
        # held fixed, local effect 0; the estimators report them as not estimable
        "categorical_features": list(table.categorical),
        # text columns are stored as integer codes: levels[name][code] is the value
        "categorical_levels": {name: list(values) for name, values in table.levels.items()},
        "method": model.method,
        "method_details": details,
        "output": details.get("output"),
        **({"outputs": details["outputs"]} if "outputs" in details else {}),
        "options": request.result_options()
        | {
            "batch_size": inputs.batch_size,
            "trust": list(inputs.trust),
            "trust_pickle": inputs.trust_pickle,
            "chunk_rows": request.chunk_rows,
        },
        "n_rows": n_rows,
        "pairs": [list(p) for p in request.pairs],
        "levels": [plan.to_meta() for plan in run.kernel.levels],
        "timings": timings,
        "cache_key": hashes.key,
    }


def _told(
    progress: Callable[[int], ProgressFn] | None, total: int | None, pairs: bool
) -> Callable[[int], None] | None:
    """The engine's progress (rows done) told to the bars (none: the total is unknown)."""
    if progress is None or total is None:
        return None
    bars = [progress(total)] + ([progress(total)] if pairs else [])

    def tell(rows: int) -> None:
        for bar in bars:
            bar(rows)

    return tell


def _streamed(
    request: ComputeRequest,
    run: ComputeRun,
    header: TableStream,
    reads: Reads,
    hashes: Hashes | None,
) -> tuple[Table, Hashes]:
    """The data streamed as a Table of no rows, and their hashes (refused: under 2 rows)."""
    n_left = reads.rows_read - reads.rows_dropped
    if n_left < 2:
        dropped = reads.rows_dropped
        left = f" left after dropping {dropped} with NaN or infinite values" if dropped else ""
        raise InputError(
            f"data file '{request.inputs.data_label}' has {n_left} "
            f"row{'s' if n_left != 1 else ''}{left}; at least 2 are needed"
        )
    data_sha = data_sha256(run, header, reads)
    if any(sha not in (None, data_sha) for sha in (run.first_sha256, hashes and hashes.data)):
        raise RunError(
            f"data file '{request.inputs.data_label}' changed while it was read (its "
            "two reads differ); run again once it is written"
        )
    table = Table(
        X=np.empty((0, len(header.feature_names))),
        feature_names=header.feature_names,
        path=header.path,
        format=header.format,
        rows_read=reads.rows_read,
        rows_dropped=reads.rows_dropped,
        dropped_columns=reads.dropped_columns(header.feature_names),
        categorical=header.categorical,
        levels=header.levels,
        dtypes=reads.dtypes(),
    )
    model_sha = getattr(run.shared, "sha256", None)
    return table, hashes or Hashes.of(request, data=data_sha, model=model_sha)


def compute(
    request: ComputeRequest,
    *,
    engine: Engine = LOCAL,
    force: bool = False,
    progress: Callable[[int], ProgressFn] | None = None,
) -> ComputeResult:
    """Compute (or reuse: a cache hit) the local-effects store of ``request`` on ``engine``;
    ``progress(total_rows)`` may return a callable told the rows each chunk finished."""
    t0 = time.perf_counter()
    request.inputs.check_files()
    reading = compute_reading(request)
    reading.check(engine)
    hashes: Hashes | None = None
    cached: ComputeResult | Damaged | str | None = None
    if not force and request.out.exists():
        hashes = Hashes.of(request)
        cached = cached_result(request, hashes, t0)
        if isinstance(cached, ComputeResult):
            return cached
    timings: dict[str, float] = {"hash_inputs_s": time.perf_counter() - t0}
    with engine:
        run = None if reading.whole else streamed_run(request, engine, timings)
        if run is None:
            AFTER_ALL.check(engine)
            run = whole_run(request, timings)
        try:
            return _write(request, engine, run, hashes, cached, timings, t0, progress)
        finally:  # the hashing of row-group ranges stopped if the run fails first
            for future in run.range_hashes.values():
                future.cancel()


def _write(
    request: ComputeRequest,
    engine: Engine,
    run: ComputeRun,
    hashes: Hashes | None,
    cached: ComputeResult | Damaged | str | None,
    timings: dict[str, float],
    t0: float,
    progress: Callable[[int], ProgressFn] | None,
) -> ComputeResult:
    """Run the kernel into the store at ``request.out`` and finish it with its meta."""
    with store_output(request.out, run.columns, parts=engine.splits) as (sink, finish):
        state: Computed = engine.run(
            run.source,
            run.kernel,
            Computed.merge,
            Computed(),
            arrays=("X",),
            shared=run.shared,
            sink=sink,
            progress=_told(progress, run.total_rows, bool(run.kernel.pair_cols)),
        )
        for key, value in state.timings.items():
            timings[key] = timings.get(key, 0.0) + value
        data = run.data
        if isinstance(data, TableStream):
            timings["load_data_s"] = timings.get("load_data_s", 0.0) + state.reads.read_s
            data, hashes = _streamed(request, run, data, state.reads, hashes)
        hashes = hashes or Hashes.of(request)
        if state.rows == 0:
            raise nothing_left(request.inputs.model)
        t = time.perf_counter()
        meta = _meta(request, run, data, state.rows, hashes, timings)
        extra_arrays, extra_meta = store_extras(run.model)
        meta |= extra_meta
        meta["data"]["rows_nonfinite"] = len(state.nonfinite)
        notes = (*run.model.describe().get("notes", ()), *run.notes)
        if len(state.nonfinite):
            notes += (dropped_note(str(request.inputs.model), state.nonfinite),)
        notes += object_notes(request.inputs)
        meta["notes"] = list(notes)
        notes += (cached.note,) if isinstance(cached, Damaged) else ()
        where = engine.describe()
        if where is not None:
            meta["engine"] = where | {"partitions": len(run.source.parts())}
        finish(meta, state, extra_arrays)
    timings["finish_s"] = time.perf_counter() - t
    return ComputeResult(
        out=request.out,
        cache_hit=False,
        n_rows=state.rows,
        n_features=len(run.columns.features),
        method=run.model.method,
        seconds=time.perf_counter() - t0,
        rows_dropped=data.rows_dropped,
        reason=cached if isinstance(cached, str) else None,
        notes=notes,
        rows_nonfinite=len(state.nonfinite),
    )
