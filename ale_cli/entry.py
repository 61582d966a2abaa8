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
        terminated = isinstance(exc, signals.Terminated)
        print(f"error: {'terminated' if terminated else 'interrupted'}", file=sys.stderr)
        sys.exit(signals.EXIT_TERMINATED if terminated else signals.EXIT_INTERRUPTED)
    run()
