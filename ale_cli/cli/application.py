"""The typer application and the one place where errors become exit codes.

Whatever goes wrong, ``ale`` prints exactly one line on stderr, starting with
``error:``, and exits with

- 2 for bad input or options (an :class:`~ale_cli.errors.InputError`, an
  option-parsing error: unknown option, missing argument, a value of the wrong
  type, NaN or infinity where a finite number is expected);
- 1 for a failure while running (a :class:`~ale_cli.errors.RunError`, an
  ``OSError`` from the machine: a disk error, a permission) and for an
  unexpected exception, which is a bug in ``ale``: its traceback is written to
  a file under the temporary directory and the line says where;
- 130 for Ctrl-C and 143 for SIGTERM (temporary files are removed first).
"""

from __future__ import annotations

import math
import os
import re
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any, get_args, get_origin

import typer
from typer._click import exceptions as click_errors
from typer.core import TyperGroup

from ale_cli.errors import AleError
from ale_cli.signals import EXIT_INTERRUPTED, Terminated, arrived, sigterm_raises


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


class _FiniteRuntime:
    """The runtime coercion of a float parameter, refusing NaN and infinities first.

    typer coerces every value (command line, config file, default) through
    ``param.get_runtime_param().coerce``; this wraps that object, so ``--alpha nan``
    is "expected a finite number" rather than a range check that NaN slips past.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        if value is not None and not isinstance(value, bool):
            try:
                number = float(value)
            except (TypeError, ValueError):
                number = 0.0  # not a number at all: the inner coercion says so
            if not math.isfinite(number):
                raise click_errors.BadParameter(
                    f"expected a finite number, got '{value}'", ctx=ctx, param=param
                )
        return self.inner.coerce(value, param=param, ctx=ctx)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")
#: what a plain value of these parameters needs no adapter for
_PLAIN = (str, int, float, Path, bool)
_NOT_PLAIN = object()


class _PlainRuntime:
    """typer's coercion of a ``str``/``int``/``float``/``bool``/``Path`` parameter (or a
    list of them), without the
    pydantic adapter typer builds for every parameter (importing pydantic and building
    the adapters of one command: 0.1-0.2 s of every run).

    Only values in a plain form are converted here, to what typer's adapter returns for
    them (a decimal integer, a decimal float, any text, a path); anything else -- another
    form, a value under ``min``/over ``max``, an unreadable path -- goes to typer's own
    coercion, built then, so results and error messages are typer's.
    """

    def __init__(self, param: Any) -> None:
        self.param = param
        self.inner: Any = None

    def _typer(self) -> Any:
        if self.inner is None:
            from typer._coercion import build_runtime_param

            self.inner = build_runtime_param(self.param.type_descriptor)
        return self.inner

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        multi = param.multiple or param.nargs == -1
        if value is None:
            return () if multi else None
        kind, info = (
            self.param.type_descriptor.annotation,
            self.param.type_descriptor.parameter_info,
        )
        if multi and isinstance(value, list | tuple) and get_origin(kind) is list:
            (item,) = get_args(kind)
            done = [_plain_value(item, info, v) for v in value]
            if all(v is not _NOT_PLAIN for v in done):
                return done
        elif not multi:
            one = _plain_value(kind, info, value)
            if one is not _NOT_PLAIN:
                return one
        return self._typer().coerce(value, param=param, ctx=ctx)


def _plain_value(kind: Any, info: Any, value: Any) -> Any:
    """``value`` coerced to ``kind`` as typer would, or ``_NOT_PLAIN`` to let typer do it."""
    if kind is str:
        return value if isinstance(value, str) else _NOT_PLAIN
    if kind is bool:
        return value if isinstance(value, bool) else _NOT_PLAIN
    if kind is Path:
        if not isinstance(value, str | Path):
            return _NOT_PLAIN
        path = Path(value)
        try:
            os.stat(path)
        except (OSError, ValueError):
            return path  # typer checks nothing more for a path that need not exist
        return path if os.access(path, os.R_OK) else _NOT_PLAIN
    if kind is int:
        if isinstance(value, bool):
            return _NOT_PLAIN
        if isinstance(value, str) and _INT.fullmatch(value):
            value = int(value)
        if not isinstance(value, int):
            return _NOT_PLAIN
    elif kind is float:
        if isinstance(value, bool):
            return _NOT_PLAIN
        if isinstance(value, str) and _FLOAT.fullmatch(value):
            value = float(value)
        if not isinstance(value, int | float) or not math.isfinite(value):
            return _NOT_PLAIN
        value = float(value)
    if (info.min is not None and value < info.min) or (info.max is not None and value > info.max):
        return _NOT_PLAIN
    return value


def _plain(descriptor: Any) -> bool:
    """True for a parameter :class:`_PlainRuntime` may coerce (no parser, no clamping,
    no path options beyond the defaults)."""
    info, kind = descriptor.parameter_info, descriptor.annotation
    if get_origin(kind) is list:
        kind = get_args(kind)[0]
    if kind not in _PLAIN or descriptor.file_annotation is not None:
        return False
    if info.parser is not None or getattr(info, "click_type", None) is not None or info.clamp:
        return False
    if kind is Path:
        defaults = (False, True, True, False, True, False, False)
        flags = (
            info.exists,
            info.file_okay,
            info.dir_okay,
            info.writable,
            info.readable,
            info.resolve_path,
            bool(info.path_type),
        )
        return flags == defaults
    return True


def _runtimes(command: Any, ctx: Any) -> None:
    """Plain parameters coerced without pydantic (:class:`_PlainRuntime`), and every float
    parameter refusing NaN and infinities (:class:`_FiniteRuntime`); idempotent. The
    parameters include ``--help`` (made and kept by ``get_params``)."""
    params = command.get_params(ctx) if hasattr(command, "get_params") else ()
    for param in params:
        descriptor = getattr(param, "type_descriptor", None)
        if descriptor is None:
            continue
        if getattr(param, "_runtime_param", True) is None and _plain(descriptor):
            param._runtime_param = _PlainRuntime(param)
        if descriptor.annotation is not float:
            continue
        runtime = param.get_runtime_param()
        if not isinstance(runtime, _FiniteRuntime):
            param._runtime_param = _FiniteRuntime(runtime)


class _AleGroup(TyperGroup):
    """Runs a sub-command; every error becomes one line on stderr and an exit code.

    The library names parameters (``max_bins``); the line names the running
    command's flag for it (``--max-bins``), looked up among its options.
    """

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        _runtimes(self, ctx)  # the group's own options (--version, completion, --help)
        rest: list[str] = super().parse_args(ctx, args)
        return rest

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            _runtimes(command, ctx)
        return command

    def invoke(self, ctx: Any) -> Any:
        try:
            with sigterm_raises():
                return super().invoke(ctx)
        except AleError as exc:
            message = exc.render(self._flag_namer(ctx))
            typer.echo(f"error: {_one_line(message, 2000)}", err=True)
            raise typer.Exit(exc.exit_code) from None
        except Terminated:
            typer.echo("error: terminated", err=True)
            raise typer.Exit(Terminated.exit_code) from None
        except KeyboardInterrupt:
            typer.echo("error: interrupted", err=True)
            raise typer.Exit(130) from None
        except (click_errors.ClickException, typer.Exit, typer.Abort):
            raise
        except BrokenPipeError:
            raise  # stdout closed (``ale info s.npz | head -1``): click exits quietly
        except OSError as exc:  # the machine, not ale: a disk error, a permission
            where = f" '{exc.filename}'" if exc.filename else ""
            typer.echo(f"error: {exc.strerror or type(exc).__name__}{where}", err=True)
            raise typer.Exit(1) from None
        except Exception as exc:
            if arrived() is not None:  # a signal surfaced as a C extension's own exception
                interrupted = arrived() == EXIT_INTERRUPTED - 128
                typer.echo(f"error: {'interrupted' if interrupted else 'terminated'}", err=True)
                raise typer.Exit(
                    EXIT_INTERRUPTED if interrupted else Terminated.exit_code
                ) from None
            typer.echo(f"error: {_internal_error(exc)}", err=True)
            raise typer.Exit(1) from None

    def _flag_namer(self, ctx: Any) -> Any:
        from ale_cli.cli.command import flag_of

        name = ctx.invoked_subcommand or (ctx.protected_args or [None])[0]
        sub = self.get_command(ctx, name) if name else None
        params = list(getattr(sub, "params", ()) or ())
        return lambda param: flag_of(params, param)

    def main(
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Option-parsing errors as one line (``error: ...``, exit 2), not Usage/Try/Error."""
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click_errors.NoArgsIsHelpError as exc:  # ``ale`` alone: the help
            if not standalone_mode:
                raise
            exc.show()
            sys.exit(exc.exit_code)
        except click_errors.ClickException as exc:
            if not standalone_mode:
                raise
            typer.echo(f"error: {_usage_line(exc)}", err=True)
            sys.exit(exc.exit_code)
        except typer.Abort:
            if not standalone_mode:
                raise
            typer.echo("error: aborted", err=True)
            sys.exit(1)
        if not standalone_mode:
            return rv
        # without standalone mode click returns an Exit's code, else the command's value
        sys.exit(rv if isinstance(rv, int) else 0)


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
