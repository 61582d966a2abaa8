"""``ale run``: compute -> estimators -> plots -> audit -> history -> report, each step cached
(what ``DIR`` holds and when a step runs again: ``docs/jobs-and-reports.md``). A step's key
is the sha256 of its name, options, the tool version and its inputs' sha256; ``DIR/run.json``
(``ale_cli/schema/run.schema.json``) records each key and the sha256 of each file written.
Steps run in a staging directory that replaces the previous run as a whole
(:mod:`ale_cli.job.transaction`); the paths they record and print are DIR's.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ale_cli.job.transaction as tx
from ale_cli import __version__
from ale_cli.audit import audit_files
from ale_cli.audit.report import report_dict
from ale_cli.errors import AleError, InputError, RunError
from ale_cli.estimators.classic import classic
from ale_cli.estimators.dale import rebin, rhale
from ale_cli.estimators.interact import interact
from ale_cli.estimators.local_effects import compute
from ale_cli.estimators.regional import regional
from ale_cli.io.files import atomic_write, sha256_file
from ale_cli.io.jsonio import dumps, read_json_file, to_jsonable
from ale_cli.job.lock import run_lock
from ale_cli.job.spec import JobError, JobSpec, compute_request, job_key, keyed, request_of
from ale_cli.outputs.figures import MANIFEST as FIGURES_MANIFEST
from ale_cli.plot.render import plot_files
from ale_cli.report import build_report, write_report
from ale_cli.store.npz import read_meta
from ale_cli.summary.build import run_notes, utc_now
from ale_cli.summary.model import write_summary
from ale_cli.summary.regional import RegionalSummary, write_regional

STORE = "store.npz"
AUDIT = "audit.json"
REPORT = "report.html"
SCHEMA_VERSION = 1
_RUN = dict(rhale=rhale, rebin=rebin, regional=regional, classic=classic, interact=interact)


@dataclass
class Step:
    """One step of the manifest (``outputs``: path relative to DIR -> sha256)."""

    name: str
    options: dict[str, Any]
    inputs: dict[str, str]
    key: str = ""
    cache_hit: bool = False
    seconds: float = 0.0
    outputs: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        outputs = [{"path": p, "sha256": h} for p, h in self.outputs.items()]
        return vars(self) | {"seconds": round(self.seconds, 4), "outputs": outputs}


@dataclass(frozen=True)
class JobResult:
    """A finished run: its manifest (``run.json``) and exit code (the audit's: 0 or 3)."""

    manifest: dict[str, Any]
    exit_code: int
    out: Path


def _readable(paths: Sequence[Path]) -> None:
    """Give files the umask's mode (atomic writes make them 0600): a web server reads them."""
    mask = os.umask(0)
    os.umask(mask)
    for path in paths:
        os.chmod(path, 0o666 & ~mask)


class _Runner:
    """One run: the staging directory (``out``), the previous steps, the steps so far."""

    def __init__(self, spec: JobSpec, staging: tx.Staging, previous: dict[str, Any] | None) -> None:
        self.spec = spec
        self.out = staging.stage
        self.final = staging.final
        self.changed = staging.changed
        self.steps: list[Step] = []
        self.previous = {s["name"]: s for s in (previous or {}).get("steps", [])}

    def changed_notes(self, name: str) -> list[str]:
        """Notes for the outputs of step ``name`` that differ from the previous record."""
        return [
            f"'{rel}' differs from its record in {tx.MANIFEST} (changed or damaged): written again"
            for rel in self.changed.get(name, [])
        ]

    def _hit(self, step: Step) -> bool:
        before = self.previous.get(step.name)
        if before is None or before.get("key") != step.key:
            return False
        outputs = {o["path"]: o["sha256"] for o in before.get("outputs", [])}
        found = {rel: (self.out / rel).is_file() and self.digest(rel) for rel in outputs}
        if not outputs or found != outputs:
            return False
        step.outputs = outputs
        step.notes = list(before.get("notes", []))
        return True

    def step(
        self,
        name: str,
        options: dict[str, Any],
        inputs: dict[str, str],
        action: Callable[[Step], Sequence[Path]],
    ) -> Step:
        """Run ``action`` (returning the files it wrote) unless the step is a cache hit."""
        t0 = time.perf_counter()
        step = Step(name, to_jsonable(options), inputs)
        text = dumps(
            {"step": name, "version": __version__, "options": step.options, "inputs": inputs}
        )
        step.key = hashlib.sha256(text.encode("utf-8")).hexdigest()
        if self._hit(step):
            step.cache_hit = True
        else:
            written = action(step)
            step.notes = self.changed_notes(name) + step.notes
            _readable(written)
            step.outputs = {
                p.relative_to(self.out).as_posix(): sha256_file(p) for p in sorted(written)
            }
        step.seconds = time.perf_counter() - t0
        self.steps.append(step)
        return step

    def digest(self, rel: str) -> str:
        return sha256_file(self.out / rel)

    def shown(self, rel: str) -> str:
        """``DIR/rel`` as the published files name it (the staging directory moves away)."""
        return str(self.final / rel)


def _compute(r: _Runner) -> Step:
    request = compute_request(r.spec, r.out / STORE)
    t0 = time.perf_counter()
    result = compute(request)
    meta = read_meta(r.out / STORE)
    if not result.cache_hit:
        _readable([r.out / STORE])
    step = Step(
        "compute",
        to_jsonable(request.result_options()),
        {"model": meta["model"]["sha256"], "data": meta["data"]["sha256"]},
        key=str(meta["cache_key"]),
        cache_hit=result.cache_hit,
        seconds=time.perf_counter() - t0,
        outputs={STORE: sha256_file(r.out / STORE)},
        notes=r.changed_notes("compute")
        + list(result.notes)
        + ([f"recomputed: {result.reason}"] if result.reason else []),
    )
    r.steps.append(step)
    return step


def _estimator(r: _Runner, name: str, opts: dict[str, Any], store_step: Step) -> Step:
    spec = r.spec
    out = r.out / f"{name}.json"
    inputs = {"store": store_step.outputs[STORE]}
    if name in ("classic", "interact"):
        inputs = store_step.inputs | inputs  # the model and the data
        opts = {"inputs": spec.inputs.result_options()} | opts
    if opts.get("edges"):
        inputs["edges"] = sha256_file(opts["edges"])

    def action(step: Step) -> list[Path]:
        given = {k: v for k, v in opts.items() if k != "inputs"}  # checked when the job was read
        request = request_of(name, given, inputs=spec.inputs, store=r.out / STORE)
        with keyed(spec.path, f"estimators.{name}", under=True, catch=InputError):
            summary = _RUN[name](request).summary
        # ale regional: the global records and regions; the store named as DIR's
        core = summary.summary if isinstance(summary, RegionalSummary) else summary
        if core.store.get("path") == str(r.out / STORE):
            core.store["path"] = r.shown(STORE)
        if isinstance(summary, RegionalSummary):
            write_regional(out, summary, timestamp=False)
        else:
            write_summary(out, summary, timestamp=False)
        step.notes = list(run_notes([*core.features, *core.interactions]))
        return [out]

    return r.step(name, opts, inputs, action)


def _plots(r: _Runner, names: list[str], store_sha: str) -> None:
    spec = r.spec
    if spec.plots is None:
        return
    for name in names:
        inputs = {"summary": r.digest(f"{name}.json"), "store": store_sha}
        options = {k: spec.plots[k] for k in ("formats", "dpi")}
        if name in spec.plots.get("overview_only", ()):
            options["overview_only"] = True  # in this step's key alone

        def action(step: Step, name: str = name, options: dict[str, Any] = options) -> list[Path]:
            # the staged figures are links to the previous run's, which this step replaces
            # whole (a run directory from before figure manifests has none to vouch for them)
            shutil.rmtree(r.out / "plots" / name, ignore_errors=True)
            result = plot_files(
                r.out / f"{name}.json",
                r.out / "plots" / name,
                store_path=r.out / STORE,
                formats=options["formats"],
                dpi=int(options["dpi"]),
                jobs=None,
                overview_only=bool(options.get("overview_only")),
            )
            return [*result.paths, r.out / "plots" / name / FIGURES_MANIFEST]

        r.step(f"plot-{name}", options, inputs, action)


def _audit(r: _Runner, names: list[str]) -> dict[str, Any] | None:
    spec = r.spec
    if spec.rules is None:
        return None
    summaries = [f"{n}.json" for n in names]
    inputs = {s: r.digest(s) for s in summaries} | {"rules": sha256_file(spec.rules)}
    if spec.baseline is not None:
        inputs["baseline"] = sha256_file(spec.baseline)
    options = {"rules": str(spec.rules), "baseline": spec.baseline}

    def action(step: Step) -> list[Path]:
        paths, names = [r.out / s for s in summaries], [r.shown(s) for s in summaries]
        result = audit_files(paths, spec.rules, baseline=spec.baseline, names=names)
        with atomic_write(r.out / AUDIT) as fh:
            fh.write(dumps(report_dict(result)).encode("utf-8"))
        return [r.out / AUDIT]

    r.step("audit", options, inputs, action)
    return read_json_file(r.out / AUDIT, "audit report")


def _history(r: _Runner, files: list[str], theirs: list[str]) -> dict[str, Any]:
    """The manifest's ``history``: ``files`` in a new entry unless the newest holds them."""
    root = r.out / tx.HISTORY
    ours = sorted(p.name for p in root.iterdir())
    digests = {f: r.digest(f) for f in files}
    if ours and tx.entry_files(root / ours[-1]) == digests:
        label, added = ours[-1], False
    else:
        label, added = tx.new_label(), True
        tx.write_entry(root / label, {f: r.out / f for f in files})
        ours.append(label)
    pruned = ours[: max(0, len(ours) - r.spec.keep)]
    for name in pruned:
        shutil.rmtree(root / name)  # hard links in the staging directory
    kept = [name for name in ours if name not in pruned]
    left = {"left": theirs} if theirs else {}
    return {"entry": label, "added": added, "runs": kept, "pruned": pruned} | left


def _report(r: _Runner, names: list[str], history: dict[str, Any], store_sha: str) -> None:
    spec = r.spec
    if spec.report is None:
        return
    summaries = [f"{n}.json" for n in names]
    inputs = {s: r.digest(s) for s in summaries} | {"store": store_sha}
    if (r.out / AUDIT).is_file() and spec.rules is not None:
        inputs[AUDIT] = r.digest(AUDIT)
    figures = {}
    if spec.plots is not None:  # the report takes the figures the plot steps drew
        figures = {r.shown(f"{n}.json"): r.out / "plots" / n for n in names}
        for n in names:
            inputs[f"plots/{n}/{FIGURES_MANIFEST}"] = r.digest(f"plots/{n}/{FIGURES_MANIFEST}")
    earlier = [h for h in history["runs"] if h != history["entry"]]
    for label in earlier:
        for f in sorted((r.out / tx.HISTORY / label).iterdir()):
            inputs[f"{tx.HISTORY}/{label}/{f.name}"] = sha256_file(f)

    def action(step: Step) -> list[Path]:
        result = build_report(
            [r.out / s for s in summaries],
            store=r.out / STORE,
            audit=r.out / AUDIT if AUDIT in inputs else None,
            history=r.out / tx.HISTORY,
            history_exclude=[history["entry"]],
            timestamp=bool(spec.report["timestamp"]),  # type: ignore[index]
            figures=figures,
            names=[r.shown(s) for s in summaries],
        )
        write_report(r.out / REPORT, result.html)
        return [r.out / REPORT]

    r.step("report", dict(spec.report), inputs, action)


def _expected(spec: JobSpec) -> list[str]:
    """The paths of ``DIR`` the run writes that are known before it runs."""
    names = list(spec.estimators)
    paths = [STORE, *(f"{n}.json" for n in names)]
    paths += [f"plots/{n}/" for n in names] if spec.plots is not None else []
    paths += [AUDIT] if spec.rules is not None else []
    return paths + ([REPORT] if spec.report is not None else [])


def _previous(out: Path) -> dict[str, Any] | None:
    """The previous run's manifest; InputError for a ``run.json`` that is not one of ours."""
    path = out / tx.MANIFEST
    if not os.path.lexists(path):
        return None
    if path.is_symlink() or not path.is_file():
        raise InputError(f"'{path}' is a link or not a regular file; ale does not replace it")
    try:
        data = read_json_file(path, "run manifest")
    except InputError:
        data = None
    data = data if isinstance(data, dict) else {}
    steps, tool = data.get("steps"), data.get("tool")
    if not (isinstance(tool, dict) and tool.get("name") == "ale" and isinstance(steps, list)):
        raise InputError(
            f"'{path}' is not the manifest of an 'ale run'; ale does not replace it "
            "(move it away or choose another directory)"
        )
    if not all(isinstance(s, dict) and isinstance(s.get("outputs"), list) for s in steps):
        raise InputError(f"'{path}' is a damaged 'ale run' manifest; move it away")
    return data


def run_job(spec: JobSpec, out: Path, *, wait: bool = False) -> JobResult:
    """Run the job into ``out`` under its lock (see the module docstring)."""
    try:
        return _run_job(spec, out, wait=wait)
    except AleError as exc:
        if exc.param is None:
            raise
        # a job names its keys (estimators.interact.pairs), never the CLI's flags; a failure
        # while running (a model's NaN: pass drop_nonfinite) stays one (exit 1)
        message = f"job '{spec.path}': {exc.render(job_key)}"
        raise (
            JobError(message) if isinstance(exc, InputError) else exc.reworded(message)
        ) from None


def _run_job(spec: JobSpec, out: Path, *, wait: bool) -> JobResult:
    t0, started = time.perf_counter(), utc_now()
    with run_lock(out, wait=wait):
        tx.remove_stale(out)
        previous = _previous(out)
        recorded = tx.recorded_outputs(previous)
        tx.refuse_foreign(out, _expected(spec), recorded)
        ours, theirs = tx.scan(out / tx.HISTORY)
        staging = tx.Staging(out, recorded, tuple(ours))
        try:
            staging.open()
            r = _Runner(spec, staging, previous)
            store_step = _compute(r)
            names, store_sha = list(spec.estimators), store_step.outputs[STORE]
            for name in names:
                _estimator(r, name, dict(spec.estimators[name]), store_step)
            _plots(r, names, store_sha)
            audit = _audit(r, names)
            files = [f"{n}.json" for n in names] + ([AUDIT] if audit is not None else [])
            history = _history(r, files, theirs)
            _report(r, names, history, store_sha)
            manifest = _manifest(r, store_step, audit, history, started, t0)
            with atomic_write(r.out / tx.MANIFEST) as fh:
                fh.write(dumps(manifest).encode("utf-8"))
            _readable([r.out / tx.MANIFEST])
        except OSError as exc:  # a copy into the staging directory (a full disk)
            staging.discard()
            raise RunError(f"cannot write the run into '{out}': {exc.strerror or exc}") from None
        except AleError as exc:  # naming DIR's files, not the staging directory's
            staging.discard()
            stage, final = os.path.join(staging.stage, ""), os.path.join(out, "")
            if stage not in exc.template:
                raise
            raise exc.reworded(exc.template.replace(stage, final), param=exc.param) from None
        except BaseException:
            staging.discard()
            raise
        outputs = [rel for s in r.steps for rel in s.outputs]
        staging.commit(outputs, history["runs"])
    return JobResult(manifest=manifest, exit_code=manifest["exit_code"], out=out)


def _manifest(
    r: _Runner, store_step: Step, audit: dict | None, history: dict, started: str, t0: float
) -> dict[str, Any]:
    spec = r.spec
    inputs: dict[str, Any] = {
        "job": {"path": str(spec.path), "sha256": sha256_file(spec.path)},
        "model": {"path": str(spec.inputs.model), "sha256": store_step.inputs["model"]},
        "data": {"path": str(spec.inputs.data), "sha256": store_step.inputs["data"]},
    }
    for label, path in (("rules", spec.rules), ("baseline", spec.baseline)):
        if path is not None:
            inputs[label] = {"path": str(path), "sha256": sha256_file(path)}
    hits = sum(s.cache_hit for s in r.steps)
    shown = None if audit is None else {k: audit[k] for k in ("passed", "exit_code", "counts")}
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "ale", "version": __version__},
        "started": started,
        "finished": utc_now(),
        "seconds": round(time.perf_counter() - t0, 4),
        "out": str(r.final),
        "inputs": inputs,
        "steps": [s.to_dict() for s in r.steps],
        "cache_hits": hits,
        "steps_run": len(r.steps) - hits,
        "audit": shown,
        "history": history,
        "exit_code": int(audit["exit_code"]) if audit is not None else 0,
    }
