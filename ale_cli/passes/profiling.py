"""The first pass of a streamed ``ale compute`` for models that choose their steps from the
data (finite differences): the :class:`~ale_cli.models.profile.DataProfile`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from ale_cli.data.stream import TableStream
from ale_cli.models.profile import DataProfile, ProfileBuilder


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
