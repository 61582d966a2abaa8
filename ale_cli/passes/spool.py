"""A data file read in several passes, chunk by chunk, and predictions spooled to disk.

The streaming estimators that call the model (``ale classic``, ``ale interact``)
read the data more than once: a first pass for each column's range and the
row count (:meth:`DataPasses.scan`), two for exact type-1 quantile edges
(:func:`~ale_cli.core.outofcore.chunked_quantile_edges`), a last one for the
model evaluations. Every pass opens the file again with
:func:`~ale_cli.data.stream.open_stream` and yields the same rows in the
same order (float64 chunks of ``chunk_rows`` rows), so memory is one chunk.

:class:`PredictionSpool` keeps the model's predictions on the rows used in a
temporary file (8 bytes a row on disk, not in memory) and gives their count,
mean and 101 percentiles exactly as
:func:`~ale_cli.core.statistics.prediction_distribution` does on the whole
array (numpy's linear interpolation between order statistics, which are
selected out of core).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ale_cli.core.outofcore import order_statistics
from ale_cli.data.stream import DEFAULT_CHUNK_ROWS, TableStream, open_stream


@dataclass(frozen=True)
class Scan:
    """What the first pass over a data file found.

    Attributes
    ----------
    names : tuple of str, length D
        The model inputs, in the order of the columns of every chunk.
    categorical : tuple of str
    n_rows : int
        N, the rows kept (after ``dropna``).
    lo, hi : ndarray, shape (D,)
        Each column's minimum and maximum over the N rows.
    first : ndarray, shape (n_0, D), float64
        The first chunk (the model is loaded and checked on it).
    format, sha256 : str
    rows_read, rows_dropped : int
    dropped_columns : tuple of str
    dtypes : dict of str to str
        The pandas dtype each column has in the whole file.
    """

    names: tuple[str, ...]
    categorical: tuple[str, ...]
    n_rows: int
    lo: np.ndarray
    hi: np.ndarray
    first: np.ndarray
    format: str
    sha256: str
    rows_read: int
    rows_dropped: int
    dropped_columns: tuple[str, ...]
    dtypes: dict[str, str]
    #: the levels of the text columns (read as their codes)
    levels: dict[str, tuple[Any, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class DataPasses:
    """The input columns of a data file, read again on every call (one pass each).

    ``passes()`` yields float64 chunks (n_i, D) of ``chunk_rows`` rows (the last
    one shorter), the same rows in the same order every time.
    """

    path: Path
    data_format: str | None = None
    inputs: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()
    dropna: bool = False
    categorical: tuple[str, ...] = ()
    chunk_rows: int = DEFAULT_CHUNK_ROWS
    #: the levels of the text columns (:mod:`ale_cli.data.text_levels`)
    text: tuple[tuple[str, tuple[Any, ...]], ...] = ()

    def open(self) -> TableStream:
        return open_stream(
            self.path,
            fmt=self.data_format,
            inputs=self.inputs,
            exclude=self.exclude,
            dropna=self.dropna,
            categorical=self.categorical,
            chunk_rows=self.chunk_rows,
            text=dict(self.text),
        )

    def __call__(self) -> Iterator[np.ndarray]:
        for X in self.open():
            yield np.asarray(X, dtype=np.float64)

    def columns(self, cols: Sequence[int]) -> Iterator[np.ndarray]:
        """One pass yielding only the columns ``cols`` of every chunk, (n_i, len(cols))."""
        for X in self.open():
            yield np.asarray(X[:, list(cols)], dtype=np.float64)

    def scan(self) -> Scan:
        """The first pass: the rows, each column's range, the file's hash and dtypes."""
        stream = self.open()
        d = len(stream.feature_names)
        lo, hi = np.full(d, np.inf), np.full(d, -np.inf)
        n = 0
        first: np.ndarray | None = None
        for X in stream:
            if first is None:
                first = np.array(X, dtype=np.float64)
            np.minimum(lo, X.min(axis=0), out=lo)
            np.maximum(hi, X.max(axis=0), out=hi)
            n += len(X)
        if first is None or stream.sha256 is None:  # pragma: no cover - the stream raises
            raise RuntimeError("the data stream ended before its first chunk")
        return Scan(
            names=stream.feature_names,
            categorical=stream.categorical,
            n_rows=n,
            lo=lo,
            hi=hi,
            first=first,
            format=stream.format,
            sha256=stream.sha256,
            rows_read=stream.rows_read,
            rows_dropped=stream.rows_dropped,
            dropped_columns=stream.dropped_columns,
            dtypes=dict(stream.dtypes),
            levels=stream.levels,
        )


#: the percentile levels of :func:`~ale_cli.core.statistics.prediction_distribution`
_LEVELS = np.linspace(0.0, 1.0, 101)


class PredictionSpool:
    """Predictions appended chunk by chunk to a temporary file, then summarised.

    >>> with PredictionSpool() as spool:
    ...     spool.add(np.array([3.0, 1.0])); spool.add(np.array([2.0]))
    ...     d = spool.distribution()
    >>> d["n"], d["mean"], d["quantiles"][[0, 50, 100]].tolist()
    (3, 2.0, [1.0, 2.0, 3.0])
    """

    def __init__(self, chunk_rows: int = DEFAULT_CHUNK_ROWS) -> None:
        self._file: Any = tempfile.TemporaryFile(prefix="ale-predictions-")
        self._sizes: list[int] = []
        self._sum = 0.0
        self._lo = np.inf
        self._hi = -np.inf
        self._chunk_rows = max(int(chunk_rows), 1)

    def __enter__(self) -> PredictionSpool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._file.close()

    @property
    def n(self) -> int:
        return int(sum(self._sizes))

    def add(self, values: np.ndarray) -> None:
        """Append the finite values of ``values`` (n,)."""
        v = np.ascontiguousarray(values, dtype=np.float64)
        v = v[np.isfinite(v)]
        if not v.size:
            return
        v.tofile(self._file)
        self._sizes.append(int(v.size))
        self._sum += float(v.sum())
        self._lo = min(self._lo, float(v.min()))
        self._hi = max(self._hi, float(v.max()))

    def _chunks(self) -> Iterator[np.ndarray]:
        self._file.seek(0)
        left = self.n
        while left:
            part = np.fromfile(self._file, dtype=np.float64, count=min(left, self._chunk_rows))
            left -= part.size
            yield part[:, None]

    def distribution(self) -> dict[str, Any] | None:
        """``{"n", "mean", "quantiles" (101,)}`` as the summary records it; None when empty.

        The percentiles are numpy's default (linear) ``np.quantile`` of all the
        values: with ``h = (n - 1) p``, ``x_(floor h)`` and the next order
        statistic, interpolated with numpy's own formula.
        """
        n = self.n
        if n == 0:
            return None
        virtual = (n - 1) * _LEVELS
        below = np.floor(virtual).astype(np.int64)
        above = np.minimum(below + 1, n - 1)
        gamma = virtual - below
        if self._hi > self._lo:
            wanted = np.unique(np.concatenate([below, above]))
            stats = order_statistics(
                self._chunks, n=n, positions=wanted, lo=np.array([self._lo]),
                hi=np.array([self._hi]),
            )[0]  # fmt: skip
            a = stats[np.searchsorted(wanted, below)]
            b = stats[np.searchsorted(wanted, above)]
        else:
            a = b = np.full(_LEVELS.size, self._lo)
        diff = b - a
        quantiles = np.where(gamma >= 0.5, b - diff * (1 - gamma), a + diff * gamma)
        return {"n": n, "mean": self._sum / n, "quantiles": quantiles}
