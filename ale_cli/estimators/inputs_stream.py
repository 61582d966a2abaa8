"""The model and the data of ``ale classic`` / ``ale interact`` read chunk by chunk:
:func:`reading_of` decides whether the data are streamed, :func:`open_streamed` makes the
first pass and loads the model on the first chunk, with the whole file's dtypes."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ale_cli.data.sources import DataSource
from ale_cli.data.stream import find_text_levels
from ale_cli.data.table import is_frame
from ale_cli.errors import InputError, NotNumeric
from ale_cli.estimators.inputs import (
    TEXT_FORMATS,
    ModelInputs,
    columns_notes,
    load_timed,
    provenance,
)
from ale_cli.models import Columns, detect_format
from ale_cli.models.base import Model
from ale_cli.models.columns import ColumnOrder, model_column_order
from ale_cli.models.objects import ModelObject
from ale_cli.models.profile import DataProfile
from ale_cli.passes.engine import Engine
from ale_cli.passes.shipped import ShippedModel
from ale_cli.passes.spool import Scan, scan_source


@dataclass(frozen=True)
class Reading:
    """How the data are read: as a whole table with the note saying why (``reason``, "" for
    a DataFrame), or chunk by chunk (not ``whole``)."""

    reason: str = ""
    whole: bool = True

    def check(self, engine: Engine) -> None:
        """InputError naming ``engine`` when it runs parts apart and the data are read whole."""
        if self.whole and engine.splits:
            reason = self.reason or "the data are read whole (a DataFrame)"
            raise InputError(
                "{param} dask evaluates the model on partitions of a data file, but "
                f"{reason.removeprefix('read the whole table: ')}; use {{param}} local",
                param="engine",
            )


#: the data read chunk by chunk
STREAMED = Reading(whole=False)


def reading_of(inputs: ModelInputs, chunk_rows: int | None) -> Reading:
    """How ``inputs`` are read: whole for a DataFrame or without ``chunk_rows`` (no note) or
    when the model's columns are matched by name (a note), else streamed."""
    if chunk_rows is None or is_frame(inputs.data):
        return Reading()
    if isinstance(inputs.model, ModelObject):
        return Reading("read the whole table: the model is an object in memory")
    order = model_column_order(inputs.model, detect_format(inputs.model, inputs.model_format))
    if order.names is not None:
        return Reading(f"read the whole table: {order.source} matches the data's columns by name")
    return STREAMED


@dataclass(frozen=True)
class Streamed:
    """The data as passes over the file and the model loaded on its first chunk."""

    passes: DataSource
    scan: Scan
    model: Model
    #: the model adapter's columns: the file's names, fixed columns and dtypes
    model_columns: Columns
    features: tuple[str, ...]
    columns: tuple[int, ...]
    timings: dict[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def data_source(self, engine: Engine) -> DataSource:
        """The data as a source, in the parts ``engine`` runs apart."""
        return self.passes.split(engine.slots)

    def source(self, inputs: ModelInputs, *, method: str) -> dict[str, Any]:
        """A summary's ``store`` part (:func:`~.inputs.provenance`)."""
        scan = self.scan
        return provenance(inputs, self.model, scan.sha256, scan.n_rows, scan.names, method)


def open_streamed(inputs: ModelInputs, *, chunk_rows: int) -> Streamed:
    """The first pass over the data (a scikit-learn model's text columns read as the codes of
    their levels, a pass before) and the model loaded and checked on the first chunk."""
    inputs.check_files()
    model_format = detect_format(inputs.model, inputs.model_format)
    passes = inputs.passes(chunk_rows)
    t = time.perf_counter()
    try:
        scan = scan_source(passes)
    except NotNumeric:
        if model_format not in TEXT_FORMATS:  # tensor models take numbers only
            raise
        levels = find_text_levels(lambda text: inputs.passes(chunk_rows, text).open())
        passes = inputs.passes(chunk_rows, levels)
        scan = scan_source(passes)
    passes = replace(passes, fmt=scan.format, names=scan.names, categorical=scan.categorical)
    features, columns = inputs.explained(scan.names)
    timings = {"load_data_s": time.perf_counter() - t}
    model_columns = Columns(
        names=scan.names, fixed=scan.categorical, levels=scan.levels, dtypes=scan.dtypes
    )
    model = load_timed(inputs, model_format, model_columns, scan.first, timings)
    notes = columns_notes(inputs, model_format, ColumnOrder(), scan.names, scan.names, model)
    return Streamed(passes, scan, model, model_columns, features, columns, timings, notes)


def shipped(
    inputs: ModelInputs,
    model: Model,
    columns: Columns,
    head: np.ndarray,
    *,
    profile: DataProfile | None = None,
    sha256: str | None = None,
) -> ShippedModel:
    """The model loaded here as a handle that loads it the same way elsewhere."""
    return ShippedModel.of(
        inputs.model,
        model_format=detect_format(inputs.model, inputs.model_format),
        options=inputs.load_options(),
        columns=columns,
        head=head,
        profile=profile,
        loaded=model,
        sha256=sha256,
    )
