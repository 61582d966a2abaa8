"""The one place where numpy values become JSON: NaN and infinities become ``null``,
floats keep full precision, keys keep their order (the same input, the same bytes)."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ale_cli.checks import is_stdio
from ale_cli.errors import InputError, first_line


def to_jsonable(value: Any) -> Any:
    """Convert numpy arrays/scalars, tuples and paths to JSON types; NaN/inf -> None.

    >>> to_jsonable({"a": np.array([1.5, np.nan]), "b": np.int64(3), "c": (True, None)})
    {'a': [1.5, None], 'b': 3, 'c': [True, None]}
    """
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return to_jsonable(value.item())
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Path):
        return str(value)
    return value


def dumps(value: Any) -> str:
    """Serialise to stable, indented JSON text ending in a newline."""
    return json.dumps(to_jsonable(value), indent=2, allow_nan=False, ensure_ascii=False) + "\n"


def float_array(values: Any) -> np.ndarray:
    """The inverse of :func:`to_jsonable` for a float list: ``None`` -> NaN.

    >>> float_array([1.0, None])
    array([ 1., nan])
    """
    return np.array([np.nan if v is None else v for v in values], dtype=np.float64)


#: the tool name in the ``tool`` object of every JSON file ale writes
TOOL = "ale"


def ale_object(path: Path, limit: int) -> dict[str, Any] | None:
    """The JSON object in file ``path`` (of at most ``limit`` bytes) whose ``tool.name`` is
    :data:`TOOL`, else None."""
    try:
        if path.stat().st_size > limit:
            return None
        data = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return None
    tool = data.get("tool") if isinstance(data, dict) else None
    return data if isinstance(tool, dict) and tool.get("name") == TOOL else None


def read_bytes(path: str | Path, what: str) -> bytes:
    """The bytes of a file, or of standard input for ``-``."""
    if is_stdio(path):
        return sys.stdin.buffer.read()
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{what} '{path}' is a directory, expected a JSON file")
    if not path.exists():
        raise InputError(f"{what} '{path}' does not exist")
    if not path.is_file():
        raise InputError(f"{what} '{path}' is not a regular file, expected a JSON file")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {what} '{path}': {exc.strerror or exc}") from None


_FLOAT_MAX = int(sys.float_info.max)


def _number(text: str) -> int | float:
    """A JSON integer; one past the range of a float is infinite, as ``1e400`` is.

    >>> _number("9" * 400), _number("-" + "9" * 400), _number("12")
    (inf, -inf, 12)
    """
    value = int(text)
    if abs(value) > _FLOAT_MAX:
        return math.inf if value > 0 else -math.inf
    return value


class DuplicateKey(ValueError):
    """A JSON object naming a key twice (which ``json`` alone reads as its last value)."""


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """The object of ``pairs``; DuplicateKey when a key appears twice.

    >>> _unique([("a", [-1, 0, 1]), ("a", [0, 1])])
    Traceback (most recent call last):
    ale_cli.io.jsonio.DuplicateKey: key 'a' appears twice in the same object
    """
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise DuplicateKey(f"key '{key[:60]}' appears twice in the same object")
        seen.add(key)
    return dict(pairs)


def loads(text: str) -> Any:
    """``json.loads`` whose integers too large for a float are infinite, refusing a key
    given twice in an object (:class:`DuplicateKey`)."""
    return json.loads(text, parse_int=_number, object_pairs_hook=_unique)


def parse_json(raw: bytes, path: str | Path, what: str) -> Any:
    """Parse JSON bytes read from ``path``."""
    where = "standard input" if is_stdio(path) else f"'{path}'"
    try:
        return loads(raw.decode("utf-8"))
    except DuplicateKey as exc:
        raise InputError(f"{what} {where} is refused: {exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"{what} {where} is not valid JSON: {first_line(exc)}") from None
    except RecursionError:
        raise InputError(f"{what} {where} is nested too deeply to be an ale file") from None


def read_json_file(path: str | Path, what: str) -> Any:
    """Parse a JSON file (``-``: standard input); one-line InputError naming ``what``."""
    return parse_json(read_bytes(path, what), path, what)
