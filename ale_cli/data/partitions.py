"""The partitions of the data for the Dask engine: whole files (CSV, small or unreadable
Parquet) or ranges of row groups of about :func:`target_rows` rows, in row order."""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

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


def row_group_rows(file: Path) -> list[int] | None:
    """Rows of each row group of a Parquet file, by its footer (None when unreadable)."""
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(file).metadata
    except Exception:  # a damaged file: the worker reading it reports why
        return None
    return [int(meta.row_group(i).num_rows) for i in range(meta.num_row_groups)]


def plan_partitions(files: Sequence[Path], *, fmt: str, slots: int) -> tuple[Partition, ...]:
    """The partitions of the dataset ``files`` for ``slots`` worker threads."""
    sizes = [row_group_rows(f) if fmt == "parquet" else None for f in files]
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
