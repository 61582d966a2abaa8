"""The JSON types of a store's meta (and a directory store's manifest), checked when a
store is opened, so that no reader meets a string where ``ale compute`` writes an
object (``meta.model`` given as a path) or text where it writes numbers."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ale_cli.errors import InputError
from ale_cli.store.format import SCHEMA_VERSION

#: the JSON type of each key a store's meta may hold (absent or null: not recorded)
_META_OBJECTS = (
    "tool", "model", "data", "method_details", "output", "options", "timings",
    "categorical_levels", "chunks", "secant", "engine",
)  # fmt: skip
_META_LISTS = (
    "feature_names", "features", "inputs", "categorical_features", "pairs", "levels", "notes",
    "outputs",
)  # fmt: skip
_META_TEXT = ("created", "method", "cache_key", "layout", "content_sha256")
_NAME_LISTS = ("feature_names", "features", "inputs", "categorical_features")


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _finite_numbers(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value
    )


def meta_problem(meta: Mapping[str, Any]) -> str | None:
    """What is wrong with the JSON types of a store's meta (None if nothing): each key
    ``ale compute`` writes has its type (an object, a list, text, a count), the names are
    text, ``model`` and ``data`` hold text paths and hashes and counts of rows, and the
    ``chunks`` manifest holds counts of rows and finite per-input ranges.

    >>> meta_problem({"schema_version": 3, "model": "m.pt"})
    "'model' is not an object"
    >>> meta_problem({"chunks": {"rows": [64, "8"]}})
    "'chunks.rows' is not a list of row counts"
    """
    for key in _META_OBJECTS:
        if meta.get(key) is not None and not isinstance(meta[key], dict):
            return f"'{key}' is not an object"
    for key in _META_LISTS:
        if meta.get(key) is not None and not isinstance(meta[key], list):
            return f"'{key}' is not a list"
    for key in _META_TEXT:
        if meta.get(key) is not None and not isinstance(meta[key], str):
            return f"'{key}' is not text"
    if not all(isinstance(o, dict) for o in meta.get("outputs") or ()):
        return "'outputs' is not a list of objects"
    for key in _NAME_LISTS:
        if not all(isinstance(n, str) for n in meta.get(key) or ()):
            return f"'{key}' holds something other than names"
    for key, fields in (("model", ("path", "sha256", "format")), ("data", ("path", "sha256"))):
        found = meta.get(key) or {}
        for field in fields:
            if found.get(field) is not None and not isinstance(found[field], str):
                return f"'{key}.{field}' is not text"
    for field in ("rows_read", "rows_dropped", "rows_nonfinite"):
        if (meta.get("data") or {}).get(field) is not None:
            if not _count(meta["data"][field]):
                return f"'data.{field}' is not a count of rows"
    return _chunks_problem(meta.get("chunks"))


def _chunks_problem(chunks: Mapping[str, Any] | None) -> str | None:
    if chunks is None:
        return None
    rows = chunks.get("rows")
    if not isinstance(rows, list) or not all(_count(n) for n in rows):
        return "'chunks.rows' is not a list of row counts"
    arrays = chunks.get("arrays", [])
    if not isinstance(arrays, list) or not all(isinstance(a, str) for a in arrays):
        return "'chunks.arrays' is not a list of array names"
    lo, hi = chunks.get("x_min"), chunks.get("x_max")
    if (lo is None) != (hi is None):
        return "'chunks.x_min' and 'chunks.x_max' come together"
    if lo is not None and (
        not _finite_numbers(lo)
        or not _finite_numbers(hi)
        or len(lo) != len(hi)
        or any(a > b for a, b in zip(lo, hi, strict=True))
    ):
        return "'chunks.x_min' and 'chunks.x_max' are not per-input finite ranges"
    if chunks.get("prediction") is not None and not isinstance(chunks["prediction"], dict):
        return "'chunks.prediction' is not an object"
    return None


def check_meta(where: str, meta: dict[str, Any], what: str = "meta") -> None:
    """Refuse a store's meta (its ``what``: meta or manifest) of a later schema or with
    :func:`meta_problem`; ``where`` names the store."""
    version = meta.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int) or version > SCHEMA_VERSION:
        raise InputError(
            f"{where} has schema_version {str(version)[:40]}; this ale reads up to {SCHEMA_VERSION}"
        )
    problem = meta_problem(meta)
    if problem is not None:
        raise InputError(f"{where}: its {what} is malformed: {problem}")
