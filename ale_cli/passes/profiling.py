"""The first pass of a streamed ``ale compute`` for models that choose their steps from
the data (ONNX without gradient, scikit-learn): the data read once, chunk by chunk, for
the :class:`~ale_cli.models.profile.DataProfile` (each column's std, a sample of rows,
the first rows), which does not depend on the chunk size."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ale_cli.data.stream import TableStream
from ale_cli.models.profile import DataProfile, ProfileBuilder


@dataclass(frozen=True)
class FirstPass:
    """What one read of the data gave: the ``profile`` of the rows kept, every input
    column's pandas dtype over the file, and the data's hash (for the second read)."""

    profile: DataProfile
    dtypes: dict[str, str]
    sha256: str


def first_pass(stream: TableStream, chunks: Iterable[np.ndarray] | None = None) -> FirstPass:
    """Read ``stream`` to its end (``chunks``: its chunks, e.g. read ahead by a thread)
    and return the profile of its rows with the file's dtypes and hash."""
    builder = ProfileBuilder(len(stream.feature_names))
    for X in stream if chunks is None else chunks:
        builder.add(X)
    if stream.sha256 is None:  # the iteration ended early (it raises instead)
        raise RuntimeError("the data stream ended before its hash")
    return FirstPass(builder.finish(), dict(stream.dtypes), stream.sha256)
