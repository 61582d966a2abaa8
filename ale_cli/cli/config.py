"""``--config FILE.yaml``: any option of a command from a YAML file (docs/commands.md).

Values become the option defaults, so flags on the command line win; a repeatable option
takes a value or a list. Unknown keys, wrong types, booleans for numbers and NaN are
errors naming the key.
"""

from __future__ import annotations

import math
from pathlib import Path, PurePath
from typing import Any

from ale_cli.checks import is_stdio
from ale_cli.errors import InputError
from ale_cli.io.yamlsafe import load_yaml

#: the prefix of the parameter an old spelling of option NAME is read into
ALIAS = "alias__"


def load_config(path: Path, command: str, known_commands: set[str]) -> dict[str, Any]:
    """The mapping of option values for ``command`` found in ``path``."""
    data = load_yaml(path, "config file")
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InputError(f"config file '{path}' must hold a mapping of option names to values")
    values: dict[str, Any] = {}
    for key, value in data.items():
        key = str(key)
        if key in known_commands:
            if key == command:
                if not isinstance(value, dict):
                    raise InputError(f"config file '{path}': section '{key}' must be a mapping")
                values.update({str(k): v for k, v in value.items()})
            continue
        values[key] = value
    return values


def config_callback(ctx: Any, param: Any, value: Path | None) -> Path | None:
    """Eager callback of ``--config``: validate the file and install it as defaults."""
    if value is None:
        return None
    command = ctx.command
    parent = ctx.parent.command if ctx.parent is not None else None
    known_commands = set(getattr(parent, "commands", {}) or {})
    raw = load_config(Path(value), ctx.info_name or command.name, known_commands)
    # a key may be the flag's long name ("format", "batch-size") or the parameter's name
    params: dict[str, Any] = {}
    by_name = {p.name: p for p in command.params}
    for p in command.params:
        if p.name in ("config", "help", "version"):
            continue
        target = by_name.get(p.name.removeprefix(ALIAS), p)  # an old spelling: its option
        params.setdefault(target.name, target)
        for opt in getattr(p, "opts", ()):
            if opt.startswith("--"):
                params[opt[2:].replace("-", "_")] = target
    defaults: dict[str, Any] = {}
    keys: dict[str, str] = {}  # the key that set each parameter
    for key, item in raw.items():
        target = params.get(key.replace("-", "_"))
        if target is None:
            known = ", ".join(sorted(_display_name(p) for p in set(params.values())))
            raise InputError(
                f"config file '{value}': unknown key '{key}' for 'ale {ctx.info_name}' "
                f"(known: {known})"
            )
        if keys.setdefault(target.name, key) != key:
            raise InputError(
                f"config file '{value}': keys '{keys[target.name]}' and '{key}' both set "
                f"--{_display_name(target)}; give it once"
            )
        if getattr(target, "multiple", False):
            # a repeatable option (--pair a,b --pair c,d): a value or a list of values,
            # each of which may itself be a list ([[a, b], [c, d]])
            values = item if isinstance(item, list) else [item]
            item = [",".join(map(str, v)) if isinstance(v, list) else v for v in values]
        elif isinstance(item, list):
            item = ",".join(str(v) for v in item)
        _check_number(value, key, item, target)
        try:
            # typer >= 0.29 converts values through the parameter's runtime type
            defaults[target.name] = target.get_runtime_param().coerce(item, param=target, ctx=ctx)
        except Exception as exc:
            annotation = target.type_descriptor.annotation
            type_name = getattr(annotation, "__name__", str(annotation))
            why = str(getattr(exc, "message", "") or "").strip().splitlines()
            raise InputError(
                f"config file '{value}': key '{key}' expects {type_name}, got {_shown(item)}"
                + (f" ({why[0].rstrip('.')})" if why else "")
            ) from None
        defaults[target.name] = _relative_to(Path(value).parent, defaults[target.name])
    ctx.default_map = {**(ctx.default_map or {}), **defaults}
    return Path(value)


def _shown(item: Any) -> str:
    """A config value in a message: its repr, cut short (never a whole alias bomb)."""
    text = repr(item)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_number(path: Any, key: str, item: Any, target: Any) -> None:
    """A boolean where a number is expected, or NaN/infinity: an error naming the key."""
    annotation = target.type_descriptor.annotation
    if annotation not in (int, float):
        return
    if isinstance(item, bool):
        raise InputError(
            f"config file '{path}': key '{key}' expects {annotation.__name__}, "
            f"got a boolean ({str(item).lower()})"
        )
    if isinstance(item, float) and not math.isfinite(item):
        raise InputError(f"config file '{path}': key '{key}' expects a finite number, got {item}")


def _relative_to(base: Path, value: Any) -> Any:
    """A relative path (or each of a list of them) joined to ``base``."""
    if isinstance(value, list | tuple):
        return type(value)(_relative_to(base, v) for v in value)
    if isinstance(value, PurePath) and not value.is_absolute() and not is_stdio(value):
        return base / value
    return value


def _display_name(param: Any) -> str:
    longs = [o[2:] for o in getattr(param, "opts", ()) if o.startswith("--")]
    return longs[0] if longs else str(param.name)
