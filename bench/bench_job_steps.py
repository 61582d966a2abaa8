"""The fresh demo job (``configs/demo-job.yaml``): what each step costs against the compute step.

Runs ``ale run`` into a new directory R times (default 2) and prints, per run, the
seconds of the compute step, the three plot steps, the report step and the ratio
``(plots + report) / compute`` (target: at most 1). Then, on the last run's directory,
the report built twice more, interleaved: taking the figures the plot steps drew
(what ``ale run`` does) and drawing them again (``ale report`` without them).

Today, 2 shared cores at load 20-24 (ratios noisy by about 20 %): compute 23.8 s, plots
104.6 s, report 2.9 s with the figures taken (50.3 s when it drew them again): the
report is now about 1/17 of its old cost; the plots are still about 4x the compute.

Run: ``PYTHONPATH=. python bench/bench_job_steps.py [R]`` (needs ``make samples``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JOB = ROOT / "configs" / "demo-job.yaml"


def run_once(out: Path) -> dict[str, float]:
    subprocess.run(
        [sys.executable, "-m", "ale_cli", "run", str(JOB), "-o", str(out), "--quiet"],
        check=True,
        cwd=ROOT,
    )
    steps = json.loads((out / "run.json").read_text())["steps"]
    return {s["name"]: float(s["seconds"]) for s in steps}


def report_twice(out: Path) -> tuple[float, float]:
    from ale_cli.report import build_report

    names = ["rhale", "rebin", "interact"]
    summaries = [out / f"{n}.json" for n in names]
    kw = {"store": out / "store.npz", "audit": out / "audit.json", "timestamp": False}
    t0 = time.perf_counter()
    build_report(summaries, figures={s: out / "plots" / s.stem for s in summaries}, **kw)
    t1 = time.perf_counter()
    build_report(summaries, **kw)
    return t1 - t0, time.perf_counter() - t1


def main(argv: list[str]) -> None:
    repeats = int(argv[0]) if argv else 2
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(repeats):
            out = Path(tmp) / f"run{i}"
            s = run_once(out)
            plots = sum(v for k, v in s.items() if k.startswith("plot-"))
            ratio = (plots + s["report"]) / s["compute"]
            print(
                f"run {i + 1}: compute {s['compute']:.2f} s; plots {plots:.2f} s "
                f"({', '.join(f'{k} {v:.2f}' for k, v in s.items() if k.startswith('plot-'))}); "
                f"report {s['report']:.2f} s; (plots + report) / compute = {ratio:.2f}"
            )
        taken, drawn = report_twice(out)
        print(
            f"report on the last run: figures taken {taken:.2f} s, drawn again {drawn:.2f} s "
            f"({drawn / taken:.1f}x)"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
