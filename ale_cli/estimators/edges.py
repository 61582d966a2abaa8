"""Bin edges of data columns read in chunks: given, uniform over their range, or the exact
type-1 quantiles at ``k/K``, deduplicated (two passes; an array in memory is one chunk).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ale_cli.core.binning import uniform_edges
from ale_cli.core.outofcore import chunked_quantile_edges


def column_edges(
    chunks: Callable[[], Iterable[np.ndarray]],
    names: Sequence[str],
    *,
    n_rows: int,
    lo: np.ndarray,
    hi: np.ndarray,
    bins: int,
    binning: str,
    given: Mapping[str, Any] | None = None,
) -> list[np.ndarray]:
    """The edges (K+1,) of C columns: ``given`` by name, uniform over ``[lo, hi]`` (C,), or
    type-1 quantiles from ``chunks()``, a fresh pass over (n_i, C) arrays per call.

    >>> X = np.array([[5.0], [1.0], [2.0], [2.0], [3.0], [4.0]])
    >>> lo, hi = np.array([1.0]), np.array([5.0])
    >>> column_edges(lambda: [X[:2], X[2:]], ["a"], n_rows=6, lo=lo, hi=hi, bins=3,
    ...              binning="quantile")[0].tolist()
    [1.0, 2.0, 3.0, 5.0]
    >>> column_edges(lambda: [X], ["a"], n_rows=6, lo=lo, hi=hi, bins=2,
    ...              binning="uniform")[0].tolist()
    [1.0, 3.0, 5.0]
    """
    if given is not None:
        return [np.asarray(given[name], dtype=np.float64) for name in names]
    if binning == "uniform":
        return [uniform_edges(float(a), float(b), bins=bins) for a, b in zip(lo, hi, strict=True)]
    if not len(lo):
        return []
    return chunked_quantile_edges(chunks, n=n_rows, bins=bins, lo=lo, hi=hi)
