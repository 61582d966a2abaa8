"""The command-line interface: typer commands that parse, call, write and print one line.

The commands are listed once, in :data:`ale_cli.cli.registry.COMMANDS`; each is
declared in its module under ``cli/commands/`` and built when it is asked for, so
``ale NAME`` imports only NAME's module and ``ale --help`` none. Heavy libraries
(torch, pandas, matplotlib, onnxruntime) are imported inside the commands that need them.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from ale_cli.cli import registry
from ale_cli.io.allocator import keep_freed_memory

__all__ = ["app", "load_commands", "main"]


def load_commands(command: str | None = None) -> Any:
    """The typer app, with the module of ``command`` imported (of every command if None)."""
    app = importlib.import_module("ale_cli.cli.application").app
    for name in [command] if command else registry.COMMANDS:
        registry.load(name)
    return app


def __getattr__(name: str) -> Any:
    """``app``: the typer application (its commands are built on first use)."""
    if name == "app":
        return importlib.import_module("ale_cli.cli.application").app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(app: Any = None) -> None:
    """Run ``app`` (default: the ``ale`` application) on ``sys.argv``; end the process quickly
    (:func:`_exit`)."""
    keep_freed_memory()  # freed numpy buffers are reused, not page-faulted in again
    if app is None:
        app = importlib.import_module("ale_cli.cli.application").app
    try:
        app()
    except SystemExit as exc:  # click ends every run with sys.exit
        _exit(exc.code)
    _exit(0)


def _exit(code: int | str | None) -> None:
    """Exit with ``code``; after torch was imported, by ``os._exit`` once the output is flushed.

    Every file ale writes is closed (and renamed into place) before the command
    returns, so what the interpreter's teardown would do after that is freeing
    memory and joining torch's thread pools, which took 0.1-0.8 s for nothing.
    Without torch the normal exit is kept (it costs little there).
    """
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
