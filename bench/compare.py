"""Before and after: the user-visible times of two checkouts of ale, in one run, interleaved.

For a change that must not make anything slower, run the same workloads with this
checkout and with another one (``--base DIR``, e.g. a ``git worktree`` of the commit
before the change), alternating base and new in every round, so the load of a shared
machine falls on both alike. Each workload reports the median wall time of each side,
its min-max, and the ratio new / base per round (its spread is the noise).

Workloads (each a fresh ``ale`` process, ale byte-compiled as installed):
- ``compute+rhale 1e6``: ``ale compute`` then ``ale rhale`` at N = 1e6, D = 32 (the
  side-by-side setting of bench_cli_vs_effector.py, one thread);
- ``rhale 1e7`` / ``rebin quantile 1e7``: on a store of N = 1e7, D = 32 (bench_scale.py's
  data and model) that each side computes once with its own code;
- ``run demo job``: ``ale run configs/demo-job.yaml`` into a fresh directory.

Usage: python bench/compare.py --base DIR [--rounds 3] [--rows-large 1e7] [--only NAME,...]

Measured 2026-11-26, 18:48-19:03 UTC, base = main before the second cut to 26,757 lines
(f3e2d1f), load average 1.3-1.8 on 2 cores, no other session at work; median (min-max):

====================  ======================  ======================  ===================
workload              base                    new                     new / base
====================  ======================  ======================  ===================
compute+rhale 1e6     16.52 s (15.95-17.59)   16.16 s (15.42-16.36)   0.966 (0.930-0.978)
rhale 1e7             8.65 s (8.50-9.49)      8.70 s (8.69-9.06)      1.022 (0.917-1.047)
rebin quantile 1e7    16.16 s (15.68-16.33)   17.59 s (16.04-17.91)   1.088 (0.982-1.142)
 same, 5 rounds       16.93 s (15.10-17.83)   16.33 s (15.61-17.46)   0.972 (0.916-1.077)
run demo job          11.98 s (10.02-12.54)   10.51 s (10.46-10.90)   0.877 (0.869-1.044)
====================  ======================  ======================  ===================

Rows ran 3 rounds unless said; the second rebin row is a run of that workload alone, whose
spread covers the first.

Again 2026-11-26, 21:26-21:40 UTC, base = main before the third cut (0ce470f), load 1.1-1.4:

====================  ======================  ======================  ===================
workload              base                    new                     new / base
====================  ======================  ======================  ===================
compute+rhale 1e6     15.70 s (15.01-16.47)   16.70 s (16.13-17.80)   1.063 (0.979-1.185)
 same, 5 rounds       17.36 s (16.68-17.96)   17.61 s (17.33-20.35)   1.025 (0.965-1.160)
rhale 1e7             10.57 s (10.02-10.84)   10.14 s (10.08-10.25)   0.954 (0.945-1.012)
rebin quantile 1e7    17.77 s (16.86-18.06)   17.34 s (16.78-18.17)   1.022 (0.929-1.028)
run demo job          12.06 s (11.34-12.33)   12.51 s (12.01-12.54)   1.038 (0.975-1.106)
====================  ======================  ======================  ===================

The first compute+rhale row's median is past 5%; ``perf stat -e instructions:u`` of both
sides (the same in every run, unlike times) reads 47.91 G for ``ale compute`` (0.02% apart)
and 5.44 G for ``ale rhale`` (0.12% apart, new fewer), so the spread is the machine's.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_cli_vs_effector import ENV, make_inputs  # noqa: E402
from bench_scale import make_dataset, make_model  # noqa: E402
from installed import installed_environ  # noqa: E402


def ale(root: Path, *args: object) -> float:
    """Wall seconds of ``ale ARGS`` run from the checkout ``root``."""
    env = {**installed_environ(), **ENV, "ALE_THREADS": "1"}
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "ale_cli", *map(str, args)],
        cwd=root,
        env=env,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - t0


def workloads(folder: Path, rows_large: int) -> dict[str, Callable[[Path, Path], float]]:
    """name -> fn(checkout, scratch folder of that side) -> seconds."""
    model, data = make_inputs(folder, 1_000_000)

    def small(root: Path, side: Path) -> float:
        store = side / "small.npz"
        store.unlink(missing_ok=True)
        return ale(root, "compute", model, data, "-o", store) + ale(
            root, "rhale", store, "-o", side / "small-rhale.json", "--force"
        )

    def large_store(root: Path, side: Path) -> Path:
        store = side / "large.npz"
        if not store.exists():
            big = make_dataset(folder / "large", rows_large)
            ale(root, "compute", make_model(folder), big, "-o", store)
        return store

    def rhale(root: Path, side: Path) -> float:
        return ale(root, "rhale", large_store(root, side), "-o", side / "r.json", "--force")

    def rebin(root: Path, side: Path) -> float:
        store = large_store(root, side)
        args = ("--bins", "20", "--binning", "quantile", "-o", side / "q.json", "--force")
        return ale(root, "rebin", store, *args)

    def job(root: Path, side: Path) -> float:
        out = side / "job"
        shutil.rmtree(out, ignore_errors=True)
        return ale(root, "run", root / "configs" / "demo-job.yaml", "-o", out)

    return {
        "compute+rhale 1e6": small,
        "rhale 1e7": rhale,
        "rebin quantile 1e7": rebin,
        "run demo job": job,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rows-large", type=float, default=1e7)
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    sides = {"base": args.base.resolve(), "new": HERE.parent}
    for root in sides.values():
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "ale_cli")])
    with tempfile.TemporaryDirectory(prefix="ale-compare-") as tmp:
        folder = Path(tmp)
        scratch = {name: folder / name for name in sides}
        for path in scratch.values():
            path.mkdir()
        todo = workloads(folder, int(args.rows_large))
        if args.only:
            todo = {k: v for k, v in todo.items() if k in args.only.split(",")}
        for name, fn in todo.items():
            for side, root in sides.items():
                fn(root, scratch[side])  # warm: data made, caches filled, stores computed
            times: dict[str, list[float]] = {side: [] for side in sides}
            for _ in range(args.rounds):
                for side, root in sides.items():
                    times[side].append(fn(root, scratch[side]))
            ratios = [n / b for n, b in zip(times["new"], times["base"], strict=True)]
            cells = "  ".join(
                f"{side} {statistics.median(v):.2f} s ({min(v):.2f}-{max(v):.2f})"
                for side, v in times.items()
            )
            print(
                f"{name:20s} {cells}  new/base {statistics.median(ratios):.3f} "
                f"({min(ratios):.3f}-{max(ratios):.3f})",
                flush=True,
            )


if __name__ == "__main__":
    main()
