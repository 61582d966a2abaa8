"""Load a tabular dataset (CSV or Parquet) into a float64 feature matrix, whole or a chunk
(a DataFrame, or an Arrow RecordBatch converted without pandas when every column is
numeric or boolean); every problem is a one-line InputError naming the file and column. A
partitioned Parquet dataset is a directory (its ``*.parquet`` files, recursively) or a glob
pattern, its files in name order, each opened by :func:`open_part`."""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ale_cli.errors import InputError, NotNumeric, first_line
from ale_cli.io.files import sha256_file

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow.parquet as pq

_GLOB = re.compile(r"[*?\[]")


def is_glob(path: Path) -> bool:
    """True when ``path`` does not exist and holds a glob pattern (``*``, ``?``, ``[``).

    >>> is_glob(Path("no/such/part-*.parquet")), is_glob(Path("no/such/file.parquet"))
    (True, False)
    """
    return not path.exists() and bool(_GLOB.search(str(path)))


def is_dataset(path: Path) -> bool:
    """True for a partitioned dataset: a directory or a glob pattern."""
    return path.is_dir() or is_glob(path)


def dataset_root(path: Path) -> Path:
    """The directory a dataset's file names are relative to.

    >>> dataset_root(Path("no/such/part=*/data.parquet")).as_posix()
    'no/such'
    """
    if not is_glob(path):
        return path
    fixed = list(itertools.takewhile(lambda part: not _GLOB.search(part), path.parts))
    return Path(*fixed) if fixed else Path(".")


def dataset_files(path: Path) -> list[Path]:
    """The files of a data path: itself, a directory's ``*.parquet`` files (but those under
    a name starting with ``_`` or ``.``: ``_temporary/``, ``_metadata``, as Spark, Hive and
    pyarrow skip them), or a glob's."""
    if is_glob(path):
        root = dataset_root(path)
        pattern = path.relative_to(root).as_posix() if root != Path(".") else str(path)
        matched = sorted(p for p in root.glob(pattern) if p.is_file())
        if not matched:
            raise InputError(f"data '{path}' matches no files")
        csv = [p for p in matched if p.name.lower().endswith(_CSV_NAMES)]
        if csv:  # one CSV file is data; a glob is a dataset of Parquet files
            raise InputError(
                f"data '{path}' matches CSV file '{csv[0]}'; a glob is a dataset of Parquet "
                "files: give one CSV file, or a glob of .parquet files"
            )
        return matched
    if not path.is_dir():
        return [path]
    files = sorted(
        p
        for p in path.rglob("*.parquet")
        if p.is_file() and not any(n[0] in "_." for n in p.relative_to(path).parts)
    )
    if not files:
        raise InputError(
            f"data '{path}' is a directory holding no .parquet files; give a CSV or Parquet "
            "file, or a directory of .parquet files (a partitioned dataset)"
        )
    return files


def combine_hashes(path: Path, hashes: Sequence[tuple[Path, str]]) -> str:
    """The sha256 of dataset ``path`` from its files' (named relative to :func:`dataset_root`)."""
    root = dataset_root(path)
    digest = hashlib.sha256()
    for p, h in hashes:
        digest.update(f"{p.relative_to(root).as_posix()}\0{h}\n".encode())
    return digest.hexdigest()


def check_part(file: Path, names: Sequence[str], columns: Sequence[str]) -> None:
    """InputError naming ``file`` and the first of ``columns`` its schema ``names`` lacks.

    >>> check_part(Path("ds/part-1.parquet"), ["s5", "age"], ["age", "s5"])
    >>> check_part(Path("ds/part-1.parquet"), ["age", "s5"], ["age", "s6"])
    Traceback (most recent call last):
    ale_cli.errors.InputError: data file 'ds/part-1.parquet' has no column 's6' (columns: age, s5)
    """
    held = set(names)
    for name in columns:
        if name not in held:
            raise InputError(
                f"data file '{file}' has no column '{name}' (columns: {', '.join(names)})"
            )


def read_error(path: Path, exc: BaseException, fmt: str = "parquet") -> InputError:
    """The one line for a data file pandas or pyarrow cannot read."""
    if type(exc).__name__ == "EmptyDataError":  # pandas: a CSV file of no bytes or lines
        return InputError(f"data file '{path}' is empty")
    return InputError(f"cannot read data file '{path}' as {fmt.upper()}: {first_line(exc)}")


def open_part(source: Any, file: Path, columns: Sequence[str]) -> pq.ParquetFile:
    """The Parquet file ``source`` (a path or open file) of part ``file``, holding ``columns``."""
    import pyarrow.parquet as pq

    try:
        part = pq.ParquetFile(source, pre_buffer=False)
        names = list(part.schema_arrow.names)
    except Exception as exc:  # pyarrow raises many types for unreadable files
        raise read_error(file, exc) from None
    check_part(file, names, columns)
    return part


FORMATS = ("csv", "parquet")
#: the suffixes of compressed CSV files and their pandas compression
COMPRESSION = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zst": "zstd", ".zip": "zip"}
_EXTENSIONS = {".csv": "csv", ".txt": "csv", ".parquet": "parquet", ".pq": "parquet"}
_CSV_NAMES = tuple(e + c for e, f in _EXTENSIONS.items() if f == "csv" for c in ("", *COMPRESSION))


@dataclass(frozen=True)
class Table:
    """The selected columns of a dataset: ``X`` (N, D) float64 (``dropna``: no NaN/inf rows),
    ``levels[name][code]`` an encoded text column's value, ``file_columns`` in file order."""

    X: np.ndarray
    feature_names: tuple[str, ...]
    path: Path
    format: str
    rows_read: int
    rows_dropped: int = 0
    dropped_columns: tuple[str, ...] = ()
    categorical: tuple[str, ...] = ()
    levels: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    dtypes: dict[str, str] = field(default_factory=dict)
    file_columns: tuple[str, ...] = ()


def detect_format(path: Path, fmt: str | None = None) -> str:
    """Return ``fmt`` if given, else the format implied by the file extension."""
    if fmt is not None:
        if fmt not in FORMATS:
            raise InputError(
                "{param} must be one of " + ", ".join(FORMATS) + f", got '{fmt}'",
                param="data_format",
            )
        return fmt
    suffixes = [s.lower() for s in path.suffixes]
    if len(suffixes) > 1 and suffixes[-1] in COMPRESSION:
        suffixes.pop()  # data.csv.gz: pandas reads the compressed file
    found = _EXTENSIONS.get(suffixes[-1]) if suffixes else None
    if found == "parquet" and path.suffix.lower() in COMPRESSION:
        found = None  # Parquet compresses inside the file, never as a whole
    if found is None:
        raise InputError(
            f"cannot tell the format of data file '{path}' from its extension; "
            "pass {param} csv or {param} parquet",
            param="data_format",
        )
    return found


def _read(
    path: Path, fmt: str | None, inputs: Sequence[str] | None, exclude: Sequence[str]
) -> tuple[pd.DataFrame, str, list[str], tuple[str, ...]]:
    """A file's or dataset's input columns, its format, the columns, the (first) file's."""
    import pandas as pd

    if is_dataset(path):  # the parts' columns matched by name, in file order
        import pyarrow as pa

        files = dataset_files(path)
        for file in files:
            refuse_duplicate_headers(file, "parquet")
        file_columns = tuple(open_part(files[0], files[0], ()).schema_arrow.names)
        columns = select_columns(file_columns, path, inputs=inputs, exclude=exclude)
        tables = []
        for file in files:
            part = open_part(file, file, columns)
            try:
                tables.append(part.read(columns=list(columns)))
            except Exception as exc:  # pyarrow raises many types for unreadable files
                raise read_error(file, exc) from None
        try:
            table = pa.concat_tables(tables, promote_options="permissive")
        except pa.ArrowException:  # text in one part, numbers in another: as pandas combines
            frame = pd.concat([t.to_pandas() for t in tables], ignore_index=True)
            return frame, "parquet", columns, file_columns
        return table.to_pandas(), "parquet", columns, file_columns
    if not path.exists():
        raise InputError(f"data file '{path}' does not exist")
    fmt = detect_format(path, fmt)
    refuse_duplicate_headers(path, fmt)
    try:
        frame = pd.read_csv(path) if fmt == "csv" else pd.read_parquet(path)
    except Exception as exc:  # pandas/pyarrow raise many types for unreadable files
        raise read_error(path, exc, fmt) from None
    file_columns = tuple(str(c) for c in frame.columns)
    columns = select_columns(file_columns, path, inputs=inputs, exclude=exclude)
    return frame, fmt, columns, file_columns


def refuse_duplicate_headers(path: Path, fmt: str) -> None:
    """A column name given twice is an error (pandas would rename it ``bmi.1``)."""
    try:
        if fmt == "csv":  # the header row as data: the names as written, before renaming
            import pandas as pd

            row = pd.read_csv(path, header=None, nrows=1, dtype=str, keep_default_na=False)
            names = [v for v in row.iloc[0] if v != ""]  # pandas names empty ones itself
        else:
            import pyarrow.parquet as pq

            names = list(pq.read_schema(path).names)
    except Exception:  # pandas/pyarrow raise many types for unreadable files
        return
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise InputError(
                f"data file '{path}' has two columns named '{name}'; rename one of them"
            )
        seen.add(name)


def select_columns(
    names: Sequence[Any],
    path: Path,
    *,
    inputs: Sequence[str] | None = None,
    exclude: Sequence[str] = (),
) -> list[str]:
    """The input columns: ``inputs`` in that order, else all ``names`` but ``exclude``."""
    columns = [str(c) for c in names]
    check_part(path, columns, [*(inputs or ()), *exclude])
    if inputs:
        chosen = [f for f in inputs if f not in exclude]
    else:
        chosen = [c for c in columns if c not in exclude]
    if not chosen:
        raise InputError(
            f"no input columns left in data file '{path}' after {{param}}", param="exclude"
        )
    return chosen


def to_float_matrix(
    frame: pd.DataFrame,
    columns: Sequence[str],
    path: Path,
    *,
    levels: dict[str, tuple[Any, ...]] | None = None,
) -> np.ndarray:
    """The chosen columns as an (N, D) float64 array, naming any non-numeric column; with
    a ``levels`` dict, such a column is coded 0..L-1 (sorted) and its values kept there."""
    import pandas as pd

    out = np.empty((len(frame), len(columns)), dtype=np.float64)
    for j, name in enumerate(columns):
        col = frame[name]
        if pd.api.types.is_bool_dtype(col) or pd.api.types.is_numeric_dtype(col):
            out[:, j] = col.to_numpy(dtype=np.float64, na_value=np.nan)
            continue
        timed = col.dtype.kind in "mM"  # datetimes and durations: not numbers, as in a CSV
        numeric = pd.to_numeric(col, errors="coerce")
        bad = col.notna() if timed else numeric.isna() & col.notna()
        if bad.any() and levels is not None and not timed:
            codes, uniques = pd.factorize(col, sort=True, use_na_sentinel=True)
            out[:, j] = np.where(codes < 0, np.nan, codes).astype(np.float64)
            levels[name] = tuple(v.item() if hasattr(v, "item") else v for v in uniques)
            continue
        if bad.any():
            example = col[bad].iloc[0]
            what = f"a {col.dtype} column, example value: {str(example)!r}" if timed else ""
            raise NotNumeric(
                f"column '{name}' in data file '{path}' is not numeric "
                f"({what or f'example value: {example!r}'}); "
                "leave it out with {param} or list the model's inputs with {param:inputs}",
                param="exclude",
            )
        out[:, j] = numeric.to_numpy(dtype=np.float64, na_value=np.nan)
    return out


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


def is_frame(data: object) -> bool:
    """True for a pandas DataFrame (without importing pandas)."""
    return type(data).__name__ == "DataFrame" and hasattr(data, "columns")


#: How a DataFrame passed in memory is named in messages and provenance.
IN_MEMORY = "<DataFrame>"


def data_sha256(data: str | Path | pd.DataFrame) -> str:
    """Hex SHA-256 of a data file, a dataset (:func:`combine_hashes` of its files') or a
    DataFrame."""
    if not is_frame(data):
        path = Path(data)  # type: ignore[arg-type]
        if not is_dataset(path):
            return sha256_file(path)
        return combine_hashes(path, [(p, sha256_file(p)) for p in dataset_files(path)])
    import pandas as pd

    frame = data
    digest = hashlib.sha256("\x1f".join(map(str, frame.columns)).encode())  # type: ignore[union-attr]
    digest.update(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
    return digest.hexdigest()


def check_rows(
    where: str, rows_read: int, n_bad: int, columns: Sequence[str], dropna: bool, min_rows: int = 2
) -> None:
    """InputError for ``n_bad`` rows with NaN or infinite values (in ``columns``) without
    ``dropna``, for no rows, or for fewer than ``min_rows`` left."""
    if n_bad and not dropna:
        raise InputError(
            f"{where} has {n_bad} row{'s' if n_bad != 1 else ''} with NaN or infinite values "
            f"(columns: {', '.join(columns)}); pass {{param}} to drop them",
            param="dropna",
        )
    if rows_read == 0 and min_rows:
        raise InputError(f"{where} has no rows")
    if (kept := rows_read - n_bad) < min_rows:
        left = f" left after dropping {n_bad} with NaN or infinite values" if n_bad else ""
        raise InputError(
            f"{where} has {kept} row{'s' if kept != 1 else ''}{left}; at least 2 are needed"
        )


def check_categorical(categorical: Sequence[str], columns: Sequence[str], path: Path) -> None:
    """InputError naming ``categorical`` when one of its names is not an input column."""
    for name in categorical:
        if name not in columns:
            raise InputError(
                f"{{param}} names '{name}', which is not an input column of data file "
                f"'{path}' (inputs: {', '.join(columns)})",
                param="categorical",
            )


def load_table(
    path: str | Path | pd.DataFrame,
    *,
    fmt: str | None = None,
    inputs: Sequence[str] | None = None,
    exclude: Sequence[str] = (),
    dropna: bool = False,
    categorical: Sequence[str] = (),
    encode_text: bool = False,
) -> Table:
    """The selected columns of a CSV/Parquet file or DataFrame as float64; ``categorical``
    and (``encode_text``) coded text columns are held fixed."""
    if is_frame(path):
        frame, fmt, path = path, "dataframe", Path(IN_MEMORY)
        file_columns = tuple(str(c) for c in frame.columns)
        columns = select_columns(file_columns, path, inputs=inputs, exclude=exclude)
    else:
        path = Path(path)  # type: ignore[arg-type]
        frame, fmt, columns, file_columns = _read(path, fmt, inputs, exclude)
    check_categorical(categorical, columns, path)
    levels: dict[str, tuple[Any, ...]] | None = {} if encode_text else None
    X = to_float_matrix(frame, columns, path, levels=levels)
    levels = levels or {}
    fixed = tuple(c for c in columns if c in categorical or c in levels)

    bad = ~np.isfinite(X)
    bad_rows = bad.any(axis=1)
    n_bad = int(bad_rows.sum())
    bad_cols = tuple(c for c, b in zip(columns, bad.any(axis=0), strict=True) if b)
    check_rows(f"data file '{path}'", len(frame), n_bad, bad_cols, dropna)
    X = X[~bad_rows] if n_bad else X
    return Table(
        X=np.ascontiguousarray(X),
        feature_names=tuple(columns),
        path=path,
        format=fmt,
        rows_read=len(frame),
        rows_dropped=n_bad,
        dropped_columns=bad_cols if n_bad else (),
        categorical=fixed,
        levels=levels,
        dtypes={c: str(frame[c].dtype) for c in columns},
        file_columns=file_columns,
    )
