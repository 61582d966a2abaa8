"""A CSV file, Parquet file or partitioned dataset read chunk by chunk, with the checks of
:func:`ale_cli.data.table.load_table` and the same outcome; chunks are float32 when every
input column is; the bytes are hashed while read (not for a range of row groups). Text
columns: their levels (sorted as ``pandas.factorize(sort=True)`` sorts the whole column)
from a first pass (:func:`find_text_levels`), then their codes."""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ale_cli.data.table import (
    COMPRESSION,
    batch_matrix,
    check_categorical,
    check_part,
    check_rows,
    combine_hashes,
    data_sha256,
    dataset_files,
    detect_format,
    is_dataset,
    is_glob,
    open_part,
    read_error,
    refuse_duplicate_headers,
    select_columns,
)
from ale_cli.errors import InputError

inputs_sha256 = data_sha256
#: rows per chunk of ``ale compute``
DEFAULT_CHUNK_ROWS = 1 << 16
#: a read further ahead than this (the Parquet footer) is not hashed at once
_MAX_GAP = 8 << 20
_BLOCK = 1 << 20


class HashingReader(io.RawIOBase):
    """A read-only file that feeds the bytes it serves, in file order, to a SHA-256."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self._fh = open(path, "rb")  # noqa: SIM115 -- closed by close()
        self._digest = hashlib.sha256()
        self._hashed = 0
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        self._pos = self._fh.seek(offset, whence)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def _catch_up(self, upto: int) -> None:
        here = self._fh.tell()
        self._fh.seek(self._hashed)
        while self._hashed < upto:
            block = self._fh.read(min(_BLOCK, upto - self._hashed))
            if not block:
                break
            self._digest.update(block)
            self._hashed += len(block)
        self._fh.seek(here)

    def readinto(self, buffer: Any) -> int:
        start = self._pos
        n = self._fh.readinto(buffer)
        if not n:
            return 0
        self._pos = start + n
        if start > self._hashed and start - self._hashed <= _MAX_GAP:
            self._catch_up(start)
        if start <= self._hashed < self._pos:
            view = memoryview(buffer)[self._hashed - start : n]
            self._digest.update(view)
            self._hashed = self._pos
        return n

    def hexdigest(self) -> str:
        """SHA-256 of the whole file (reads what was not hashed yet)."""
        self._catch_up(os.fstat(self._fh.fileno()).st_size)
        return self._digest.hexdigest()

    def close(self) -> None:
        self._fh.close()
        super().close()


def combined_dtype(a: str, b: str) -> str:
    """The dtype pandas gives a whole column whose chunks had dtypes a and b."""
    if a == b:
        return a
    numeric = {"int64", "float64", "int32", "float32"}
    if a in numeric and b in numeric:
        return "float64"
    return "object"


@dataclass
class TableStream:
    """The input columns of a data file, read chunk by chunk (iterate it once); then
    ``rows_read`` ... ``sha256`` describe the whole file as a Table would."""

    path: Path
    format: str
    feature_names: tuple[str, ...]
    categorical: tuple[str, ...]
    dtype: np.dtype
    chunk_rows: int
    dropna: bool
    total_rows: int | None
    #: fewest rows the whole stream must keep (0: a partition read on its own)
    min_rows: int = 2
    dtypes: dict[str, str] = field(default_factory=dict)
    rows_read: int = 0
    rows_dropped: int = 0
    dropped_columns: tuple[str, ...] = ()
    sha256: str | None = None
    file_columns: tuple[str, ...] = ()
    row_groups: tuple[int, int] | None = None
    _frames: Iterator[Any] | None = None
    #: HashingReaders, or one plain file for a range of row groups (not hashed)
    _readers: list[Any] = field(default_factory=list)
    #: the levels of the text columns (read as their codes)
    levels: dict[str, tuple[Any, ...]] = field(default_factory=dict)

    def _take(self) -> Iterator[Any]:
        if self._frames is None:
            raise RuntimeError("a TableStream is iterated once")
        frames, self._frames = self._frames, None
        return frames

    def raw_frames(self) -> Iterator[Any]:
        """The file's frames as read, before any conversion (instead of iterating)."""
        frames = self._take()
        try:
            yield from frames
        finally:
            self.close()

    @property
    def where(self) -> str:
        where = f"data file '{self.path}'"
        if self.row_groups is None:
            return where
        start, stop = self.row_groups
        groups = f"row group {start}" if stop - start == 1 else f"row groups {start}-{stop - 1}"
        return f"{where} ({groups})"

    def __iter__(self) -> Iterator[np.ndarray]:
        """Chunks of exactly ``chunk_rows`` kept rows (the last one may be shorter)."""
        frames = self._take()
        pending: list[np.ndarray] = []
        n_pending = 0
        bad_cols = np.zeros(len(self.feature_names), dtype=bool)
        refused = False
        try:
            for frame in frames:
                self.rows_read += len(frame)
                if self.levels:
                    X, dtypes = encode_text(frame, self.feature_names, self.path, self.levels)
                else:
                    X, dtypes = batch_matrix(frame, self.feature_names, self.path, self.dtype)
                for c, dt in dtypes.items():
                    self.dtypes[c] = combined_dtype(self.dtypes.get(c, dt), dt)
                bad = ~np.isfinite(X)
                bad_rows = bad.any(axis=1)
                if bad_rows.any():
                    bad_cols |= bad.any(axis=0)
                    self.rows_dropped += int(bad_rows.sum())
                    if not self.dropna:
                        refused = True  # count the rest of the file, yield nothing more
                        continue
                    X = X[~bad_rows]
                if refused or not len(X):
                    continue
                pending.append(X.astype(self.dtype, copy=False))
                n_pending += len(X)
                while n_pending >= self.chunk_rows:
                    block = np.concatenate(pending) if len(pending) > 1 else pending[0]
                    out, rest = block[: self.chunk_rows], block[self.chunk_rows :]
                    pending, n_pending = ([rest] if len(rest) else []), len(rest)
                    yield np.ascontiguousarray(out)
            dropped = tuple(c for c, b in zip(self.feature_names, bad_cols, strict=True) if b)
            self.dropped_columns = dropped
            check_rows(
                self.where, self.rows_read, self.rows_dropped, dropped, self.dropna, self.min_rows
            )
            if pending:
                yield np.ascontiguousarray(np.concatenate(pending))
            if self.row_groups is None:  # (a part of a file: its hash is of every byte)
                hashes = [r.hexdigest() for r in self._readers]
                self.sha256 = hashes[0]
                if is_dataset(self.path):
                    pairs = zip(dataset_files(self.path), hashes, strict=True)
                    self.sha256 = combine_hashes(self.path, list(pairs))
        finally:
            self.close()

    def close(self) -> None:
        for r in self._readers:
            if not r.closed:
                r.close()


def _parquet_frames(
    readers: list[Any],
    files: Sequence[Path],
    columns: list[str],
    batch: int,
    label: Path,
    row_groups: tuple[int, int] | None = None,
) -> Iterator[Any]:
    groups = None if row_groups is None else range(*row_groups)
    for reader, file in zip(readers, files, strict=True):
        part = open_part(reader, file, columns)  # a part lacking a column is refused
        try:
            yield from part.iter_batches(batch_size=batch, columns=columns, row_groups=groups)
        except Exception as exc:  # pyarrow raises many types for unreadable files
            raise read_error(label, exc) from None


def _csv_frames(
    reader: HashingReader, path: Path, batch: int, usecols: list[str], text: Sequence[str] = ()
) -> Iterator[Any]:
    import pandas as pd

    try:
        with pd.read_csv(
            reader,
            chunksize=batch,
            usecols=usecols,
            compression=COMPRESSION.get(path.suffix.lower()),
            dtype=dict.fromkeys(text, str) or None,
        ) as chunks:
            yield from chunks
    except Exception as exc:
        raise read_error(path, exc, "csv") from None


def _parquet_header(
    readers: list[Any], files: list[Path], path: Path, row_groups: tuple[int, int] | None
) -> tuple[tuple[str, ...], int, dict[str, str], list[tuple[str, ...]]]:
    """The first file's names, rows (of the row groups read) and Arrow types (those every
    file holding the column agrees on); every file's names."""
    import pyarrow.parquet as pq

    metas, schemas = [], []
    for reader, file in zip(readers, files, strict=True):
        try:
            metas.append(pq.ParquetFile(reader).metadata)
            schemas.append(metas[-1].schema.to_arrow_schema())
        except Exception as exc:  # pyarrow raises many types for unreadable files
            raise read_error(file, exc) from None
    names = [tuple(s.names) for s in schemas]
    types = [{f.name: str(f.type) for f in s} for s in schemas]
    arrow_types = {n: t for n, t in types[0].items() if all(d.get(n, t) == t for d in types)}
    total = sum(m.num_rows for m in metas)
    if row_groups is not None:
        start, stop = row_groups
        n = metas[0].num_row_groups
        if not 0 <= start < stop <= n:
            raise InputError(
                f"{{param}} must be a range start < stop within the {n} row groups of data "
                f"file '{path}', got {start}, {stop}",
                param="row_groups",
            )
        total = sum(metas[0].row_group(i).num_rows for i in range(start, stop))
    return names[0], total, arrow_types, names


def open_stream(
    path: str | Path,
    *,
    fmt: str | None = None,
    inputs: Sequence[str] | None = None,
    exclude: Sequence[str] = (),
    dropna: bool = False,
    categorical: Sequence[str] = (),
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    min_rows: int = 2,
    row_groups: tuple[int, int] | None = None,
    text: Mapping[str, Sequence[Any]] | None = None,
    f32: bool = True,
) -> TableStream:
    """Open ``path`` (a CSV or Parquet file, or a dataset) for reading its input columns
    chunk by chunk, checked from the header or schema. Fewer than ``min_rows`` rows kept
    is an error; ``row_groups=(start, stop)`` reads only those row groups of one Parquet
    file; ``text``: the levels of text columns, read as their codes. Chunks are float32
    when every file's input columns are (``f32=False``: float64 always)."""
    path = Path(path)
    if not path.exists() and not is_glob(path):
        raise InputError(f"data file '{path}' does not exist")
    files = dataset_files(path)
    fmt = "parquet" if is_dataset(path) else detect_format(path, fmt)
    for file in files:  # pandas would rename a second 'bmi' to 'bmi.1'
        refuse_duplicate_headers(file, fmt)
    if row_groups is None:
        readers: list[Any] = [HashingReader(p) for p in files]
    elif fmt != "parquet" or is_dataset(path):
        raise InputError(
            f"{{param}} selects row groups of one Parquet file, got data '{path}'",
            param="row_groups",
        )
    else:  # a range of row groups is not hashed
        readers = [open(files[0], "rb")]  # noqa: SIM115 -- closed by TableStream.close
    try:
        if fmt == "parquet":
            header, total, arrow_types, schemas = _parquet_header(readers, files, path, row_groups)
        else:
            import pandas as pd

            try:
                header = tuple(str(c) for c in pd.read_csv(files[0], nrows=0).columns)
            except Exception as exc:
                raise read_error(path, exc, fmt) from None
            total, arrow_types, schemas = None, {}, []
        columns = select_columns(header, path, inputs=inputs, exclude=exclude)
        for file, names in zip(files, schemas, strict=False):  # every part, before any read
            check_part(file, names, columns)
        check_categorical(categorical, columns, path)
        f32 = f32 and bool(columns) and all(arrow_types.get(c) == "float" for c in columns)
        if fmt == "parquet":
            frames = _parquet_frames(readers, files, columns, chunk_rows, path, row_groups)
        else:
            frames = _csv_frames(readers[0], path, chunk_rows, columns, tuple(text or ()))
    except BaseException:
        for r in readers:
            r.close()
        raise
    return TableStream(
        path=path,
        format=fmt,
        feature_names=tuple(columns),
        file_columns=header,
        categorical=tuple(c for c in columns if c in categorical or c in (text or {})),
        dtype=np.dtype(np.float32 if f32 else np.float64),
        chunk_rows=chunk_rows,
        dropna=dropna,
        total_rows=total,
        min_rows=min_rows,
        row_groups=row_groups,
        _frames=frames,
        _readers=readers,
        levels={k: tuple(v) for k, v in (text or {}).items()},
    )


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
