"""Memory of ``ale classic`` on a data file: read chunk by chunk against the whole table.

A memory check, not a timed test. N = 1e6 rows, D = 32 float64 inputs (a Parquet
file in row groups of 65536 rows, 256 MB of values), every input explained with
20 quantile bins (2 x 32 model evaluations per row). The model is a cheap float64
TorchScript function, tanh(x w) + 0.1 x_0 x_1, so the run measures ale's own
memory rather than a network's. Each variant runs in a fresh process
(:func:`ale_cli.estimators.classic.classic`, the library call behind the command);
the peak RSS is that process's VmHWM, the baseline its RSS after the imports
(torch included) before the run.

- whole table (``chunk_rows=None``): the table, its per-feature copy and the
  (F, N) differences are in memory at once, so the peak grows with N;
- streamed (``chunk_rows`` 65536 and 16384): memory is about a chunk, whatever N.

The streamed summaries are checked against the whole table's (max |difference|
of the effects, which must be under 1e-12).

Usage: python bench/bench_classic_memory.py [--rows 1e6] [--folder DIR] [--keep]
       (BENCH_QUICK=1: 2e5 rows)

Measured 2026-11-23 on the shared 2-core VM (baseline after the imports: 222 MB):

==========================  =======  ========  ===============
variant (N = 1e6, D = 32)   wall     peak RSS  peak - baseline
==========================  =======  ========  ===============
whole table                 22.2 s   2547 MB   2325 MB
streamed, 65536-row chunks  17.5 s    581 MB    359 MB
streamed, 16384-row chunks  24.3 s    478 MB    256 MB
==========================  =======  ========  ===============

At N = 2e5 (BENCH_QUICK=1) the streamed peaks were the same (583 MB, 467 MB) and the
whole table's 769 MB: the streamed peak follows the chunk, not N. Of the streamed
peak over the baseline, about 70 MB are pyarrow and pandas (imported by the
reader) and the rest a few chunk-sized buffers (the Arrow batch, its float64
matrix, the first chunk kept for the model's check, the per-feature copy and
differences) plus what the allocators keep. The effects equal the whole
table's to 1.1e-14.
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

ROOT = Path(__file__).resolve().parent.parent
D = 32
ENV = {
    **os.environ,
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
}


def make_data(folder: Path, n: int) -> Path:
    """A Parquet file of n rows x D float64 columns, row groups of 65536 rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = folder / f"data-{n}.parquet"
    if path.exists():
        return path
    rng = np.random.default_rng(0)
    names = [f"x{j:02d}" for j in range(D)]
    tmp = path.with_suffix(".tmp")
    writer = None
    for start in range(0, n, 65536):
        m = min(65536, n - start)
        X = rng.normal(size=(m, D))
        X[:, 1] += 0.5 * X[:, 0]
        table = pa.table({name: X[:, j] for j, name in enumerate(names)})
        if writer is None:
            writer = pq.ParquetWriter(tmp, table.schema)
        writer.write_table(table, row_group_size=65536)
    assert writer is not None
    writer.close()
    tmp.rename(path)
    return path


def make_model(folder: Path) -> Path:
    import torch
    from torch import nn

    class Cheap(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            w = torch.linspace(-1.0, 1.0, D, dtype=torch.float64) / D**0.5
            self.register_buffer("w", w)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.tanh(x @ self.w) + 0.1 * x[:, 0] * x[:, 1]

    path = folder / "cheap.pt"
    torch.jit.save(torch.jit.script(Cheap()), str(path))
    return path


def _status(key: str) -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def child(model: str, data: str, chunk_rows: str, out: str) -> None:
    """One variant in this process: print wall time, baseline and peak RSS (MB)."""
    sys.path.insert(0, str(ROOT))
    import torch  # noqa: F401 -- in the baseline, as in any run of a TorchScript model

    from ale_cli.estimators.classic import ClassicRequest, classic
    from ale_cli.estimators.inputs import ModelInputs
    from ale_cli.summary.model import write_summary

    baseline = _status("VmRSS")
    t0 = time.perf_counter()
    rows = None if chunk_rows == "whole" else int(chunk_rows)
    result = classic(ClassicRequest(inputs=ModelInputs(model=model, data=data), chunk_rows=rows))
    wall = time.perf_counter() - t0
    write_summary(out, result.summary, timestamp=False)
    print(json.dumps({"wall": wall, "baseline": baseline, "peak": _status("VmHWM")}))


def run(model: Path, data: Path, chunk_rows: str, out: Path) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--child", str(model), str(data), chunk_rows, str(out)]
    done = subprocess.run(cmd, env=ENV, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"variant {chunk_rows} failed: {done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


def max_difference(a: Path, b: Path) -> float:
    fa, fb = json.loads(a.read_text())["features"], json.loads(b.read_text())["features"]
    worst = 0.0
    for x, y in zip(fa, fb, strict=True):
        if x["status"] == "ok":
            worst = max(worst, float(np.max(np.abs(np.subtract(x["effect"], y["effect"])))))
    return worst


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(*sys.argv[2:6])
        return
    parser = argparse.ArgumentParser()
    quick = os.environ.get("BENCH_QUICK") == "1"
    parser.add_argument("--rows", default="2e5" if quick else "1e6")
    parser.add_argument("--folder", type=Path, default=None)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    n = int(float(args.rows))
    folder = args.folder or Path(tempfile.mkdtemp(prefix="ale-bench-classic-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        data = make_data(folder, n)
        model = make_model(folder)
        print(f"ale classic, N = {n:.0e}, D = {D} (all explained, 20 quantile bins), one thread")
        results = {}
        for variant in ("whole", "65536", "16384"):
            out = folder / f"classic-{variant}.json"
            r = run(model, data, variant, out)
            results[variant] = out
            label = "whole table" if variant == "whole" else f"streamed, {variant}-row chunks"
            print(
                f"  {label:30s} wall {r['wall']:7.2f} s   peak RSS {r['peak']:7.0f} MB   "
                f"peak - baseline {r['peak'] - r['baseline']:7.0f} MB",
                flush=True,
            )
        for variant in ("65536", "16384"):
            diff = max_difference(results["whole"], results[variant])
            print(f"  max |effect difference|, {variant}-row chunks vs whole table: {diff:.1e}")
            if not diff < 1e-12:
                raise SystemExit("the streamed effects differ from the whole table's")
    finally:
        if not args.keep and args.folder is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
