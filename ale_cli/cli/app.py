"""The typer application and the one place where errors become exit codes."""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup

from ale_cli.errors import AleError


class _AleGroup(TyperGroup):
    """Runs a sub-command; an AleError becomes one line on stderr and its exit code."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except AleError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            typer.echo("error: interrupted", err=True)
            raise typer.Exit(130) from None


app = typer.Typer(
    cls=_AleGroup,
    name="ale",
    help=(
        "Accumulated Local Effects for trained models.\n\n"
        "compute the local effects once (the expensive step), then re-bin, run RHALE "
        "and plot from the cached store in milliseconds."
    ),
    epilog=(
        "Example: ale compute model.pt data.csv --exclude target -o effects.npz && "
        "ale info effects.npz"
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
