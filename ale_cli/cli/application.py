"""The typer application and the one place where errors become exit codes.

Whatever goes wrong, ``ale`` prints one line on stderr starting with ``error:`` and exits
2 for bad input or options (an ``InputError``, an option-parsing error), 1 for a failure
while running (a ``RunError``, an ``OSError``) or a bug (its traceback goes to a file under
the temporary directory), 130 for Ctrl-C, 143 for SIGTERM.
"""

from __future__ import annotations

import functools
import sys
import tempfile
import traceback
from collections.abc import Iterator, Mapping
from typing import Any, NoReturn

import typer
from typer._click import exceptions as click_errors
from typer.core import TyperGroup

from ale_cli.cli.coercion import install
from ale_cli.cli.command import VersionOption, flag_of
from ale_cli.cli.registry import COMMANDS, load
from ale_cli.errors import AleError
from ale_cli.signals import EXIT_INTERRUPTED, STOPPED, arrived, raise_dropped, sigterm_raises


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _internal_error(exc: BaseException) -> str:
    """Write the traceback to a file under the temp directory; the line that says so."""
    what = f"{type(exc).__name__}: {_one_line(str(exc), 200)}".rstrip(": ")
    try:
        fd, name = tempfile.mkstemp(prefix="ale-internal-error-", suffix=".txt")
        with open(fd, "w", encoding="utf-8") as fh:
            fh.write(f"ale {' '.join(sys.argv[1:])}\n\n")
            fh.write("".join(traceback.format_exception(exc)))
        where = f"the traceback is in {name}"
    except OSError as err:
        where = f"the traceback could not be written ({err.strerror or err})"
    return f"internal error (a bug in ale): {what}; {where}"


@functools.cache
def build(name: str) -> Any:
    """The click command of the registered command ``name``, made by typer."""
    declared = load(name)
    one = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
    one.command(name=name, epilog=declared.epilog, short_help=COMMANDS[name].summary)(
        declared.callback
    )
    return typer.main.get_command(one)


class _Commands(Mapping[str, Any]):
    """The registered commands by name; each built on first use (:func:`build`)."""

    def __getitem__(self, name: str) -> Any:
        return build(name)  # KeyError for an unknown name, from the registry

    def __iter__(self) -> Iterator[str]:
        return iter(COMMANDS)

    def __len__(self) -> int:
        return len(COMMANDS)


class _AleGroup(TyperGroup):
    """Runs a sub-command; every error becomes one line on stderr (naming the flag of a
    parameter, ``--max-bins`` for ``max_bins``) and an exit code."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.commands = _Commands()  # type: ignore[assignment]

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """The command table of ``ale --help``, from the registry (nothing is imported)."""
        with formatter.section("Commands"):
            formatter.write_dl([(n, e.summary) for n, e in COMMANDS.items()])

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        install(self, ctx)  # the group's own options (--version, completion, --help)
        rest: list[str] = super().parse_args(ctx, args)
        return rest

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            install(command, ctx)
        return command

    def invoke(self, ctx: Any) -> Any:
        try:
            with sigterm_raises():
                done = super().invoke(ctx)
                raise_dropped()
                return done
        except AleError as exc:  # named by the flag of a parameter of the command run
            name = ctx.invoked_subcommand or (ctx.protected_args or [None])[0]
            params = list(getattr(self.get_command(ctx, name) if name else None, "params", ()))
            _fail(_one_line(exc.render(functools.partial(flag_of, params)), 2000), exc.exit_code)
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (Terminated)
            code = getattr(exc, "exit_code", EXIT_INTERRUPTED)
        # stdout closed (``ale info s.npz | head -1``): click exits quietly
        except (click_errors.ClickException, typer.Exit, typer.Abort, BrokenPipeError):
            raise
        except OSError as exc:  # the machine, not ale: a disk error, a permission
            where = f" '{exc.filename}'" if exc.filename else ""
            _fail(f"{exc.strerror or type(exc).__name__}{where}", 1)
        except Exception as exc:
            if (signum := arrived()) is None:  # else a signal as a C extension's exception
                _fail(_internal_error(exc), 1)
            code = 128 + signum
        _fail(STOPPED[code], code)

    def main(self, *args: Any, standalone_mode: bool = True, **extra: Any) -> Any:
        """Option-parsing errors as one line (``error: ...``, exit 2), not Usage/Try/Error."""
        try:
            rv = super().main(*args, standalone_mode=False, **extra)
        except (click_errors.ClickException, typer.Abort) as exc:
            if not standalone_mode:
                raise
            if isinstance(exc, click_errors.NoArgsIsHelpError):  # ``ale`` alone: the help
                exc.show()
            else:
                line = "aborted" if isinstance(exc, typer.Abort) else _usage_line(exc)
                typer.echo(f"error: {line}", err=True)
            sys.exit(getattr(exc, "exit_code", 1))
        if not standalone_mode:
            return rv
        # without standalone mode click returns an Exit's code, else the command's value
        sys.exit(rv if isinstance(rv, int) else 0)


def _fail(line: str, code: int) -> NoReturn:
    typer.echo(f"error: {line}", err=True)
    raise typer.Exit(code) from None


def _usage_line(exc: Any) -> str:
    """A click error as one line, with where to find the command's help."""
    line = _one_line(exc.format_message(), 2000).rstrip(".")
    ctx = getattr(exc, "ctx", None)
    if ctx is not None and ctx.command_path:
        line += f" (see '{ctx.command_path} --help')"
    return line


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


@app.callback()
def _root(version: VersionOption = False) -> None:
    """The ``ale`` group: its help is the application's (above)."""
