"""A safe, bounded YAML loader for the files a user hands to ``ale`` (:func:`load_yaml`:
size, aliases, expansion, duplicate keys, nesting, UTF-8), and :func:`check_document`
(a JSON Schema, naming the key path of the problem)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ale_cli.errors import InputError

MAX_BYTES = 1 << 20
MAX_ALIASES = 64
MAX_NODES = 100_000


class _TooLarge(Exception):
    """A limit of :func:`load_yaml` was reached."""


def _loader_class() -> Any:
    import yaml
    from yaml.events import AliasEvent
    from yaml.nodes import MappingNode, ScalarNode

    class Loader(yaml.SafeLoader):
        """The pure-Python SafeLoader (its composer can be watched), with limits."""

        aliases = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(AliasEvent):
                self.aliases += 1
                if self.aliases > MAX_ALIASES:
                    mark = self.peek_event().start_mark
                    raise _TooLarge(
                        f"more than {MAX_ALIASES} aliases (line {mark.line + 1}); "
                        "write the values out"
                    )
            return super().compose_node(parent, index)

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            if isinstance(node, MappingNode):
                seen: set[tuple[str, str]] = set()
                for key_node, _ in node.value:
                    if not isinstance(key_node, ScalarNode) or key_node.tag.endswith(":merge"):
                        continue
                    key = (key_node.tag, key_node.value)
                    if key in seen:
                        raise _TooLarge(
                            f"key '{key_node.value[:60]}' appears twice in the same mapping "
                            f"(line {key_node.start_mark.line + 1})"
                        )
                    seen.add(key)
            return super().construct_mapping(node, deep=deep)

    return Loader


def _expanded_size(root: Any) -> int:
    """Values in the document once every alias is written out (refuses a self-reference)."""
    from yaml.nodes import MappingNode, SequenceNode

    sizes: dict[int, int] = {}
    active: set[int] = set()

    def size(node: Any) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in active:
            raise _TooLarge(
                f"it refers to itself (line {node.start_mark.line + 1}); write the values out"
            )
        active.add(key)
        total = 1
        children = node.value if isinstance(node, SequenceNode) else []
        if isinstance(node, MappingNode):
            children = [n for pair in node.value for n in pair]
        for child in children:
            total += size(child)
            if total > MAX_NODES:
                raise _TooLarge(f"it expands to more than {MAX_NODES} values")
        active.discard(key)
        sizes[key] = total
        return total

    return size(root)


class YamlSyntaxError(InputError):
    """A file that is not valid YAML; ``line`` (1-based) where the parser stopped, if known."""

    def __init__(self, message: str, *, line: int | None = None, reason: str = "") -> None:
        self.line = line
        self.reason = reason
        super().__init__(message)


def read_text(path: str | Path, what: str, *, max_bytes: int = MAX_BYTES) -> str:
    """The UTF-8 text of regular file ``path`` of at most ``max_bytes`` bytes."""
    path = Path(path)
    where = f"{what} '{path}'"
    if not path.exists():
        raise InputError(f"{where} does not exist")
    if not path.is_file():
        raise InputError(f"{where} is not a regular file")
    try:
        with open(path, "rb") as fh:
            raw = fh.read(max_bytes + 1)
    except OSError as exc:
        raise InputError(f"cannot read {where}: {exc.strerror or exc}") from None
    if len(raw) > max_bytes:
        raise InputError(f"{where} is larger than {max_bytes // 1024} KiB; is it the right file?")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{where} is not UTF-8 text") from None


def parse_yaml(text: str, where: str) -> Any:
    """The document of ``text`` within the limits; ``where`` begins every message."""
    import yaml

    loader = _loader_class()(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded_size(node)
        return loader.construct_document(node)
    except _TooLarge as exc:
        raise InputError(f"{where} is refused: {exc}") from None
    except yaml.YAMLError as exc:
        reason = " ".join(str(exc).split())[:200]
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise YamlSyntaxError(
            f"{where} is not valid YAML: {reason}", line=line, reason=reason
        ) from None
    except RecursionError:
        raise InputError(f"{where} is nested too deeply to be a config") from None
    finally:
        loader.dispose()


def load_yaml(path: str | Path, what: str = "config file", *, max_bytes: int = MAX_BYTES) -> Any:
    """Parse ``path`` with the limits above; one-line InputError naming ``what`` and the file."""
    return parse_yaml(read_text(path, what, max_bytes=max_bytes), f"{what} '{Path(path)}'")


def key_path(parts: Any) -> str:
    """A location in a document as its user writes it.

    >>> key_path(["estimators", "interact", "pairs"])
    'estimators.interact.pairs'
    >>> key_path(["rules", 2, "feature"])
    'rules[2].feature'
    """
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


_TYPE_NAMES = {
    "integer": "a whole number",
    "number": "a number",
    "string": "text",
    "boolean": "true or false",
    "object": "a mapping",
    "array": "a list",
    "null": "null",
}


def _leaf(error: Any) -> Any:
    """The error to report: inside ``anyOf``, the alternative that got deepest."""
    while error.validator in ("anyOf", "oneOf") and error.context:
        deepest = max(
            error.context,
            key=lambda e: (len(e.absolute_path), e.validator not in ("type", "const")),
        )
        if deepest.validator in ("type", "const") and len(deepest.absolute_path) == len(
            error.absolute_path
        ):
            return error
        error = deepest
    return error


def _expected(schema: dict[str, Any]) -> str:
    if "const" in schema:
        return "null" if schema["const"] is None else str(schema["const"]).lower()
    kinds = schema.get("type", "a value")
    kinds = [kinds] if isinstance(kinds, str) else list(kinds)
    return " or ".join(_TYPE_NAMES.get(k, k) for k in kinds)


_BOUNDS = {
    "minimum": "must be at least {limit}, got {value!r}",
    "maximum": "must be at most {limit}, got {value!r}",
    "minLength": "must not be empty, got {value!r}",
    "minProperties": "must name at least {limit} key{s}",
    "minItems": "must hold at least {limit} item{s}",
}


def _describe(error: Any) -> str:
    value, kind, limit = error.instance, error.validator, error.validator_value
    if kind == "additionalProperties":
        known = list(error.schema.get("properties", {}))
        extra = [str(k) for k in value if k not in known]
        return f"unknown key '{extra[0]}' (known: {', '.join(known)})"
    if kind == "required":
        missing = [k for k in limit if k not in value]
        return f"missing '{missing[0]}'"
    if kind in ("type", "const"):
        return f"expected {_expected(error.schema)}, got {value!r}"
    if kind in ("anyOf", "oneOf"):
        return f"expected {' or '.join(_expected(s) for s in limit)}, got {value!r}"
    if kind == "enum":
        return f"must be one of {', '.join(map(str, limit))}, got {value!r}"
    if kind in _BOUNDS:
        return _BOUNDS[kind].format(limit=limit, value=value, s="" if limit == 1 else "s")
    return str(error.message)


def check_document(data: Any, schema: dict[str, Any], where: str) -> None:
    """InputError ``"{where}: {key.path}: {what is wrong}"`` for the deepest place ``data``
    breaks the JSON Schema ``schema``.

    >>> schema = {"type": "object", "properties": {"keep": {"type": "integer", "minimum": 1}}}
    >>> check_document({"keep": 0}, schema, "job 'j.yaml'")
    Traceback (most recent call last):
    ...
    ale_cli.errors.InputError: job 'j.yaml': keep: must be at least 1, got 0
    """
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema)
    errors = [_leaf(e) for e in validator.iter_errors(data)]
    if not errors:
        return
    error = max(errors, key=lambda e: len(e.absolute_path))
    at = key_path(error.absolute_path)
    raise InputError(f"{where}: {at + ': ' if at else ''}{_describe(error)}")
