"""Checks on every file ``ale`` reads back: stores, summaries and edges files.

A file that ``ale`` did not write, or that was edited, truncated or damaged,
is refused with one line naming the file, the array or feature, and the field,
before any number from it is used.

Stores (``.npz``):

- every member is a readable ``.npy`` whose bytes match its CRC-32 and whose zip
  headers agree (:mod:`ale_cli.store.verify`, the one reader of a store's bytes: a
  damaged member is named), with no Python objects;
- the required arrays are present with their dtypes: float ``X``,
  ``local_effects`` and ``prediction``, unicode ``feature_names`` and ``meta``;
- shapes agree: ``X`` and ``local_effects`` (N, D), ``prediction`` (N,),
  ``feature_names`` (D,), distinct and non-empty; the optional ``pairs``
  (P, 2) and ``mixed_derivatives`` (P, N) likewise, and ``level_up`` /
  ``level_down`` (N, L) with the meta's ``levels`` (L records);
- ``X`` is finite, so is each column's range, and the meta's ``n_rows`` is N; the
  local effects, predictions, mixed derivatives and jumps to adjacent levels are
  finite (ale writes no NaN or infinity: :func:`check_finite`);
- a store of secants (meta ``method`` "secant", piecewise-constant models) has
  float ``fine_edges`` (M,), integer ``fine_offsets`` (F+1,) and a meta ``secant``
  entry with a whole ``k_fine``; those arrays appear only in such a store.

:func:`validate_npz` does all of that without keeping the big arrays (it reads
them once, in the CRC check): it is what makes a cache hit sound, and costs
about one read of the file (see :func:`validate_npz`).

Summaries: the shipped JSON Schema (``ale_cli/schema/summary.schema.json``,
interpreted by :func:`schema_errors`, a small validator for the keywords that
schema uses; importing ``jsonschema`` alone costs 60-80 ms per command) plus what
a schema cannot say: edges strictly increasing with a finite span, array
lengths (K counts, K+1 edges, ...), ``n_bins`` equal to K, distinct names.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ale_cli.errors import InputError
from ale_cli.store.verify import DamagedStore

_FLOAT_ARRAYS = ("X", "local_effects", "prediction")
_TEXT_ARRAYS = ("feature_names", "meta")
_REQUIRED = (*_FLOAT_ARRAYS, *_TEXT_ARRAYS)


# -- stores ------------------------------------------------------------------------------------


def _member(name: str) -> str:
    return name[:-4] if name.endswith(".npy") else name


def _layout(
    path: Path, specs: Mapping[str, tuple[tuple[int, ...], np.dtype]], meta: Mapping[str, Any]
) -> None:
    """Required arrays, dtypes and shapes from ``specs`` (name -> (shape, dtype))."""
    where = f"store '{path}'"
    missing = [name for name in _REQUIRED if name not in specs]
    if missing:
        raise InputError(f"{where} lacks the array(s) {', '.join(missing)}")
    for name, (_, dtype) in specs.items():
        if dtype.hasobject:
            raise InputError(f"{where}: array '{name}' holds Python objects, which ale never reads")
    for name in _FLOAT_ARRAYS:
        dtype = specs[name][1]
        if dtype.kind != "f":
            raise InputError(f"{where}: array '{name}' must hold floats, it holds {dtype.name}")
    for name in _TEXT_ARRAYS:
        dtype = specs[name][1]
        if dtype.kind != "U":
            raise InputError(f"{where}: array '{name}' must hold text, it holds {dtype.name}")
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
    _fine_layout(where, specs, meta, f)
    rows = meta.get("n_rows")
    if isinstance(rows, bool) or not isinstance(rows, int):
        raise InputError(f"{where}: its meta has no integer 'n_rows'")
    if rows != n:
        raise InputError(f"{where}: its meta says n_rows {rows}, array 'X' has {n} rows")


def _level_layout(
    where: str,
    specs: Mapping[str, tuple[tuple[int, ...], np.dtype]],
    meta: Mapping[str, Any],
    n: int,
) -> None:
    """``level_up`` and ``level_down`` come together, as floats (N, L) with L the records
    of the meta's ``levels`` (each naming a distinct feature; their contents are read by
    :func:`ale_cli.estimators.stored_levels.stored_plans`)."""
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
    """What is wrong with a record of a store meta's ``levels`` (None if nothing): its
    ``kind``, its ``values`` (at least 2, finite, strictly increasing), its ``order`` (a
    permutation of the levels) and its ``labels`` (None, or text for every level code).

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


def _fine_layout(
    where: str,
    specs: Mapping[str, tuple[tuple[int, ...], np.dtype]],
    meta: Mapping[str, Any],
    n_features: int,
) -> None:
    """A store of secants (meta ``method`` "secant") has its fine grids: float
    ``fine_edges`` (M,) and integer ``fine_offsets`` (F+1,), and a ``secant`` meta entry
    with an integer ``k_fine``; the arrays come together. (Their values are checked
    where they are read, :func:`ale_cli.estimators.secants.fine_grids`.)"""
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
    """Refuse a row array of a store (``X``, ``local_effects``, ``prediction``, their
    chunks, mixed derivatives, jumps to adjacent levels) holding NaN or infinity: ale
    writes none (compute refuses or drops such rows), so the bytes changed. One line
    naming the store, the array, the first row and the feature (``labels``: the
    columns' names; mixed derivatives hold a row per pair, their rows are columns)."""
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


def _finite_x(path: Path, X: np.ndarray, names: np.ndarray, member: str = "X") -> None:
    """X finite, and every column's range too (max - min must not overflow to inf)."""
    check_finite(path, member, X, [str(n) for n in names])
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
    """Member ``name`` of an open :class:`~ale_cli.store.verify.Archive`, read whole
    and CRC-checked."""
    try:
        return np.asarray(npz[name])
    except ValueError as exc:
        raise InputError(f"store '{path}': array '{name}' is unreadable ({exc})") from None


def _only_arrays(path: Path, archive: Any) -> None:
    for filename in archive.raw_names:
        if not filename.endswith(".npy"):
            raise InputError(f"store '{path}': member '{filename}' is not a .npy array")


#: a row array, whole or a chunk of a schema-3 (chunked) store: ``X``, ``X.00003``
_ROW = re.compile(r"^(X|local_effects|prediction|mixed_derivatives|level_up|level_down)(\.\d{5})?$")
#: a row array's chunk in a schema-3 (chunked) store: ``X.00003``
_CHUNK = re.compile(
    r"^(X|local_effects|prediction|mixed_derivatives|level_up|level_down)\.(\d{5})$"
)


def _virtual_specs(
    path: Path, specs: Mapping[str, tuple[tuple[int, ...], np.dtype]], meta: Mapping[str, Any]
) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """A chunked store's specs as if its row arrays were whole (chunks stacked), after
    checking that every chunk has its rows from the meta's manifest and the same columns
    and kind of values as the first."""
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


def _specs(
    path: Path, npz: Any, meta: Mapping[str, Any]
) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Every member's shape and dtype from its header, the layout checked."""
    specs: dict[str, tuple[tuple[int, ...], np.dtype]] = {}
    for name in npz.files:
        shape, _, dtype, _ = npz.spec(name)
        specs[name] = (shape, dtype)
    chunked = any(_CHUNK.match(name) for name in specs)
    _layout(path, _virtual_specs(path, specs, meta) if chunked else specs, meta)
    return specs


def validate_npz(path: str | Path, npz: Any, meta: Mapping[str, Any], *, full: bool = True) -> None:
    """Check an open store (an :class:`~ale_cli.store.verify.Archive`) without
    keeping its big arrays.

    Tests the CRC-32 of every member that is not a row array, reads every member's
    ``.npy`` header (dtypes, shapes) and checks the layout described in the module
    docstring; with ``full``, also reads every row array once (one at a time: its
    CRC-32 and finite values). One-line :class:`InputError` naming the store and the array.

    Cost: one sequential read of the file (``bench/bench_scale.py``).
    """
    path = Path(path)
    _only_arrays(path, npz)
    for name in npz.files:  # the small members' bytes first (the row arrays': below)
        if not _ROW.match(name):
            npz.verify(name)
    try:
        specs = _specs(path, npz, meta)
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
    if not full:  # headers and layout only: the readers of the chunks check their bytes
        return
    for name in npz.files:
        if _ROW.match(name):
            array = _load(path, npz, name)
            base = name.split(".")[0]
            if base == "X":
                _finite_x(path, array, inputs, name)
            else:
                labels = [str(n) for n in names] if base == "local_effects" else []
                check_finite(path, name, array, labels)


def load_npz(
    path: str | Path,
    npz: Any,
    meta: Mapping[str, Any],
    whole: Mapping[str, np.ndarray] | None = None,
) -> dict[str, np.ndarray]:
    """Every array of an open store, checked as :func:`validate_npz` checks them;
    ``whole`` holds a chunked store's row arrays already stacked (their chunks are
    then not loaded again)."""
    path = Path(path)
    _only_arrays(path, npz)
    arrays = {name: _load(path, npz, name) for name in npz.files if not _CHUNK.match(name)}
    arrays |= dict(whole or {})
    _layout(path, {name: (a.shape, a.dtype) for name, a in arrays.items()}, meta)
    _names(path, arrays["feature_names"])
    inputs = arrays.get("input_names", arrays["feature_names"])
    _names(path, inputs, "input_names")
    _finite_x(path, arrays["X"], inputs)
    names = [str(n) for n in arrays["feature_names"]]
    for name in ("local_effects", "prediction", "mixed_derivatives", "level_up", "level_down"):
        if name in arrays:
            check_finite(path, name, arrays[name], names if name == "local_effects" else [])
    return arrays


# -- JSON Schema (the keywords summary.schema.json uses) ------------------------------------------

_TYPES: dict[str, Any] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and math.isfinite(v) and v.is_integer())
    ),
    "number": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and math.isfinite(v))
    ),
}
_ANNOTATIONS = {"$schema", "$id", "title", "description", "$comment", "$defs"}
KNOWN_KEYWORDS = frozenset(
    {
        *_ANNOTATIONS,
        "type",
        "const",
        "enum",
        "required",
        "properties",
        "patternProperties",
        "additionalProperties",
        "items",
        "minItems",
        "maxItems",
        "minimum",
        "maximum",
        "$ref",
        "allOf",
        "if",
        "then",
    }
)


def _describe(value: Any) -> str:
    """A JSON value in a message: NaN/Infinity spelled as JSON would, long values cut."""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, float) and math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def schema_errors(
    value: Any, schema: Mapping[str, Any], root: Mapping[str, Any]
) -> Iterator[tuple[tuple[Any, ...], str]]:
    """(location, message) for each way ``value`` breaks ``schema`` (JSON Schema subset).

    Numbers must be finite (plain JSON has no NaN or Infinity). A keyword this
    validator does not know is a ``ValueError``: the schema and the validator
    must change together.
    """
    if id(schema) not in _KNOWN:
        unknown = set(schema) - KNOWN_KEYWORDS
        if unknown:
            raise ValueError(f"schema keyword(s) {', '.join(sorted(unknown))} not supported")
        _KNOWN[id(schema)] = schema
    if "$ref" in schema:
        yield from schema_errors(value, _resolve(schema["$ref"], root), root)
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_TYPES[t](value) for t in types):
            yield (), f"expected {' or '.join(types)}, got {_describe(value)}"
            return
    if "const" in schema and not _same(value, schema["const"]):
        yield (), f"expected {_describe(schema['const'])}, got {_describe(value)}"
    if "enum" in schema and not any(_same(value, v) for v in schema["enum"]):
        yield (
            (),
            (
                f"expected one of {', '.join(_describe(v) for v in schema['enum'])}, "
                f"got {_describe(value)}"
            ),
        )
    if "minimum" in schema and _TYPES["number"](value) and value < schema["minimum"]:
        yield (), f"expected at least {schema['minimum']}, got {_describe(value)}"
    if "maximum" in schema and _TYPES["number"](value) and value > schema["maximum"]:
        yield (), f"expected at most {schema['maximum']}, got {_describe(value)}"
    if isinstance(value, dict):
        for key in schema.get("required", ()):
            if key not in value:
                yield (key,), "is missing"
        props = schema.get("properties", {})
        patterns = [(re.compile(p), s) for p, s in schema.get("patternProperties", {}).items()]
        for key, item in value.items():
            if key in props:
                for loc, msg in schema_errors(item, props[key], root):
                    yield (key, *loc), msg
                continue
            matched = [sub for pattern, sub in patterns if pattern.search(key)]
            for sub_schema in matched:
                for loc, msg in schema_errors(item, sub_schema, root):
                    yield (key, *loc), msg
            if not matched and schema.get("additionalProperties", True) is False:
                yield (key,), "is not a known field"
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            yield (), f"expected at least {schema['minItems']} items, got {len(value)}"
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            yield (), f"expected at most {schema['maxItems']} items, got {len(value)}"
        if "items" in schema:
            quick = _quick_check(schema["items"], root)
            for i, item in enumerate(value):
                if quick is not None and quick(item):
                    continue  # the common case, a valid number, without a generator
                for loc, msg in schema_errors(item, schema["items"], root):
                    yield (i, *loc), msg
    for sub in schema.get("allOf", ()):
        yield from schema_errors(value, sub, root)
    if "if" in schema and not any(True for _ in schema_errors(value, schema["if"], root)):
        yield from schema_errors(value, schema.get("then", {}), root)


# caches by id of a schema object, holding the object so that its id is never reused
_QUICK: dict[int, tuple[Mapping[str, Any], Any]] = {}
_KNOWN: dict[int, Mapping[str, Any]] = {}


def _quick_check(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Any:
    """A plain predicate for a schema made only of ``type`` and ``minimum`` (after ``$ref``),
    or None; ``schema_errors`` then runs only for the items it rejects, to say why."""
    key, given = id(schema), schema
    if key not in _QUICK:
        while set(schema) == {"$ref"}:
            schema = _resolve(schema["$ref"], root)
        check = None
        if "type" in schema and set(schema) <= {"type", "minimum", "description"}:
            kinds = set(schema["type"] if isinstance(schema["type"], list) else [schema["type"]])
            ints = bool(kinds & {"number", "integer"})
            floats, integral = "number" in kinds, "integer" in kinds
            low = schema.get("minimum")

            def check(v: Any) -> bool:
                t = type(v)
                if t is int:
                    return ints and (low is None or v >= low)
                if t is float:
                    if not (floats or integral and v.is_integer()) or not math.isfinite(v):
                        return False
                    return low is None or v >= low
                if v is None:
                    return "null" in kinds
                if t is bool:
                    return "boolean" in kinds
                return t is str and "string" in kinds

        _QUICK[key] = (given, check)
    return _QUICK[key][1]


def _same(a: Any, b: Any) -> bool:
    """JSON equality: ``true`` is not ``1`` (Python's ``True == 1`` is)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b if isinstance(a, str) or isinstance(b, str) else a == b


def _resolve(ref: str, root: Mapping[str, Any]) -> Mapping[str, Any]:
    if not ref.startswith("#/"):
        raise ValueError(f"only local $ref are supported, got '{ref}'")
    node: Any = root
    for part in ref[2:].split("/"):
        node = node[part]
    return node


@lru_cache(maxsize=1)
def summary_schema() -> dict[str, Any]:
    """The shipped summary JSON Schema."""
    from ale_cli.summary.model import SCHEMA_PATH

    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


# -- summaries ---------------------------------------------------------------------------------


def _where(path: Path, data: Any, loc: tuple[Any, ...]) -> str:
    """'summary 'p', feature 'bmi', field 'counts'' for a location in a summary."""
    parts = [f"summary '{path}'"]
    rest = list(loc)
    if len(rest) >= 2 and rest[0] in ("features", "interactions") and isinstance(rest[1], int):
        group, index = rest[0], rest[1]
        rest = rest[2:]
        item = data[group][index] if isinstance(data, dict) else None
        name = None
        if isinstance(item, dict):
            raw = item.get("name") if group == "features" else item.get("features")
            if isinstance(raw, str):
                name = raw
            elif isinstance(raw, list) and all(isinstance(n, str) for n in raw):
                name = ",".join(raw)
        label = "feature" if group == "features" else "interaction"
        parts.append(f"{label} '{name}'" if name is not None else f"{label} {index + 1}")
    if rest:
        field = str(rest[0])
        index_part = "".join(f"[{r}]" for r in rest[1:])
        parts.append(f"field '{field}'{index_part}")
    return ", ".join(parts)


def edges_problem(values: list[float]) -> str | None:
    """Why ``values`` are not usable bin edges (at least 2, strictly increasing, a finite
    span), or None.

    >>> edges_problem([0, 1e308, -1e308])
    'edges must be strictly increasing (edge 2 = -1e+308 follows 1e+308)'
    >>> edges_problem([-1e308, 1e308])
    'edges span [-1e+308, 1e+308] is too wide to compute with'
    """
    if len(values) < 2:
        return f"expected at least 2 edges, got {len(values)}"
    z = np.asarray(values, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        steps = np.diff(z)
    if not np.all(steps > 0):
        k = int(np.argmin(steps > 0))
        return (
            f"edges must be strictly increasing "
            f"(edge {k + 1} = {float(z[k + 1])!r} follows {float(z[k])!r})"
        )
    if not math.isfinite(float(z[-1]) - float(z[0])):
        return f"edges span [{z[0]:.6g}, {z[-1]:.6g}] is too wide to compute with"
    return None


def _level_errors(feat: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """A per-level record (kind discrete/categorical): K levels, K-1 jumps between them."""
    k = len(feat["counts"])
    per_level = ("edges", "effect", "std", "stderr", "levels", "order")
    jumps = ("bin_effect", "bin_std", "bin_stderr", "bin_filled")
    if feat["status"] == "ok" and k < 2:
        yield "counts", "a per-level feature with status ok needs at least 2 levels"
    for name in per_level:
        if name in feat and len(feat[name]) != k:
            yield name, f"has {len(feat[name])} values, expected {k} for {k} levels"
    for name in jumps:
        if len(feat[name]) != max(k - 1, 0):
            yield name, f"has {len(feat[name])} values, expected {max(k - 1, 0)} for {k} levels"


def _feature_errors(feat: dict[str, Any]) -> Iterator[tuple[str, str]]:
    if feat.get("kind") in ("discrete", "categorical"):
        yield from _level_errors(feat)
        return
    k = len(feat["counts"])
    lengths = {
        "bin_effect": k,
        "bin_std": k,
        "bin_stderr": k,
        "bin_filled": k,
        "effect": k + 1 if k else 0,
        "std": k + 1 if k else 0,
        "stderr": k + 1 if k else 0,
        "edges": k + 1 if k else 0,
    }
    if feat["status"] == "ok":
        if k == 0:
            yield "counts", "a feature with status ok needs at least 1 bin"
            return
        problem = edges_problem(feat["edges"])
        if problem is not None:
            yield "edges", problem
    if feat["n_bins"] != k:
        yield "n_bins", f"is {feat['n_bins']} but 'counts' has {k} bins"
    for name, expected in lengths.items():
        if len(feat[name]) != expected:
            yield name, f"has {len(feat[name])} values, expected {expected} for {k} bins"


def _interaction_errors(item: dict[str, Any]) -> Iterator[tuple[str, str]]:
    ka = len(item["edges_a"]) - 1 if item["edges_a"] else 0
    kb = len(item["edges_b"]) - 1 if item["edges_b"] else 0
    if item["status"] == "ok":
        for name in ("edges_a", "edges_b"):
            problem = edges_problem(item[name])
            if problem is not None:
                yield name, problem
                return
    if item["n_bins"] != [ka, kb]:
        yield "n_bins", f"is {item['n_bins']} but the edges give {ka} x {kb} cells"
    shapes = {"counts": (ka, kb), "cell_effect": (ka, kb), "filled": (ka, kb)}
    if "cell_std" in item:
        shapes["cell_std"] = (ka, kb)
    shapes["effect"] = (ka + 1, kb + 1) if ka and kb else (0, 0)
    for name, (rows, cols) in shapes.items():
        value = item[name]
        if rows == 0 and not value:
            continue
        if len(value) != rows or any(len(r) != cols for r in value):
            yield name, f"expected a {rows} x {cols} grid"


def validate_summary(path: str | Path, data: Any) -> None:
    """Refuse (one line naming the file, the feature and the field) a summary that breaks
    the JSON Schema or the rules it cannot express."""
    path = Path(path)
    schema = summary_schema()
    for loc, message in schema_errors(data, schema, schema):
        raise InputError(f"{_where(path, data, loc)}: {message}")
    seen: set[str] = set()
    for i, feat in enumerate(data["features"]):
        if feat["name"] in seen:
            raise InputError(f"summary '{path}': feature '{feat['name']}' appears twice")
        seen.add(feat["name"])
        for field, message in _feature_errors(feat):
            raise InputError(f"{_where(path, data, ('features', i, field))}: {message}")
    for i, item in enumerate(data.get("interactions", ())):
        for field, message in _interaction_errors(item):
            raise InputError(f"{_where(path, data, ('interactions', i, field))}: {message}")
