"""``ale audit`` wall time, start-up included, on a 30-feature summary with 10 rules.

Runs the real command as a subprocess (what a CI step pays): a DALE summary of
30 features x 50 bins made with the core functions from synthetic local effects
(with statistics and a prediction distribution), a baseline of the same shape,
and a rules file with 10 entries covering every first-order rule and drift,
several on ``"*"`` (150 checks in all). The reference, measured in the same
run, is the bare start-up of a Python process that imports numpy and yaml.
Target (issue 14): under 0.5 s.

Run: ``PYTHONPATH=$PWD .venv/bin/python bench/bench_audit.py``
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ale_cli.core.binning import assign, uniform_edges
from ale_cli.core.binstats import CellStats
from ale_cli.core.effect import effect_from_cells
from ale_cli.summary.model import FeatureSummary, Summary, with_statistics, write_summary

N_ROWS = 5_000
N_FEATURES = 30
N_BINS = 50
REPEATS = 7
TARGET_S = 0.5
RULES = """rules:
  - feature: f00
    monotonic: increasing
  - feature: "*"
    monotonic: {direction: increasing, tolerance: 100}
  - feature: f01
    sign: positive
  - feature: "*"
    range: [-100, 100]
  - feature: "*"
    max_aled: 50
  - feature: f02
    min_aled: 0.01
  - feature: "*"
    max_heterogeneity_share: 10
    severity: warn
  - feature: "*"
    rank_at_most: 30
  - feature: "*"
    drift: {max_abs: 100, max_z: 1000}
  - feature: "*"
    not_estimable: fail
"""


def synthetic(seed: int) -> Summary:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, (N_ROWS, N_FEATURES))
    feats = []
    for j in range(N_FEATURES):
        x = X[:, j]
        local = (j + 1) / N_FEATURES * (1 + np.cos(3 * x)) + rng.normal(0.0, 0.5, N_ROWS)
        edges = uniform_edges(float(x.min()), float(x.max()), bins=N_BINS)
        cells = CellStats.from_values(assign(x, edges).index, local, n_cells=N_BINS)
        e = effect_from_cells(edges, cells)
        feats.append(
            FeatureSummary(
                name=f"f{j:02d}",
                edges=e.edges,
                counts=e.counts,
                bin_effect=e.bin_effect,
                bin_std=e.bin_std,
                bin_stderr=e.bin_stderr,
                bin_filled=e.bin_filled,
                effect=e.effect,
                std=e.std,
                stderr=e.stderr,
                center_offset=e.center_offset,
            )
        )
    summary = Summary(estimator="dale", params={}, store={}, n_rows=N_ROWS, features=tuple(feats))
    return with_statistics(summary, rng.normal(size=N_ROWS))


def timed(args: list[str]) -> tuple[float, int]:
    t0 = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True)
    return time.perf_counter() - t0, done.returncode


def main() -> None:
    tmp = Path(tempfile.mkdtemp())
    try:
        write_summary(tmp / "s.json", synthetic(0))
        write_summary(tmp / "base.json", synthetic(1))
        (tmp / "rules.yaml").write_text(RULES)
        ale = shutil.which("ale", path=str(Path(sys.executable).parent)) or "ale"
        cmd = [
            ale,
            "audit",
            str(tmp / "s.json"),
            "--rules",
            str(tmp / "rules.yaml"),
            "--baseline",
            str(tmp / "base.json"),
            "--junit",
            str(tmp / "a.xml"),
        ]
        first, code = timed(cmd)
        times = sorted(timed(cmd)[0] for _ in range(REPEATS))
        bare = sorted(
            timed([sys.executable, "-c", "import numpy, yaml"])[0] for _ in range(REPEATS)
        )
        n_checks = (tmp / "a.xml").read_text().count("<testcase ")
        print(
            f"ale audit: {N_FEATURES} features x {N_BINS} bins, 10 rules, {n_checks} checks, "
            f"exit {code}; cpus {os.cpu_count()}"
        )
        print(
            f"  wall: first {first:.3f} s, median {times[REPEATS // 2]:.3f} s, "
            f"best {times[0]:.3f} s (target < {TARGET_S} s)"
        )
        print(f"  python + numpy + yaml start-up: median {bare[REPEATS // 2]:.3f} s")
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
