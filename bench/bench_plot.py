"""``ale plot`` wall time, start-up included, on a synthetic 10-feature summary and store.

Runs the real command as a subprocess (what a cron job or CI step pays):
10 per-feature PNGs with violins from a 20,000-row store plus the overview at
the default DPI, with the default worker processes (one per core, at most 4)
and with ``--jobs 1``. The reference, measured in the same run, is the bare start-up
of a Python process that imports matplotlib and saves one empty PNG figure.
Target: under 3 s for the whole command.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ale_cli.store.npz import Store, write_store
from ale_cli.summary.model import FeatureSummary, Summary, write_summary

N_ROWS = 20_000
N_FEATURES = 10
N_BINS = 20
REPEATS = 3
TARGET_S = 3.0


def synthetic(tmp: Path) -> tuple[Path, Path]:
    """A store and a DALE-like summary with equal-width bins (numbers need only be plausible)."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-1.0, 1.0, (N_ROWS, N_FEATURES))
    coef = np.linspace(-2.0, 2.0, N_FEATURES)
    local = coef * np.cos(3 * X) + rng.normal(0.0, 0.5, X.shape)
    names = tuple(f"feature_{j:02d}" for j in range(N_FEATURES))
    feats = []
    for j, name in enumerate(names):
        edges = np.linspace(-1.0, 1.0, N_BINS + 1)
        idx = np.clip(np.searchsorted(edges, X[:, j]) - 1, 0, N_BINS - 1)
        counts = np.bincount(idx, minlength=N_BINS)
        mu = np.bincount(idx, local[:, j], N_BINS) / counts
        sd = np.sqrt(np.bincount(idx, local[:, j] ** 2, N_BINS) / counts - mu**2)
        dz = np.diff(edges)
        effect = np.concatenate([[0.0], np.cumsum(mu * dz)])
        effect -= np.sum(counts * (effect[:-1] + effect[1:]) / 2) / N_ROWS
        std = np.sqrt(np.concatenate([[0.0], np.cumsum(dz**2 * sd**2)]))
        feats.append(
            FeatureSummary(
                name=name,
                edges=edges,
                counts=counts,
                bin_effect=mu,
                bin_std=sd,
                bin_stderr=sd / np.sqrt(counts),
                bin_filled=np.zeros(N_BINS, dtype=bool),
                effect=effect,
                std=std,
                stderr=std / np.sqrt(counts.mean()),
            )
        )
    store_path, summary_path = tmp / "store.npz", tmp / "summary.json"
    write_store(
        store_path,
        Store(
            X=X,
            local_effects=local,
            prediction=X @ coef,
            feature_names=names,
            meta={"schema_version": 1, "output": None},
        ),
    )
    summary = Summary(
        estimator="dale",
        params={},
        store={"path": str(store_path)},
        n_rows=N_ROWS,
        features=tuple(feats),
    )
    write_summary(summary_path, summary, timestamp=False)
    return summary_path, store_path


def timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - t0


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        summary_path, store_path = synthetic(tmp)
        reference = [
            sys.executable,
            "-c",
            "from matplotlib.figure import Figure; Figure().savefig(__import__('io').BytesIO(), "
            "format='png')",
        ]
        base = [sys.executable, "-m", "ale_cli", "plot", str(summary_path), "-o", str(tmp / "out")]
        runs = {
            "reference: python + matplotlib + 1 empty PNG": reference,
            "ale --help (start-up)": [sys.executable, "-m", "ale_cli", "--help"],
            "ale plot, 10 features + overview, PNG": base,
            "ale plot, same with --store (rug, violins)": [*base, "--store", str(store_path)],
            "ale plot, same, --jobs 1 (one process)": [
                *base,
                "--store",
                str(store_path),
                "-j",
                "1",
            ],
            "ale plot, --store --format svg": [
                *base,
                "--store",
                str(store_path),
                "--format",
                "svg",
            ],
        }
        times = {label: min(timed(cmd) for _ in range(REPEATS)) for label, cmd in runs.items()}
    ref = times["reference: python + matplotlib + 1 empty PNG"]
    print(f"{N_FEATURES} features x {N_BINS} bins, {N_ROWS:,} rows; best of {REPEATS}")
    for label, seconds in times.items():
        print(f"  {label:<46} {seconds:6.2f} s  ({seconds / ref:4.1f}x reference)")
    worst = times["ale plot, same with --store (rug, violins)"]
    ok = worst < TARGET_S
    print(f"target: ale plot --store under {TARGET_S:.0f} s: {'met' if ok else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
