"""The job file of ``ale run``: one YAML mapping describing a whole job (an example and
every key: ``docs/jobs-and-reports.md``); also ``out: DIR`` (used when ``-o`` is not
given) and several pairs as ``interact: {pairs: [[s1,s2], [bmi,bp]]}``.

Relative paths resolve against the job file's directory. The file (hardened loader,
at most :data:`MAX_JOB_BYTES`) is checked whole before any step runs: its shape
(:func:`job_schema`), every option through its estimator's request, every file it
names. Errors name the file and the key path, never a flag
(``job 'nightly.yaml': estimators.rebin.bins must be a whole number ...``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from ale_cli.audit.rules import read_rules
from ale_cli.checks import names_tuple
from ale_cli.errors import AleError, InputError
from ale_cli.estimators.classic import ClassicRequest
from ale_cli.estimators.dale import RebinRequest, RhaleRequest
from ale_cli.estimators.inputs import ModelInputs
from ale_cli.estimators.interact import InteractRequest
from ale_cli.estimators.levels import discrete_mode
from ale_cli.estimators.local_effects import ComputeRequest
from ale_cli.estimators.pairs import parse_pairs
from ale_cli.estimators.regional import RegionalRequest
from ale_cli.io.yamlsafe import check_document, load_yaml
from ale_cli.models.mlflow_model import SCHEMES as MLFLOW_SCHEMES
from ale_cli.models.objects import ModelObject, model_object
from ale_cli.plot.render import DEFAULT_DPI, DPI_RANGE, FORMATS
from ale_cli.summary.model import read_summary

#: the estimators in the order they run, with the options each takes
ESTIMATOR_OPTIONS: dict[str, tuple[str, ...]] = {
    "rhale": ("max_bins", "min_points", "alpha", "grid", "center", "features", "statistics"),
    "rebin": ("bins", "binning", "edges", "center", "features", "statistics"),
    "regional": (
        "max_depth",
        "min_drop",
        "min_rows",
        "candidates",
        "search_rows",
        "bins",
        "max_bins",
        "center",
        "features",
    ),
    "classic": ("bins", "binning", "edges", "center", "statistics"),
    "interact": ("pairs", "bins", "binning", "estimator", "edges"),
}
#: the estimators whose plot step can draw the overview alone (``plots.overview_only``)
OVERVIEW_ONLY = ("rhale", "rebin", "classic")
_INPUT_FIELDS = tuple(f.name for f in fields(ModelInputs) if f.name != "model_source")
DEFAULT_KEEP = 30
#: the largest job file read (a job is a few hundred bytes)
MAX_JOB_BYTES = 64 * 1024
#: the job key of each parameter an error can name (the CLI would name its flag)
JOB_KEYS = {
    "pairs": "estimators.interact.pairs",
    "formats": "plots.formats",
    "dpi": "plots.dpi",
    "rules": "audit.rules",
    "baseline": "audit.baseline",
}


def job_key(param: str) -> str:
    """The key path a user writes in a job file for library parameter ``param``.

    >>> job_key("pairs"), job_key("exclude")
    ('estimators.interact.pairs', 'exclude')
    """
    return JOB_KEYS.get(param, param)


@dataclass(frozen=True)
class JobSpec:
    """A parsed job file, paths absolute; ``estimators`` (in :data:`ESTIMATOR_OPTIONS`
    order) -> options; ``plots``/``rules``/``report`` None: that step is skipped.
    ``discrete`` ("auto", "none", names, or None: the binary columns) goes to the compute
    step and to the classic estimator."""

    path: Path
    inputs: ModelInputs
    estimators: dict[str, dict[str, Any]]
    plots: dict[str, Any] | None
    report: dict[str, Any] | None
    keep: int
    out: Path | None
    discrete: tuple[str, ...] | str | None
    rules: Path | None = None
    baseline: Path | None = None


class JobError(InputError):
    """A job file that cannot be run as written (exit code 2)."""


def _fail(path: Path, where: str, message: str) -> JobError:
    return JobError(f"job '{path}': {where}{': ' if where else ''}{message}")


@contextlib.contextmanager
def keyed(
    job: Path, where: str = "", *, under: bool = False, catch: Any = AleError
) -> Iterator[None]:
    """An error of the block as a JobError naming the file and its parameter's key path
    (:func:`job_key`; with ``under``: the option's under ``where``), or ``where``."""
    try:
        yield
    except catch as exc:
        message = exc.render((lambda p: f"{where}.{p}") if under else job_key)
        raise _fail(job, "" if exc.param else where, message) from None


def job_schema() -> dict[str, Any]:
    """The JSON Schema of a job file's shape (option values are checked by the requests)."""
    nullable, null, off = {"type": ["string", "null"]}, {"type": "null"}, {"const": False}

    def closed(properties: dict[str, Any], **more: Any) -> dict[str, Any]:
        return {"type": "object", "additionalProperties": False, "properties": properties} | more

    estimators = {
        name: {"anyOf": [null, closed({o: {} for o in options})]}
        for name, options in ESTIMATOR_OPTIONS.items()
    }
    low, high = DPI_RANGE
    plots = closed(
        {
            "formats": {"type": "array", "minItems": 1, "items": {"enum": list(FORMATS)}},
            "dpi": {"type": "integer", "minimum": low, "maximum": high},
            "overview_only": {"type": "array", "items": {"enum": list(OVERVIEW_ONLY)}},
        }
    )
    top = {f: {} for f in _INPUT_FIELDS} | {
        "model": {"type": "string", "minLength": 1},
        "data": {"type": "string", "minLength": 1},
        "discrete": {},
        "estimators": closed(estimators, minProperties=1),
        "plots": {"anyOf": [off, null, plots]},
        "audit": {"anyOf": [null, closed({"rules": nullable, "baseline": nullable})]},
        "report": {"anyOf": [off, null, closed({"timestamp": {"type": "boolean"}})]},
        "keep": {"type": "integer", "minimum": 1},
        "out": nullable,
    }
    return closed(top, required=["model", "data", "estimators"])


def _normalised(data: Any) -> Any:
    """Shorthands written out: ``estimators: [rhale]``, ``formats: png,svg``."""
    if not isinstance(data, dict):
        return data
    data = dict(data)
    names = data.get("estimators")
    if isinstance(names, list) and all(isinstance(v, str) for v in names):
        data["estimators"] = {v: None for v in names}
    plots = data.get("plots")
    if isinstance(plots, dict) and isinstance(plots.get("formats"), str):
        data["plots"] = plots | {"formats": [f.strip() for f in plots["formats"].split(",")]}
    return data


def _path(base: Path, value: Any) -> Path:
    p = Path(value).expanduser()
    return Path(os.path.normpath(p if p.is_absolute() else base / p))


def _existing(job: Path, where: str, path: Path, *, file: bool = True) -> Path:
    """``path`` if it exists (a regular file when ``file``), else a JobError naming ``where``."""
    if not path.exists():
        raise _fail(job, where, f"'{path}' does not exist")
    if file and not path.is_file():
        raise _fail(job, where, f"'{path}' is not a regular file")
    return path


def _discrete(job: Path, value: Any) -> tuple[str, ...] | str | None:
    """``discrete``: null (the binary columns), "auto", "none", a list of names or "a,b"."""
    names = isinstance(value, list) and all(isinstance(v, str) for v in value)
    if not (value is None or isinstance(value, str) or names):
        expected = f"expected auto, none or a list of column names, got {value!r}"
        raise _fail(job, "discrete", expected)
    with keyed(job, "discrete"):
        return discrete_mode(value)


def _pairs(job: Path, value: Any) -> list[str]:
    """``estimators.interact.pairs`` as "a,b" strings: [s1, s2] is one pair."""
    pairs = value or []
    pairs = [pairs] if isinstance(pairs, str) else pairs
    if not isinstance(pairs, list):
        raise _fail(job, "estimators.interact.pairs", f"expected a list of pairs, got {value!r}")
    if len(pairs) == 2 and all(isinstance(p, str) and "," not in p for p in pairs):
        pairs = [pairs]  # [s1, s2]: one pair written as a YAML list
    out = [",".join(map(str, p)) if isinstance(p, list | tuple) else str(p) for p in pairs]
    with keyed(job, "estimators.interact.pairs"):
        parse_pairs(out)
    return out


def _estimators(job: Path, base: Path, raw: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name in ESTIMATOR_OPTIONS:  # a fixed order: the summaries feed each other in it
        if name not in raw:
            continue
        opts = dict(raw[name] or {})
        where = f"estimators.{name}"
        if opts.get("edges") is not None:
            if not isinstance(opts["edges"], str) or not opts["edges"]:
                raise _fail(job, f"{where}.edges", f"expected a path, got {opts['edges']!r}")
            opts["edges"] = _existing(job, f"{where}.edges", _path(base, opts["edges"]))
        if name == "interact":
            opts["pairs"] = _pairs(job, opts.get("pairs"))
        if "features" in opts:
            with keyed(job, where, under=True):
                opts["features"] = names_tuple(opts["features"], "features")
        out[name] = opts
    return out


def request_of(name: str, opts: dict[str, Any], *, inputs: ModelInputs, store: Path) -> Any:
    """The request of estimator ``name`` (its constructor checks every option)."""
    given = {k: v for k, v in opts.items() if v is not None}
    on_store = {"rhale": RhaleRequest, "rebin": RebinRequest, "regional": RegionalRequest}
    if name in on_store:
        return on_store[name](store=store, **given)
    if name == "classic":
        return ClassicRequest(inputs=inputs, **given)
    return InteractRequest(inputs=replace(inputs), store=store, **given)  # it parses the pairs


def compute_request(spec: JobSpec, out: Path) -> ComputeRequest:
    """The compute step's request: the store ``out``, with the pairs the interact step reads."""
    pairs = spec.estimators.get("interact", {}).get("pairs") or ()
    return ComputeRequest(inputs=spec.inputs, out=out, pairs=pairs, discrete=spec.discrete)


def _inputs(job: Path, base: Path, top: dict[str, Any], model: Any) -> ModelInputs:
    values = {k: v for k, v in top.items() if k in _INPUT_FIELDS}
    if model is None:
        model = top["model"]  # an MLflow URI stays as it is
        model = model if str(model).startswith(MLFLOW_SCHEMES) else _path(base, model)
    values |= {"model": model, "data": _path(base, top["data"])}
    try:
        with keyed(job):
            return ModelInputs(**values)
    except TypeError as exc:
        raise _fail(job, "", str(exc)) from None


def _audit(job: Path, base: Path, audit: dict[str, Any]) -> tuple[Path | None, Path | None]:
    """The rules file (read and checked now) and the baseline summary of ``audit:``."""
    rules, baseline = audit.get("rules"), audit.get("baseline")
    if baseline and not rules:
        raise _fail(job, "audit.baseline", "needs audit.rules (the drift rule reads it)")
    if not rules:
        return None, None
    rules_path = _existing(job, "audit.rules", _path(base, rules))
    with keyed(job, "audit.rules"):
        rule_set = read_rules(rules_path)
    if not baseline:
        drift = [r for r in rule_set.rules if r.name == "drift"]
        if drift:
            raise _fail(job, "audit.baseline", f"{drift[0].where} needs a baseline summary")
        return rules_path, None
    baseline_path = _existing(job, "audit.baseline", _path(base, baseline))
    with keyed(job, "audit.baseline"):
        read_summary(baseline_path)
    return rules_path, baseline_path


def _check_requests(job: Path, spec: JobSpec) -> None:
    """Every estimator's options through its request, the compute request's too."""
    for name, opts in spec.estimators.items():
        with keyed(job, f"estimators.{name}", under=True):
            request_of(name, opts, inputs=spec.inputs, store=job)
    with keyed(job):
        compute_request(spec, job)


def read_job(path: str | Path, *, model: Any = None) -> JobSpec:
    """Parse and check a job file whole (JobError naming the file and the key path).

    ``model``: a model object (:mod:`ale_cli.models.objects`) run in place of the job
    file's ``model``, which may then be left out. A job records every input's sha256 and
    reuses a step whose inputs are unchanged, so an object without a content hash (a
    callable) is refused."""
    job = Path(path)
    schema = job_schema()
    if model is not None:
        model = model_object(model)
        schema["required"].remove("model")
        if model.sha256 is None:
            raise InputError(
                f"{{param}} is {model}, which has no content hash, and a job reuses a step "
                "whose inputs' hashes are unchanged; save the model to a file",
                param="model",
            )
    try:
        data = _normalised(load_yaml(job, "job file", max_bytes=MAX_JOB_BYTES))
        check_document(data, schema, f"job '{job}'")
    except InputError as exc:
        raise JobError(str(exc)) from None
    base = job.resolve().parent
    inputs = _inputs(job, base, data, model)
    estimators = _estimators(job, base, data["estimators"])
    discrete = _discrete(job, data.get("discrete"))
    if discrete is not None and "classic" in estimators:  # in its options: its cache key
        estimators["classic"]["discrete"] = discrete
    plots = None
    if data.get("plots") is not False:
        plots = {"formats": ["png"], "dpi": DEFAULT_DPI} | (data.get("plots") or {})
        plots["dpi"] = int(plots["dpi"])
        absent = [n for n in plots.get("overview_only", ()) if n not in estimators]
        if absent:
            raise _fail(job, "plots.overview_only", f"'{absent[0]}' is not an estimator of the job")
    report = data.get("report")
    report = None if report is False else {"timestamp": True} | (report or {})
    spec = JobSpec(
        path=job,
        inputs=inputs,
        estimators=estimators,
        plots=plots,
        report=report,
        keep=data.get("keep", DEFAULT_KEEP),
        out=_path(base, data["out"]) if data.get("out") else None,
        discrete=discrete,
    )
    _check_requests(job, spec)
    if not isinstance(inputs.model, ModelObject):
        _existing(job, "model", inputs.model, file=False)
    _existing(job, "data", Path(inputs.data), file=False)
    rules, baseline = _audit(job, base, data.get("audit") or {})
    return replace(spec, rules=rules, baseline=baseline)
