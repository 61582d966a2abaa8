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

Today, 2 shared cores at load 3 (wall times up to several times a quiet machine's: the
two plot workers got about one core; CPU seconds are steadier, though the compute
step's vary by 20%), 3 rounds against the tree before: compute 3.2-4.4 s CPU; plots
12.3-14.9 s CPU, 11.8-13.7 s wall, for 29 figures (the regional step draws the 6
features with a kept split), before 21.7-24.4 s CPU for 44; report 0.4-0.7 s;
(plots + report) / compute = 3.5-4.0 CPU (before 5.8-7.2), 3.0-3.6 wall (before
5.0-6.6). The target of 1 is not met: a feature figure is still about 0.15-0.45 s of
CPU (text, ticks and the legend are most of it), the overview three times that, and the
step that imports matplotlib pays about 0.4 s for it.
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
