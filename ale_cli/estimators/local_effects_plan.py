"""What ``ale compute`` is asked and answers, and the run made ready (:class:`ComputeRun`):
how the data are read (:func:`compute_reading`), the model loaded, the source, the kernel
and the store's names."""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ale_cli.data.source import ArraySource, Source
from ale_cli.data.sources import DataSource, OpenedSource, Reads
from ale_cli.data.stream import DEFAULT_CHUNK_ROWS, TableStream, find_text_levels
from ale_cli.data.table import Table, combine_hashes, dataset_files, is_dataset
from ale_cli.errors import InputError, NotNumeric
from ale_cli.estimators.inputs import (
    ModelInputs,
    columns_notes,
    load_timed,
    open_inputs,
)
from ale_cli.estimators.inputs_stream import STREAMED, Reading, reading_of, shipped
from ale_cli.estimators.level_plans import level_plans
from ale_cli.estimators.levels import (
    BINARY,
    LevelPlan,
    binary_note,
    discrete_mode,
    effective_discrete,
)
from ale_cli.estimators.local_effects_kernel import LocalEffectsKernel, StoreColumns
from ale_cli.estimators.pairs import Pair, pair_columns, parse_pairs
from ale_cli.estimators.rows import Rows
from ale_cli.io.files import sha256_file
from ale_cli.io.threads import prefetched
from ale_cli.models import Columns, detect_format
from ale_cli.models.base import Model
from ale_cli.models.columns import ColumnOrder
from ale_cli.models.finite_diff import DEFAULT_EVAL_ROWS
from ale_cli.models.mixed import require_mixed_derivatives
from ale_cli.models.onnx_graph import tree_ensemble_file
from ale_cli.models.secant import for_compute, piecewise_constant
from ale_cli.passes.engine import Engine, Ready, Shared
from ale_cli.passes.spool import FirstPass, first_pass

#: Model file formats differentiated by autodiff, read in one pass (no profile first).
AUTODIFF_FORMATS = ("torchscript", "torch-export")


@dataclass(frozen=True)
class ComputeRequest:
    """What ``ale compute`` is asked: the model and data, the store to write, the pairs
    whose mixed derivatives to cache (:meth:`result_options` key the cache)."""

    inputs: ModelInputs
    out: Path
    pairs: tuple[Pair, ...] = ()
    chunk_rows: int = DEFAULT_CHUNK_ROWS
    #: numeric features whose per-row jumps to the adjacent values are stored (names,
    #: "auto", "none", or None: the binary ones), beside the text and categorical ones
    discrete: tuple[str, ...] | str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "pairs", parse_pairs(self.pairs))
        object.__setattr__(self, "discrete", discrete_mode(self.discrete))

    def result_options(self) -> dict[str, Any]:
        """Options that change the store's arrays (batch size and trust do not; no
        ``discrete`` is keyed as binary)."""
        out = self.inputs.result_options() | {"pairs": [list(p) for p in self.pairs]}
        discrete = BINARY if self.discrete is None else self.discrete
        out["discrete"] = discrete if isinstance(discrete, str) else list(discrete)
        return out


@dataclass(frozen=True)
class ComputeResult:
    """What one ``ale compute`` run did: ``reason`` says why a store at the output path was
    not reused (None: there was none, or it was a ``cache_hit``)."""

    out: Path
    cache_hit: bool
    n_rows: int
    n_features: int
    method: str
    seconds: float
    rows_dropped: int = 0
    reason: str | None = None
    notes: tuple[str, ...] = ()
    rows_nonfinite: int = 0


def checked_pairs(
    request: ComputeRequest, names: tuple[str, ...], categorical: tuple[str, ...], model: Model
) -> tuple[tuple[int, int], ...]:
    """The columns of ``request.pairs`` among the inputs ``names`` (refused: a pair naming
    no input or a categorical one, a model without mixed derivatives)."""
    if not request.pairs:
        return ()
    where = f"data '{request.inputs.data_label}'"
    cols = pair_columns(request.pairs, names, param="pairs", where=where)
    fixed = next((n for pair in request.pairs for n in pair if n in categorical), None)
    if fixed is not None:
        raise InputError(
            f"{{param}}: feature '{fixed}' is categorical (held fixed), so it has no derivative",
            param="pairs",
        )
    require_mixed_derivatives(
        model,
        request.inputs.model,
        param="pairs",
        hint="leave out {param} and use 'ale interact --estimator ale'",
    )
    return tuple(cols)


def profiled_model(
    request: ComputeRequest, fmt: str, timings: dict[str, float]
) -> tuple[Model, FirstPass, dict[str, tuple[Any, ...]]] | None:
    """A finite-difference model loaded on the data's profile by a first pass (its checks
    and steps come from it), the pass, and the levels of the text columns, read as codes;
    None for a piecewise-constant model (read whole after all)."""
    inputs, stream = request.inputs, open_data(request)
    inputs.explained(stream.feature_names)
    t = time.perf_counter()
    text: dict[str, tuple[Any, ...]] = {}
    try:
        found = first_pass(stream, prefetched(iter(stream)))
    except NotNumeric:
        if fmt == "onnx":  # takes numbers only: the whole-table reader refuses it the same way
            raise
        text = find_text_levels(lambda given: open_data(request, given))
        stream = open_data(request, text)
        found = first_pass(stream, prefetched(iter(stream)))
    finally:
        stream.close()
    timings["first_pass_s"] = time.perf_counter() - t
    columns = Columns(
        names=stream.feature_names, fixed=stream.categorical, levels=text, dtypes=found.dtypes
    )
    model = load_timed(inputs, fmt, columns, found.profile.head, timings, found.profile)
    if piecewise_constant(model):  # its secants across a fine grid need the whole table
        return None
    return model, found, text


def open_data(request: ComputeRequest, text: dict[str, Any] | None = None) -> TableStream:
    return request.inputs.passes(request.chunk_rows, text).open()


def _levels_notes(request: ComputeRequest, plans: Sequence[LevelPlan]) -> tuple[str, ...]:
    """The notes naming the features whose jumps are stored and the binary ones found."""
    if not plans:
        return ()
    named = ", ".join(f"{p.name} ({p.n_levels} levels)" for p in plans)
    note = (
        f"stored the jumps to the adjacent levels of {named}: rebin and rhale report them per level"
    )
    binary = [p.name for p in plans if p.kind == "discrete" and request.discrete is None]
    return (note, *((binary_note(binary),) if binary else ()))


#: found by the first pass: a scikit-learn model reading text columns, a piecewise-constant one
AFTER_ALL = Reading(
    "read the whole table: the model is piecewise constant (secants on a fine grid of "
    "every row) or reads text columns (encoded with the levels of every row)"
)


def compute_reading(request: ComputeRequest) -> Reading:
    """How ``ale compute`` reads the data (a first pass may still find the whole table
    needed: ``AFTER_ALL``)."""
    inputs = request.inputs
    by_name = reading_of(inputs, request.chunk_rows)
    if by_name.whole:
        frame = Reading("read the whole table: the data are a DataFrame")
        return by_name if by_name.reason else frame
    fmt = detect_format(inputs.model, inputs.model_format)
    if fmt == "onnx" and inputs.step is None and tree_ensemble_file(inputs.model):
        return Reading(
            "read the whole table: a tree-ensemble ONNX model is piecewise constant (secants "
            "on a fine grid of every row)"
        )
    return STREAMED


@dataclass
class ComputeRun:
    """A run made ready: the source, the kernel, the model (``shared``: as it travels),
    the store's names, and what the meta needs of the data."""

    source: Source
    kernel: LocalEffectsKernel
    shared: Shared
    model: Model
    columns: StoreColumns
    total_rows: int | None
    #: the whole table, or the stream read in chunks (described by the run's reads)
    data: Table | TableStream
    notes: tuple[str, ...] = ()
    #: the hash of the first read (a finite-difference model's profile)
    first_sha256: str | None = None
    #: hashes of files read in row-group ranges, by index (a whole file is hashed as read)
    range_hashes: dict[int, Future[str]] = field(default_factory=dict)


def streamed_run(
    request: ComputeRequest, engine: Engine, timings: dict[str, float]
) -> ComputeRun | None:
    """The streamed run (the data as a stream here or partitions on an engine that splits);
    None when the model is computed on the whole table after all (:func:`profiled_model`)."""
    inputs = request.inputs
    fmt = detect_format(inputs.model, inputs.model_format)
    fd_model, found = None, None
    text: dict[str, tuple[Any, ...]] = {}
    if fmt not in AUTODIFF_FORMATS:  # finite differences: steps from all rows, a first pass
        profiled = profiled_model(request, fmt, timings)
        if profiled is None:
            return None
        fd_model, found, text = profiled
    stream, source, first, range_hashes = _read_head(
        request, engine, timings, torchscript=fd_model is None, text=text
    )
    names, fixed = stream.feature_names, stream.categorical
    features, cols = inputs.explained(names)  # before any model call on these columns
    dtypes = {} if found is None else dict(found.dtypes)
    columns = Columns(names=names, fixed=fixed, levels=text, dtypes=dtypes)
    model = load_timed(inputs, fmt, columns, first, timings) if fd_model is None else fd_model
    notes = columns_notes(inputs, fmt, ColumnOrder(), stream.file_columns, names, model)
    plans: tuple[LevelPlan, ...] = ()  # the explained features estimated per level
    discrete, per_level = effective_discrete(request.discrete), any(n in fixed for n in features)
    if discrete is not None or per_level:  # from passes over the data
        t = time.perf_counter()
        data = _data_source(request, stream, engine)
        if per_level:
            rows = Rows.scanned(data, names, engine)
        else:  # discrete columns only: their values are all a pass needs
            rows = Rows(data, tuple(names), 0, np.zeros(len(names)), np.zeros(len(names)))
        found_plans = level_plans(
            rows, features, categorical=fixed, discrete=discrete, labels=text, engine=engine,
            head=first,
        )  # fmt: skip
        plans = tuple(p for p in found_plans.values() if isinstance(p, LevelPlan))
        timings["levels_pass_s"] = time.perf_counter() - t
    outputs, levels = model.describe().get("outputs"), [plan.to_meta() for plan in plans]
    part_meta = ({"outputs": outputs} if outputs else {}) | ({"levels": levels} if levels else {})
    return ComputeRun(
        source=source,
        kernel=LocalEffectsKernel(
            columns=tuple(cols),
            model_path=str(inputs.model),
            drop_nonfinite=inputs.drop_nonfinite,
            float64_model=fd_model is not None,
            pair_cols=checked_pairs(request, names, fixed, model),
            levels=plans,
            names=tuple(names),
            eval_rows=inputs.batch_size or DEFAULT_EVAL_ROWS,
        ),
        shared=shipped(
            inputs, model, columns, first, profile=None if found is None else found.profile
        ),
        model=model,
        columns=StoreColumns(features, names, tuple(request.pairs), part_meta),
        total_rows=stream.total_rows,
        notes=(*notes, *_levels_notes(request, plans)),
        data=stream,
        first_sha256=None if found is None else found.sha256,
        range_hashes=range_hashes,
    )


def _read_head(
    request: ComputeRequest,
    engine: Engine,
    timings: dict[str, float],
    *,
    torchscript: bool,
    text: dict[str, Any],
) -> tuple[TableStream, Source, np.ndarray, dict[int, Future[str]]]:
    """The data's stream, source, first chunk and hashes of files read in row-group ranges."""
    t = time.perf_counter()
    stream = open_data(request, text)
    chunks = None
    if engine.splits:  # the partitions are read where they are computed
        stream.close()
        data = _data_source(request, stream, engine)
    else:
        chunks = prefetched(iter(stream))  # the reader thread reads while torch is imported
    timings["load_data_s"] = time.perf_counter() - t
    if torchscript:
        t = time.perf_counter()
        import torch  # noqa: F401  (timed apart: the largest fixed cost of a TorchScript run)

        timings["import_torch_s"] = time.perf_counter() - t
    t = time.perf_counter()
    first = _first_rows(data) if chunks is None else next(chunks)
    timings["load_data_s"] += time.perf_counter() - t
    if chunks is None:  # files read in row-group ranges (no part reads all their bytes), hashed
        split = sorted({p.file_index for p in data.partitions or () if p.row_groups is not None})
        files = dataset_files(data.path)
        hashes = {i: _HASHER.submit(sha256_file, files[i], "data file") for i in split}
        return stream, data, first, hashes
    return stream, OpenedSource(stream, first, chunks), first, {}


def _data_source(request: ComputeRequest, stream: TableStream, engine: Engine) -> DataSource:
    inputs = request.inputs
    return DataSource.of(stream, inputs=inputs.inputs, exclude=inputs.exclude).split(engine.slots)


def _first_rows(data: DataSource) -> np.ndarray:
    """The first chunk of the first partition with rows (none: the whole read raises)."""
    for part in (*data.parts(), data):
        stream = part.open()
        try:
            for X in stream:
                return X
        finally:
            stream.close()
    raise RuntimeError("the data hold no rows")


_HASHER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ale-hash")


def data_sha256(run: ComputeRun, header: TableStream, reads: Reads) -> str:
    """The data's sha256 as one read of the whole data gives it."""
    hashes = {i: future.result() for i, future in run.range_hashes.items()}
    for end in reads.ends:
        if end.file_index is None:  # one read of all the data
            if end.sha256 is None:
                raise RuntimeError("the data stream ended before its hash")
            return end.sha256
        if end.row_groups is None and end.sha256 is not None:
            hashes[end.file_index] = end.sha256
    if not is_dataset(header.path):
        return hashes[0]
    files = dataset_files(header.path)
    return combine_hashes(header.path, [(f, hashes[i]) for i, f in enumerate(files)])


def whole_run(request: ComputeRequest, timings: dict[str, float]) -> ComputeRun:
    """The whole-table run: the model loaded on all rows, the rows cut into chunks."""
    inputs = request.inputs
    opened = open_inputs(inputs)
    timings |= opened.timings
    table = opened.table
    found = level_plans(
        Rows.of(table.X, table.feature_names), opened.features, categorical=table.categorical,
        discrete=effective_discrete(request.discrete), labels=table.levels,
    )  # fmt: skip
    plans = tuple(p for p in found.values() if isinstance(p, LevelPlan))
    # piecewise-constant models: secants across a fine grid (ale_cli.models.secant); the
    # features estimated per level are held fixed there (their jumps are stored instead)
    model = for_compute(
        opened.model,
        table.X,
        columns=opened.columns,
        names=table.feature_names,
        categorical=(*table.categorical, *(plan.name for plan in plans)),
    )
    pair_cols = checked_pairs(request, table.feature_names, table.categorical, opened.model)
    f32 = bool(table.dtypes) and all(v == "float32" for v in table.dtypes.values())
    return ComputeRun(
        source=ArraySource({"X": table.X}, chunk_rows=request.chunk_rows),
        kernel=LocalEffectsKernel(
            columns=tuple(opened.columns),
            model_path=str(inputs.model),
            drop_nonfinite=inputs.drop_nonfinite,
            float32_x=f32,
            pair_cols=pair_cols,
            levels=plans,
            names=tuple(table.feature_names),
            eval_rows=inputs.batch_size or DEFAULT_EVAL_ROWS,
        ),
        shared=Ready(model),
        model=model,
        columns=StoreColumns(tuple(opened.features), table.feature_names, tuple(request.pairs)),
        total_rows=len(table.X),
        notes=(*opened.notes, *_levels_notes(request, plans)),
        data=table,
    )
