"""Options shared by several commands, declared once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ale_cli.cli.config import config_callback
from ale_cli.errors import InputError

ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        help="YAML file supplying any option of this command (flat, or a section per "
        "command); flags given on the command line win.",
        callback=config_callback,
        is_eager=True,
        show_default=False,
    ),
]
QuietOption = Annotated[
    bool, typer.Option("--quiet", "-q", help="No progress bar; print only the result line.")
]
FeaturesOption = Annotated[
    str | None,
    typer.Option(
        "--features", help="Comma-separated feature names (default: all).", show_default=False
    ),
]


def split_names(value: str | None, option: str) -> tuple[str, ...] | None:
    """``"a, b"`` -> ``("a", "b")``; None stays None; empty names are an error.

    >>> split_names("age, bmi", "--features")
    ('age', 'bmi')
    """
    if value is None:
        return None
    names = tuple(part.strip() for part in value.split(","))
    if not names or any(not n for n in names):
        raise InputError(f"{option} expects comma-separated names, got '{value}'")
    return names
