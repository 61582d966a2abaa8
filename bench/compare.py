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

Measured 2026-11-27, 02:00-02:09 UTC, base = main before this stop's bug fixes (c3ebbd7),
load 0.6-2.0 on 2 cores, no other session at work; median (min-max):

====================  ======================  ======================  ===================
workload              base                    new                     new / base
====================  ======================  ======================  ===================
compute+rhale 1e6     9.86 s (9.67-10.21)     10.09 s (9.31-10.64)    1.042 (0.945-1.044)
rhale 1e7             5.09 s (5.09-5.11)      4.92 s (4.67-5.52)      0.965 (0.913-1.084)
rebin quantile 1e7    7.37 s (6.88-8.40)      7.49 s (6.45-8.14)      0.968 (0.938-1.015)
run demo job          5.90 s (5.23-8.73)      6.30 s (5.01-10.31)     1.180 (0.849-1.204)
====================  ======================  ======================  ===================

A second run of the two noisiest rows, 5 rounds: compute+rhale 1e6 0.997 (0.882-1.247),
run demo job 1.056 (0.920-1.110). Six more interleaved demo jobs timed with /usr/bin/time
(``ALE_THREADS=1``): new 4.21-5.19 s wall, 5.17-6.03 s CPU; base 4.40-5.52 s wall,
5.36-6.67 s CPU: the new side was the faster in 5 of 6 pairs.
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
