"""A chunk of a data file (a DataFrame, or an Arrow RecordBatch converted without pandas
when every column is numeric or boolean) as the float matrix of its input columns."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ale_cli.data.table import to_float_matrix
from ale_cli.errors import InputError


def arrow_dtype(column: Any) -> str | None:
    """The pandas dtype name a numeric or boolean Arrow column becomes (None: other types)."""
    import pyarrow as pa

    t = column.type
    if pa.types.is_floating(t):
        return "float32" if t.bit_width == 32 else "float64"
    if pa.types.is_integer(t):
        return "float64" if column.null_count else str(t.to_pandas_dtype().__name__)
    if pa.types.is_boolean(t):
        return "object" if column.null_count else "bool"
    return None


#: rows a block of an Arrow batch is copied by
_BLOCK_ROWS = 4096


def batch_matrix(
    frame: Any, columns: Sequence[str], path: Path, dtype: Any = np.float64
) -> tuple[np.ndarray, dict[str, str]]:
    """(n, D) ``columns`` and their pandas dtypes, of a DataFrame or RecordBatch: float64,
    or float32 when ``dtype`` is and every column is float32 already (the values as read)."""
    if hasattr(frame, "schema"):  # pyarrow.RecordBatch
        index = [frame.schema.get_field_index(c) for c in columns]
        if min(index, default=0) < 0:  # -1 would read the last column: never by position
            raise InputError(f"data file '{path}' has no column '{columns[index.index(-1)]}'")
        cols = [frame.column(i) for i in index]
        dtypes = [arrow_dtype(c) for c in cols]
        if any(dt is None for dt in dtypes):
            frame = frame.to_pandas()
        else:
            f32 = np.dtype(dtype) == np.float32 and all(dt == "float32" for dt in dtypes)
            values = [
                arrow_values(c.cast("float64").fill_null(float("nan")) if c.null_count else c)
                for c in cols
            ]
            out = np.empty((frame.num_rows, len(columns)), np.float32 if f32 else np.float64)
            for start in range(0, frame.num_rows, _BLOCK_ROWS):
                block = slice(start, start + _BLOCK_ROWS)
                for j, v in enumerate(values):
                    out[block, j] = v[block]
            return out, dict(zip(columns, dtypes, strict=True))  # type: ignore[arg-type]
    X = to_float_matrix(frame, columns, path)
    return X, {c: str(frame[c].dtype) for c in columns}


def arrow_values(column: Any) -> np.ndarray:
    """A numeric or boolean Arrow array's values as numpy (without importing pandas)."""
    import pyarrow as pa

    t = column.type
    if not column.null_count and (pa.types.is_floating(t) or pa.types.is_integer(t)):
        kind = "f" if pa.types.is_floating(t) else "i" if pa.types.is_signed_integer(t) else "u"
        dtype = np.dtype(f"<{kind}{t.bit_width // 8}")
        data = column.buffers()[1]
        return np.frombuffer(
            data, dtype=dtype, count=len(column), offset=column.offset * dtype.itemsize
        )
    return np.asarray(column.to_numpy(zero_copy_only=False))
