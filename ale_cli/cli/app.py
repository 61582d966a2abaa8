"""The typer application and the one place where errors become exit codes."""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup

from ale_cli.errors import AleError


class _AleGroup(TyperGroup):
    """Runs a sub-command; an AleError becomes one line on stderr and its exit code.

    The library names parameters (``max_bins``); the line names the running
    command's flag for it (``--max-bins``), looked up among its options.
    """

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except AleError as exc:
            typer.echo(f"error: {exc.render(self._flag_namer(ctx))}", err=True)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            typer.echo("error: interrupted", err=True)
            raise typer.Exit(130) from None

    def _flag_namer(self, ctx: Any) -> Any:
        from ale_cli.cli.command import flag_of

        name = ctx.invoked_subcommand or (ctx.protected_args or [None])[0]
        sub = self.get_command(ctx, name) if name else None
        params = list(getattr(sub, "params", ()) or ())
        return lambda param: flag_of(params, param)


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
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    if value:
        from ale_cli import __version__

        typer.echo(f"ale {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        help="Print the version and exit.",
        is_eager=True,
        callback=_print_version,
    ),
) -> None:
    """Accumulated Local Effects for trained models.

    compute the local effects once (the expensive step), then re-bin, run RHALE
    and plot from the cached store in milliseconds.
    """
