"""The options and the opening of the estimators that call the model on the data
(``ale classic``, ``ale interact``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from ale_cli.checks import check_count
from ale_cli.data.stream import DEFAULT_CHUNK_ROWS
from ale_cli.estimators.bins import DEFAULT_BINS, FixedBins
from ale_cli.estimators.inputs import ModelInputs, Opened, open_inputs
from ale_cli.estimators.inputs_stream import Reading, Streamed, open_streamed, reading_of
from ale_cli.estimators.rows import Rows
from ale_cli.passes.engine import LOCAL, Engine

#: quantile bins, as ALEPlot and PyALE
DEFAULT_BINNING = "quantile"


@dataclass(frozen=True)
class ModelRequest:
    """The options of ``ale classic`` and ``ale interact`` on the data and the bins (None
    ``bins``/``binning``: the default, or unused with ``edges``); ``chunk_rows``: rows read
    at a time from a data file (None: the whole table at once)."""

    inputs: ModelInputs
    bins: int | None = None
    binning: str | None = None
    edges: Path | None = None
    chunk_rows: int | None = DEFAULT_CHUNK_ROWS
    default_bins: ClassVar[int] = DEFAULT_BINS

    def __post_init__(self) -> None:
        if self.chunk_rows is not None:
            check_count(self.chunk_rows, "chunk_rows", least=2)
        if self.edges is None:  # the edges file is read (and checked) when the run starts
            self.fixed_bins()

    def fixed_bins(self) -> FixedBins:
        """The bins asked for (the edges file read)."""
        return FixedBins.from_options(
            bins=self.bins,
            binning=self.binning,
            edges=self.edges,
            default=DEFAULT_BINNING,
            default_bins=self.default_bins,
        )


def open_model_rows(
    inputs: ModelInputs, chunk_rows: int | None, engine: Engine | None
) -> tuple[Rows, Streamed | Opened, Reading]:
    """The model loaded on the data, streamed unless they need the whole table
    (:func:`~.inputs_stream.reading_of`), and the data as rows for ``engine`` (None: no
    engine reads them)."""
    reading = reading_of(inputs, chunk_rows)
    if not reading.whole and chunk_rows is not None:
        found = open_streamed(inputs, chunk_rows=chunk_rows)
        s = found.scan
        source = found.data_source(engine or LOCAL)
        return Rows(source, s.names, s.n_rows, s.lo, s.hi, s.categorical), found, reading
    if engine is not None:
        reading.check(engine)
    opened = open_inputs(inputs)
    table = opened.table
    return Rows.of(table.X, table.feature_names, table.categorical), opened, reading
