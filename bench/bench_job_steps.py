"""The fresh demo job (``configs/demo-job.yaml``): what each step costs against the compute step.

Runs ``ale run`` into a new directory R times (default 2) and prints, per run, the
seconds of the compute step, the three plot steps, the report step and the ratio
``(plots + report) / compute`` (target: at most 1). Then, on the last run's directory,
the report built twice more, interleaved: taking the figures the plot steps drew
(what ``ale run`` does) and drawing them again (``ale report`` without them).

Today, 2 shared cores at load 20-24 (absolute times several times a quiet machine's;
ratios noisy by about 20 %): compute 34.2 s; plots 166.2 s (rhale 63.3, rebin 92.2,
interact 10.7); report 5.3 s; (plots + report) / compute = 5.0. The report on the same
directory: 3.1 s taking the figures the plot steps drew, 111.8 s drawing them again
(36x). The report no longer costs a second drawing; the plot steps themselves are still
about 5x the compute step (the target of 1 is not met).

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
