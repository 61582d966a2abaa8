"""The job file of ``ale run``: one YAML mapping describing a whole nightly job.

::

    model: ../sample_data/models/diabetes_mlp.pt    # relative to this file
    data: ../sample_data/diabetes.csv
    exclude: [target]              # any field of ModelInputs: inputs, features, output...
    discrete: auto                 # or [sex, s4]: per-level effects (compute and classic)
    estimators:                    # any of rhale, rebin, classic, interact (null: defaults)
      rhale: {max_bins: 50}
      rebin: {bins: 20, binning: quantile}
      interact: {pairs: [s1,s2]}      # or a list of pairs: [[s1,s2], [bmi,bp]]
    plots: {formats: [png], dpi: 120}    # false: no figure files
    audit: {rules: audit-diabetes-mlp.yaml, baseline: null}
    report: {timestamp: true}            # false: no report
    keep: 30                             # runs kept under DIR/history
    out: ../out/nightly                  # used when -o is not given

Relative paths (model, data, rules, baseline, edges, out) resolve against the
job file's directory. Every error names the file and the field
(``job 'nightly.yaml': estimators.rebin.bins must be ...``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ale_cli.checks import names_tuple
from ale_cli.errors import AleError, InputError
from ale_cli.inputs import ModelInputs
from ale_cli.pairs import parse_pairs

#: the estimators in the order they run, with the options each takes
ESTIMATOR_OPTIONS: dict[str, tuple[str, ...]] = {
    "rhale": ("max_bins", "min_points", "alpha", "grid", "center", "features"),
    "rebin": ("bins", "binning", "edges", "center", "features"),
    "classic": ("bins", "binning", "edges", "center"),
    "interact": ("pairs", "bins", "binning", "estimator", "edges"),
}
_INPUT_FIELDS = tuple(f.name for f in fields(ModelInputs))
_TOP = (*_INPUT_FIELDS, "discrete", "estimators", "plots", "audit", "report", "keep", "out")
_PLOT_OPTIONS = ("formats", "dpi")
_AUDIT_OPTIONS = ("rules", "baseline")
_REPORT_OPTIONS = ("timestamp",)
DEFAULT_KEEP = 30


@dataclass(frozen=True)
class JobSpec:
    """A parsed job file; paths absolute (resolved against the job file's directory).

    ``estimators`` maps each estimator to run (in :data:`ESTIMATOR_OPTIONS`
    order) to its options; ``plots`` None: no figure files; ``rules`` None: no
    audit; ``report`` None: no report page. ``discrete`` ("auto", names or None)
    goes to the compute step and to the classic estimator (in its options).
    """

    path: Path
    inputs: ModelInputs
    estimators: dict[str, dict[str, Any]]
    plots: dict[str, Any] | None = field(default_factory=lambda: {"formats": ["png"], "dpi": 120})
    rules: Path | None = None
    baseline: Path | None = None
    report: dict[str, Any] | None = field(default_factory=lambda: {"timestamp": True})
    keep: int = DEFAULT_KEEP
    out: Path | None = None
    discrete: tuple[str, ...] | str | None = None


def _discrete(job: Path, value: Any) -> tuple[str, ...] | str | None:
    """The ``discrete`` key: null, "auto", a list of names or "a,b"."""
    if value is None or value == "auto":
        return value
    names = isinstance(value, str) or (
        isinstance(value, list) and all(isinstance(v, str) for v in value)
    )
    if not names:
        raise _fail(job, "discrete", f"expected auto or a list of column names, got {value!r}")
    try:
        return names_tuple(value, "discrete")
    except AleError as exc:
        raise _fail(job, "", str(exc)) from None


class JobError(InputError):
    """A job file that cannot be run as written (exit code 2)."""


def _fail(path: Path, where: str, message: str) -> JobError:
    return JobError(f"job '{path}': {where}{': ' if where else ''}{message}")


def _mapping(path: Path, value: Any, where: str, allowed: tuple[str, ...]) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _fail(path, where, f"expected a mapping, got {type(value).__name__}")
    unknown = [str(k) for k in value if k not in allowed]
    if unknown:
        raise _fail(path, where, f"unknown key '{unknown[0]}' (known: {', '.join(allowed)})")
    return dict(value)


def _path(base: Path, value: Any, job: Path, where: str) -> Path:
    if not isinstance(value, str | Path) or not str(value):
        raise _fail(job, where, f"expected a path, got {value!r}")
    p = Path(value).expanduser()
    return Path(os.path.normpath(p if p.is_absolute() else base / p))


def _estimators(job: Path, base: Path, value: Any) -> dict[str, dict[str, Any]]:
    if isinstance(value, list):  # a list of names: every one with its defaults
        value = {str(v): None for v in value}
    raw = _mapping(job, value, "estimators", tuple(ESTIMATOR_OPTIONS))
    if not raw:
        raise _fail(job, "estimators", f"name at least one of {', '.join(ESTIMATOR_OPTIONS)}")
    out: dict[str, dict[str, Any]] = {}
    for name in ESTIMATOR_OPTIONS:  # a fixed order: the summaries feed each other in it
        if name not in raw:
            continue
        opts = _mapping(job, raw[name], f"estimators.{name}", ESTIMATOR_OPTIONS[name])
        if "edges" in opts and opts["edges"] is not None:
            opts["edges"] = _path(base, opts["edges"], job, f"estimators.{name}.edges")
        if name == "interact":
            pairs = opts.get("pairs") or []
            pairs = [pairs] if isinstance(pairs, str) else list(pairs)
            if len(pairs) == 2 and all(isinstance(p, str) and "," not in p for p in pairs):
                pairs = [pairs]  # [s1, s2]: one pair written as a YAML list
            opts["pairs"] = [
                ",".join(map(str, p)) if isinstance(p, list | tuple) else str(p) for p in pairs
            ]
            try:
                parse_pairs(opts["pairs"])
            except AleError as exc:
                raise _fail(job, "estimators.interact", str(exc)) from None
        if "features" in opts:
            opts["features"] = names_tuple(opts["features"], "features")
        out[name] = opts
    return out


def request_of(name: str, opts: dict[str, Any], *, inputs: ModelInputs, store: Path) -> Any:
    """The request of estimator ``name`` (its constructor checks every option)."""
    from dataclasses import replace

    from ale_cli.classic import ClassicRequest
    from ale_cli.estimate import RebinRequest, RhaleRequest
    from ale_cli.interact import InteractRequest

    given = {k: v for k, v in opts.items() if v is not None}
    if name == "rhale":
        return RhaleRequest(store=store, **given)
    if name == "rebin":
        return RebinRequest(store=store, **given)
    if name == "classic":
        return ClassicRequest(inputs=inputs, **given)
    given["pairs"] = parse_pairs(given.get("pairs") or ())
    return InteractRequest(inputs=replace(inputs), store=store, **given)


def read_job(path: str | Path) -> JobSpec:
    """Parse and check a job file (JobError naming the file and the field)."""
    import yaml

    job = Path(path)
    if not job.is_file():
        raise JobError(f"job file '{job}' does not exist or is not a file")
    try:
        data = yaml.safe_load(job.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise JobError(f"job file '{job}' is not valid YAML: {first}") from None
    base = job.resolve().parent
    top = _mapping(job, data, "", _TOP)
    for key in ("model", "data", "estimators"):
        if key not in top:
            raise _fail(job, "", f"missing '{key}'")
    input_values = {k: v for k, v in top.items() if k in _INPUT_FIELDS}
    input_values["model"] = _path(base, top["model"], job, "model")
    input_values["data"] = _path(base, top["data"], job, "data")
    try:
        inputs = ModelInputs(**input_values)
    except AleError as exc:
        raise _fail(job, "", str(exc)) from None
    except TypeError as exc:
        raise _fail(job, "", str(exc)) from None
    plots_value = top.get("plots", {})
    plots = None
    if plots_value is not False:
        plots = {"formats": ["png"], "dpi": 120} | _mapping(
            job, plots_value, "plots", _PLOT_OPTIONS
        )
        formats = plots["formats"]
        plots["formats"] = list(names_tuple(formats, "formats") or ("png",))
    audit = _mapping(job, top.get("audit"), "audit", _AUDIT_OPTIONS)
    if audit.get("baseline") and not audit.get("rules"):
        raise _fail(job, "audit.baseline", "needs audit.rules (the drift rule reads it)")
    report_value = top.get("report", {})
    report = None
    if report_value is not False:
        report = {"timestamp": True} | _mapping(job, report_value, "report", _REPORT_OPTIONS)
        if not isinstance(report["timestamp"], bool):
            raise _fail(job, "report.timestamp", "expected true or false")
    keep = top.get("keep", DEFAULT_KEEP)
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        raise _fail(job, "keep", f"expected a whole number of at least 1, got {keep!r}")
    estimators = _estimators(job, base, top["estimators"])
    discrete = _discrete(job, top.get("discrete"))
    if discrete is not None and "classic" in estimators:  # in its options: its cache key
        estimators["classic"]["discrete"] = discrete if discrete == "auto" else list(discrete)
    for name, opts in estimators.items():
        try:
            request_of(name, opts, inputs=inputs, store=job)
        except AleError as exc:
            raise _fail(job, f"estimators.{name}", str(exc)) from None
    return JobSpec(
        path=job,
        inputs=inputs,
        estimators=estimators,
        plots=plots,
        rules=_path(base, audit["rules"], job, "audit.rules") if audit.get("rules") else None,
        baseline=(
            _path(base, audit["baseline"], job, "audit.baseline") if audit.get("baseline") else None
        ),
        report=report,
        keep=keep,
        out=_path(base, top["out"], job, "out") if top.get("out") else None,
        discrete=discrete,
    )
