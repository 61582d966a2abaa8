"""The fresh demo job (``configs/demo-job.yaml``): what each step costs against the compute step.

Runs ``ale run`` into a new directory R times (``--rounds``, default 2) and prints, per
run, the seconds of the compute step, the plot steps (with the figures each drew), the
report step and the ratio ``(plots + report) / compute`` (target: at most 1), as wall
seconds (``run.json``) and as CPU seconds (the step's process and its reaped plot
workers), then the medians. With
``--base DIR`` (another checkout, e.g. the commit before a change) each round runs the
base first, then this checkout, so the load of a shared machine falls on both alike.
Then, on this checkout's last run, the report built twice more: taking the figures the
plot steps drew (what ``ale run`` does) and drawing them again.

Run: ``PYTHONPATH=. python bench/bench_job_steps.py [--rounds R] [--base DIR]`` (needs
``make samples``; a base checkout needs its own ``sample_data/models``).

2026-11-26, 12:35-12:40 UTC, 2 cores at load 1.5-2.1, ``--rounds 3 --base`` main 8cf0e0a:
wall seconds compute 2.90-3.19, plots 4.21-4.34 (plot-rhale 1.39-1.57 for its one overview,
matplotlib's import included; plot-rebin 1.53-1.77 for 11; plot-regional 0.68-0.85 for 6;
plot-interact 0.31-0.48 for 1), report 0.24-0.38. (plots + report) / compute: wall 1.50
(1.48-1.56), before 2.20 (2.11-2.61); CPU 2.19 (2.13-2.20), before 3.67 (3.56-4.32). The
report taking the plot steps' figures 0.32 s, drawing them again 5.45 s.

Earlier the same day, 2 shared cores (other sessions running: load 1.6-3.2 at 12:21 UTC, 2.5-3.4
at 12:12), ``--rounds 3 --base`` main 8cf0e0a, twice. CPU seconds: compute 2.9-4.1;
plots 6.9-8.7 for 19 figures (the RHALE step draws its overview alone:
``plots.overview_only``), before 10.9-14.6 for 29; report 0.25-0.45 (before 0.45-0.70).
(plots + report) / compute, CPU: median 2.24 (2.02-2.83), before 4.30 (4.08-4.64); the
run at 12:12: 2.54 (2.40-2.62), before 3.94 (3.00-5.28). Wall: 1.58 (1.38-1.96), before
2.57 (2.42-2.80); at 12:12 3.04 (2.60-3.06), before 2.96 (2.56-7.46): at load 3 two
plot workers share one core and wall ratios say little. Instructions
(``perf stat -e instructions:u``, repeats agree to 0.1%): the whole job 35.4 G before,
22.5 G now, 9.2 G without plots and report. The target of 1 is not met: a rebin feature
figure is still 0.47 G instructions (text, ticks and the legend are half of it), an
overview 1.28 G, and the step that imports matplotlib pays about 0.6 s of CPU for it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JOB = Path("configs") / "demo-job.yaml"
KINDS = ("wall", "cpu")


#: ``ale run`` of the demo job in a child process that also prints each step's CPU seconds
#: (its own and its reaped workers'), wrapping the runner's step and compute calls
_CHILD = """
import json, resource, sys, time
from pathlib import Path
import ale_cli.job.runner as runner
from ale_cli.job import read_job, run_job

def cpu():
    own, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime

seconds = {}
def timed(name, call, *args):
    c0 = cpu()
    result = call(*args)
    seconds[name] = cpu() - c0
    return result

step, compute = runner._Runner.step, runner.compute
runner._Runner.step = lambda self, name, *a: timed(name, step, self, name, *a)
runner.compute = lambda request: timed("compute", compute, request)
run_job(read_job(Path(sys.argv[1])), Path(sys.argv[2]))
print(json.dumps(seconds))
"""


def run_once(root: Path, out: Path) -> tuple[dict[str, float], dict[str, float]]:
    """Wall and CPU seconds per step of a fresh run of the demo job with the checkout ``root``."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(JOB), str(out)],
        check=True,
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )
    steps = json.loads((out / "run.json").read_text())["steps"]
    return {s["name"]: float(s["seconds"]) for s in steps}, json.loads(done.stdout)


def n_figures(directory: Path) -> int:
    """The figure files a plot step wrote."""
    return sum(1 for p in directory.iterdir() if p.suffix in (".png", ".svg"))


def totals(s: dict[str, float]) -> tuple[float, float]:
    """Seconds of the plot steps together, and ``(plots + report) / compute``."""
    plots = sum(v for k, v in s.items() if k.startswith("plot-"))
    return plots, (plots + s["report"]) / s["compute"]


def report_twice(out: Path) -> tuple[float, float]:
    from ale_cli.report import build_report

    summaries = sorted(p for p in out.glob("*.json") if (out / "plots" / p.stem).is_dir())
    kw = {"store": out / "store.npz", "audit": out / "audit.json", "timestamp": False}
    t0 = time.perf_counter()
    build_report(summaries, figures={s: out / "plots" / s.stem for s in summaries}, **kw)
    t1 = time.perf_counter()
    build_report(summaries, **kw)
    return t1 - t0, time.perf_counter() - t1


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--base", type=Path, help="another checkout, run first in each round")
    args = parser.parse_args(argv)
    sides = [("base", args.base.resolve())] if args.base else []
    sides.append(("new" if args.base else "this", ROOT))
    ratios: dict[str, list[float]] = {f"{name} {kind}": [] for name, _ in sides for kind in KINDS}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.rounds):
            for name, root in sides:
                out = Path(tmp) / f"{name}{i}"
                for kind, s in zip(KINDS, run_once(root, out), strict=True):
                    plots, ratio = totals(s)
                    ratios[f"{name} {kind}"].append(ratio)
                    steps = ", ".join(
                        f"{k} {v:.2f} ({n_figures(out / 'plots' / k[5:])})"
                        for k, v in s.items()
                        if k[:5] == "plot-"
                    )
                    print(
                        f"round {i + 1} {name} {kind}: compute {s['compute']:.2f} s; plots "
                        f"{plots:.2f} s ({steps}); report {s['report']:.2f} s; "
                        f"(plots + report) / compute = {ratio:.2f}",
                        flush=True,
                    )
        for name, values in ratios.items():
            print(
                f"{name}: (plots + report) / compute median {statistics.median(values):.2f} "
                f"({min(values):.2f}-{max(values):.2f})"
            )
        taken, drawn = report_twice(out)
        print(
            f"report on the last run: figures taken {taken:.2f} s, drawn again {drawn:.2f} s "
            f"({drawn / taken:.1f}x)"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
