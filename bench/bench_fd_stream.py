"""Peak memory of ``ale compute`` for an ONNX model: the whole-table path against the
streaming one (a first pass for the data profile, then chunk by chunk), in the same
run, each a fresh process; wall time and peak RSS (VmHWM from /proc while it runs).

Data: N rows x D = 32 float32 columns (Toeplitz-correlated normal, rho = 0.5) in one
Parquet file with row groups of 65536 rows. Model: a float32 ONNX MLP
D -> 64 -> 64 -> 1 exported with torch.onnx.export. Two computations:

- autodiff: the graph translated to torch, every feature explained;
- finite differences (``--method finite-differences --features x0,x1,x2,x3``:
  9 onnxruntime evaluations per row, steps from the profile of all rows).

The whole-table path is the same command with ``compute_reading`` answering "whole
table" (what a DataFrame input or a columns file gets); the bench checks that both
stores hold the same numbers.

Usage: python bench/bench_fd_stream.py [--rows 1e6] [--folder DIR]

Measured 2026-11-23 on the shared 2-core VM (load average 3.4), N = 1e6 (a 191 MB
Parquet file), 65536-row chunks; both paths gave identical stores (max |difference|
of the local effects 0):

====================================  ===========  ===========  ===========  ===========
computation                           whole wall   whole RSS    stream wall  stream RSS
====================================  ===========  ===========  ===========  ===========
onnx autodiff, 32 features            6.0 s        1127 MB      4.8 s        644 MB
onnx finite differences, 4 features   7.4 s        907 MB       5.4 s        448 MB
====================================  ===========  ===========  ===========  ===========

The streaming peaks are the interpreter, torch/onnxruntime and a few chunks; the
whole-table ones grow with N (the float64 table, its DataFrame while read).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
D = 32
ENV = {
    **os.environ,
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
}
#: the same CLI with the streaming path switched off
WHOLE = (
    "import sys, ale_cli.estimators.local_effects as c; from ale_cli.estimators.inputs_stream "
    "import Reading; c.compute_reading = lambda request: Reading(); "
    "from ale_cli.entry import main; sys.argv[0] = 'ale'; main()"
)


def make_data(folder: Path, n: int) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = folder / f"data-{n}.parquet"
    if path.exists():
        return path
    rng = np.random.default_rng(0)
    chol = np.linalg.cholesky(0.5 ** np.abs(np.subtract.outer(np.arange(D), np.arange(D))))
    X = (rng.standard_normal((n, D)) @ chol.T).astype(np.float32)
    table = pa.table({f"x{j}": X[:, j] for j in range(D)})
    pq.write_table(table, path, row_group_size=65536)
    return path


def make_model(folder: Path) -> Path:
    import torch
    from torch import nn

    from ale_cli.sample import save_onnx

    path = folder / "mlp64.onnx"
    if not path.exists():
        torch.manual_seed(0)
        mlp = nn.Sequential(
            nn.Linear(D, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1)
        )
        save_onnx(mlp, D, path)
    return path


def _hwm_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def run_measured(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB, VmHWM polled every 20 ms) of one process."""
    t0 = time.perf_counter()
    peak = 0.0
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.DEVNULL, stderr=err)
        while proc.poll() is None:
            peak = max(peak, _hwm_mb(proc.pid) or 0.0)
            time.sleep(0.02)
        if proc.returncode != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {err.read()}")
    return time.perf_counter() - t0, peak


def same_store(a: Path, b: Path) -> float:
    """The largest |difference| of the local effects of two stores, chunk by chunk
    (their X must be equal)."""
    from ale_cli.store.npz import open_store

    worst = 0.0
    for x, y in zip(open_store(a).chunks(), open_store(b).chunks(), strict=True):
        np.testing.assert_array_equal(x["X"], y["X"])
        worst = max(worst, float(np.max(np.abs(x["local_effects"] - y["local_effects"]))))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", default="1e6")
    parser.add_argument("--folder", default=None)
    args = parser.parse_args()
    n = int(float(args.rows))
    folder = Path(args.folder or tempfile.mkdtemp(prefix="ale-fdstream-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        data, model = make_data(folder, n), make_model(folder)
        print(f"data: {n:,} rows x {D} float32, {data.stat().st_size / 1e6:.0f} MB Parquet")
        print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        cases = [
            ("onnx autodiff, 32 features", []),
            (
                "onnx finite differences, 4 features",
                ["--method", "finite-differences", "--features", "x0,x1,x2,x3"],
            ),
        ]
        for label, extra in cases:
            stores = {}
            for path_name, prefix in (
                ("whole", [sys.executable, "-c", WHOLE]),
                ("stream", [sys.executable, "-m", "ale_cli"]),
            ):
                out = folder / f"{path_name}.npz"
                cmd = [*prefix, "compute", str(model), str(data), "-o", str(out), "--force"]
                wall, rss = run_measured([*cmd, "--quiet", *extra])
                stores[path_name] = out
                print(
                    f"  {label:38s} {path_name:6s} wall {wall:7.1f} s   peak RSS {rss:6.0f} MB",
                    flush=True,
                )
            diff = same_store(stores["whole"], stores["stream"])
            print(f"    max |local effect difference| whole vs stream: {diff:.3g}")
        print(f"load average at end: {os.getloadavg()[0]:.1f}")
    finally:
        if args.folder is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
