"""Where the rows of ``ale interact`` come from: a store, a data file read chunk by chunk,
or the whole table in memory; each is a :class:`~ale_cli.passes.engine.Source`.

:func:`open_rows` decides, in this order:

1. a store (``--store``) made with ``ale compute --pairs`` from the same model, data and
   options, for the DALE estimator: its chunks give X, the predictions and the stored
   mixed derivatives (:class:`~ale_cli.store.npz.StoreFile`, in parts of chunks); the
   model is loaded only for the pairs the store lacks. Otherwise the store is not used,
   and a note says why;
2. the data file read chunk by chunk (:class:`~ale_cli.data.sources.DataSource`, in the
   parts the engine runs apart), the model loaded on its first chunk, unless
   :func:`reading` says the whole table is needed;
3. the whole table in memory, one chunk (:class:`~ale_cli.passes.engine.ArraySource`);
   an engine that runs parts apart (Dask) refuses it, as it refuses it for every
   estimator.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ale_cli.data.sources import DataSource
from ale_cli.data.stream import inputs_sha256
from ale_cli.estimators.inputs import ModelInputs, Opened, model_source, open_inputs
from ale_cli.estimators.inputs_stream import (
    NeedsWholeTable,
    Reading,
    Streamed,
    open_streamed,
    reading_of,
)
from ale_cli.estimators.pairs import Columns, Pair
from ale_cli.io.files import sha256_file
from ale_cli.io.jsonio import to_jsonable
from ale_cli.models import Columns as ModelColumns
from ale_cli.models import detect_format
from ale_cli.models.profile import DataProfile
from ale_cli.passes.engine import ArraySource, Engine
from ale_cli.passes.shipped import ShippedModel
from ale_cli.store.npz import StoreFile, open_store, store_sha256
from ale_cli.summary.build import store_info

if TYPE_CHECKING:
    from ale_cli.models.base import Model

#: Options of ``ale compute`` that decide the rows and the output; a store matches an
#: ``ale interact`` run when these, the model bytes and the data bytes are the same.
MATCH_OPTIONS = (
    "data_format",
    "inputs",
    "exclude",
    "dropna",
    "model_format",
    "output",
    "categorical",
)


def store_mismatch(meta: dict[str, Any], request: ModelInputs) -> str | None:
    """Why a store's meta does not describe the rows of ``request`` (None if it does)."""
    if meta.get("model", {}).get("sha256") != sha256_file(request.model):
        return "the model file differs"
    if meta.get("data", {}).get("sha256") != inputs_sha256(request.data):
        return "the data file differs"
    wanted = {k: v for k, v in request.result_options().items() if k in MATCH_OPTIONS}
    have = meta.get("options") or {}
    for key, value in to_jsonable(wanted).items():
        if have.get(key) != value:
            return f"it was made with other options ({key})"
    return None


def store_unused(
    path: Path, estimator: str | None, inputs: ModelInputs, meta: Callable[[], dict[str, Any]]
) -> str | None:
    """Why the store at ``path`` is not used (a note), None when it is; ``meta`` reads
    the store's meta (only when the estimator may use it)."""
    if estimator == "ale":
        return f"store '{path}' is not used by the ale estimator (it needs the model)"
    why = store_mismatch(meta(), inputs)
    if why is not None:
        return f"store '{path}' does not match ({why}); computing from the model"
    return None


def reading(
    inputs: ModelInputs, chunk_rows: int | None, engine: Engine | None
) -> Streamed | Reading:
    """The one decision between streaming the data (the first pass made and the model
    loaded on the first chunk: :func:`~ale_cli.estimators.inputs_stream.open_streamed`)
    and reading the whole table (a :class:`~ale_cli.estimators.inputs_stream.Reading`
    with its note: :func:`~ale_cli.estimators.inputs_stream.reading_of`, or a text column
    for a scikit-learn model, found by the first pass). An ``engine`` that runs the parts
    of the data apart refuses a whole table (None: no engine evaluates these rows)."""
    found = reading_of(inputs, chunk_rows)
    if found.whole or chunk_rows is None:
        if engine is not None:
            found.check(engine)
        return found
    try:
        return open_streamed(inputs, chunk_rows=chunk_rows)
    except NeedsWholeTable as exc:
        found = Reading.whole_table(str(exc))
        if engine is not None:
            found.check(engine)
        return found


def _data_source(found: Streamed, engine: Engine) -> DataSource:
    """The streamed data as a source, in the parts the engine runs apart (files, row-group
    ranges of large Parquet files; one part for this process)."""
    scan, passes = found.scan, found.passes
    source = DataSource(
        path=passes.path,
        fmt=scan.format,
        names=scan.names,
        categorical=scan.categorical,
        dropna=passes.dropna,
        chunk_rows=passes.chunk_rows,
        inputs=passes.inputs,
        exclude=passes.exclude,
    )
    return source.split(engine.slots)


@dataclass(frozen=True)
class Asked:
    """What decides the rows of an ``ale interact`` run: the model and data, the pairs,
    the store given (if any), the estimator asked for (None: the default) and the rows
    read at a time from a data file (None: the whole table)."""

    inputs: ModelInputs
    pairs: tuple[Pair, ...]
    store: Path | None
    estimator: str | None
    chunk_rows: int | None


@dataclass
class Rows:
    """The rows of a run and what comes with them.

    ``columns`` are the rows as a grid needs them; ``model`` is None when a store gives
    every value, ``ship`` is then None too, else it makes the model a handle an engine
    can ship to other processes (:class:`~ale_cli.passes.shipped.ShippedModel`, made only
    for such an engine); ``stored`` maps each pair the
    store holds (either order) to its row in the stored mixed derivatives;
    ``stored_prediction``: the chunks hold the predictions; ``summary_store`` makes the
    summary's ``store`` part given the rows dropped for non-finite values; ``where``
    names the rows in messages.
    """

    columns: Columns
    model: Model | None
    ship: Callable[[], ShippedModel] | None
    summary_store: Callable[[int], dict[str, Any]]
    where: str
    stored: dict[Pair, int] = field(default_factory=dict)
    stored_prediction: bool = False


@dataclass(frozen=True)
class _Loaded:
    """A model loaded on the data, and how to make it a handle an engine can ship."""

    model: Model
    ship: Callable[[], ShippedModel]


def _streamed_model(inputs: ModelInputs, found: Streamed) -> ShippedModel:
    """The model of streamed data as a handle: loaded, as here, on the first chunk."""
    scan = found.scan
    return ShippedModel.of(
        inputs.model,
        model_format=detect_format(inputs.model, inputs.model_format),
        options=inputs.load_options(),
        columns=ModelColumns(names=scan.names, fixed=scan.categorical, dtypes=scan.dtypes),
        head=scan.first,
        loaded=found.model,
    )


def _table_model(inputs: ModelInputs, opened: Opened) -> ShippedModel:
    """The model of the whole table as a handle: loaded, as here, with the profile of
    every row."""
    table = opened.table
    profile = DataProfile.of(table.X)
    return ShippedModel.of(
        inputs.model,
        model_format=detect_format(inputs.model, inputs.model_format),
        options=inputs.load_options(),
        columns=ModelColumns(
            names=table.feature_names,
            fixed=table.categorical,
            levels=table.levels,
            dtypes=table.dtypes,
        ),
        head=profile.head,
        profile=profile,
        loaded=opened.model,
    )


def open_rows(asked: Asked, engine: Engine, notes: list[str], timings: dict[str, float]) -> Rows:
    """The rows ``asked`` for (see the module docstring), as a source for ``engine``, with
    the notes and timings of opening them."""
    if asked.store is not None:
        rows = _store_rows(asked, asked.store, notes, timings)
        if rows is not None:
            return rows
    inputs = asked.inputs
    found = reading(inputs, asked.chunk_rows, engine)
    where = f"data '{inputs.data_label}'"
    if isinstance(found, Streamed):
        timings |= found.timings
        notes.extend(found.notes)
        scan, model = found.scan, found.model
        source = found.source(inputs, method=model.method)
        return Rows(
            Columns(
                _data_source(found, engine),
                scan.names,
                scan.categorical,
                scan.n_rows,
                scan.lo,
                scan.hi,
            ),  # fmt: skip
            model,
            partial(_streamed_model, inputs, found),
            lambda dropped: source | {"data": source["data"] | {"rows_nonfinite": dropped}},
            where,
        )
    if found.reason:
        notes.append(found.reason)
    opened = open_inputs(inputs)
    timings |= opened.timings
    notes.extend(opened.notes)
    table = opened.table
    made = model_source(inputs, opened, method=opened.model.method)
    return Rows(
        Columns(
            ArraySource({"X": table.X}), table.feature_names, tuple(table.categorical), len(table.X)
        ),  # fmt: skip
        opened.model,
        partial(_table_model, inputs, opened),
        lambda dropped: made | {"data": made["data"] | {"rows_nonfinite": dropped}},
        where,
    )


def _store_rows(
    asked: Asked, path: Path, notes: list[str], timings: dict[str, float]
) -> Rows | None:
    """The rows of a store the estimator uses, else None (with the note saying why)."""
    opened: list[StoreFile] = []

    def meta() -> dict[str, Any]:  # the store is opened only when the estimator may use it
        opened.append(open_store(path))
        return opened[0].meta

    unused = store_unused(path, asked.estimator, asked.inputs, meta)
    if unused is not None:
        notes.append(unused)
        return None
    store = opened[0]
    digest = _sha256_in_background(path)  # overlaps the passes
    stored = {pair: i for i, pair in enumerate(store.pairs())}
    stored |= {(b, a): i for (a, b), i in stored.items() if (b, a) not in stored}
    loaded = None
    missing = [p for p in asked.pairs if p not in stored]
    if missing:
        listed = " ".join(",".join(p) for p in missing)
        notes.append(
            f"store '{path}' has no mixed derivatives of {listed}; computing "
            "them (add them to the store with 'ale compute --pairs')"
        )
        loaded = _load_model(asked, timings, notes)
    lo_hi = store.x_range()
    if lo_hi is not None and len(lo_hi[0]) != len(store.input_names):
        lo_hi = None
    categorical = tuple(store.meta.get("categorical_features") or ())
    columns = Columns(
        store, store.input_names, categorical, store.n_rows,
        *(lo_hi or (None, None)),
    )  # fmt: skip
    return Rows(
        columns,
        None if loaded is None else loaded.model,
        None if loaded is None else loaded.ship,
        lambda dropped: store_info(path, store, sha256=digest.result()),
        f"store '{path}'",
        stored=stored,
        stored_prediction=True,
    )


def _load_model(asked: Asked, timings: dict[str, float], notes: list[str]) -> _Loaded:
    """The model for the pairs a store lacks: loaded on the data file's first chunk after
    a pass over it, or with the whole table when the inputs need that (a note says why)."""
    found = reading(asked.inputs, asked.chunk_rows, None)  # no engine reads the data
    if isinstance(found, Streamed):
        timings |= found.timings
        notes.extend(found.notes)
        return _Loaded(found.model, partial(_streamed_model, asked.inputs, found))
    if found.reason:
        notes.append(found.reason)
    opened = open_inputs(asked.inputs)
    timings |= opened.timings
    notes.extend(opened.notes)
    return _Loaded(opened.model, partial(_table_model, asked.inputs, opened))


def _sha256_in_background(path: Path) -> Future[str]:
    """The store's sha256 (:func:`~ale_cli.store.npz.store_sha256`) by a helper thread
    (hashlib releases the GIL)."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ale-hash")
    future = pool.submit(store_sha256, path)
    pool.shutdown(wait=False)  # the thread ends with the hash
    return future
