"""Checks on a summary (or an edges file holding one) read back: the shipped JSON Schema
(validated with ``jsonschema``, imported lazily; a ``number`` is a finite one) plus what a
schema cannot say: edges strictly increasing with a finite span, array lengths, ``n_bins``
equal to K, distinct names. A bad summary is refused with one line naming the file, the
feature and the field, before any number from it is used. Also the ``--edges`` file
reader (:func:`read_edges`), which relies on these checks.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ale_cli.errors import InputError
from ale_cli.io.jsonio import parse_json, read_bytes

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schema" / "summary.schema.json"


@lru_cache(maxsize=1)
def summary_schema() -> dict[str, Any]:
    """The shipped summary JSON Schema."""
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def _finite_number(_checker: Any, value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, float) and math.isfinite(value)
    )


def _finite_integer(_checker: Any, value: Any) -> bool:
    return _finite_number(_checker, value) and (not isinstance(value, float) or value.is_integer())


@lru_cache(maxsize=1)
def _validator() -> Any:
    """A Draft 2020-12 validator: numbers finite, plain ``items`` (:class:`_Plain`) fast."""
    import jsonschema

    base = jsonschema.Draft202012Validator
    checker = base.TYPE_CHECKER.redefine_many(
        {"number": _finite_number, "integer": _finite_integer}
    )
    items = base.VALIDATORS["items"]
    schema = _inlined(summary_schema(), summary_schema())

    plains: dict[int, tuple[Any, _Plain | None]] = {}

    def fast_items(validator: Any, sub: Any, instance: Any, where: Any) -> Any:
        if id(sub) not in plains:  # the schema's own objects: their ids stay theirs
            plains[id(sub)] = (sub, _Plain.of(sub))
        plain = plains[id(sub)][1]
        if plain is None or not isinstance(instance, list) or not plain.accepts(instance):
            yield from items(validator, sub, instance, where)  # jsonschema says why

    finite = jsonschema.validators.extend(
        base, validators={"items": fast_items}, type_checker=checker
    )
    return finite(schema)


def _inlined(node: Any, root: dict[str, Any]) -> Any:
    """``node`` with every local ``$ref`` replaced by what it names (none is recursive)."""
    if isinstance(node, dict):
        if set(node) == {"$ref"} and node["$ref"].startswith("#/"):
            target: Any = root
            for part in node["$ref"][2:].split("/"):
                target = target[part]
            return _inlined(target, root)
        return {key: _inlined(value, root) for key, value in node.items()}
    if isinstance(node, list):
        return [_inlined(value, root) for value in node]
    return node


#: the Python types of the values of each JSON type (a bool is not a number in JSON)
_PYTHON_TYPES = {
    "number": {int, float},
    "integer": {int, float},
    "null": {type(None)},
    "boolean": {bool},
    "string": {str},
}


@dataclass(frozen=True)
class _Plain:
    """An items schema of only ``type`` and bounds, checked on a whole list at once."""

    kinds: frozenset[str]
    low: float = -math.inf
    high: float = math.inf

    @classmethod
    def of(cls, sub: Any) -> _Plain | None:
        """The plain schema ``sub`` is, or None."""
        if not isinstance(sub, dict) or "type" not in sub:
            return None
        if not set(sub) <= {"type", "minimum", "maximum", "description"}:
            return None
        kinds = frozenset(sub["type"] if isinstance(sub["type"], list) else [sub["type"]])
        if not kinds <= set(_PYTHON_TYPES):
            return None
        return cls(kinds, sub.get("minimum", -math.inf), sub.get("maximum", math.inf))

    def accepts(self, values: list[Any]) -> bool:
        """True only when the schema accepts every value (False: ask jsonschema)."""
        types = set(map(type, values))
        if not types <= set().union(*(_PYTHON_TYPES[kind] for kind in self.kinds)):
            return False
        numbers = [v for v in values if type(v) in (int, float)] if types - {int, float} else values
        if not numbers:
            return True
        try:
            z = np.asarray(numbers, dtype=np.float64)
        except OverflowError:  # an integer beyond the floats
            return False
        if not (np.isfinite(z).all() and (z >= self.low).all() and (z <= self.high).all()):
            return False
        return "number" in self.kinds or bool((z == np.floor(z)).all())


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


def _message(error: Any) -> tuple[tuple[Any, ...], str]:
    """(location in the document, one-line message) of a jsonschema error."""
    loc = tuple(error.absolute_path)
    value, kind, limit = error.instance, error.validator, error.validator_value
    if kind == "required":
        return (*loc, next(k for k in limit if k not in value)), "is missing"
    if kind == "additionalProperties":
        return (*loc, _unknown_key(error)), "is not a known field"
    if kind == "type":
        kinds = limit if isinstance(limit, list) else [limit]
        return loc, f"expected {' or '.join(kinds)}, got {_describe(value)}"
    if kind == "const":
        return loc, f"expected {_describe(limit)}, got {_describe(value)}"
    if kind == "enum":
        listed = ", ".join(_describe(v) for v in limit)
        return loc, f"expected one of {listed}, got {_describe(value)}"
    if kind in ("minimum", "maximum", "minItems", "maxItems"):
        bound = "at least" if kind.startswith("min") else "at most"
        got = f" items, got {len(value)}" if kind.endswith("Items") else f", got {_describe(value)}"
        return loc, f"expected {bound} {limit}{got}"
    return loc, str(error.message).splitlines()[0][:120]


def _unknown_key(error: Any) -> str:
    """The first key of the object that its schema does not allow."""
    known = error.schema.get("properties", {})
    patterns = [re.compile(p) for p in error.schema.get("patternProperties", {})]
    return next(
        k for k in error.instance if k not in known and not any(p.search(k) for p in patterns)
    )


def _order(data: Any, error: Any) -> tuple[Any, ...]:
    """Where an error is in the document, in the order the document is written (a
    missing key before the object's keys; a wrong type before other errors there)."""
    key: list[Any] = []
    node = data
    for part in error.absolute_path:
        if isinstance(node, dict):
            key.append(list(node).index(part))
        else:
            key.append(part)
        node = node[part]
    if error.validator == "required":
        key.append(-1)
    elif error.validator == "additionalProperties":
        key.append(list(node).index(_unknown_key(error)))
    return (*key, error.validator != "type")


def schema_errors(data: Any) -> Iterator[tuple[tuple[Any, ...], str]]:
    """(location, message) per way ``data`` breaks the summary schema, in document order."""
    errors = sorted(_validator().iter_errors(data), key=lambda e: _order(data, e))
    for error in errors:
        yield _message(error)


def _where(path: Path, data: Any, loc: tuple[Any, ...]) -> str:
    """'summary 'p', feature 'bmi', field 'counts'' for a location in a summary."""
    parts = [f"summary '{path}'"]
    rest = list(loc)
    if len(rest) >= 2 and rest[0] in ("features", "interactions") and isinstance(rest[1], int):
        group, index, *rest = rest
        item = data[group][index] if isinstance(data, dict) else None
        label, key = ("feature", "name") if group == "features" else ("interaction", "features")
        raw = item.get(key) if isinstance(item, dict) else None
        raw = [raw] if isinstance(raw, str) else raw
        if isinstance(raw, list) and all(isinstance(n, str) for n in raw):
            parts.append(f"{label} '{','.join(raw)}'")
        else:
            parts.append(f"{label} {index + 1}")
    if rest:
        parts.append(f"field '{rest[0]}'" + "".join(f"[{r}]" for r in rest[1:]))
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


_PER_BIN = ("bin_effect", "bin_std", "bin_stderr", "bin_filled")


def _feature_errors(feat: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """K bins: K+1 edges and edge values; per-level: K levels, K-1 jumps between them."""
    k = len(feat["counts"])
    if feat.get("kind") in ("discrete", "categorical"):
        if feat["status"] == "ok" and k < 2:
            yield "counts", "a per-level feature with status ok needs at least 2 levels"
        per_level = ("edges", "effect", "std", "stderr", "levels", "order")
        lengths = dict.fromkeys((n for n in per_level if n in feat), k)
        lengths |= dict.fromkeys(_PER_BIN, max(k - 1, 0))
        unit = "levels"
    else:
        if feat["status"] == "ok":
            if k == 0:
                yield "counts", "a feature with status ok needs at least 1 bin"
                return
            problem = edges_problem(feat["edges"])
            if problem is not None:
                yield "edges", problem
        if feat["n_bins"] != k:
            yield "n_bins", f"is {feat['n_bins']} but 'counts' has {k} bins"
        lengths = dict.fromkeys(_PER_BIN, k)
        lengths |= dict.fromkeys(("effect", "std", "stderr", "edges"), k + 1 if k else 0)
        unit = "bins"
    for name, expected in lengths.items():
        if len(feat[name]) != expected:
            yield name, f"has {len(feat[name])} values, expected {expected} for {k} {unit}"


def _interaction_errors(item: dict[str, Any]) -> Iterator[tuple[str, str]]:
    ka, kb = (max(len(item[name]) - 1, 0) for name in ("edges_a", "edges_b"))
    if item["status"] == "ok":
        for name in ("edges_a", "edges_b"):
            problem = edges_problem(item[name])
            if problem is not None:
                yield name, problem
                return
    if item["n_bins"] != [ka, kb]:
        yield "n_bins", f"is {item['n_bins']} but the edges give {ka} x {kb} cells"
    cells = ("counts", "cell_effect", "filled", "cell_std")  # the schema requires all but std
    shapes = {name: (ka, kb) for name in cells if name in item}
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
    for loc, message in schema_errors(data):
        raise InputError(f"{_where(path, data, loc)}: {message}")
    seen: set[tuple[str, str | None]] = set()
    for i, feat in enumerate(data["features"]):
        key = (feat["name"], feat.get("output"))
        if key in seen:
            of = "" if key[1] is None else f" of output '{key[1]}'"
            raise InputError(f"summary '{path}': feature '{feat['name']}'{of} appears twice")
        seen.add(key)
        for field, message in _feature_errors(feat):
            raise InputError(f"{_where(path, data, ('features', i, field))}: {message}")
    for i, item in enumerate(data.get("interactions", ())):
        for field, message in _interaction_errors(item):
            raise InputError(f"{_where(path, data, ('interactions', i, field))}: {message}")
    for region in data.get("regions", ()):  # ale regional: each leaf's record
        for node in (n for n in region.get("nodes", ()) if "record" in n):
            for field, message in _feature_errors(node["record"]):
                where = f"summary '{path}', feature '{region['feature']}', region {node['id']}"
                raise InputError(f"{where}, field '{field}': {message}")


@dataclass(frozen=True)
class EdgesFile:
    """The edges read from one file (``kind`` ``summary`` or ``mapping``): strictly
    increasing (K+1,) per feature, in the file's order."""

    path: Path
    sha256: str
    kind: str
    edges: dict[str, np.ndarray]

    def describe(self) -> dict[str, Any]:
        """Where the edges came from, for a summary's ``params``."""
        return {"path": str(self.path), "sha256": self.sha256, "kind": self.kind}


def _check(path: Path, name: str, values: Any) -> np.ndarray:
    where = f"edges file '{path}', feature '{name}'"
    if not isinstance(values, list) or len(values) < 2:
        raise InputError(f"{where}: expected a list of at least 2 numbers")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise InputError(f"{where}: expected finite numbers, got {_shown(v)}")
    problem = edges_problem(values)
    if problem is not None:
        raise InputError(f"{where}: {problem}")
    return np.asarray(values, dtype=np.float64)


def _shown(value: Any) -> str:
    """A value that is not a finite number, in a message (NaN, True, None, 'text')."""
    if isinstance(value, float):
        return _describe(value)
    if isinstance(value, str):
        return f"'{value[:40]}'"
    if isinstance(value, int | float | None):
        return str(value)[:40]
    return f"a {type(value).__name__}"


def read_edges(path: str | Path) -> EdgesFile:
    """Bin edges per feature from a summary (its features with status ``ok``) or a mapping
    ``{"feature": [z_0, ..., z_K]}``, each at least 2 finite numbers, strictly increasing;
    one-line InputError naming the file and the feature."""
    path = Path(path)
    content = read_bytes(path, "edges file")
    data = parse_json(content, path, "edges file")
    if not isinstance(data, dict):
        raise InputError(
            f"edges file '{path}' must hold a summary or a mapping of feature names to edge lists"
        )
    if "features" in data and "estimator" in data:
        kind = "summary"
        validate_summary(path, data)
        raw = {f["name"]: f["edges"] for f in data["features"] if f["status"] == "ok"}
    else:
        kind = "mapping"
        raw = {str(k): v for k, v in data.items()}
    if not raw:
        raise InputError(f"edges file '{path}' has no edges")
    edges = {name: _check(path, name, values) for name, values in raw.items()}
    return EdgesFile(path=path, sha256=hashlib.sha256(content).hexdigest(), kind=kind, edges=edges)
