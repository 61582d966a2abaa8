"""The files of a partitioned Parquet dataset (a directory, recursively, or a glob
pattern; in name order), and :func:`open_part`, the one way each is opened."""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ale_cli.errors import InputError
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
    """The files of a data path: itself, a directory's ``*.parquet`` files, or a glob's."""
    if is_glob(path):
        root = dataset_root(path)
        pattern = path.relative_to(root).as_posix() if root != Path(".") else str(path)
        matched = sorted(p for p in root.glob(pattern) if p.is_file())
        if not matched:
            raise InputError(f"data '{path}' matches no files")
        return matched
    if not path.is_dir():
        return [path]
    files = sorted(p for p in path.rglob("*.parquet") if p.is_file())
    if not files:
        raise InputError(
            f"data '{path}' is a directory holding no .parquet files; give a CSV or Parquet "
            "file, or a directory of .parquet files (a partitioned dataset)"
        )
    return files


def dataset_sha256(path: Path) -> str:
    """SHA-256 of a data file, or of a directory's files: of each relative name and hash."""
    if not is_dataset(path):
        return sha256_file(path)
    return combine_hashes(path, [(p, sha256_file(p)) for p in dataset_files(path)])


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
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return InputError(f"cannot read data file '{path}' as {fmt.upper()}: {reason}")


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


def read_parts(files: Sequence[Path], columns: Sequence[str]) -> pd.DataFrame:
    """The ``columns`` of every part, one table in file order (columns matched by name)."""
    import pandas as pd
    import pyarrow as pa

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
        return pd.concat([t.to_pandas() for t in tables], ignore_index=True)
    return table.to_pandas()
