"""The ``ale`` console script: signals first, then the (slow) imports, then the CLI, so
Ctrl-C or SIGTERM while typer imports ends in one line and exit 130/143."""

from __future__ import annotations

import sys

from ale_cli import signals


def main() -> None:
    """Console-script entry point ``ale``."""
    signals.install()
    try:
        from ale_cli.cli import main as run  # imports typer
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (Terminated)
        code = getattr(exc, "exit_code", signals.EXIT_INTERRUPTED)
        print(f"error: {signals.STOPPED[code]}", file=sys.stderr)
        sys.exit(code)
    run()
