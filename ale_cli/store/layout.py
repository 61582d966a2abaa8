"""A store file's layout and meta checked before any number from it is used (members,
dtypes, agreeing shapes, finite rows, the meta's JSON types); a refusal names the array."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ale_cli.errors import InputError
from ale_cli.store.format import PER_OUTPUT, SCHEMA_VERSION, output_entry, output_records
from ale_cli.store.verify import DamagedStore

_FLOAT_ARRAYS = ("X", "local_effects", "prediction")
_TEXT_ARRAYS = ("feature_names", "meta")
_REQUIRED = (*_FLOAT_ARRAYS, *_TEXT_ARRAYS)
#: name -> (shape, dtype) of a store's members
Specs = Mapping[str, tuple[tuple[int, ...], np.dtype]]


def _layout(path: Path, specs: Specs, meta: Mapping[str, Any]) -> None:
    where = f"store '{path}'"
    missing = [name for name in _REQUIRED if name not in specs]
    if missing:
        raise InputError(f"{where} lacks the array(s) {', '.join(missing)}")
    for name, (_, dtype) in specs.items():
        if dtype.hasobject:
            raise InputError(f"{where}: array '{name}' holds Python objects, which ale never reads")
    for name in _REQUIRED:
        kind, what = ("f", "floats") if name in _FLOAT_ARRAYS else ("U", "text")
        if (dtype := specs[name][1]).kind != kind:
            raise InputError(f"{where}: array '{name}' must hold {what}, it holds {dtype.name}")
    x_shape = specs["X"][0]
    if len(x_shape) != 2:
        raise InputError(
            f"{where}: array 'X' must be 2-D (rows x features), it has shape {x_shape}"
        )
    n, d = x_shape
    if "input_names" in specs and specs["input_names"][1].kind != "U":
        raise InputError(f"{where}: array 'input_names' must hold text")
    if "input_names" in specs and specs["input_names"][0] != (d,):
        raise InputError(
            f"{where}: array 'input_names' has shape {specs['input_names'][0]}, expected ({d},) "
            f"for {d} columns of X"
        )
    # schema 2: local_effects has a column per explained feature (F <= D); schema 1: F = D
    f_shape = specs["feature_names"][0]
    f = f_shape[0] if len(f_shape) == 1 and "input_names" in specs else d
    expected = {"local_effects": (n, f), "prediction": (n,), "feature_names": (f,), "meta": ()}
    for name, shape in expected.items():
        if specs[name][0] != shape:
            raise InputError(
                f"{where}: array '{name}' has shape {specs[name][0]}, expected {shape} "
                f"for {n} rows x {f} features"
            )
    if "pairs" in specs or "mixed_derivatives" in specs:
        if "pairs" not in specs or "mixed_derivatives" not in specs:
            raise InputError(f"{where}: arrays 'pairs' and 'mixed_derivatives' come together")
        p_shape, p_dtype = specs["pairs"]
        if p_dtype.kind != "U" or len(p_shape) != 2 or p_shape[1] != 2:
            raise InputError(f"{where}: array 'pairs' must hold (P, 2) feature names")
        m_shape, m_dtype = specs["mixed_derivatives"]
        if m_dtype.kind != "f" or m_shape != (p_shape[0], n):
            raise InputError(
                f"{where}: array 'mixed_derivatives' must hold floats of shape "
                f"({p_shape[0]}, {n}), it has {m_dtype.name} {m_shape}"
            )
    _level_layout(where, specs, meta, n)
    _output_layout(where, specs, meta)
    _fine_layout(where, specs, meta, f)
    rows = meta.get("n_rows")
    if isinstance(rows, bool) or not isinstance(rows, int):
        raise InputError(f"{where}: its meta has no integer 'n_rows'")
    if rows != n:
        raise InputError(f"{where}: its meta says n_rows {rows}, array 'X' has {n} rows")


def _output_layout(where: str, specs: Specs, meta: Mapping[str, Any]) -> None:
    """Output k's copy of each per-output row array, shaped and typed as output 0's."""
    count = len(output_records(meta))
    expected = {output_entry(n, k) for n in PER_OUTPUT if n in specs for k in range(1, count)}
    found = {n for n in specs if ".out" in n}
    if found != expected:
        odd = sorted(found ^ expected)[0]
        why = "is missing" if odd in expected else "is not an array of one of its outputs"
        raise InputError(f"{where}: array '{odd}' {why} (its meta lists {count} outputs)")
    for name in sorted(expected):
        (shape, dtype), base = specs[name], name.partition(".out")[0]
        if shape != specs[base][0] or dtype.kind != specs[base][1].kind:
            raise InputError(
                f"{where}: array '{name}' has shape {shape}, expected {specs[base][0]} as '{base}'"
            )


def _level_layout(where: str, specs: Specs, meta: Mapping[str, Any], n: int) -> None:
    """``level_up`` and ``level_down``: floats (N, L), L the meta's ``levels`` records."""
    levels = meta.get("levels")
    present = [name for name in ("level_up", "level_down") if name in specs]
    if not present and not levels:
        return
    if levels is not None and not isinstance(levels, list):
        raise InputError(f"{where}: its meta's 'levels' is not a list")
    if len(present) != 2:
        raise InputError(f"{where}: arrays 'level_up' and 'level_down' come with meta 'levels'")
    names = [item.get("feature") if isinstance(item, Mapping) else None for item in levels or []]
    if any(not isinstance(x, str) for x in names) or len(set(names)) != len(names):
        raise InputError(f"{where}: its meta's 'levels' records must name distinct features")
    for item, name in zip(levels or [], names, strict=True):
        problem = level_problem(item)
        if problem is not None:
            raise InputError(f"{where}: the levels of feature '{name}': {problem}")
    for name in present:
        shape, dtype = specs[name]
        if dtype.kind != "f" or shape != (n, len(names)):
            raise InputError(
                f"{where}: array '{name}' must hold floats of shape ({n}, {len(names)}), "
                f"it has {dtype.name} {shape}"
            )


def level_problem(item: Mapping[str, Any]) -> str | None:
    """What is wrong with a record of a store meta's ``levels`` (None if nothing).

    >>> level_problem({"kind": "discrete", "values": [1, 2], "order": [1, 0], "labels": None})
    >>> level_problem({"kind": "discrete", "values": [2, 1], "order": [0, 1], "labels": None})
    'its values are not strictly increasing'
    """
    kind, values, order = item.get("kind"), item.get("values"), item.get("order")
    labels = item.get("labels")
    if kind not in ("discrete", "categorical"):
        return f"kind '{str(kind)[:40]}' is not one of discrete, categorical"
    number = (int, float)
    if (
        not isinstance(values, list)
        or len(values) < 2
        or not all(isinstance(v, number) and not isinstance(v, bool) for v in values)
        or not all(math.isfinite(v) for v in values)
    ):
        return "its values are not at least 2 finite numbers"
    if any(b <= a for a, b in zip(values, values[1:], strict=False)):
        return "its values are not strictly increasing"
    k = len(values)
    if (
        not isinstance(order, list)
        or not all(isinstance(i, int) and not isinstance(i, bool) for i in order)
        or sorted(order) != list(range(k))
    ):
        return f"its order is not an ordering of its {k} levels"
    if labels is not None and (
        not isinstance(labels, list)
        or not all(float(v).is_integer() and 0 <= v < len(labels) for v in values)
    ):
        return "its labels do not cover its level codes"
    return None


def _fine_layout(where: str, specs: Specs, meta: Mapping[str, Any], n_features: int) -> None:
    """A store of secants, and only one, has ``fine_edges`` (M,), ``fine_offsets`` (F+1,)
    and a meta ``secant.k_fine``."""
    secant = meta.get("method") == "secant"
    present = [name for name in ("fine_edges", "fine_offsets") if name in specs]
    if not secant and not present:
        return
    if len(present) != 2:
        raise InputError(
            f"{where}: a store of secants needs the arrays 'fine_edges' and 'fine_offsets'"
        )
    if not secant:
        raise InputError(f"{where}: arrays 'fine_edges' and 'fine_offsets' need method 'secant'")
    e_shape, e_dtype = specs["fine_edges"]
    if e_dtype.kind != "f" or len(e_shape) != 1:
        raise InputError(f"{where}: array 'fine_edges' must hold a flat list of floats")
    o_shape, o_dtype = specs["fine_offsets"]
    if o_dtype.kind not in "iu" or o_shape != (n_features + 1,):
        raise InputError(
            f"{where}: array 'fine_offsets' must hold {n_features + 1} integers "
            f"(one more than the features), it has {o_dtype.name} {o_shape}"
        )
    info = meta.get("secant")
    k_fine = info.get("k_fine") if isinstance(info, Mapping) else None
    if isinstance(k_fine, bool) or not isinstance(k_fine, int) or k_fine < 1:
        raise InputError(f"{where}: its meta has no 'secant' entry with a whole 'k_fine'")


def _names(path: Path, names: np.ndarray, array: str = "feature_names") -> None:
    seen: set[str] = set()
    for raw in names.reshape(-1):
        name = str(raw)
        if not name:
            raise InputError(f"store '{path}': array '{array}' holds an empty name")
        if name in seen:
            raise InputError(f"store '{path}': feature '{name}' appears twice in '{array}'")
        seen.add(name)


def check_finite(
    path: Path, name: str, array: np.ndarray, labels: Sequence[str] = (), *, row0: int = 0
) -> None:
    """Refuse a row array of a store holding NaN or infinity (ale writes none), naming the
    first row and column (``labels``; mixed derivatives (P, N) hold a row per pair)."""
    if array.dtype.kind != "f":
        return
    if np.isfinite(array).all():
        return
    bad = ~np.isfinite(array.T if name.split(".")[0] == "mixed_derivatives" else array)
    spots = np.nonzero(bad.reshape(len(bad), -1))
    row, col = int(spots[0][0]), int(spots[1][0])
    what = f"row {row0 + row}"
    if array.ndim == 2:
        kind = "pair" if name.startswith("mixed") else "feature"
        what += f", {kind} '{labels[col]}'" if col < len(labels) else f", {kind} {col + 1}"
    count = len(spots[0])
    raise DamagedStore(
        f"store '{path}': array '{name}' has {count} NaN or infinite value"
        f"{'s' if count != 1 else ''} (first: {what}); ale writes only finite values"
    )


def check_span(path: Path, X: np.ndarray, names: Sequence[str]) -> None:
    """Every column's range of a finite X finite too (max - min must not overflow)."""
    if X.size == 0:
        return
    with np.errstate(over="ignore", invalid="ignore"):
        span = X.max(axis=0) - X.min(axis=0)
    wide = np.nonzero(~np.isfinite(span))[0]
    if len(wide):
        j = int(wide[0])
        raise InputError(
            f"store '{path}': feature '{names[j]}' spans [{X[:, j].min():.6g}, "
            f"{X[:, j].max():.6g}], too wide to compute with (its range overflows)"
        )


def _load(path: Path, npz: Any, name: str) -> np.ndarray:
    try:
        return np.asarray(npz.array(name))
    except ValueError as exc:
        raise InputError(f"store '{path}': array '{name}' is unreadable ({exc})") from None


_ROWS = r"((?:X|local_effects|prediction|mixed_derivatives|level_up|level_down)(?:\.out\d+)?)"
#: a row array, whole or a chunk (``X``, ``X.00003``); a chunk
ROW_MEMBER = re.compile(rf"^{_ROWS}(\.\d{{5}})?$")
_CHUNK = re.compile(rf"^{_ROWS}\.(\d{{5}})$")


def _virtual_specs(path: Path, specs: Specs, meta: Mapping[str, Any]) -> Specs:
    """A chunked store's specs as if its chunks were stacked, each chunk checked."""
    chunks = meta.get("chunks") or {}
    rows = [int(n) for n in chunks.get("rows", [])] if isinstance(chunks, Mapping) else []
    out = {name: spec for name, spec in specs.items() if not _CHUNK.match(name)}
    grouped: dict[str, list[tuple[int, tuple[int, ...], np.dtype]]] = {}
    for name, (shape, dtype) in specs.items():
        m = _CHUNK.match(name)
        if m:
            grouped.setdefault(m.group(1), []).append((int(m.group(2)), shape, dtype))
    for array, parts in grouped.items():
        parts.sort()
        if [i for i, _, _ in parts] != list(range(len(rows))):
            raise InputError(
                f"store '{path}': array '{array}' has {len(parts)} chunks, its manifest "
                f"lists {len(rows)}"
            )
        axis = 1 if array == "mixed_derivatives" else 0
        first_shape, first_dtype = parts[0][1], parts[0][2]
        for (i, shape, dtype), n in zip(parts, rows, strict=True):
            if len(shape) < axis + 1 or shape[axis] != n or dtype.kind != first_dtype.kind:
                raise InputError(
                    f"store '{path}': chunk {i} of array '{array}' has shape {shape} "
                    f"({dtype.name}), expected {n} rows"
                )
            other = shape[:axis] + shape[axis + 1 :]
            if other != first_shape[:axis] + first_shape[axis + 1 :]:
                raise InputError(f"store '{path}': chunk {i} of array '{array}' has shape {shape}")
        whole = list(first_shape)
        whole[axis] = sum(rows)
        out[array] = (tuple(whole), first_dtype)
    return out


def validate_npz(
    path: str | Path, npz: Any, meta: Mapping[str, Any], *, full: bool = True
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Check an open store without keeping its big arrays: the small members' CRC-32,
    every header and the layout; with ``full``, every row array too (CRC-32, finite).
    Its feature names and input names, checked."""
    path = Path(path)
    for filename in npz.raw_names:
        if not filename.endswith(".npy"):
            raise InputError(f"store '{path}': member '{filename}' is not a .npy array")
    for name in npz.files:  # the small members' bytes first (the row arrays': below)
        if not ROW_MEMBER.match(name):
            npz.verify(name)
    specs = {}
    try:
        for name in npz.files:
            shape, _, dtype, _ = npz.spec(name)
            specs[name] = (shape, dtype)
        _layout(path, _virtual_specs(path, specs, meta), meta)
    except InputError:
        if full:  # a layout broken by damaged bytes is named as damage
            for name in npz.files:
                npz.verify(name)
        raise
    names = _load(path, npz, "feature_names")
    _names(path, names)
    inputs = names
    if "input_names" in specs:
        inputs = _load(path, npz, "input_names")
        _names(path, inputs, "input_names")
    found = tuple(str(n) for n in names), tuple(str(n) for n in inputs)
    if not full:  # headers and layout only: the readers of the chunks check their bytes
        return found
    labels = {"X": found[1], "local_effects": found[0]}
    for name in npz.files:
        if ROW_MEMBER.match(name):
            array, base = _load(path, npz, name), name.split(".")[0]
            check_finite(path, name, array, labels.get(base, ()))
            if base == "X":
                check_span(path, array, labels["X"])
    return found


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
_META_TYPES = (
    (_META_OBJECTS, dict, "an object"),
    (_META_LISTS, list, "a list"),
    (_META_TEXT, str, "text"),
)
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
    for keys, kind, what in _META_TYPES:
        for key in keys:
            if meta.get(key) is not None and not isinstance(meta[key], kind):
                return f"'{key}' is not {what}"
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
