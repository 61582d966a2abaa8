"""``ale export``'s long table (:mod:`ale_cli.summary.export`) written as CSV or Parquet,
with the marks the output guard recognises it by."""

from __future__ import annotations

import io
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from ale_cli import __version__
from ale_cli.checks import is_stdio
from ale_cli.errors import InputError
from ale_cli.io.files import atomic_write
from ale_cli.io.jsonio import TOOL
from ale_cli.outputs.guard import PARQUET_KEY
from ale_cli.summary.export import ExportTable, export_table

#: table formats and the file extensions that select them
FORMATS = ("csv", "parquet")
EXTENSIONS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


def table_format(path: str | Path, fmt: str | None = None) -> str:
    """``fmt`` if given (csv or parquet), else the format of ``path``'s extension; ``"-"``
    (standard output) is CSV only.

    >>> table_format("effects.pq"), table_format("-"), table_format("t.txt", "csv")
    ('parquet', 'csv', 'csv')
    """
    if fmt is not None and fmt not in FORMATS:
        raise InputError(f"{{param}} must be csv or parquet, got '{fmt}'", param="fmt")
    if is_stdio(path):
        if fmt not in (None, "csv"):
            raise InputError(
                "{param} '-' (standard output) takes CSV only; write parquet to a file",
                param="out",
            )
        return "csv"
    if fmt is not None:
        return fmt
    suffix = Path(path).suffix.lower()
    if suffix not in EXTENSIONS:
        known = ", ".join(EXTENSIONS)
        raise InputError(
            f"cannot tell the table format of '{path}' from its extension ({known}); "
            "give {param} csv or parquet",
            param="fmt",
        )
    return EXTENSIONS[suffix]


@dataclass(frozen=True)
class ExportResult(ExportTable):
    """What :func:`export_summary` wrote: the table and its format."""

    fmt: str = "csv"


def export_summary(
    source: str | Path,
    out: str | Path,
    *,
    fmt: str | None = None,
) -> ExportResult:
    """Read a summary (``"-"``: standard input) and write its long table to ``out`` as CSV or
    Parquet (``fmt``, else :func:`table_format`; ``"-"``: CSV to standard output), atomically, with
    the guard's marks."""
    fmt = table_format(out, fmt)
    table = export_table(source)
    if fmt == "csv":
        buffer = io.StringIO()
        table.frame.to_csv(buffer, index=False, lineterminator="\n")
        if is_stdio(out):
            sys.stdout.write(buffer.getvalue())
        else:
            with atomic_write(out) as fh:
                fh.write(buffer.getvalue().encode("utf-8"))
    else:  # schema metadata key ``ale`` names the tool
        import pyarrow as pa
        import pyarrow.parquet as pq

        arrow = pa.Table.from_pandas(table.frame, preserve_index=False)
        mark = json.dumps({"name": TOOL, "version": __version__, "kind": "table"})
        arrow = arrow.replace_schema_metadata(
            {**(arrow.schema.metadata or {}), PARQUET_KEY: mark.encode()}
        )
        with atomic_write(out) as fh:
            pq.write_table(arrow, fh)
    return ExportResult(table.frame, table.rows, table.not_estimable, fmt=fmt)
