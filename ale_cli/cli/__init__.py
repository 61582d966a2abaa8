"""The command-line interface: typer commands that parse, call, write and print one line.

Importing this package registers every command; heavy libraries (torch, pandas,
matplotlib, onnxruntime) are imported inside the commands that need them.
"""

from __future__ import annotations

from ale_cli.allocator import keep_freed_memory
from ale_cli.cli import audit as _audit  # noqa: F401  (registers commands)
from ale_cli.cli import classic as _classic  # noqa: F401  (registers commands)
from ale_cli.cli import compute as _compute  # noqa: F401  (registers commands)
from ale_cli.cli import estimate as _estimate  # noqa: F401  (registers commands)
from ale_cli.cli import export as _export  # noqa: F401  (registers commands)
from ale_cli.cli import interact as _interact  # noqa: F401  (registers commands)
from ale_cli.cli import plot as _plot  # noqa: F401  (registers commands)
from ale_cli.cli import report as _report  # noqa: F401  (registers commands)
from ale_cli.cli import run as _run  # noqa: F401  (registers commands)
from ale_cli.cli.app import app

__all__ = ["app", "main"]


def main() -> None:
    """Console-script entry point ``ale``; ends the process quickly (:func:`_exit`)."""
    keep_freed_memory()  # freed numpy buffers are reused, not page-faulted in again
    _only_the_invoked_command()
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
    import os
    import sys

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


def _only_the_invoked_command() -> None:
    """When the first argument names a command, typer builds only that command's click
    object (it builds every command's from its signature otherwise: 0.05-0.1 s). Help,
    an unknown name, shell completion and ``--config`` (whose file may have sections for
    the other commands) see them all."""
    import os
    import sys

    from typer.main import get_command_name

    if len(sys.argv) < 2 or any(key.endswith("_COMPLETE") for key in os.environ):
        return
    if any(arg == "--config" or arg.startswith("--config=") for arg in sys.argv[2:]):
        return
    wanted = [
        info
        for info in app.registered_commands
        if (info.name or get_command_name(getattr(info.callback, "__name__", ""))) == sys.argv[1]
    ]
    if len(wanted) == 1:
        app.registered_commands = wanted
