"""The ``ale`` console script: signals first, then the (slow) imports, then the CLI.

``ale_cli.cli.invoked_app`` imports typer and the command's module; Ctrl-C or SIGTERM during
those imports must end in one line and the usual exit code (130, 143), not a
traceback, so they are caught here, before anything else is imported.
"""

from __future__ import annotations

import sys

from ale_cli import signals


def main() -> None:
    """Console-script entry point ``ale``."""
    signals.install()
    try:
        from ale_cli.cli import invoked_app
        from ale_cli.cli import main as run

        app = invoked_app()  # imports typer and the command's module
    except signals.Terminated:
        print("error: terminated", file=sys.stderr)
        sys.exit(signals.EXIT_TERMINATED)
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        sys.exit(signals.EXIT_INTERRUPTED)
    run(app)
