"""``ale run``: a whole job (compute, estimators, plots, audit, report) from one YAML file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ale_cli import api
from ale_cli.cli.command import Outcome, Run, command
from ale_cli.cli.options import unshown
from ale_cli.io.jsonio import read_json_file
from ale_cli.job.runner import AUDIT


@command(
    epilog="Exit codes: 0 done (audit passed or no audit); 3 an error-severity audit rule "
    "failed; 2 bad input (the job file, a path, an option); 1 a failure while running, or "
    "another 'ale run' holds DIR (without --wait).\n\n"
    "Crontab (prints nothing unless the run or its audit fails): "
    "30 2 * * * cd /srv/models && ale run nightly.yaml -o runs/nightly --quiet\n\n"
    "Example: ale run configs/demo-job.yaml -o out/demo-job",
)
def run_command(
    run: Run,
    job: Annotated[Path, typer.Argument(help="The job file (YAML): model, data, estimators...")],
    out: Annotated[
        Path | None,
        unshown(
            "--out",
            "-o",
            help="Directory of the run (default: 'out' in the job file). Holds the store, "
            "summaries, plots, audit, report, history/ and the manifest run.json.",
        ),
    ] = None,
    wait: Annotated[
        bool,
        typer.Option(
            "--wait",
            help="If another 'ale run' holds DIR, wait for it instead of failing at once.",
        ),
    ] = False,
) -> Outcome:
    """Run a job: compute the local effects (cached), the estimators, figures, the audit
    and the report into DIR; every step whose inputs and options are unchanged is
    skipped. Writes the manifest DIR/run.json; the exit code is the audit's.

    With --quiet nothing is printed unless the run fails or the audit fails (then the
    failed and warned rules, one a line, after their summary's name when the job has
    several estimators, and the result line).
    """
    result = api.run(job, out=out, wait=wait)
    target, m = result.out, result.manifest
    steps, audit = m["steps"], m["audit"]
    verdict = "" if audit is None else f", audit {'passed' if audit['passed'] else 'failed'}"
    report = any(s["name"] == "report" for s in steps)
    where = f"; report '{target / 'report.html'}'" if report else ""
    message = (
        f"run: {len(steps)} steps ({m['cache_hits']} cached, {m['steps_run']} run){verdict}, "
        f"{m['seconds']:.2f} s -> '{target}'{where}"
    )
    notes = tuple(f"{s['name']}: {n}" for s in steps for n in s["notes"] if not s["cache_hit"])
    notes += tuple(
        f"history: '{target / 'history' / name}' is not an entry ale wrote; left as it is"
        for name in m["history"].get("left", [])
    )
    return Outcome(
        message=message,
        outputs=tuple(
            str(target / o["path"]) for s in steps if not s["cache_hit"] for o in s["outputs"]
        )
        + (str(target / "run.json"),),
        counts={"steps": len(steps), "cache_hits": m["cache_hits"], "steps_run": m["steps_run"]},
        notes=() if run.quiet else notes,
        timings={s["name"]: s["seconds"] for s in steps},
        seconds=m["seconds"],
        cache_hit=m["steps_run"] == 0,
        details={"manifest": m},
        exit_code=result.exit_code,
        silent=run.quiet and result.exit_code == 0,
        lines=_flagged_rules(target / AUDIT) if audit is not None and not audit["passed"] else (),
    )


def _flagged_rules(report: Path) -> tuple[str, ...]:
    """The failed and warned checks of the run's audit report, one line each, naming the
    summary (its file name in DIR) when the audit read several, as 'ale audit' does."""
    data = read_json_file(report, "audit report")
    several = len(set(data["summaries"])) > 1
    return tuple(
        f"audit: {Path(c['summary']).name + ': ' if several else ''}{c['feature']}: "
        f"{c['rule']} {c['verdict']} -- {c['observed']} (limit: {c['limit']})"
        for c in data["checks"]
        if c["verdict"] in ("fail", "warn")
    )
