"""Memory of a categorical feature estimated per level, at up to 2,000 levels on 2,000 rows.

A memory check, not a timed test. Every row has its own level of ``g`` (the worst case:
K = N), beside three numeric inputs and a second categorical input ``h`` of as many
levels. Two measures, for each K:

- ``level_plans`` (the level order of ALEPlot's method: the K x K distances to the
  other inputs, their 1-D MDS) in this process, its peak under ``tracemalloc``;
- ``ale compute MODEL DATA --categorical g,h`` in a fresh process, its peak RSS
  (``ru_maxrss`` of the child), a TorchScript model of the 5 inputs.

Usage: python bench/bench_levels_memory.py [--levels 500,1000,2000]

Measured 2026-11-25 on the shared 2-core VM (with other jobs running):

======  ===============================  =====================
K = N   level_plans, tracemalloc peak    ale compute, peak RSS
======  ===============================  =====================
500     38.2 MB                          348 MB
1000    48.8 MB                          374 MB
2000    128.2 MB                         557 MB
======  ===============================  =====================

The peak of ``level_plans`` is one block of ECDF differences (16 MiB, and its absolute
values) plus a few K x K float64 matrices (the distances, their squares, the
doubly-centred matrix, the eigenvectors: 32 MB each at K = 2,000). Before, the ECDF
differences of a numeric input were held at once, K x K x 100 (6.4 GB at K = 2,000),
and a categorical input's K x K x (its levels): 6.7 GB for ``ale compute`` at 2,000
levels, an allocation of 74.5 GiB at 10,000. Above ``MAX_LEVELS`` (2,000) a feature is
refused in one line.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def table(k: int) -> np.ndarray:
    """K rows: g = 0..K-1 (a level per row), three normal inputs, h a shuffled copy of g."""
    rng = np.random.default_rng(0)
    g = np.arange(k, dtype=np.float64)
    return np.column_stack([g, rng.normal(size=(k, 3)), rng.permutation(g)])


def plan_peak(k: int) -> float:
    """Peak MB that tracemalloc sees while the levels of g are planned."""
    from ale_cli.estimators.level_plans import level_plans
    from ale_cli.estimators.rows import Rows

    X = table(k)
    rows = Rows.of(X, ["g", "a", "b", "c", "h"])
    tracemalloc.start()
    level_plans(rows, ["g"], categorical=["g", "h"])
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 1e6


def model(folder: Path) -> Path:
    import torch
    from torch import nn

    class F(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.sin(x[:, 0] / 100.0) + x[:, 1] * x[:, 2] + x[:, 3] + x[:, 4] / 1000.0

    path = folder / "m.pt"
    torch.jit.script(F()).save(str(path))
    return path


def compute_peak(k: int, folder: Path, model_path: Path) -> float:
    """Peak RSS (MB) of ``ale compute`` on the K-row table, in a fresh process (call it
    with K ascending)."""
    import pandas as pd

    data = folder / f"levels-{k}.csv"
    pd.DataFrame(table(k), columns=["g", "a", "b", "c", "h"]).to_csv(data, index=False)
    args = [sys.executable, "-m", "ale_cli", "compute", str(model_path), str(data)]
    args += ["--categorical", "g,h", "-o", str(folder / f"s-{k}.npz"), "-q"]
    done = subprocess.run(args, env=ENV, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(done.stderr)
    # the largest peak of the children waited for so far: K ascending, this run's
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--levels", default="500,1000,2000")
    levels = sorted(int(v) for v in parser.parse_args().levels.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        model_path = model(folder)
        print(f"{'K = N':>6}  {'level_plans peak':>17}  {'compute peak RSS':>17}")
        for k in levels:
            plan = plan_peak(k)
            rss = compute_peak(k, folder, model_path)
            print(f"{k:>6}  {plan:>14.1f} MB  {rss:>14.0f} MB", flush=True)
    print(f"this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
