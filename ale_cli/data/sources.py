"""Data files and partitioned datasets as :class:`~ale_cli.data.source.Source` s: chunks
hold ``X`` (n, D), and the last chunk of every part (of no rows) carries its :class:`ReadEnd`.
The parts: whole files (CSV, small or unreadable Parquet) or ranges of row groups of about
:func:`target_rows` rows, in row order (:func:`plan_partitions`)."""

from __future__ import annotations

import bisect
import itertools
import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ale_cli.data.source import Chunk
from ale_cli.data.stream import (
    DEFAULT_CHUNK_ROWS,
    TableStream,
    combined_dtype,
    dataset_files,
    open_stream,
)

#: most rows a partition is cut to (pyarrow's default row group)
PARTITION_ROWS = 1 << 20
#: fewest rows a file is cut to (one default chunk of ``ale compute``)
MIN_PARTITION_ROWS = 1 << 16
#: the tasks aimed at per worker thread when the data is smaller than that many full tasks
TASKS_PER_SLOT = 4


@dataclass(frozen=True)
class Partition:
    """One task's data: ``file`` whole (``row_groups`` None) or its row groups ``start`` to
    ``stop - 1``; ``rows`` and ``offset`` (first row in the dataset) by the footers."""

    file: Path
    file_index: int
    row_groups: tuple[int, int] | None
    rows: int
    offset: int


def target_rows(total_rows: int, slots: int) -> int:
    """Rows a partition is cut to for ``total_rows`` rows on ``slots`` worker threads:
    ``clip(ceil(total_rows / (TASKS_PER_SLOT * slots)), MIN_PARTITION_ROWS, PARTITION_ROWS)``.

    >>> target_rows(10**9, 8), target_rows(4 * 10**6, 8), target_rows(10**4, 2)
    (1048576, 125000, 65536)
    """
    wanted = math.ceil(total_rows / (TASKS_PER_SLOT * max(slots, 1)))
    return min(PARTITION_ROWS, max(MIN_PARTITION_ROWS, wanted))


def split_row_groups(sizes: Sequence[int], *, target: int) -> list[tuple[int, int]]:
    """Consecutive row-group ranges ``(start, stop)`` of a file whose row groups hold
    ``sizes`` rows, about ``target`` rows each.

    With ``T = sum(sizes)`` and ``k = max(1, ceil(T / target))``, range ``j`` starts at
    the first boundary with at least ``j T / k`` rows before it (repeats and the end
    dropped): at most ``k`` ranges, each under ``T / k + max(sizes)`` rows.

    >>> split_row_groups([700] * 10, target=2000)
    [(0, 3), (3, 5), (5, 8), (8, 10)]
    >>> split_row_groups([100, 5000, 100], target=1000)
    [(0, 2), (2, 3)]
    >>> split_row_groups([10, 10], target=1000), split_row_groups([], target=1000)
    ([(0, 2)], [])
    """
    if target < 1:
        raise ValueError(f"target must be at least 1 row, got {target}")
    n = len(sizes)
    if not n:
        return []
    before = [0, *itertools.accumulate(int(size) for size in sizes)]
    total = before[-1]
    k = max(1, math.ceil(total / target))
    scaled = [b * k for b in before]  # rows before each boundary, times k: exact integers
    cuts = sorted({bisect.bisect_left(scaled, j * total) for j in range(1, k)} - {0, n})
    bounds = [0, *cuts, n]
    return list(zip(bounds[:-1], bounds[1:], strict=True))


def plan_partitions(files: Sequence[Path], *, fmt: str, slots: int) -> tuple[Partition, ...]:
    """The partitions of the dataset ``files`` for ``slots`` worker threads."""
    import pyarrow.parquet as pq

    sizes: list[list[int] | None] = [None] * len(files)
    for i, file in enumerate(files if fmt == "parquet" else ()):  # rows of each row group
        try:
            meta = pq.ParquetFile(file).metadata
        except Exception:  # a damaged file: the worker reading it reports why
            continue
        sizes[i] = [int(meta.row_group(g).num_rows) for g in range(meta.num_row_groups)]
    target = target_rows(sum(sum(s) for s in sizes if s), slots)
    parts: list[Partition] = []
    offset = 0
    for i, (file, groups) in enumerate(zip(files, sizes, strict=True)):
        ranges = split_row_groups(groups, target=target) if groups else []
        for span in ranges if len(ranges) > 1 else [None]:
            rows = sum(groups[slice(*span)] if span and groups else groups or ())
            parts.append(Partition(file, i, span, rows, offset))
            offset += rows
    return tuple(parts)


#: the key of a part's :class:`ReadEnd` in its last chunk's ``end``
READ = "read"


@dataclass(frozen=True)
class ReadEnd:
    """What reading one part found (``sha256`` None for a range of row groups)."""

    rows_read: int
    rows_dropped: int
    dropped_columns: tuple[str, ...]
    dtypes: dict[str, str]
    sha256: str | None
    file: str
    file_index: int | None
    row_groups: tuple[int, int] | None
    read_s: float


@dataclass(frozen=True)
class Reads:
    """The :class:`ReadEnd` s of a run's parts in part order (a mergeable state)."""

    ends: tuple[ReadEnd, ...] = ()

    def merge(self, other: Reads) -> Reads:
        return Reads(self.ends + other.ends)

    @property
    def rows_read(self) -> int:
        return sum(e.rows_read for e in self.ends)

    @property
    def rows_dropped(self) -> int:
        return sum(e.rows_dropped for e in self.ends)

    @property
    def read_s(self) -> float:
        return sum(e.read_s for e in self.ends)

    def dtypes(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for end in self.ends:
            for c, dt in end.dtypes.items():
                out[c] = combined_dtype(out.get(c, dt), dt)
        return out

    def dropped_columns(self, names: Sequence[str]) -> tuple[str, ...]:
        found = {c for e in self.ends for c in e.dropped_columns}
        return tuple(c for c in names if c in found)


@dataclass(frozen=True)
class DataSource:
    """A data file or dataset read chunk by chunk (``partitions`` None: one unsplit part)."""

    path: Path
    #: the data's format (None before the first pass: from the file's name)
    fmt: str | None
    #: the input columns (none before the first pass)
    names: tuple[str, ...]
    categorical: tuple[str, ...]
    dropna: bool
    chunk_rows: int = DEFAULT_CHUNK_ROWS
    partitions: tuple[Partition, ...] | None = None
    #: how the columns were chosen (the unsplit read checks them)
    inputs: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()
    #: the levels of the text columns, read as their codes
    text: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    #: the partition this source is, read on its own without the 2-row check (None: all)
    part: Partition | None = None
    #: float32 when every file's inputs are (a part of a float32 file reads as the whole)
    f32: bool = True

    @classmethod
    def of(
        cls, stream: TableStream, *, inputs: Sequence[str] | None, exclude: Sequence[str]
    ) -> DataSource:
        return cls(
            path=stream.path,
            fmt=stream.format,
            names=stream.feature_names,
            categorical=stream.categorical,
            dropna=stream.dropna,
            chunk_rows=stream.chunk_rows,
            inputs=None if inputs is None else tuple(inputs),
            exclude=tuple(exclude),
            text=tuple(stream.levels.items()),
            f32=stream.dtype == np.float32,
        )

    def split(self, slots: int | None) -> DataSource:
        """This source cut into partitions for ``slots`` worker threads (None: unsplit)."""
        if slots is None:
            return replace(self, partitions=None)
        if self.fmt is None:  # the first pass finds it (estimators.inputs_stream)
            raise RuntimeError(f"the format of '{self.path}' is not known before its first pass")
        files = dataset_files(self.path)
        return replace(self, partitions=plan_partitions(files, fmt=self.fmt, slots=slots))

    def open(self) -> TableStream:
        """The stream of the whole data (every check of a read of it), or of :attr:`part`."""
        given = {"fmt": self.fmt, "dropna": self.dropna, "categorical": self.categorical}
        given |= {"chunk_rows": self.chunk_rows, "text": dict(self.text), "f32": self.f32}
        if (p := self.part) is None:
            return open_stream(self.path, inputs=self.inputs, exclude=self.exclude, **given)
        return open_stream(p.file, inputs=self.names, min_rows=0, row_groups=p.row_groups, **given)

    def parts(self) -> Sequence[DataSource]:
        if self.partitions is None:
            return (self,)
        return tuple(replace(self, partitions=None, part=p) for p in self.partitions)

    def chunks(self, arrays: Sequence[str] = ("X",)) -> Iterator[Chunk]:
        stream = self.open()
        yield from _chunks(stream, iter(stream), self.part)


@dataclass
class OpenedSource:
    """A stream opened here and begun: ``first`` its first chunk, ``rest`` the others."""

    stream: TableStream
    first: np.ndarray
    rest: Iterator[np.ndarray]
    read_s: float = 0.0
    _used: bool = field(default=False, repr=False)

    def parts(self) -> Sequence[OpenedSource]:
        return (self,)

    def chunks(self, arrays: Sequence[str] = ("X",)) -> Iterator[Chunk]:
        if self._used:
            raise RuntimeError("an opened data source is read once")
        self._used = True
        blocks = itertools.chain([self.first], self.rest)
        yield from _chunks(self.stream, blocks, None, self.read_s)


def _chunks(
    stream: TableStream,
    blocks: Iterator[np.ndarray],
    partition: Partition | None,
    read_s: float = 0.0,
) -> Iterator[Chunk]:
    """The chunks of ``blocks``, then one of no rows with its :class:`ReadEnd`."""
    row = 0 if partition is None else partition.offset  # of the next chunk's first row
    width = len(stream.feature_names)
    while True:
        t = time.perf_counter()
        X = next(blocks, None)
        read_s += time.perf_counter() - t
        if X is None:
            break
        yield Chunk(row, {"X": X})
        row += len(X)
    end = ReadEnd(
        rows_read=stream.rows_read,
        rows_dropped=stream.rows_dropped,
        dropped_columns=stream.dropped_columns,
        dtypes=dict(stream.dtypes),
        sha256=stream.sha256,
        file=str(stream.path),
        file_index=None if partition is None else partition.file_index,
        row_groups=None if partition is None else partition.row_groups,
        read_s=read_s,
    )
    yield Chunk(row, {"X": np.empty((0, width), dtype=stream.dtype)}, {READ: end})
