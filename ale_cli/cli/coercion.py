"""How ``ale`` coerces option values: plain values without pydantic, floats finite.

typer (pinned exactly in pyproject.toml: this module uses its private coercion API)
coerces every value through a pydantic adapter built per parameter, which costs a large
share of the CPU time of ``ale --help`` and ``ale rhale`` (measure it by replacing
:func:`install` with a no-op). ``tests/test_cli.py`` holds the contract: the typer
version, the private names used here, and results equal to typer's own coercion.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Any, get_args, get_origin

from typer._click import exceptions as click_errors

_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
#: what a plain value of these parameters needs no adapter for
_PLAIN = (str, int, float, Path, bool)
NOT_PLAIN = object()


class PlainRuntime:
    """typer's coercion of a ``str``/``int``/``float``/``bool``/``Path`` parameter (or a
    list of them) without its pydantic adapter: plain forms (a decimal integer or float,
    text, a path) become what typer's adapter returns; anything else (another form, out
    of ``min``/``max``, an unreadable path) goes to typer's own coercion, built then. A
    float is refused first when NaN or infinite (every value: command line, config, default).
    """

    def __init__(self, param: Any) -> None:
        self.param = param
        self.inner: Any = None

    def _typer(self) -> Any:
        if self.inner is None:
            from typer._coercion import build_runtime_param  # imports pydantic: only here

            self.inner = build_runtime_param(self.param.type_descriptor)
        return self.inner

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        multi = param.multiple or param.nargs == -1
        if value is None:
            return () if multi else None
        kind, info = (
            self.param.type_descriptor.annotation,
            self.param.type_descriptor.parameter_info,
        )
        if multi and isinstance(value, list | tuple) and get_origin(kind) is list:
            (item,) = get_args(kind)
            done = [plain_value(item, info, v) for v in value]
            if all(v is not NOT_PLAIN for v in done):
                return done
        elif not multi:
            if kind is float and not isinstance(value, bool) and not math.isfinite(_float(value)):
                raise click_errors.BadParameter(
                    f"expected a finite number, got '{value}'", ctx=ctx, param=param
                )
            one = plain_value(kind, info, value)
            if one is not NOT_PLAIN:
                return one
        return self._typer().coerce(value, param=param, ctx=ctx)


def plain_value(kind: Any, info: Any, value: Any) -> Any:
    """``value`` coerced to ``kind`` as typer would, or ``NOT_PLAIN`` to let typer do it."""
    if kind is str:
        return value if isinstance(value, str) else NOT_PLAIN
    if kind is bool:
        return value if isinstance(value, bool) else NOT_PLAIN
    if kind is Path:
        if not isinstance(value, str | Path):
            return NOT_PLAIN
        path = Path(value)
        try:
            os.stat(path)
        except (OSError, ValueError):
            return path  # typer checks nothing more for a path that need not exist
        return path if os.access(path, os.R_OK) else NOT_PLAIN
    if isinstance(value, bool):
        return NOT_PLAIN
    if isinstance(value, str) and (_INT if kind is int else _FLOAT).fullmatch(value):
        value = kind(value)
    if kind is int and not isinstance(value, int):
        return NOT_PLAIN
    if kind is float and (not isinstance(value, int | float) or not math.isfinite(value)):
        return NOT_PLAIN
    value = kind(value)
    if (info.min is not None and value < info.min) or (info.max is not None and value > info.max):
        return NOT_PLAIN
    return value


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0  # not a number at all: typer's coercion says so


def _plain(descriptor: Any) -> bool:
    """True for a parameter :class:`PlainRuntime` may coerce (no parser, no clamping,
    no path options beyond the defaults)."""
    info, kind = descriptor.parameter_info, descriptor.annotation
    if get_origin(kind) is list:
        kind = get_args(kind)[0]
    if kind not in _PLAIN or descriptor.file_annotation is not None:
        return False
    if info.parser is not None or getattr(info, "click_type", None) is not None or info.clamp:
        return False
    changed = [getattr(info, name) for name in ("exists", "writable", "resolve_path", "path_type")]
    kept = [getattr(info, name) for name in ("file_okay", "dir_okay", "readable")]
    return kind is not Path or (not any(changed) and all(kept))


def install(command: Any, ctx: Any) -> None:
    """Plain parameters (every float one among them) coerced by :class:`PlainRuntime`;
    idempotent. The parameters include ``--help`` (made and kept by ``get_params``)."""
    params = command.get_params(ctx) if hasattr(command, "get_params") else ()
    for param in params:
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is None or getattr(param, "_runtime_param", True) is not None:
            continue
        if _plain(descriptor):
            param._runtime_param = PlainRuntime(param)
        elif descriptor.annotation is float:
            raise TypeError(f"{param.name}: a float option must be plain to refuse NaN")
