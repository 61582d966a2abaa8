"""Where the rows of ``ale interact`` come from, as a :class:`~ale_cli.passes.engine.Source`:
a matching store made with ``ale compute --pairs`` (DALE only; the model loaded only for
the pairs it lacks, else a note says why it is not used), the data file read chunk by
chunk, or the whole table in memory (:func:`~ale_cli.estimators.inputs_stream.open_reading`).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ale_cli.data.stream import inputs_sha256
from ale_cli.estimators.inputs import ModelInputs, Opened, model_source, open_inputs, table_columns
from ale_cli.estimators.inputs_stream import Streamed, open_reading, shipped
from ale_cli.estimators.pairs import Columns, Pair
from ale_cli.io.files import sha256_file
from ale_cli.io.jsonio import to_jsonable
from ale_cli.models.profile import DataProfile
from ale_cli.passes.engine import ArraySource, Engine
from ale_cli.passes.shipped import ShippedModel
from ale_cli.store.format import one_output
from ale_cli.store.npz import StoreFile, open_store, store_sha256
from ale_cli.summary.build import store_info

if TYPE_CHECKING:
    from ale_cli.models.base import Model

#: options of ``ale compute`` a store must share (with the model and data bytes) to be used
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
    """Why the store at ``path`` is not used (a note), None when it is."""
    if estimator == "ale":
        return f"store '{path}' is not used by the ale estimator (it needs the model)"
    why = store_mismatch(meta(), inputs)
    if why is not None:
        return f"store '{path}' does not match ({why}); computing from the model"
    return None


@dataclass(frozen=True)
class Asked:
    """What decides the rows of an ``ale interact`` run (None ``estimator``: the default;
    None ``chunk_rows``: the whole table)."""

    inputs: ModelInputs
    pairs: tuple[Pair, ...]
    store: Path | None
    estimator: str | None
    chunk_rows: int | None


@dataclass
class Rows:
    """The rows of a run: ``model`` and ``ship`` (its shippable handle) None when a store
    gives every value; ``stored``: each stored pair (either order) to its row of the mixed
    derivatives; ``summary_store(dropped)``: the summary's ``store`` part."""

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


def _table_model(inputs: ModelInputs, opened: Opened) -> ShippedModel:
    """The model of the whole table as a handle, with the profile of every row."""
    profile = DataProfile.of(opened.table.X)
    table_cols = table_columns(opened.table)
    return shipped(inputs, opened.model, table_cols, profile.head, profile=profile)


def open_rows(asked: Asked, engine: Engine, notes: list[str], timings: dict[str, float]) -> Rows:
    """The rows ``asked`` for as a source for ``engine``, with their notes and timings."""
    if asked.store is not None:
        rows = _store_rows(asked, asked.store, notes, timings)
        if rows is not None:
            return rows
    inputs = asked.inputs
    found = open_reading(inputs, asked.chunk_rows, engine)
    where = f"data '{inputs.data_label}'"
    if isinstance(found, Streamed):
        timings |= found.timings
        notes.extend(found.notes)
        scan, model = found.scan, found.model
        source = found.source(inputs, method=model.method)
        return Rows(
            Columns(
                found.data_source(engine),
                scan.names,
                scan.categorical,
                scan.n_rows,
                scan.lo,
                scan.hi,
            ),  # fmt: skip
            model,
            partial(found.ship, inputs),
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
        one_output(opened[0].meta, f"store '{path}'", "ale interact")
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
    """The model for the pairs a store lacks, loaded on the streamed or whole data."""
    found = open_reading(asked.inputs, asked.chunk_rows, None)  # no engine reads the data
    if isinstance(found, Streamed):
        timings |= found.timings
        notes.extend(found.notes)
        return _Loaded(found.model, partial(found.ship, asked.inputs))
    if found.reason:
        notes.append(found.reason)
    opened = open_inputs(asked.inputs)
    timings |= opened.timings
    notes.extend(opened.notes)
    return _Loaded(opened.model, partial(_table_model, asked.inputs, opened))


def _sha256_in_background(path: Path) -> Future[str]:
    """The store's sha256 by a helper thread."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ale-hash")
    future = pool.submit(store_sha256, path)
    pool.shutdown(wait=False)  # the thread ends with the hash
    return future
