"""The fresh demo job (``configs/demo-job.yaml``): what each step costs against the compute step.

Runs ``ale run`` into a new directory R times (``--rounds``, default 2) and prints, per
run, the seconds of the compute step, the plot steps, the report step and the ratio
``(plots + report) / compute`` (target: at most 1), then the medians. With ``--base DIR``
(another checkout, e.g. the commit before a change) each round runs the base first, then
this checkout, so the load of a shared machine falls on both alike. Then, on this
checkout's last run, the report built twice more: taking the figures the plot steps drew
(what ``ale run`` does) and drawing them again (``ale report`` without them).

Run: ``PYTHONPATH=. python bench/bench_job_steps.py [--rounds R] [--base DIR]`` (needs
``make samples``; a base checkout needs its own ``sample_data/models``).
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


def run_once(root: Path, out: Path) -> dict[str, float]:
    """Seconds per step of a fresh ``ale run`` of the demo job with the checkout ``root``."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    subprocess.run(
        [sys.executable, "-m", "ale_cli", "run", str(JOB), "-o", str(out), "--quiet"],
        check=True,
        cwd=root,
        env=env,
    )
    steps = json.loads((out / "run.json").read_text())["steps"]
    return {s["name"]: float(s["seconds"]) for s in steps}


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
    ratios: dict[str, list[float]] = {name: [] for name, _ in sides}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.rounds):
            for name, root in sides:
                out = Path(tmp) / f"{name}{i}"
                s = run_once(root, out)
                plots, ratio = totals(s)
                ratios[name].append(ratio)
                steps = ", ".join(f"{k} {v:.2f}" for k, v in s.items() if k.startswith("plot-"))
                print(
                    f"round {i + 1} {name}: compute {s['compute']:.2f} s; plots {plots:.2f} s "
                    f"({steps}); report {s['report']:.2f} s; (plots + report) / compute = "
                    f"{ratio:.2f}",
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
