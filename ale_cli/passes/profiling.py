"""The first pass of a streaming ``ale compute`` for models that choose their steps
from the data (ONNX without gradient, scikit-learn).

Such a model is checked and its finite-difference steps are chosen from all rows
(:class:`~ale_cli.models.profile.DataProfile`: each column's std, a sample of
rows, the first rows), before its first local effect. :func:`first_pass` reads
the data once, chunk by chunk, for that profile (and the whole file's dtypes and
hash, as the reader gives them after its last chunk); the second pass computes
and writes the local effects. Memory: one chunk, one block of 4096 rows and the
256-row sample. The profile does not depend on the chunk size, so the store is
the one the whole table gives.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ale_cli.data.stream import TableStream
from ale_cli.models.profile import DataProfile, ProfileBuilder


@dataclass(frozen=True)
class FirstPass:
    """What one read of the data gave.

    Attributes
    ----------
    profile : DataProfile
        Of the rows kept (after ``dropna``), numbered as the whole table numbers them.
    dtypes : dict of str to str
        The pandas dtype of every input column over the whole file.
    sha256 : str
        The data's hash (to check that the second read saw the same bytes).
    """

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
