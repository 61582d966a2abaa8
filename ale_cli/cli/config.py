"""``--config FILE.yaml``: any option of a command from a YAML file.

The file is either flat (keys are the command's option names, with ``-`` or
``_``) or holds one section per command (``compute:``, ``rhale:``, ...) so a
single file can drive a whole pipeline. Values from the file become the
option defaults, so flags given on the command line win. A repeatable option
(``--pair``) takes one value or a list of them. An unknown key or a
value of the wrong type is an error that names the key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ale_cli.errors import InputError


def load_config(path: Path, command: str, known_commands: set[str]) -> dict[str, Any]:
    """The mapping of option values for ``command`` found in ``path``."""
    import yaml

    if not path.is_file():
        raise InputError(f"config file '{path}' does not exist")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        reason = str(exc).splitlines()[0]
        raise InputError(f"config file '{path}' is not valid YAML: {reason}") from None
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
    for p in command.params:
        if p.name in ("config", "help", "version"):
            continue
        params[p.name] = p
        for opt in getattr(p, "opts", ()):
            if opt.startswith("--"):
                params[opt[2:].replace("-", "_")] = p
    defaults: dict[str, Any] = {}
    for key, item in raw.items():
        target = params.get(key.replace("-", "_"))
        if target is None:
            known = ", ".join(sorted(_display_name(p) for p in set(params.values())))
            raise InputError(
                f"config file '{value}': unknown key '{key}' for 'ale {ctx.info_name}' "
                f"(known: {known})"
            )
        if getattr(target, "multiple", False):
            # a repeatable option (--pair a,b --pair c,d): a value or a list of values,
            # each of which may itself be a list ([[a, b], [c, d]])
            values = item if isinstance(item, list) else [item]
            item = [",".join(map(str, v)) if isinstance(v, list) else v for v in values]
        elif isinstance(item, list):
            item = ",".join(str(v) for v in item)
        try:
            # typer >= 0.29 converts values through the parameter's runtime type
            defaults[target.name] = target.get_runtime_param().coerce(item, param=target, ctx=ctx)
        except Exception as exc:
            annotation = target.type_descriptor.annotation
            type_name = getattr(annotation, "__name__", str(annotation))
            why = str(getattr(exc, "message", "") or "").strip().splitlines()
            raise InputError(
                f"config file '{value}': key '{key}' expects {type_name}, got {item!r}"
                + (f" ({why[0].rstrip('.')})" if why else "")
            ) from None
    ctx.default_map = {**(ctx.default_map or {}), **defaults}
    return Path(value)


def _display_name(param: Any) -> str:
    longs = [o[2:] for o in getattr(param, "opts", ()) if o.startswith("--")]
    return longs[0] if longs else str(param.name)
