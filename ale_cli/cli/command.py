"""How a command is declared once (:func:`command`) and reports once (:class:`Outcome`:
notes on stderr and the result line on stdout, or with ``--json`` exactly one JSON object
on stdout, ``ale_cli/schema/result.schema.json``)."""

from __future__ import annotations

import functools
import inspect
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TextIO, get_args

import typer

from ale_cli import __version__
from ale_cli.checks import is_stdio
from ale_cli.checks import refuse_stdio as refuse_stdio  # for the commands
from ale_cli.cli.config import ALIAS, config_callback
from ale_cli.errors import InputError
from ale_cli.io.files import atomic_write
from ale_cli.io.jsonio import dumps
from ale_cli.outputs.guard import guard, model_files

if TYPE_CHECKING:
    from ale_cli.summary.build import EstimateResult


@dataclass(frozen=True)
class Outcome:
    """What a command did, for people (``message``) and for programs (``--json``)."""

    message: str  # the one-line result
    command: str = ""  # the command's name (set when it returns)
    outputs: tuple[str, ...] = ()  # files written ("-": standard output)
    counts: Mapping[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # not estimable features, dropped rows...
    timings: Mapping[str, float] = field(default_factory=dict)  # seconds per step
    seconds: float | None = None  # wall time of the work
    cache_hit: bool | None = None  # ale compute: an existing store reused
    details: Mapping[str, Any] = field(default_factory=dict)  # --json only
    lines: tuple[str, ...] = ()  # stdout lines before the message (text mode)
    data_on_stdout: bool = False  # -o -: the message goes to stderr
    exit_code: int = 0  # a verdict that is not an error (ale audit: 3)
    silent: bool = False  # nothing in text mode (ale run --quiet on success)
    lines_to_stderr: bool = False  # stdout carries data (ale audit --json-report -)

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` object."""
        keys = "message outputs counts notes cache_hit seconds timings details".split()
        status = "ok" if self.exit_code == 0 else "failed"
        return {"command": self.command, "status": status, **{k: getattr(self, k) for k in keys}}


class ProgressBar:
    """Call with the number of items just finished; redraws at most 10 times a second
    (a no-op unless ``enabled``: a terminal without ``--quiet``)."""

    def __init__(self, total: int, label: str, *, enabled: bool, stream: TextIO | None = None):
        self.total = max(total, 1)
        self.label = label
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.done = 0
        self._start = time.perf_counter()
        self._last = 0.0

    def __call__(self, n: int) -> None:
        self.done += n
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self._last < 0.1 and self.done < self.total:
            return
        self._last = now
        frac = min(self.done / self.total, 1.0)
        filled = int(30 * frac)
        bar = "#" * filled + "." * (30 - filled)
        self.stream.write(
            f"\r{self.label} [{bar}] {self.done:,}/{self.total:,} {frac:4.0%} "
            f"{now - self._start:5.1f}s"
        )
        self.stream.flush()

    def close(self) -> None:
        """End the bar's line (if anything was drawn)."""
        if self.enabled and self.done:
            self.stream.write("\n")
            self.stream.flush()


@dataclass(frozen=True)
class Run:
    """How this invocation reports: ``--json`` and ``--quiet``."""

    json: bool = False
    quiet: bool = False

    @contextmanager
    def progress(self, *labels: str) -> Iterator[Callable[..., ProgressBar]]:
        """``progress(total[, label]) -> ProgressBar`` for a library call: bars on stderr (on a
        terminal, never with --quiet/--json), the i-th named ``labels[i]`` (the last once they
        run out) unless named, every one closed at the end.

        >>> with Run(quiet=True).progress("rows") as progress:
        ...     progress(10)(4)
        """
        bars: list[ProgressBar] = []
        enabled = not (self.quiet or self.json) and sys.stderr.isatty()

        def progress(total: int, label: str | None = None) -> ProgressBar:
            name = label if label is not None else labels[min(len(bars), len(labels) - 1)]
            bars.append(ProgressBar(total, name, enabled=enabled))
            return bars[-1]

        try:
            yield progress
        finally:
            for bar in bars:
                bar.close()

    def claim_stdout(self, path: Path | str, param: str) -> bool:
        """True when ``path`` is ``-`` (standard output); refused together with --json."""
        if not is_stdio(path):
            return False
        if self.json:
            raise InputError(
                "{param} - writes to standard output, which --json needs for its result; "
                "write to a file or leave out --json",
                param=param,
            )
        return True


def emit(outcome: Outcome, run: Run) -> None:
    """Print an outcome: one JSON object (``--json``) or the notes and the result line."""
    if run.json:
        typer.echo(dumps(outcome.to_dict()), nl=False)
        return
    if outcome.silent:
        return
    for note in outcome.notes:
        typer.echo(f"note: {note}", err=True)
    for line in outcome.lines:
        typer.echo(line, err=outcome.lines_to_stderr)
    typer.echo(outcome.message, err=outcome.data_on_stdout)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ale {__version__}")
        raise typer.Exit(0)


def option(
    flags: str, help: str | None, kind: Any = str | None, *, name: str = "", **kw: Any
) -> inspect.Parameter:
    """The keyword-only parameter of the option ``flags`` (space-separated; named for the
    first, ``--a-b`` -> ``a_b``, unless ``name``): False for a bool, else None."""
    decls = flags.split()
    default = False if kind is bool else None
    if default is None:
        kw.setdefault("show_default", False)
    annotation = Annotated[kind, typer.Option(*decls, help=help, **kw)]
    name = name or decls[0].removeprefix("--").replace("-", "_")
    return inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
    )


_COMMON = [
    inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context),
    option(
        "--json",
        "Print one JSON object on stdout (what was written, counts, notes, timings) and "
        "nothing else there.",
        bool,
        name="json_",
    ),
    option("--quiet -q", "No progress bar ('ale run': no output at all unless it fails).", bool),
    option(
        "--config",
        "YAML file supplying any option of this command (flat, or a section per command); "
        "flags given on the command line win; relative paths in it are relative to the file.",
        Path | None,
        callback=config_callback,
        is_eager=True,
    ),
    option("--version", "Print the version and exit.", bool, callback=_version, is_eager=True),
]
VersionOption = _COMMON[-1].annotation
_FORCE = option(
    "--force",
    "Overwrite an output that exists and is not recognisably this kind of ale output (never "
    "an input, a directory where a file goes, or files ale did not write in a figure "
    "directory).",
    bool,
)


def with_params(
    func: Callable[..., Any],
    add: Sequence[inspect.Parameter],
    wrapper: Callable[..., Any],
    *,
    drop: Sequence[str] = (),
    first: Sequence[inspect.Parameter] = (),
) -> Callable[..., Any]:
    """``wrapper`` with ``func``'s signature less ``drop``, plus ``first`` before and ``add``
    after its parameters (all keyword-only: typer passes every value by name)."""
    # typer reads the annotations as objects: every one (return and dropped parameters too)
    # must be importable at run time, not only under TYPE_CHECKING
    sig = inspect.signature(func, eval_str=True)
    own = [
        p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
        for p in sig.parameters.values()
        if p.name not in drop
    ]
    params = [*first, *own, *add]
    functools.update_wrapper(wrapper, func)
    del wrapper.__wrapped__  # typer must read the new signature, not the function's
    wrapper.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return wrapper


#: The kind of an output option: a name in :data:`ale_cli.outputs.guard.KINDS`, or a
#: function of the command's option values that returns one (the format chosen by -o).
KindOf = str | Callable[[Mapping[str, Any]], str]


@dataclass(frozen=True)
class Command:
    """A declared command, what the registry (:mod:`ale_cli.cli.registry`) points to: typer
    builds it from ``callback``'s signature; the rest as :func:`command` takes it."""

    callback: Callable[..., int]
    epilog: str
    outputs: Mapping[str, KindOf]
    inputs: tuple[str, ...]
    aliases: Mapping[str, str]

    def guard(self, values: Mapping[str, Any], force: bool) -> None:
        """Run :func:`ale_cli.outputs.guard.guard` on every output, before any work."""
        paths: list[Any] = []
        for name in self.inputs:
            value = values.get(name)
            paths += list(value) if isinstance(value, list | tuple) else [value]
            paths += model_files(value)[1:] if name == "model" else []
        done: dict[str, Path] = {}  # no two outputs on one file
        for name, kind in self.outputs.items():
            if values.get(name) is not None:
                chosen = kind(values) if callable(kind) else kind
                got = guard(
                    values[name], kind=chosen, inputs=paths, force=force, param=name, others=done
                )
                done[name] = got or Path(values[name])


def command(
    *,
    epilog: str,
    outputs: Mapping[str, KindOf] | None = None,
    inputs: Sequence[str] = (),
    aliases: Mapping[str, str] | None = None,
) -> Callable[[Callable[..., Outcome]], Command]:
    """Declare a command returning an :class:`Outcome` (it may take ``run: Run``); add
    ``--json``, ``--quiet``, ``--config``, ``--version`` and, for ``outputs`` (parameter ->
    kind, guarded before it runs; ``inputs``: the parameters read), ``--force`` unless it
    has its own. ``aliases``: old flag -> parameter (hidden)."""
    outs, old = dict(outputs or {}), dict(aliases or {})

    def declare(func: Callable[..., Outcome]) -> Command:
        params = inspect.signature(func, eval_str=True).parameters
        own_force = "force" in params
        for key in [*outs, *inputs, *old.values()]:
            if key not in params:
                raise TypeError(f"{func.__name__}: declared parameter '{key}' is unknown")

        def wrapper(
            *, ctx: Any, json_: bool, quiet: bool, config: Path | None, version: bool, **kw: Any
        ) -> int:
            run = Run(json=json_, quiet=quiet)
            _take_aliases(kw, old, params)
            declared.guard(kw, bool(kw.get("force") if own_force else kw.pop("force", False)))
            if "run" in params:
                kw["run"] = run
            outcome = replace(func(**kw), command=ctx.info_name)
            emit(outcome, run)
            if outcome.exit_code:
                raise typer.Exit(outcome.exit_code)
            return 0

        extra = [  # each old spelling, hidden, read into ALIAS + the parameter's name
            option(
                flag, None, get_args(params[n].annotation)[0] | None, name=ALIAS + n, hidden=True
            )
            for flag, n in old.items()
        ]
        extra += [_FORCE, *_COMMON] if outs and not own_force else _COMMON
        callback = with_params(func, extra, wrapper, drop=("run",))
        declared = Command(callback, epilog, outs, tuple(inputs), old)
        return declared

    return declare


def _take_aliases(
    kw: dict[str, Any], aliases: Mapping[str, str], params: Mapping[str, inspect.Parameter]
) -> None:
    """Move each old spelling's value to its parameter; both given is an InputError."""
    for flag, name in aliases.items():
        value = kw.pop(ALIAS + name, None)
        if value is None or value == []:
            continue
        if kw.get(name) not in (None, [], params[name].default):
            raise InputError(
                f"{{param}} and {flag} (its old spelling) are both given; give {{param}}",
                param=name,
            )
        kw[name] = value


def flag_of(params: Sequence[Any], name: str) -> str:
    """The long flag of the command parameter called ``name`` (``--name`` if there is none)."""
    for param in params:
        if getattr(param, "name", None) == name:
            longs = [o for o in getattr(param, "opts", ()) if o.startswith("--")]
            return longs[0] if longs else str(getattr(param, "human_readable_name", name)).upper()
    return "--" + name.replace("_", "-")


def out_message(path: Path | str) -> str:
    """How a result line names an output: the path, or standard output."""
    return "standard output" if is_stdio(path) else f"'{path}'"


def write_out(run: Run, path: Path | str, data: str | bytes, param: str = "out") -> bool:
    """Write ``data`` to ``path`` atomically, or to standard output for ``-`` (True then)."""
    if run.claim_stdout(path, param):
        typer.echo(data, nl=False)  # bytes go to the binary stream as they are
        return True
    with atomic_write(path) as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)
    return False


def counted(n: int, noun: str) -> str:
    """``counted(1, "feature")`` -> "1 feature"; ``counted(2, "feature")`` -> "2 features"."""
    return f"{n} {noun}{'s' if n != 1 else ''}"


def summary_outcome(
    name: str, result: EstimateResult, out: Path, timestamp: bool, run: Run
) -> Outcome:
    """Write the summary (``-``: standard output) and describe it in one line."""
    from ale_cli.summary.model import summary_json

    to_stdout = write_out(run, out, summary_json(result.summary, timestamp=timestamp))
    feats, items = result.summary.features, result.summary.interactions
    ok = sum(f.status == "ok" for f in (*feats, *items))
    if items:
        grids = " ".join(
            f"{i.name}={i.shape[0]}x{i.shape[1]}" if i.status == "ok" else f"{i.name}=-"
            for i in items
        )
        cached = result.summary.params.get("cached_pairs") or []
        source = f", {len(cached)} from the store" if cached else ""
        what = (
            f"{name} ({result.summary.estimator}{source}): {counted(len(items), 'pair')} "
            f"({ok} ok), cells {grids}"
        )
    else:
        bins = " ".join(
            f"{f.name}={f.n_bins}" if f.status == "ok" else f"{f.name}=-" for f in feats[:50]
        )
        more = f" ... ({len(feats) - 50} more)" if len(feats) > 50 else ""
        what = f"{name}: {counted(len(feats), 'feature')} ({ok} ok), bins {bins}{more}"
    return Outcome(
        message=f"{what}, {result.seconds:.2f} s -> {out_message(out)}",
        outputs=(str(out),),
        counts={
            "rows": result.summary.n_rows,
            "features": len(feats),
            "pairs": len(items),
            "ok": ok,
            "not_estimable": len(feats) + len(items) - ok,
        },
        notes=result.notes,
        timings=result.timings,
        seconds=result.seconds,
        details={
            "estimator": result.summary.estimator,
            "params": result.summary.params,
            # how the store's local effects were made (secant: a piecewise-constant model)
            "method": result.summary.store.get("method"),
        },
        data_on_stdout=to_stdout,
    )
