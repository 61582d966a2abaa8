"""The order in which a model takes its input columns, when the model file tells it:
``m.columns.json`` beside ``m.pt`` holds ``{"columns": ["age", "sex", ...]}``; an
ONNX graph with one input per column names them by its input names.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ale_cli.errors import InputError, first_line
from ale_cli.models.objects import ModelObject
from ale_cli.models.onnx_graph import column_inputs, read_graph

SUFFIX = ".columns.json"
#: A columns file larger than this is not a list of column names.
MAX_BYTES = 1 << 20


def columns_file(model: Path) -> Path:
    """The columns file of a model: its path with ``.columns.json`` for its extension.

    >>> columns_file(Path("models/m.pt")).as_posix()
    'models/m.columns.json'
    """
    return model.with_suffix(SUFFIX)


def read_columns_file(path: Path) -> tuple[str, ...]:
    """The ``columns`` list of a columns file; InputError naming the file if it is not one."""
    if not path.is_file():
        raise InputError(f"columns file '{path}' is not a regular file")
    if path.stat().st_size > MAX_BYTES:
        raise InputError(f"columns file '{path}' is larger than {MAX_BYTES >> 10} KiB")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise InputError(f"columns file '{path}' is not valid JSON: {first_line(exc)}") from None
    names = data.get("columns") if isinstance(data, dict) else None
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
        raise InputError(
            f"columns file '{path}' must hold {{\"columns\": [...]}}: a list of the model's "
            "column names in its order"
        )
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise InputError(f"columns file '{path}' lists column '{name}' twice")
        seen.add(name)
    return tuple(names)


@dataclass(frozen=True)
class ColumnOrder:
    """The model's input columns in its order (None: unknown) and where they come from."""

    names: tuple[str, ...] | None = None
    source: str | None = None


def model_column_order(model: Path | ModelObject, model_format: str | None = None) -> ColumnOrder:
    """The order of the columns file, else of a per-column ONNX graph's inputs (a model
    object: unknown)."""
    if isinstance(model, ModelObject):
        return ColumnOrder()
    path = columns_file(model)
    if path.exists():
        return ColumnOrder(read_columns_file(path), f"columns file '{path}'")
    if model_format == "onnx":
        proto = read_graph(model)
        names = None if proto is None else column_inputs(proto)
        if names is not None:
            return ColumnOrder(names, f"the input names of ONNX model '{model}'")
    return ColumnOrder()


def order_note(
    order: ColumnOrder, data_order: Sequence[str], used: Sequence[str], *, positional: bool
) -> str | None:
    """The note that says how the data's columns (``data_order``) were given to the model
    (``used``).

    >>> order_note(ColumnOrder(), ["a", "b"], ["a", "b"], positional=True)
    'columns taken by position: a, b'
    >>> order_note(ColumnOrder(("b", "a"), "columns file 'm.columns.json'"), ["a", "b"],
    ...            ["b", "a"], positional=True)
    "columns realigned by name to the order of columns file 'm.columns.json': b, a"
    """
    if order.names is None:
        return f"columns taken by position: {', '.join(used)}" if positional else None
    if list(data_order) == list(used):
        return None
    return f"columns realigned by name to the order of {order.source}: {', '.join(used)}"
