"""The command-line interface: typer commands that parse, call, write and print one line
(the commands: :data:`ale_cli.cli.registry.COMMANDS`)."""

from __future__ import annotations

import os
import sys

from ale_cli.cli.application import app

__all__ = ["app", "main"]


def main() -> None:
    """Run the ``ale`` application on ``sys.argv``, then :func:`_exit`."""
    try:
        app()
    except SystemExit as exc:  # click ends every run with sys.exit
        _exit(exc.code)
    _exit(0)


def _exit(code: int | str | None) -> None:
    """Exit with ``code``; after torch was imported, by ``os._exit`` once the output is
    flushed (every file is closed by then; torch's teardown only costs time)."""
    if not isinstance(code, int):
        if code is not None:
            print(code, file=sys.stderr)
        code = 0 if code is None else 1
    if "torch" not in sys.modules:
        raise SystemExit(code)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more to say
            pass
    os._exit(code)
