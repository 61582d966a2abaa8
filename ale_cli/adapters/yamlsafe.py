"""A YAML loader for files a user hands to ``ale`` (configs, later jobs): safe and bounded.

``yaml.safe_load`` never runs code, but it still lets a small file cost a lot:
a 335-byte "billion laughs" document of nested aliases expands to gigabytes
as soon as anything walks it, a document may refer to itself, and duplicate
keys silently keep the last value. :func:`load_yaml` refuses, with one line
naming the file (and the key or line):

- files over :data:`MAX_BYTES`;
- more than :data:`MAX_ALIASES` aliases, a document that refers to itself, or
  one that expands to more than :data:`MAX_NODES` values;
- a key given twice in the same mapping;
- anything ``safe_load`` refuses (tags such as ``!!python/object``, bad syntax),
  and nesting too deep to parse.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ale_cli.errors import InputError

MAX_BYTES = 1 << 20
MAX_ALIASES = 64
MAX_NODES = 100_000


class _TooLarge(Exception):
    """A limit of :func:`load_yaml` was reached; the message says which."""


def _loader_class() -> Any:
    import yaml
    from yaml.events import AliasEvent
    from yaml.nodes import MappingNode, ScalarNode

    class Loader(yaml.SafeLoader):
        """SafeLoader (the pure-Python one: its composer can be watched) with limits."""

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
        if isinstance(node, SequenceNode):
            children = node.value
        elif isinstance(node, MappingNode):
            children = [n for pair in node.value for n in pair]
        else:
            children = []
        for child in children:
            total += size(child)
            if total > MAX_NODES:
                raise _TooLarge(f"it expands to more than {MAX_NODES} values")
        active.discard(key)
        sizes[key] = total
        return total

    return size(root)


def load_yaml(path: str | Path, what: str = "config file") -> Any:
    """Parse ``path`` with the limits above; one-line InputError naming ``what`` and the file."""
    import yaml

    path = Path(path)
    where = f"{what} '{path}'"
    if not path.exists():
        raise InputError(f"{where} does not exist")
    if not path.is_file():
        raise InputError(f"{where} is not a regular file")
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise InputError(f"cannot read {where}: {exc.strerror or exc}") from None
    if len(raw) > MAX_BYTES:
        raise InputError(f"{where} is larger than {MAX_BYTES // 1024} KiB; is it the right file?")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{where} is not UTF-8 text") from None
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
        reason = " ".join(str(exc).split())
        raise InputError(f"{where} is not valid YAML: {reason[:200]}") from None
    except RecursionError:
        raise InputError(f"{where} is nested too deeply to be a config") from None
    finally:
        loader.dispose()
