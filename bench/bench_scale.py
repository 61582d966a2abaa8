"""Scale: ``ale compute`` on N = 1e7, D = 32 from a partitioned Parquet dataset, then
``ale rhale`` and ``ale rebin --bins 20 --binning quantile`` on that store, each a
fresh process; wall time and peak RSS per process (VmHWM from /proc while it runs).

Data: a directory of 10 Parquet files of 1e6 rows (float32, Toeplitz-correlated
normal, rho = 0.5, row groups of 65536 rows): 1.28 GB of values. Model: a
float32 MLP D -> 64 -> 64 -> 1 (TorchScript; a narrower one than the side-by-side
bench so that the run fits a shared 2-core machine), one thread. The local
engine only: the Dask engine is not built.

Usage: python bench/bench_scale.py [--rows 1e7] [--folder DIR] [--keep]

Measured 2026-11-23 (one run, load average 3.0 at the start, 2.6 at the end), store
2.60 GB (X, local effects and predictions float32):

======================================================  ========  ==========
step                                                    wall      peak RSS
======================================================  ========  ==========
ale compute (local engine, 65536-row chunks)             15.6 s    624 MB
ale rhale                                                 5.0 s    388 MB
ale rebin --bins 20 --binning quantile                    6.2 s    372 MB
ale rhale (second run)                                    4.6 s    388 MB
ale rhale, ALE_THREADS=1                                  4.7 s    344 MB
ale rebin --bins 20 --binning quantile, ALE_THREADS=1     7.3 s    366 MB
======================================================  ========  ==========

Under load 5-7 the same steps took 48 s, 6-10 s and 12-16 s. The rebin against the
three-pass version before it, same store, one after the other at load 1.1: 15.3 s wall,
17.2 s CPU (user + sys) before; 5.9 s wall, 9.6 s CPU after (edges and counts equal,
effects and std within 3e-13 relative).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ROOT = Path(__file__).resolve().parent.parent
D = 32
PART_ROWS = 1_000_000
ENV = {
    **os.environ,
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
}


def make_dataset(folder: Path, n: int) -> Path:
    """``folder/data/part=K/data.parquet``, PART_ROWS rows each, made once."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = folder / f"data-{n}"
    if (root / "_done").exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    rng = np.random.default_rng(0)
    chol = np.linalg.cholesky(0.5 ** np.abs(np.subtract.outer(np.arange(D), np.arange(D))))
    names = [f"x{j}" for j in range(D)]
    for k, start in enumerate(range(0, n, PART_ROWS)):
        rows = min(PART_ROWS, n - start)
        X = (rng.standard_normal((rows, D)) @ chol.T).astype(np.float32)
        part = root / f"part={k:03d}"
        part.mkdir(parents=True)
        table = pa.table({name: X[:, j] for j, name in enumerate(names)})
        pq.write_table(table, part / "data.parquet", row_group_size=65536)
    (root / "_done").touch()
    return root


def make_model(folder: Path) -> Path:
    import torch
    from torch import nn

    path = folder / "mlp64.pt"
    if not path.exists():
        torch.manual_seed(0)
        mlp = nn.Sequential(
            nn.Linear(D, 64),
            nn.ReLU(),
            nn.Linear(64, 64),
            nn.ReLU(),
            nn.Linear(64, 1),
            nn.Flatten(0),
        )
        torch.jit.save(torch.jit.script(mlp.eval()), str(path))
    return path


def _hwm_mb(pid: int) -> float | None:
    """VmHWM (peak resident set) of a live process from /proc, in MB."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def run_measured(args: list[str], env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MB) of that one process and its stdout.

    The peak is VmHWM read from /proc every 20 ms while the process lives (the
    rusage of wait4 is no use here: a child's ru_maxrss starts from the largest
    earlier child's on Linux, so every step would report the compute's peak).
    """
    t0 = time.perf_counter()
    peak = 0.0
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ale_cli", *args],
            env={**ENV, **(env or {})},
            stdout=out,
            stderr=err,
        )
        while proc.poll() is None:
            hwm = _hwm_mb(proc.pid)
            peak = max(peak, hwm or 0.0)
            time.sleep(0.02)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"ale {' '.join(args)} failed ({proc.returncode}): {err.read()}")
        return wall, peak, out.read()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", default="1e7")
    parser.add_argument("--folder", default=None)
    parser.add_argument("--keep", action="store_true", help="keep the data and the store")
    args = parser.parse_args()
    n = int(float(args.rows))
    folder = Path(args.folder or tempfile.mkdtemp(prefix="ale-scale-"))
    folder.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    data = make_dataset(folder, n)
    model = make_model(folder)
    size = sum(p.stat().st_size for p in data.rglob("*.parquet"))
    print(
        f"dataset: {n:,} rows x {D} float32 in {len(list(data.rglob('*.parquet')))} files, "
        f"{size / 1e9:.2f} GB ({time.perf_counter() - t:.0f} s to make)",
        flush=True,
    )
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    store = folder / "store.npz"
    steps = [
        (
            "ale compute (local engine)",
            ["compute", str(model), str(data), "-o", str(store), "--force", "--json"],
        ),
        ("ale rhale", ["rhale", str(store), "-o", str(folder / "rhale.json"), "--quiet"]),
        (
            "ale rebin --bins 20 --binning quantile",
            [
                "rebin",
                str(store),
                "--bins",
                "20",
                "--binning",
                "quantile",
                "-o",
                str(folder / "rebin.json"),
                "--quiet",
            ],
        ),
        (
            "ale rhale (second run, store in page cache)",
            ["rhale", str(store), "-o", str(folder / "rhale.json"), "--quiet"],
        ),
    ]
    # the estimators work on chunks in threads (ALE_THREADS, default: the CPUs): once more
    # with one worker thread
    one = {"ALE_THREADS": "1"}
    steps += [(f"{label} [ALE_THREADS=1]", cli) for label, cli in steps[1:3]]
    for label, cli in steps:
        wall, rss, out = run_measured(cli, one if "ALE_THREADS=1" in label else None)
        print(f"  {label:60s} wall {wall:8.2f} s   peak RSS {rss:7.0f} MB", flush=True)
        if cli[0] == "compute":
            result = json.loads(out)
            print(
                f"    store {store.stat().st_size / 1e9:.2f} GB; in-command "
                f"{result['seconds']:.1f} s",
                flush=True,
            )
            from ale_cli.adapters.store import read_meta

            timings = read_meta(store)["timings"]
            print("    " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()))
    print("  dask engine: not built (no --engine dask in this version)")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    if not args.keep:
        store.unlink(missing_ok=True)
        if args.folder is None:  # a temporary folder of ours: the 1.9 GB dataset too
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
