"""The cost of verifying every member of a store as it is read (CRC-32 of each member's
bytes, ``ale_cli/store/verify.py``): ``ale rhale`` and ``ale rebin --bins 20 --binning
quantile`` on one chunked store, each a fresh process, with two checkouts of ``ale``
alternating in one run (``--before``: a checkout whose chunked read checks no CRC;
``--after``: this one), so both see the same machine and page cache.

The store: N rows x D = 32 float32 inputs and local effects in 65536-row chunks, written
by :class:`ale_cli.store.npz.StoreWriter` (its digest recorded, so neither reader
hashes it).

Measured 2026-11-25, 22:41 UTC, 1e6 rows (store 260 MB), median of 3, on the shared
2-core machine while other test suites ran (load about 4); before: the chunked read of
main at e8c3e32 (no CRC-32 of the members it reads, none of those it does not):

==========================================  ========  ========  =====
step                                        before    after     ratio
==========================================  ========  ========  =====
ale rhale                                   9.39 s    9.64 s    1.026
ale rebin --bins 20 --binning quantile      7.57 s    7.94 s    1.049
==========================================  ========  ========  =====

Usage: python bench/bench_verify.py --before /path/to/old/checkout [--rows 1e6]
       [--repeat 3] [--folder DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parents[1]
CHUNK = 65536
D = 32


def build(path: Path, rows: int) -> None:
    from ale_cli.store.npz import StoreWriter

    names = [f"x{j}" for j in range(D)]
    rng = np.random.default_rng(0)
    with StoreWriter(path) as w:
        for a in range(0, rows, CHUNK):
            n = min(CHUNK, rows - a)
            X = rng.normal(size=(n, D)).astype(np.float32)
            E = np.tanh(X) + np.float32(0.1) * X
            w.add({"X": X, "local_effects": E, "prediction": E.sum(1)})
        w.finish(
            feature_names=names,
            input_names=names,
            meta={"schema_version": 3, "n_rows": rows, "tool": {"name": "ale"}},
        )


def timed(checkout: Path, argv: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": str(checkout), "ALE_THREADS": "1"}
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ale_cli", *argv], env=env, check=True,
                   capture_output=True)  # fmt: skip
    return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--after", type=Path, default=HERE)
    parser.add_argument("--rows", type=float, default=1e6)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--folder", type=Path, default=None)
    args = parser.parse_args()
    folder = args.folder or Path(tempfile.mkdtemp(prefix="bench-verify-"))
    store = folder / "s.npz"
    build(store, int(args.rows))
    print(f"store {store.stat().st_size / 1e6:.0f} MB, {int(args.rows)} rows x {D}")
    steps = {
        "rhale": ["rhale", str(store), "-o", str(folder / "r.json")],
        "rebin quantile": [
            "rebin", str(store), "--bins", "20", "--binning", "quantile",
            "-o", str(folder / "q.json"),
        ],
    }  # fmt: skip
    for name, argv in steps.items():
        timed(args.after, argv)  # warm the page cache
        times: dict[str, list[float]] = {"before": [], "after": []}
        for _ in range(args.repeat):
            times["before"].append(timed(args.before, argv))
            times["after"].append(timed(args.after, argv))
        b, a = statistics.median(times["before"]), statistics.median(times["after"])
        print(f"{name:16s} before {b:.2f} s  after {a:.2f} s  ratio {a / b:.3f}")


if __name__ == "__main__":
    main()
