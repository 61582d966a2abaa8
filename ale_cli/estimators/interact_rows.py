"""Where the rows of ``ale interact`` come from: a store, a data file read chunk by chunk,
or the whole table in memory; each is a :class:`~ale_cli.passes.engine.Source`.

:func:`open_rows` decides, in this order:

1. a store (``--store``) made with ``ale compute --pairs`` from the same model, data and
   options, for the DALE estimator: its chunks give X, the predictions and the stored
   mixed derivatives (:class:`StoreSource`); the model is loaded only for the pairs the
   store lacks. Otherwise the store is not used, and a note says why;
2. the data file read chunk by chunk (:class:`PassesSource`), the model loaded on its
   first chunk, unless :func:`reading` says the whole table is needed;
3. the whole table in memory, one chunk (:class:`~ale_cli.passes.engine.ArraySource`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ale_cli.data.stream import inputs_sha256
from ale_cli.errors import InputError
from ale_cli.estimators.inputs import ModelInputs, model_source, open_inputs
from ale_cli.estimators.inputs_stream import Streamed, streamed_or_reason, whole_table_reason
from ale_cli.estimators.pairs import Columns, Pair
from ale_cli.io.files import sha256_file
from ale_cli.io.jsonio import to_jsonable
from ale_cli.passes.engine import ArraySource, Chunk, Source
from ale_cli.passes.spool import DataPasses
from ale_cli.store.npz import StoreFile, open_store, store_sha256
from ale_cli.summary.build import store_info

if TYPE_CHECKING:
    from ale_cli.estimators.interact import InteractRequest
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


def store_unused(request: InteractRequest, meta: Callable[[], dict[str, Any]]) -> str | None:
    """Why the store of ``request`` is not used (a note), None when it is; ``meta`` reads
    the store's meta (only when the estimator may use it)."""
    path = request.store
    if request.estimator == "ale":
        return f"store '{path}' is not used by the ale estimator (it needs the model)"
    why = store_mismatch(meta(), request.inputs)
    if why is not None:
        return f"store '{path}' does not match ({why}); computing from the model"
    return None


@dataclass(frozen=True)
class WholeTable:
    """The data are read as one table in memory; ``note`` says why (None: nothing to say,
    a DataFrame or no chunk size)."""

    note: str | None = None


def reading(inputs: ModelInputs, chunk_rows: int | None, engine: str) -> Streamed | WholeTable:
    """The one decision between streaming the data (the first pass made and the model
    loaded on the first chunk: :func:`~ale_cli.estimators.inputs_stream.open_streamed`)
    and reading the whole table (:func:`~ale_cli.estimators.inputs_stream.whole_table_reason`,
    or what the first pass found)."""
    reason = whole_table_reason(inputs, chunk_rows)
    found = streamed_or_reason(inputs, chunk_rows=chunk_rows, reason=reason, engine=engine)
    return found if isinstance(found, Streamed) else WholeTable(found or None)


@dataclass(frozen=True)
class StoreSource:
    """A store file read by its own chunks: X as float64 (checked finite, with the row's
    number in the store) and the other arrays as stored."""

    path: Path

    def parts(self) -> Sequence[Source]:
        return (self,)

    def chunks(self, arrays: Sequence[str]) -> Iterator[Chunk]:
        store = open_store(self.path)
        offset = 0
        for found in store.chunks(tuple(arrays)):
            chunk = dict(found)
            if "X" in chunk:
                chunk["X"] = np.asarray(chunk["X"], dtype=np.float64)
                _check_finite(store, chunk["X"], offset)
            yield Chunk(offset, chunk)
            offset += len(chunk["X"]) if "X" in chunk else len(next(iter(chunk.values())))


def _check_finite(store: StoreFile, X: np.ndarray, offset: int) -> None:
    bad = ~np.isfinite(X)
    if bad.any():
        rows, cols = np.nonzero(bad)
        raise InputError(
            f"store '{store.path}': array 'X' has NaN or infinite values (first: row "
            f"{offset + int(rows[0])}, input '{store.input_names[cols[0]]}')"
        )


@dataclass(frozen=True)
class PassesSource:
    """A data file read chunk by chunk (:class:`~ale_cli.passes.spool.DataPasses`): X of
    every chunk, float64."""

    passes: DataPasses

    def parts(self) -> Sequence[Source]:
        return (self,)

    def chunks(self, arrays: Sequence[str]) -> Iterator[Chunk]:
        offset = 0
        for X in self.passes():
            yield Chunk(offset, {"X": X})
            offset += len(X)


@dataclass
class Rows:
    """The rows of a run and what comes with them.

    ``columns`` are the rows as a grid needs them; ``model`` is None when a store gives
    every value; ``stored`` maps each pair the store holds (either order) to its row in
    the stored mixed derivatives; ``stored_prediction``: the chunks hold the predictions;
    ``summary_store`` makes the summary's ``store`` part given the rows dropped for
    non-finite values; ``where`` names the rows in messages.
    """

    columns: Columns
    model: Model | None
    summary_store: Callable[[int], dict[str, Any]]
    where: str
    stored: dict[Pair, int] = field(default_factory=dict)
    stored_prediction: bool = False


def open_rows(request: InteractRequest, notes: list[str], timings: dict[str, float]) -> Rows:
    """The rows of ``request`` (see the module docstring), with the notes and timings of
    opening them."""
    if request.store is not None:
        rows = _store_rows(request, request.store, notes, timings)
        if rows is not None:
            return rows
    inputs = request.inputs
    found = reading(inputs, request.chunk_rows, request.engine)
    where = f"data '{inputs.data_label}'"
    if isinstance(found, Streamed):
        timings |= found.timings
        notes.extend(found.notes)
        scan, model = found.scan, found.model
        source = found.source(inputs, method=model.method)
        return Rows(
            Columns(
                PassesSource(found.passes),
                scan.names,
                scan.categorical,
                scan.n_rows,
                scan.lo,
                scan.hi,
            ),  # fmt: skip
            model,
            lambda dropped: source | {"data": source["data"] | {"rows_nonfinite": dropped}},
            where,
        )
    if found.note:
        notes.append(found.note)
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
        lambda dropped: made | {"data": made["data"] | {"rows_nonfinite": dropped}},
        where,
    )


def _store_rows(
    request: InteractRequest, path: Path, notes: list[str], timings: dict[str, float]
) -> Rows | None:
    """The rows of a store the estimator uses, else None (with the note saying why)."""
    opened: list[StoreFile] = []

    def meta() -> dict[str, Any]:  # the store is opened only when the estimator may use it
        opened.append(open_store(path))
        return opened[0].meta

    unused = store_unused(request, meta)
    if unused is not None:
        notes.append(unused)
        return None
    store = opened[0]
    digest = _sha256_in_background(path)  # overlaps the passes
    stored = {pair: i for i, pair in enumerate(store.pairs())}
    stored |= {(b, a): i for (a, b), i in stored.items() if (b, a) not in stored}
    model = None
    missing = [p for p in request.pairs if p not in stored]
    if missing:
        listed = " ".join(",".join(p) for p in missing)
        notes.append(
            f"store '{path}' has no mixed derivatives of {listed}; computing "
            "them (add them to the store with 'ale compute --pairs')"
        )
        model = _load_model(request, timings, notes)
    lo_hi = store.x_range()
    if lo_hi is not None and len(lo_hi[0]) != len(store.input_names):
        lo_hi = None
    categorical = tuple(store.meta.get("categorical_features") or ())
    columns = Columns(
        StoreSource(store.path), store.input_names, categorical, store.n_rows,
        *(lo_hi or (None, None)),
    )  # fmt: skip
    return Rows(
        columns,
        model,
        lambda dropped: store_info(path, store, sha256=digest.result()),
        f"store '{path}'",
        stored=stored,
        stored_prediction=True,
    )


def _load_model(request: InteractRequest, timings: dict[str, float], notes: list[str]) -> Model:
    """The model for the pairs a store lacks: loaded on the data file's first chunk after
    a pass over it, or with the whole table when the inputs need that (a note says why)."""
    found = reading(request.inputs, request.chunk_rows, "local")
    if isinstance(found, Streamed):
        timings |= found.timings
        notes.extend(found.notes)
        return found.model
    if found.note:
        notes.append(found.note)
    opened = open_inputs(request.inputs)
    timings |= opened.timings
    notes.extend(opened.notes)
    return opened.model


def _sha256_in_background(path: Path) -> Future[str]:
    """The store's sha256 (:func:`~ale_cli.store.npz.store_sha256`) by a helper thread
    (hashlib releases the GIL)."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ale-hash")
    future = pool.submit(store_sha256, path)
    pool.shutdown(wait=False)  # the thread ends with the hash
    return future
