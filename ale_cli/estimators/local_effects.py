"""``ale compute``: model + data -> local-effects store, with caching.

The library function :func:`compute` does the work; the CLI only parses
options, draws the progress bar and prints the one-line result.

Two paths write the same chunked store (:class:`~ale_cli.store.npz.StoreWriter`):

- streaming (any model format on a CSV/Parquet file or a directory of Parquet
  files): the data are read ``chunk_rows`` rows at a time
  (:mod:`ale_cli.data.stream`), each chunk's local effects are written as
  they come, and the data bytes are hashed while they are read. Peak memory is a
  chunk, not N. A TorchScript model is loaded and checked on the first chunk (its
  gradient depends on its row only, checked at load). An ONNX or scikit-learn
  model is checked and its finite-difference steps chosen from all rows, so the
  file is read twice: first for the data profile
  (:mod:`ale_cli.passes.profiling`: each column's std, a sample of rows, the
  first rows, the same for any chunking), then for the local effects. Either way
  the store equals the whole-table path's whatever the chunk size.
- whole table (DataFrames; a columns file or an ONNX graph with one input per
  column, which realign the data by name; the per-level stores below;
  scikit-learn pipelines that read text columns, whose levels come from every
  row; piecewise-constant models, whose local effects are planned on all rows):
  the table is read at once; the store is still written in chunks.

Features estimated per level (text and ``categorical`` columns, and the
``discrete`` ones) get, beside their local effect, every row's jumps to the
adjacent levels (:func:`~ale_cli.estimators.levels.level_arrays`, arrays
``level_up``/``level_down``; the levels and their order in the meta's
``levels``), from which ``rebin``/``rhale`` estimate them per level with no
model call. Their levels and order depend on every row, so a store with such
features is computed on the whole table (a note says so).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ale_cli import __version__
from ale_cli.checks import names_tuple
from ale_cli.data.stream import DEFAULT_CHUNK_ROWS, TableStream, inputs_sha256
from ale_cli.data.table import is_frame
from ale_cli.errors import InputError, NotNumeric, RunError
from ale_cli.estimators.inputs import ModelInputs, open_inputs
from ale_cli.estimators.levels import (
    LEVEL_DOWN,
    LEVEL_UP,
    LevelPlan,
    discrete_names,
    level_arrays,
    plan_levels,
)
from ale_cli.estimators.pairs import Pair, pair_columns
from ale_cli.io.files import sha256_file
from ale_cli.io.threads import prefetched
from ale_cli.models.base import Effects, Model, ProgressFn
from ale_cli.models.checks import nothing_left, row_list, screen_rows
from ale_cli.models.columns import ColumnOrder
from ale_cli.models.finite_diff import DEFAULT_EVAL_ROWS
from ale_cli.models.mixed import MixedFn, require_mixed_derivatives
from ale_cli.models.secant import for_compute, outdated, piecewise_constant, store_extras
from ale_cli.store.npz import (
    MIXED,
    PAIRS,
    SCHEMA_VERSION,
    StoreWriter,
    cache_key,
    read_meta,
)
from ale_cli.store.verify import DamagedStore


@dataclass(frozen=True)
class ComputeRequest:
    """What ``ale compute`` is asked: the model and data, the store to write, the pairs
    whose mixed derivatives to cache. The result-affecting part keys the cache."""

    inputs: ModelInputs
    out: Path
    pairs: tuple[Pair, ...] = ()
    chunk_rows: int = DEFAULT_CHUNK_ROWS
    #: numeric features whose per-row jumps to the adjacent values are stored (names,
    #: "a,b", "auto" or None); text and categorical columns always get them
    discrete: tuple[str, ...] | str | None = None
    #: where the work runs: "local" or "dask" (:mod:`ale_cli.engines`); not a result option
    engine: str = "local"
    #: a Dask scheduler's address (None with dask: a LocalCluster on this machine)
    scheduler: str | None = None

    def __post_init__(self) -> None:
        from ale_cli.engines import check_engine

        check_engine(self.engine, self.scheduler)
        if self.discrete is not None and self.discrete != "auto":
            object.__setattr__(self, "discrete", names_tuple(self.discrete, "discrete"))

    def result_options(self) -> dict[str, Any]:
        """Options that change the store's arrays (batch size and trust do not)."""
        out = self.inputs.result_options() | {"pairs": [list(p) for p in self.pairs]}
        if self.discrete is not None:  # absent otherwise: earlier stores stay cache hits
            out["discrete"] = (
                self.discrete if isinstance(self.discrete, str) else list(self.discrete)
            )
        return out


@dataclass(frozen=True)
class ComputeResult:
    """What one ``ale compute`` run did.

    ``cache_hit`` is True when an existing store was reused; ``reason`` says
    why a store at the output path was not reused (None if there was none).
    """

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


@dataclass(frozen=True)
class _Hashes:
    """The inputs' content hashes and the cache key they make with the options."""

    model: str
    data: str
    key: str

    @classmethod
    def of(cls, request: ComputeRequest, data: str | None = None) -> _Hashes:
        """The hashes; ``data`` when the data were hashed while they were read."""
        model = sha256_file(request.inputs.model)
        if data is None:
            data = inputs_sha256(request.inputs.data)
        return cls(model, data, cache_key(model, data, request.result_options()))

    def stale_reason(self, meta: dict[str, Any]) -> str | None:
        """Why a store with this meta is not a cache hit (None when it is)."""
        if meta.get("cache_key") == self.key:
            return None
        if meta.get("model", {}).get("sha256") != self.model:
            return "the model file changed"
        if meta.get("data", {}).get("sha256") != self.data:
            return "the data file changed"
        return "the options changed"


@dataclass(frozen=True)
class Damaged:
    """The store at the output is ours but its bytes changed: it is recomputed, and the
    result's notes say so with ``note``."""

    note: str


def _cached(
    request: ComputeRequest, hashes: _Hashes, t0: float
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


def pair_plan_columns(
    request: ComputeRequest, names: tuple[str, ...], categorical: tuple[str, ...]
) -> list[tuple[int, int]]:
    """The columns of ``request.pairs`` among the inputs ``names`` (refused: a pair naming
    no input, or a categorical one, held fixed)."""
    cols = pair_columns(
        request.pairs,
        names,
        param="pairs",
        where=f"data '{request.inputs.data_label}'",
    )
    fixed = next((n for pair in request.pairs for n in pair if n in categorical), None)
    if fixed is not None:
        raise InputError(
            f"{{param}}: feature '{fixed}' is categorical (held fixed), so it has no derivative",
            param="pairs",
        )
    return cols


def _pair_plan(
    request: ComputeRequest, names: tuple[str, ...], categorical: tuple[str, ...], model: Model
) -> tuple[list[tuple[int, int]], MixedFn | None]:
    """Columns of the pairs and the model's mixed-derivative function (None without pairs)."""
    if not request.pairs:
        return [], None
    cols = pair_plan_columns(request, names, categorical)
    mixed = require_mixed_derivatives(
        model,
        request.inputs.model,
        param="pairs",
        hint="leave out {param} and use 'ale interact --estimator ale'",
    )
    return cols, mixed


class _Source(Protocol):
    """What the meta records of the data read: a Table or a TableStream after its last chunk."""

    @property
    def format(self) -> str: ...
    @property
    def feature_names(self) -> tuple[str, ...]: ...
    @property
    def rows_read(self) -> int: ...
    @property
    def rows_dropped(self) -> int: ...
    @property
    def dropped_columns(self) -> tuple[str, ...]: ...
    @property
    def categorical(self) -> tuple[str, ...]: ...
    @property
    def dtypes(self) -> dict[str, str]: ...
    @property
    def levels(self) -> dict[str, tuple[Any, ...]]: ...


class _Screen:
    """Every chunk's predictions, local effects, mixed derivatives and jumps to adjacent
    levels checked for NaN and infinite values (:func:`~ale_cli.models.checks.screen_rows`,
    as :func:`~ale_cli.models.checks.screen_effects` does): the run is refused
    naming the rows, or with ``drop`` those rows are left out and counted."""

    def __init__(self, path: Path, *, drop: bool) -> None:
        self.path = path
        self.drop = drop
        self.rows: list[np.ndarray] = []

    @property
    def count(self) -> int:
        return int(sum(len(r) for r in self.rows))

    def apply(self, arrays: dict[str, np.ndarray], offset: int) -> dict[str, np.ndarray]:
        """The chunk's arrays without its non-finite rows (``offset``: its first row)."""
        checks = [("predictions", arrays["prediction"], 0)]
        checks.append(("local effects", arrays["local_effects"], 0))
        if MIXED in arrays:
            checks.append(("mixed derivatives", arrays[MIXED], 1))
        if LEVEL_UP in arrays:  # the model moved to the adjacent levels
            checks += [
                ("jumps to the adjacent levels", arrays[a], 0) for a in (LEVEL_UP, LEVEL_DOWN)
            ]
        found = screen_rows(
            self.path, len(arrays["prediction"]), checks, drop=self.drop, offset=offset,
            allow_empty=True,
        )  # fmt: skip
        if not len(found.dropped):
            return arrays
        self.rows.append(found.dropped + offset)
        keep = found.keep
        return {k: (v[:, keep] if k == MIXED else v[keep]) for k, v in arrays.items()}

    def note(self) -> str:
        rows = np.concatenate(self.rows)
        return (
            f"dropped {len(rows)} row{'s' if len(rows) != 1 else ''} where model "
            f"'{self.path}' gave NaN or infinite values ({row_list(rows)})"
        )


@dataclass(frozen=True)
class _Written:
    """What a compute path wrote, for the meta and the result."""

    source: _Source
    model: Model
    features: tuple[str, ...]
    n_rows: int
    screen: _Screen
    notes: tuple[str, ...] = ()
    levels: tuple[LevelPlan, ...] = ()


def _meta(
    request: ComputeRequest, written: _Written, hashes: _Hashes, timings: dict[str, float]
) -> dict[str, Any]:
    """The store's meta: provenance, columns, method and options (:data:`META_KEYS`)."""
    table, model, inputs = written.source, written.model, request.inputs
    details = model.describe()
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "ale", "version": __version__},
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "model": {"path": str(inputs.model), "sha256": hashes.model, "format": model.format},
        "data": {
            "path": inputs.data_label,
            "sha256": hashes.data,
            "format": table.format,
            "rows_read": table.rows_read,
            "rows_dropped": table.rows_dropped,
            "dropped_columns": list(table.dropped_columns),
            "dtypes": table.dtypes,
        },
        # the explained features (columns of local_effects) and every model input (of X)
        "feature_names": list(written.features),
        "features": list(written.features),
        "inputs": list(table.feature_names),
        # held fixed, local effect 0; the estimators report them as not estimable
        "categorical_features": list(table.categorical),
        # text columns are stored as integer codes: levels[name][code] is the value
        "categorical_levels": {name: list(values) for name, values in table.levels.items()},
        "method": model.method,
        "method_details": details,
        "output": details.get("output"),
        "options": request.result_options()
        | {
            "batch_size": inputs.batch_size,
            "trust": list(inputs.trust),
            "trust_pickle": inputs.trust_pickle,
            "chunk_rows": request.chunk_rows,
        },
        "n_rows": written.n_rows,
        # optional arrays: mixed derivatives d2f/dx_a dx_b of these pairs (ale compute --pairs)
        "pairs": [list(p) for p in request.pairs],
        # features estimated per level: the columns of level_up / level_down
        "levels": [plan.to_meta() for plan in written.levels],
        "timings": timings,
        "cache_key": hashes.key,
    }


def _chunk_arrays(
    model: Model,
    X: np.ndarray,
    columns: Sequence[int],
    pairs: tuple[list[tuple[int, int]], MixedFn | None],
    bars: tuple[ProgressFn | None, ProgressFn | None],
    timings: dict[str, float],
    levels: tuple[Sequence[str], Sequence[LevelPlan], int] | None = None,
) -> dict[str, np.ndarray]:
    """The store entries of one chunk of rows X (n, D); ``levels`` (the input names, the
    plans and the rows per model call) adds the per-level jumps (:func:`level_arrays`)."""
    t = time.perf_counter()
    effects: Effects = model.local_effects(X, features=list(columns), progress=bars[0])
    timings["local_effects_s"] = timings.get("local_effects_s", 0.0) + time.perf_counter() - t
    arrays = {"X": X, "local_effects": effects.local_effects, "prediction": effects.prediction}
    if effects_dtype(model) == np.float32:  # float32 numbers: exact in float32
        arrays["local_effects"] = effects.local_effects.astype(np.float32)
        arrays["prediction"] = effects.prediction.astype(np.float32)
    cols, mixed = pairs
    if mixed is not None:
        t = time.perf_counter()
        arrays[MIXED] = mixed(X, cols, progress=bars[1])
        timings["mixed_derivatives_s"] = (
            timings.get("mixed_derivatives_s", 0.0) + time.perf_counter() - t
        )
    if levels is not None and levels[1]:
        t = time.perf_counter()
        names, plans, eval_rows = levels
        arrays |= level_arrays(model.predict, X, names, plans, eval_rows=eval_rows)
        timings["level_jumps_s"] = timings.get("level_jumps_s", 0.0) + time.perf_counter() - t
    return arrays


def effects_dtype(model: Model) -> type[np.floating]:
    """float32 for a float32 model differentiated by autodiff (its gradients and outputs
    are float32 numbers, which float32 holds exactly: half the store), else float64
    (finite-difference quotients carry float64 digits)."""
    if model.method == "autodiff" and model.describe().get("dtype") == "float32":
        return np.float32
    return np.float64


def streams(inputs: ModelInputs) -> bool:
    """True when ``ale compute`` reads these inputs chunk by chunk: a model file of any
    format on a data file, unless a columns file realigns the data by name (or an ONNX
    graph takes one input per column). ONNX and scikit-learn models read the file
    twice (:func:`_fd_model`); a scikit-learn model that turns out to read text columns,
    or to be piecewise constant, is computed on the whole table after all."""
    from ale_cli.models import detect_format
    from ale_cli.models.columns import model_column_order

    if is_frame(inputs.data):
        return False
    fmt = detect_format(inputs.model, inputs.model_format)
    # a columns file (or one ONNX input per column) realigns the data by name: whole table
    return model_column_order(inputs.model, fmt).names is None


@dataclass(frozen=True)
class FdFirst:
    """What the first pass of a streaming compute gave for an ONNX or scikit-learn model:
    the model loaded on the data's profile, and what loading it again elsewhere (a Dask
    worker) takes to give the same model: the profile, the columns' dtypes, the data's
    hash on that read."""

    model: Model
    sha256: str
    profile: Any  # ale_cli.models.profile.DataProfile
    dtypes: dict[str, str]


def _fd_model(
    request: ComputeRequest, fmt: str, stream: TableStream, timings: dict[str, float]
) -> FdFirst | None:
    """The first pass of a streaming compute for an ONNX or scikit-learn model: read the
    data for the profile its checks and steps are chosen from
    (:func:`~ale_cli.passes.profiling.first_pass`), load the model on it; None when the
    model is computed on the whole table (a scikit-learn model reading text columns; a
    piecewise-constant one)."""
    from ale_cli.models import Columns, load_model
    from ale_cli.passes.profiling import first_pass

    inputs = request.inputs
    t = time.perf_counter()
    try:
        found = first_pass(stream, prefetched(iter(stream)))
    except NotNumeric:
        if fmt == "onnx":  # takes numbers only: the whole-table reader refuses it the same way
            raise
        return None  # a pipeline encodes text columns: their levels come from every row
    finally:
        stream.close()
    timings["first_pass_s"] = time.perf_counter() - t
    t = time.perf_counter()
    model = load_model(
        inputs.model,
        model_format=fmt,
        options=inputs.load_options(),
        columns=Columns(names=stream.feature_names, fixed=stream.categorical, dtypes=found.dtypes),
        X=found.profile.head,
        profile=found.profile,
    )
    timings["load_model_s"] = time.perf_counter() - t
    if piecewise_constant(model):  # its secants across a fine grid need the whole table
        return None
    return FdFirst(model, found.sha256, found.profile, dict(found.dtypes))


def _bars(
    progress: Callable[[int], ProgressFn] | None, total: int | None, pairs: bool
) -> tuple[ProgressFn | None, ProgressFn | None]:
    if progress is None or total is None:
        return None, None
    return progress(total), (progress(total) if pairs else None)


def _stream(
    request: ComputeRequest,
    writer: StoreWriter,
    timings: dict[str, float],
    progress: Callable[[int], ProgressFn] | None,
) -> tuple[_Written, str] | None:
    """Read, compute and write chunk by chunk; returns what was written and the data
    hash, or None (nothing written) when the model is computed on the whole table after
    all (see :func:`_fd_model`)."""
    from ale_cli.estimators.inputs import columns_note, feature_columns
    from ale_cli.models import Columns, detect_format, load_model

    inputs = request.inputs
    fmt = detect_format(inputs.model, inputs.model_format)
    fd_model = None
    if fmt == "onnx" and inputs.step is None and _onnx_trees(inputs.model):
        return None  # piecewise constant whatever the data: no first pass for nothing
    if fmt != "torchscript":  # finite differences: steps from all rows, a first pass
        fd_model = _fd_model(request, fmt, _open_stream(request), timings)
        if fd_model is None:
            return None
    t = time.perf_counter()
    stream = _open_stream(request)
    features, columns = feature_columns(
        inputs.features, stream.feature_names, where=f"data file '{inputs.data_label}'"
    )
    chunks = prefetched(iter(stream))  # the reader thread reads while torch is imported
    timings["load_data_s"] = time.perf_counter() - t
    if fd_model is None:
        t = time.perf_counter()
        import torch  # noqa: F401  (timed apart: the largest fixed cost of a TorchScript run)

        timings["import_torch_s"] = time.perf_counter() - t
    t = time.perf_counter()
    first = next(chunks)
    timings["load_data_s"] += time.perf_counter() - t
    if fd_model is None:
        t = time.perf_counter()
        model = load_model(
            inputs.model,
            model_format="torchscript",
            options=inputs.load_options(),
            columns=Columns(names=stream.feature_names, fixed=stream.categorical, dtypes={}),
            X=first,
        )
        timings["load_model_s"] = time.perf_counter() - t
    else:
        model = fd_model.model
    pairs = _pair_plan(request, stream.feature_names, stream.categorical, model)
    bars = _bars(progress, stream.total_rows, pairs[1] is not None)
    screen = _Screen(inputs.model, drop=inputs.drop_nonfinite)
    n_rows = read = 0
    X: np.ndarray | None = first
    while X is not None:
        # finite differences on float64 rows, as the whole table gives them; X as read
        model_X = X if fd_model is None else X.astype(np.float64, copy=False)
        arrays = _chunk_arrays(model, model_X, columns, pairs, bars, timings)
        arrays = screen.apply(arrays | {"X": X}, read)
        writer.add(arrays)
        n_rows += len(arrays["prediction"])
        read += len(X)
        t = time.perf_counter()
        X = next(chunks, None)
        timings["load_data_s"] += time.perf_counter() - t
    if stream.sha256 is None:  # the iteration ended early (it raises instead)
        raise RuntimeError("the data stream ended before its hash")
    if fd_model is not None and fd_model.sha256 != stream.sha256:
        raise RunError(
            f"data file '{inputs.data_label}' changed while it was read (its two reads "
            "differ); run again once it is written"
        )
    note = columns_note(
        inputs, fmt, ColumnOrder(), stream.file_columns, stream.feature_names, model
    )
    notes = (note,) if note is not None else ()
    return _Written(stream, model, features, n_rows, screen, notes), stream.sha256


def _onnx_trees(path: Path) -> bool:
    from ale_cli.models.onnx_graph import tree_ensemble_file

    return tree_ensemble_file(path)


def _open_stream(request: ComputeRequest) -> TableStream:
    from ale_cli.data.stream import open_stream

    inputs = request.inputs
    return open_stream(
        inputs.data,
        fmt=inputs.data_format,
        inputs=inputs.inputs,
        exclude=inputs.exclude,
        dropna=inputs.dropna,
        categorical=inputs.categorical,
        chunk_rows=request.chunk_rows,
    )


def _whole(
    request: ComputeRequest,
    writer: StoreWriter,
    timings: dict[str, float],
    progress: Callable[[int], ProgressFn] | None,
) -> _Written:
    """Read the whole table, load the model on all rows, write the rows in chunks."""
    opened = open_inputs(request.inputs)
    timings |= opened.timings
    table = opened.table
    plans, notes = _level_plans(request, table, opened.features)
    # piecewise-constant models: secants across a fine grid (ale_cli.models.secant); the
    # features estimated per level are held fixed there (their jumps are stored instead)
    model = for_compute(
        opened.model,
        table.X,
        columns=opened.columns,
        names=table.feature_names,
        categorical=(*table.categorical, *(plan.name for plan in plans)),
    )
    pairs = _pair_plan(request, table.feature_names, table.categorical, opened.model)
    bars = _bars(progress, len(table.X), pairs[1] is not None)
    f32 = bool(table.dtypes) and all(v == "float32" for v in table.dtypes.values())
    screen = _Screen(request.inputs.model, drop=request.inputs.drop_nonfinite)
    levels = (table.feature_names, plans, request.inputs.batch_size or DEFAULT_EVAL_ROWS)
    n_rows = 0
    for start in range(0, len(table.X), request.chunk_rows):
        X = table.X[start : start + request.chunk_rows]
        arrays = _chunk_arrays(model, X, opened.columns, pairs, bars, timings, levels)
        if f32:  # float32 source values, held exactly in float32
            arrays["X"] = X.astype(np.float32)
        arrays = screen.apply(arrays, start)
        writer.add(arrays)
        n_rows += len(arrays["prediction"])
    return _Written(table, model, opened.features, n_rows, screen, (*opened.notes, *notes), plans)


def _level_plans(
    request: ComputeRequest, table: Any, features: Sequence[str]
) -> tuple[tuple[LevelPlan, ...], tuple[str, ...]]:
    """The explained features estimated per level (text and categorical columns, and the
    ``discrete`` ones), planned on the whole table (:func:`plan_levels`: their levels and
    order; no model call), and a note naming them."""
    discrete = discrete_names(
        table.X, table.feature_names, request.discrete, exclude=table.categorical
    )
    kinds = {
        name: "categorical" if name in table.categorical else "discrete"
        for name in features
        if name in table.categorical or name in discrete
    }
    found = plan_levels(
        table.X, table.feature_names, kinds, categorical=table.categorical, labels=table.levels
    )
    plans = tuple(p for p in found.values() if isinstance(p, LevelPlan))
    if not plans:
        return (), ()
    named = ", ".join(f"{p.name} ({p.n_levels} levels)" for p in plans)
    note = (
        f"stored the jumps to the adjacent levels of {named}: rebin and rhale report them per level"
    )
    if streams(request.inputs):
        note += " (the whole table was read: the levels must be known before the first chunk)"
    return plans, (note,)


def _needs_levels(request: ComputeRequest) -> bool:
    """True when the store may get per-level jumps (``discrete`` asked, or a declared
    categorical column explained): their levels come from every row, so the
    streaming path is not taken."""
    inputs = request.inputs
    if request.discrete is not None:
        return True
    explained = inputs.categorical if inputs.features is None else inputs.features
    return any(name in explained for name in inputs.categorical)


def compute(
    request: ComputeRequest,
    *,
    force: bool = False,
    progress: Callable[[int], ProgressFn] | None = None,
) -> ComputeResult:
    """Compute (or reuse) the local-effects store described by ``request``.

    ``progress(total_rows)`` may return a callable that is told how many rows
    each model call finished. A store at ``request.out`` is checked for a cache
    hit first (hashing the inputs); without one the data are hashed while they
    are read.
    """
    if request.engine == "dask":  # partitions on Dask workers, a directory store
        from ale_cli.engines.dask import compute_dask

        return compute_dask(request, force=force, progress=progress)
    t0 = time.perf_counter()
    request.inputs.check_files()
    hashes: _Hashes | None = None
    cached: ComputeResult | Damaged | str | None = None
    if not force and request.out.exists():
        hashes = _Hashes.of(request)
        cached = _cached(request, hashes, t0)
        if isinstance(cached, ComputeResult):
            return cached
    timings: dict[str, float] = {"hash_inputs_s": time.perf_counter() - t0}
    with StoreWriter(request.out) as writer:
        streamed = None
        if streams(request.inputs) and not _needs_levels(request):
            streamed = _stream(request, writer, timings, progress)
        if streamed is not None:
            written, data_hash = streamed
            hashes = hashes or _Hashes.of(request, data=data_hash)
        else:
            hashes = hashes or _Hashes.of(request)
            written = _whole(request, writer, timings, progress)
        if written.n_rows == 0:
            raise nothing_left(request.inputs.model)
        t = time.perf_counter()
        if request.pairs:
            writer.add_array(PAIRS, np.array(request.pairs, dtype=np.str_).reshape(-1, 2))
        meta = _meta(request, written, hashes, timings)
        extra_arrays, extra_meta = store_extras(written.model)
        for name, array in extra_arrays.items():
            writer.add_array(name, array)
        meta |= extra_meta
        meta["n_rows"] = written.n_rows
        meta["data"]["rows_nonfinite"] = written.screen.count
        notes = (*written.model.describe().get("notes", ()), *written.notes)
        notes += (written.screen.note(),) if written.screen.count else ()
        meta["notes"] = list(notes)
        notes += (cached.note,) if isinstance(cached, Damaged) else ()
        writer.finish(
            feature_names=written.features,
            input_names=written.source.feature_names,
            meta=meta,
        )
    timings["finish_s"] = time.perf_counter() - t
    return ComputeResult(
        out=request.out,
        cache_hit=False,
        n_rows=written.n_rows,
        n_features=len(written.features),
        method=written.model.method,
        seconds=time.perf_counter() - t0,
        rows_dropped=written.source.rows_dropped,
        reason=cached if isinstance(cached, str) else None,
        notes=notes,
        rows_nonfinite=written.screen.count,
    )
