"""Text columns of a data file read chunk by chunk: their levels (distinct values sorted as
``pandas.factorize(sort=True)`` sorts the whole column) from one pass, then their codes."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ale_cli.data.table import batch_matrix
from ale_cli.errors import InputError

Levels = dict[str, tuple[Any, ...]]


def _frame(frame: Any, columns: Sequence[str]) -> Any:
    if hasattr(frame, "schema"):
        return frame.select(list(columns)).to_pandas()
    return frame


def text_levels(frames: Iterable[Any], columns: Sequence[str]) -> tuple[Levels, tuple[str, ...]]:
    """The levels of the text ``columns`` over every frame, and the text columns some frame
    read as numbers (to read again as strings).

    >>> import pandas as pd
    >>> frames = [pd.DataFrame({"a": [1.0, 2.0], "c": ["b", None]}),
    ...           pd.DataFrame({"a": [3.0, 4.0], "c": ["a", "b"]})]
    >>> text_levels(frames, ["a", "c"])
    ({'c': ('a', 'b')}, ())
    """
    import pandas as pd

    seen: dict[str, set[Any]] = {}
    text: set[str] = set()
    numeric: set[str] = set()
    for raw in frames:
        frame = _frame(raw, columns)
        for name in columns:
            col = frame[name]
            if pd.api.types.is_bool_dtype(col) or pd.api.types.is_numeric_dtype(col):
                if col.notna().any():
                    numeric.add(name)
                continue
            values = col.dropna()
            if (pd.to_numeric(values, errors="coerce").isna()).any():
                text.add(name)
            seen.setdefault(name, set()).update(values.unique().tolist())
    levels: Levels = {}
    for name in columns:
        if name in text:
            found = pd.Series(list(seen[name]), dtype=object)
            uniques = pd.factorize(found, sort=True)[1]
            levels[name] = tuple(v.item() if hasattr(v, "item") else v for v in uniques)
    return levels, tuple(n for n in columns if n in text and n in numeric)


def encode_text(
    frame: Any, columns: Sequence[str], path: Path, levels: Mapping[str, Sequence[Any]]
) -> tuple[np.ndarray, dict[str, str]]:
    """(n, D) float64 values of ``columns``, the text ones as codes of their ``levels``, and
    the columns' pandas dtypes; InputError for a value the first pass did not see."""
    import pandas as pd

    frame = _frame(frame, columns)
    numbers = [c for c in columns if c not in levels]
    X = np.empty((len(frame), len(columns)))
    found, dtypes = batch_matrix(frame, numbers, path)
    X[:, [columns.index(c) for c in numbers]] = found
    for name in levels:
        col = frame[name]
        codes = pd.Index(list(levels[name]), dtype=object).get_indexer(col.astype(object))
        unknown = (codes < 0) & col.notna().to_numpy()
        if unknown.any():
            raise InputError(
                f"column '{name}' of data file '{path}' has value "
                f"{col[unknown].iloc[0]!r}, which the first pass did not read: did the file "
                "change during the run?"
            )
        X[:, columns.index(name)] = np.where(codes < 0, np.nan, codes)
        dtypes[name] = str(col.dtype)
    return X, {c: dtypes[c] for c in columns}


def find_text_levels(open_with: Callable[[Levels], Any]) -> Levels:
    """The levels of the text columns of the stream ``open_with(text)`` opens (``text``: the
    columns to read as strings), from one pass, or two when a chunk read one as numbers."""
    stream = open_with({})
    levels, again = text_levels(stream.raw_frames(), stream.feature_names)
    if again:
        stream = open_with(dict.fromkeys(again, ()))
        levels, _ = text_levels(stream.raw_frames(), stream.feature_names)
    return levels
