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
    """Console-script entry point ``ale``."""
    keep_freed_memory()  # freed numpy buffers are reused, not page-faulted in again
    app()
