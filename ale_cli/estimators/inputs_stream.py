"""The model and the data of ``ale classic`` / ``ale interact`` when the data are read
chunk by chunk: whether they can be, the first pass, and the model loaded on a chunk.

:func:`reading_of` decides (a :class:`Reading`): the data are streamed when they are a file
(CSV, Parquet, or a directory of Parquet files) and the model takes the rows as
they are; the whole table is read instead, with a note saying why, when

- the model's columns are matched by name (a ``MODEL.columns.json`` file, or an
  ONNX graph with one named input per column);
- the command needs every row at once (the caller's own reasons: per-level
  estimates of categorical or discrete features, bootstrap bands);
- a scikit-learn model gets text columns (encoded with levels found in the
  whole file): found in the first pass, which then stops.

:func:`open_streamed` makes the first pass (:meth:`~ale_cli.passes.spool.DataPasses.scan`)
and loads the model on the first chunk, with the whole file's dtypes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ale_cli.data.sources import DataSource
from ale_cli.data.stream import DEFAULT_CHUNK_ROWS, open_stream
from ale_cli.data.table import is_frame
from ale_cli.errors import InputError
from ale_cli.estimators.inputs import (
    POSITIONAL_FORMATS,
    TEXT_FORMATS,
    ModelInputs,
    feature_columns,
    model_record,
    read_inputs_table,
)
from ale_cli.models import Columns, detect_format, load_model
from ale_cli.models.base import Model
from ale_cli.models.columns import ColumnOrder, model_column_order, order_note
from ale_cli.models.objects import ModelObject
from ale_cli.passes.engine import LOCAL, ArraySource, Engine, Source
from ale_cli.passes.spool import DataPasses, Scan
from ale_cli.store.npz import Store, StoreFile, open_store


class NeedsWholeTable(Exception):
    """The first pass found something only the whole-table reader handles (the reason)."""


@dataclass(frozen=True)
class Reading:
    """How the data are read: chunk by chunk (``whole`` False) or as a whole table, with
    the note that says why (``reason``: "read the whole table: ...", or "" where no note
    is needed, a DataFrame).

    >>> Reading.whole_table("read the whole table: the levels come from every row").note()
    'read the whole table: the levels come from every row'
    >>> STREAMED.note() is None
    True
    """

    whole: bool
    reason: str = ""

    @classmethod
    def whole_table(cls, reason: str = "") -> Reading:
        return cls(True, reason)

    def note(self) -> str | None:
        """The note a run reports (None: streamed, or no note needed)."""
        return self.reason or None

    def check(self, engine: Engine) -> None:
        """InputError naming ``engine`` when it runs the parts of the data apart (Dask) and
        these data must be read whole; None otherwise."""
        if self.whole and engine.splits:
            raise needs_local(self.reason or "the data are read whole (a DataFrame)")


#: the data read chunk by chunk
STREAMED = Reading(False)


def needs_local(reason: str) -> InputError:
    """The refusal of the Dask engine for inputs only the whole table handles (``reason``:
    the note the local engine gives for reading the whole table)."""
    why = reason.removeprefix("read the whole table: ")
    return InputError(
        f"{{param}} dask evaluates the model on partitions of a data file, but {why}; use "
        "{param} local",
        param="engine",
    )


def reading_of(inputs: ModelInputs, chunk_rows: int | None) -> Reading:
    """How ``inputs`` are read: whole for a DataFrame or without ``chunk_rows`` (no note),
    whole when the model's columns are matched by name (a note), else streamed."""
    if chunk_rows is None or is_frame(inputs.data):
        return Reading.whole_table()
    if isinstance(inputs.model, ModelObject):
        return Reading.whole_table("read the whole table: the model is an object in memory")
    order = model_column_order(inputs.model, detect_format(inputs.model, inputs.model_format))
    if order.names is not None:
        return Reading.whole_table(
            f"read the whole table: {order.source} matches the data's columns by name"
        )
    return STREAMED


@dataclass(frozen=True)
class Streamed:
    """The data as passes over the file and the model loaded on its first chunk."""

    passes: DataPasses
    scan: Scan
    model: Model
    features: tuple[str, ...]
    columns: tuple[int, ...]
    timings: dict[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def source(self, inputs: ModelInputs, *, method: str) -> dict[str, Any]:
        """A summary's ``store`` part, as :func:`~.inputs.model_source` makes it."""
        return {
            "path": None,
            "model": model_record(inputs.model, self.model.format),
            "data": {"path": inputs.data_label, "sha256": self.scan.sha256},
            "method": method,
            "output": self.model.describe().get("output"),
            "n_rows": self.scan.n_rows,
            "inputs": list(self.scan.names),
        }


def open_streamed(inputs: ModelInputs, *, chunk_rows: int) -> Streamed:
    """The first pass over the data and the model loaded and checked on the first chunk.

    Raises :class:`NeedsWholeTable` when a scikit-learn model meets a text column.
    """
    inputs.check_files()
    model_format = detect_format(inputs.model, inputs.model_format)
    passes = DataPasses(
        path=Path(inputs.data),
        data_format=inputs.data_format,
        inputs=inputs.inputs,
        exclude=inputs.exclude,
        dropna=inputs.dropna,
        categorical=inputs.categorical,
        chunk_rows=chunk_rows,
    )
    t = time.perf_counter()
    try:
        scan = passes.scan()
    except InputError as exc:
        if model_format in TEXT_FORMATS and "is not numeric" in str(exc):
            raise NeedsWholeTable(
                "read the whole table: a text column is encoded with the levels of the whole file"
            ) from None
        raise
    features, columns = feature_columns(
        inputs.features, scan.names, where=f"data file '{inputs.data_label}'"
    )
    timings = {"load_data_s": time.perf_counter() - t}
    t = time.perf_counter()
    model = load_model(
        inputs.model,
        model_format=model_format,
        options=inputs.load_options(),
        columns=Columns(names=scan.names, fixed=scan.categorical, dtypes=scan.dtypes),
        X=scan.first,
    )
    timings["load_model_s"] = time.perf_counter() - t
    names_in = model.describe().get("feature_names_in")
    order = ColumnOrder()
    if names_in is not None:  # scikit-learn: the adapter matches the columns by name
        order = ColumnOrder(tuple(names_in), "the model's feature_names_in_")
    note = order_note(
        order,
        scan.names,
        order.names or scan.names,
        positional=model_format in POSITIONAL_FORMATS and inputs.inputs is None,
    )
    return Streamed(
        passes=passes,
        scan=scan,
        model=model,
        features=features,
        columns=columns,
        timings=timings,
        notes=() if note is None else (note,),
    )


def source_of(
    given: ModelInputs | Store | StoreFile | str | Path,
    *,
    engine: Engine = LOCAL,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
) -> Source:
    """What a command was given as a :class:`~ale_cli.data.source.Source`, for ``engine``:

    - a store in memory: one chunk; an opened store: its ranges of chunks; a path to a
      store file or a directory store: the store opened (:func:`~ale_cli.store.npz.
      open_store`);
    - model inputs read chunk by chunk (:func:`reading_of`): the data file or dataset
      (:class:`~ale_cli.data.sources.DataSource`), cut into partitions for an engine that
      splits;
    - model inputs read whole (a DataFrame, columns matched by name): the table's rows in
      chunks of ``chunk_rows``; an engine that splits refuses them (:meth:`Reading.check`).

    Chunks of data hold ``X`` (the model's inputs); chunks of stores the row arrays asked.
    """
    if isinstance(given, Store | StoreFile):
        return given
    if not isinstance(given, ModelInputs):
        return open_store(given)
    reading = reading_of(given, chunk_rows)
    reading.check(engine)
    if reading.whole:
        return ArraySource({"X": read_inputs_table(given).X}, chunk_rows=chunk_rows)
    header = open_stream(
        given.data,
        fmt=given.data_format,
        inputs=given.inputs,
        exclude=given.exclude,
        dropna=given.dropna,
        categorical=given.categorical,
        chunk_rows=chunk_rows,
    )
    header.close()
    data = DataSource.of(header, inputs=given.inputs, exclude=given.exclude)
    return data.split(engine.slots if engine.splits else None)
