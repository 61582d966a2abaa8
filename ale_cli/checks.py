"""Checks of option values shared by the library's requests; pure Python (cheap to import).

Each raises an :class:`~ale_cli.errors.InputError` naming the parameter.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from ale_cli.errors import InputError

#: the file name that means standard input or output
STDIO = "-"

R = TypeVar("R")


def names_tuple(value: str | Sequence[str] | None, param: str) -> tuple[str, ...] | None:
    """A list of names as a tuple: ``"a, b"`` or ``["a", "b"]`` -> ``("a", "b")``; None stays;
    empty and repeated names are an InputError.

    >>> names_tuple("age, bmi", "features")
    ('age', 'bmi')
    >>> names_tuple(["bmi", "bmi"], "features")
    Traceback (most recent call last):
    ale_cli.errors.InputError: features names 'bmi' more than once
    """
    if value is None:
        return None
    raw = value.split(",") if isinstance(value, str) else list(value)
    names = tuple(str(part).strip() for part in raw)
    if not all(names):
        shown = value if isinstance(value, str) else ",".join(map(str, raw))
        raise InputError("{param} expects comma-separated names, got '" + shown + "'", param=param)
    for i, name in enumerate(names):
        if name in names[:i]:
            raise InputError("{param} names '" + name + "' more than once", param=param)
    return names


def is_stdio(path: object) -> bool:
    """True for the file name ``-`` (standard input or output)."""
    return path is not None and str(path) == STDIO


def refuse_stdio(path: object, param: str, what: str) -> None:
    """InputError naming ``param`` when ``path`` is ``-``: ``what`` cannot be streamed."""
    if is_stdio(path):
        raise InputError(
            f"{{param}} - (standard input/output) cannot be used for {what}; give a path",
            param=param,
        )


def make_request(cls: type[R], values: Mapping[str, Any], **given: Any) -> R:
    """The request dataclass ``cls`` from the option values named as its fields (a
    command's or API function's ``locals()``); ``given`` fields replace or add to them."""
    names = inspect.signature(cls).parameters
    return cls(**{**{k: v for k, v in values.items() if k in names}, **given})


def check_choice(value: str | None, choices: Sequence[str], param: str) -> None:
    """InputError naming ``param`` unless ``value`` is None or one of ``choices``."""
    if value is not None and value not in choices:
        raise InputError(
            "{param} must be one of " + ", ".join(choices) + f", got '{value}'", param=param
        )


def check_count(value: int, param: str, *, least: int = 1) -> None:
    """InputError unless ``value`` is a whole number >= ``least`` (not a bool: ``bins: true``).

    >>> check_count(0, "bins")
    Traceback (most recent call last):
    ale_cli.errors.InputError: bins must be a whole number of at least 1, got 0
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise InputError(
            f"{{param}} must be a whole number of at least {least}, got {value!s}", param=param
        )
