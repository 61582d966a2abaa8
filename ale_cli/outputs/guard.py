"""The output guard: what ``ale`` may write over, decided once, before any work, as
docs/commands.md ("Outputs are protected") says; ``-`` only where a kind can go to stdout."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ale_cli.checks import STDIO, is_stdio
from ale_cli.errors import InputError
from ale_cli.io.files import output_mode, what_is
from ale_cli.io.jsonio import ale_object
from ale_cli.outputs import figures
from ale_cli.summary.export import HEADERS

#: The comment :func:`ale_cli.audit.report.junit_xml` writes after the XML declaration.
JUNIT_MARKER = "<!-- generator: ale"
#: The ``<meta>`` of every HTML report (``ale_cli/report/templates/report.html.j2``).
HTML_MARKER = '<meta name="generator" content="ale '
#: The key of a Parquet export's schema metadata.
PARQUET_KEY = b"ale"
_HEAD = 4096
_JSON_LIMIT = 1 << 30


@dataclass(frozen=True)
class OutputKind:
    """One kind of output: ``recognise(path)`` is True for an existing ``ale`` output of
    this kind; ``refusal(path)`` says why an existing ``path`` is refused even with ``force``."""

    name: str
    description: str
    recognise: Callable[[Path], bool]
    directory: bool = False
    stdout: bool = False
    refusal: Callable[[Path], str | None] | None = None


def _head(path: Path, size: int = _HEAD) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(size)
    except OSError:
        return b""


def _json_object(path: Path) -> dict[str, object] | None:
    if b'"tool"' not in _head(path, 1 << 16):  # ours name it near the top
        return None
    return ale_object(path, _JSON_LIMIT)


def is_summary(path: Path) -> bool:
    data = _json_object(path)
    return data is not None and all(k in data for k in ("schema_version", "estimator", "features"))


def is_audit_report(path: Path) -> bool:
    data = _json_object(path)
    return data is not None and "rules" in data and isinstance(data.get("checks"), list)


def is_audit_markdown(path: Path) -> bool:
    """A markdown summary of ``ale audit``, or an empty file (a CI job summary file)."""
    head = _head(path, 512)
    return head == b"" or head.startswith(JUNIT_MARKER.encode())


def is_html_report(path: Path) -> bool:
    head = _head(path)
    return head.lstrip().lower().startswith(b"<!doctype html") and HTML_MARKER.encode() in head


def is_junit(path: Path) -> bool:
    head = _head(path, 512)
    return head.startswith(b"<?xml") and JUNIT_MARKER.encode() in head


def is_store(path: Path) -> bool:
    """A store file that opens as every reader opens it; one of ours whose members are
    damaged counts too (compute recomputes it)."""
    from ale_cli.store.npz import open_store  # numpy and the store reader: only here
    from ale_cli.store.verify import DamagedStore

    if not path.is_file():
        return False
    try:
        open_store(path)
    except DamagedStore:
        return True
    except InputError:
        return False
    return True


def is_store_directory(path: Path) -> bool:
    from ale_cli.store.parts import is_part_store

    return is_part_store(path)


def is_csv_export(path: Path) -> bool:
    """True when the first line of ``path`` is a header row ``ale export`` writes.

    >>> from ale_cli.summary.export import table_columns
    >>> ",".join(table_columns(["edge", "bin"])) in HEADERS
    True
    """
    first = _head(path).split(b"\n", 1)[0]
    return first.rstrip(b"\r").decode("utf-8", "replace") in HEADERS


def is_parquet_export(path: Path) -> bool:
    if _head(path, 4) != b"PAR1":
        return False
    import pyarrow.parquet as pq  # heavy: only for an existing Parquet file

    try:
        metadata = pq.read_schema(path).metadata or {}
    except Exception:  # pyarrow raises its own types for any damaged footer
        return False
    return PARQUET_KEY in metadata


def _store_dir_refusal(path: Path) -> str | None:
    """Why a directory that is neither empty nor a directory store holding only its own
    files is refused even with ``force``."""
    from ale_cli.store.parts import MANIFEST, unlisted

    if not any(os.scandir(path)):
        return None
    if not is_store_directory(path):
        return (
            f"output '{path}' is a directory that is not an ale directory store; "
            "choose another output"
        )
    return figures.foreign(path, unlisted(path), MANIFEST, "the store replaces")


#: every output kind
KIND_LIST: tuple[OutputKind, ...] = (
    OutputKind("store", "local-effects store (.npz with a readable meta)", is_store),
    OutputKind(
        "store-dir",
        "directory store",
        is_store_directory,
        directory=True,
        refusal=_store_dir_refusal,
    ),
    OutputKind("summary", "summary", is_summary, stdout=True),
    OutputKind("edges", "edges file (a summary)", is_summary, stdout=True),
    OutputKind("html", "HTML report", is_html_report, stdout=True),
    OutputKind("audit-json", "audit report", is_audit_report, stdout=True),
    OutputKind("junit", "JUnit XML of 'ale audit'", is_junit, stdout=True),
    OutputKind("audit-markdown", "markdown summary of 'ale audit'", is_audit_markdown, stdout=True),
    OutputKind("table-csv", "CSV export", is_csv_export, stdout=True),
    OutputKind("table-parquet", "Parquet export", is_parquet_export),
    OutputKind(
        "figures",
        "figure directory",
        figures.is_figure_directory,
        directory=True,
        refusal=figures.refusal,
    ),
)
#: every output kind by name
KINDS: dict[str, OutputKind] = {kind.name: kind for kind in KIND_LIST}


def store_kind(directory: bool, out: str | Path) -> str:
    """A store's kind: a directory store when one is written (the Dask engine), unless a
    store file is already at ``out`` (ale's own: replaced by the directory)."""
    return "store-dir" if directory and not Path(out).is_file() else "store"


def _refuse_inputs(
    out: Path,
    inputs: Sequence[str | os.PathLike[str] | None],
    *,
    inside: bool,
    ours: Callable[[Path], bool],
) -> None:
    """Refuse ``out`` when it is one of ``inputs`` or an existing path inside an input
    directory (an MLflow model's, a dataset's) that is not an ale output of its kind
    (``ours``: a report in a history directory is rewritten), or (``inside``) when it holds
    an input."""
    given = [m for item in inputs if not (item is None or is_stdio(item)) for m in _files(item)]
    resolved = out.resolve() if os.path.lexists(out) else None
    for item in given:
        try:
            within = resolved is not None and Path(item).is_dir()
            within = within and Path(item).resolve() in resolved.parents and not ours(out)
            same = not within and os.path.samefile(out, item)
        except (OSError, ValueError, RuntimeError):
            continue
        if same or within:
            what = "the same file as" if same else "inside"
            raise InputError(f"output '{out}' is {what} the input '{item}'; choose another output")
    for item in given if inside else ():
        try:
            holds = out.resolve() in Path(item).resolve().parents
        except (OSError, RuntimeError):
            continue
        if holds:
            raise InputError(
                f"output '{out}' holds the input '{item}', which replacing it would delete; "
                "choose another output"
            )


def _files(item: str | os.PathLike[str]) -> list[str | os.PathLike[str]]:
    """An input, and the files it matches when it is a glob pattern (a dataset's files)."""
    from ale_cli.data.table import dataset_files, is_glob  # numpy: only for a glob

    if not isinstance(item, str | os.PathLike) or not is_glob(Path(item)):
        return [item]
    try:
        return [item, *dataset_files(Path(item))]
    except InputError:  # matches nothing (the data command says so)
        return [item]


def model_files(model: Any) -> list[Any]:
    """What a model argument stands for, to protect as inputs: the model (an MLflow model's
    directory: all it holds) and the columns file beside a model file."""
    if not isinstance(model, str | os.PathLike) or not Path(model).is_file():
        return [model]
    from ale_cli.models.columns import columns_file  # only for a command that reads a model

    return [model, columns_file(Path(model))]


def guard(
    path: str | os.PathLike[str] | None,
    *,
    kind: str | OutputKind,
    inputs: Sequence[str | os.PathLike[str] | None] = (),
    force: bool = False,
    param: str = "out",
    others: Mapping[str, Path] | None = None,
) -> Path | None:
    """Check an output before any work (the module docstring): its path (``-``: standard
    output), None for no output. ``others``: the command's outputs already checked (option
    name -> path), which it may not name again."""
    spec = KINDS[kind] if isinstance(kind, str) else kind
    if path is None:
        return None
    if is_stdio(path):
        if not spec.stdout:
            raise InputError(
                f"{{param}} - (standard output) cannot be used for a {spec.description}; "
                "give a path",
                param=param,
            )
        return Path(STDIO)
    out = Path(path)
    for name, other in (others or {}).items():
        if not is_stdio(other) and os.path.realpath(other) == os.path.realpath(out):
            raise InputError(
                f"{{param:{name}}} and {{param}} both name '{out}'; give each output its own file",
                param=param,
            )
    mode = output_mode(out)
    _refuse_inputs(out, inputs, inside=spec.directory, ours=spec.recognise)
    if mode is None:
        return out
    what = what_is(mode)
    if spec.directory:
        if what != "a directory":
            raise InputError(f"output directory '{out}' is {what or 'a file'}")
        if spec.refusal is not None and (reason := spec.refusal(out)) is not None:
            raise InputError(reason)
    elif what is not None:
        raise InputError(f"cannot write '{out}': it is {what}, not a regular file")
    if not force and not spec.recognise(out):
        how = "is a directory that is not" if spec.directory else "exists and is not"
        raise InputError(
            f"output '{out}' {how} an ale {spec.description}; remove it, choose another "
            "output, or pass {param:force} to overwrite it",
            param=param,
        )
    return out
