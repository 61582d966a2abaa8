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
    except signals.Terminated:
        print("error: terminated", file=sys.stderr)
        sys.exit(signals.EXIT_TERMINATED)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        sys.exit(signals.EXIT_INTERRUPTED)
    run()
