"""A data file read in several passes, chunk by chunk (``ale classic``, ``ale interact``
streamed): a first pass for the rows and ranges (:func:`scan_source`), then every pass
opens the file again; for a streamed ``ale compute`` of a model that chooses its steps
from the data (finite differences), a first pass for its profile (:func:`first_pass`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ale_cli.data.sources import DataSource
from ale_cli.data.stream import TableStream
from ale_cli.models.profile import DataProfile, ProfileBuilder


@dataclass(frozen=True)
class Scan:
    """The first pass's findings: inputs ``names`` (D), the N rows kept, ``lo``/``hi`` (D,),
    the ``first`` chunk (float64, to load the model on), the file's format, hash, counts."""

    names: tuple[str, ...]
    categorical: tuple[str, ...]
    n_rows: int
    lo: np.ndarray
    hi: np.ndarray
    first: np.ndarray
    format: str
    sha256: str
    rows_dropped: int
    dtypes: dict[str, str]
    levels: dict[str, tuple[Any, ...]] = field(default_factory=dict)


def scan_source(source: DataSource) -> Scan:
    """The first pass over ``source`` (read whole, unsplit)."""
    stream = source.open()
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
        rows_dropped=stream.rows_dropped,
        dtypes=dict(stream.dtypes),
        levels=stream.levels,
    )


@dataclass(frozen=True)
class FirstPass:
    """The ``profile`` of the rows kept, the input columns' dtypes, the data's hash."""

    profile: DataProfile
    dtypes: dict[str, str]
    sha256: str


def first_pass(stream: TableStream, chunks: Iterable[np.ndarray] | None = None) -> FirstPass:
    """Read ``stream`` (or its ``chunks``, read ahead) to its end."""
    builder = ProfileBuilder(len(stream.feature_names))
    for X in stream if chunks is None else chunks:
        builder.add(X)
    if stream.sha256 is None:  # the iteration ended early (it raises instead)
        raise RuntimeError("the data stream ended before its hash")
    return FirstPass(builder.finish(), dict(stream.dtypes), stream.sha256)
