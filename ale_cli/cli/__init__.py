"""The command-line interface: typer commands that parse, call, write and print one line.

``from ale_cli.cli import app`` imports every command module (each registers its
commands on the typer application). The ``ale`` script imports only the module of the
command it runs (:data:`COMMAND_MODULES`): the others' imports cost 0.05-0.1 s.
Heavy libraries (torch, pandas, matplotlib, onnxruntime) are imported inside the
commands that need them.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["COMMAND_MODULES", "app", "invoked_app", "load_commands", "main"]

#: Each command and the module of ``ale_cli.cli`` that registers it, in the order of
#: ``ale --help`` (a test checks it against what the modules register).
COMMAND_MODULES: dict[str, str] = {
    "audit": "audit",
    "diff": "audit",
    "classic": "classic",
    "compute": "compute",
    "info": "compute",
    "rebin": "estimate",
    "rhale": "estimate",
    "export": "export",
    "interact": "interact",
    "plot": "plot",
    "report": "report",
    "run": "run",
}


def load_commands(command: str | None = None) -> Any:
    """Import the module of ``command`` (of every command if None); the typer app."""
    wanted = [COMMAND_MODULES[command]] if command else dict.fromkeys(COMMAND_MODULES.values())
    for module in wanted:
        importlib.import_module(f"ale_cli.cli.commands.{module}")
    from ale_cli.cli.application import app

    return app


def __getattr__(name: str) -> Any:
    """``app``: the typer application with every command registered."""
    if name == "app":
        return load_commands()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(app: Any = None) -> None:
    """Run ``app`` (default: :func:`invoked_app`) on ``sys.argv``; end the process quickly
    (:func:`_exit`)."""
    if app is None:
        app = invoked_app()
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


def invoked_app() -> Any:
    """The typer app to run. When the first argument names a command, only its module is
    imported and typer builds only its click object (it builds every command's from its
    signature otherwise: 0.05-0.1 s). Help, an unknown name, shell completion and
    ``--config`` (whose file may have sections for the other commands) see them all."""
    import os
    import sys

    command = sys.argv[1] if len(sys.argv) > 1 else None
    if (
        command not in COMMAND_MODULES
        or any(key.endswith("_COMPLETE") for key in os.environ)
        or any(arg == "--config" or arg.startswith("--config=") for arg in sys.argv[2:])
    ):
        return load_commands()
    from typer.main import get_command_name

    app = load_commands(command)
    wanted = [
        info
        for info in app.registered_commands
        if (info.name or get_command_name(getattr(info.callback, "__name__", ""))) == command
    ]
    if len(wanted) == 1:
        app.registered_commands = wanted
    return app
