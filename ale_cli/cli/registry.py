"""The commands of ``ale``, one line each: the single source of truth.

Nothing is imported until a command is asked for: ``ale NAME`` imports NAME's module
only, ``ale --help`` none. Adding a command is a module in ``cli/commands/`` and one line
here.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ale_cli.cli.command import Command


@dataclass(frozen=True)
class Entry:
    """Where a command is declared (``"module:attribute"``, a
    :class:`~ale_cli.cli.command.Command`) and its line in ``ale --help``."""

    target: str
    summary: str


_C = "ale_cli.cli.commands."

#: Every command, in the order of ``ale --help``.
COMMANDS: dict[str, Entry] = {
    "compute": Entry(_C + "compute:compute", "Compute the local effects once and cache them."),
    "info": Entry(_C + "compute:info", "Show how a store was made."),
    "rebin": Entry(_C + "estimate:rebin", "DALE on fixed bins, from a store."),
    "rhale": Entry(_C + "estimate:rhale", "RHALE: automatic variable-size bins, from a store."),
    "regional": Entry(
        _C + "regional:regional", "Regional effects: regions where a feature's effects agree."
    ),
    "classic": Entry(_C + "classic:classic", "Classic ALE (Apley-Zhu) from the model."),
    "interact": Entry(_C + "interact:interact", "Second-order ALE of feature pairs."),
    "plot": Entry(_C + "plot:plot", "Figures of a summary (PNG/SVG)."),
    "export": Entry(_C + "export:export", "A summary as one long CSV/Parquet table."),
    "audit": Entry(_C + "audit:audit", "Check summaries against rules (exit 3 on a failure)."),
    "diff": Entry(_C + "audit:diff", "Compare two summaries feature by feature."),
    "report": Entry(_C + "report:report", "One self-contained HTML page of the results."),
    "run": Entry(_C + "run:run_command", "Run a whole job from one YAML file."),
}


def load(name: str) -> Command:
    """The declared command ``name`` (a key of :data:`COMMANDS`); imports its module."""
    module, _, attribute = COMMANDS[name].target.partition(":")
    found: Command = getattr(importlib.import_module(module), attribute)
    return found
