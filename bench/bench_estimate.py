"""Speed of ``ale rebin --bins 20`` and ``ale rhale`` on a store of N = 100k rows, D = 32 features.

Reference, measured in the same run: one ``np.bincount`` pass over the same
N x D array, i.e. counts, sums and sums of squares of the local effects into
20 bins per feature (bin indices precomputed, three ``np.bincount`` calls on
the flattened array). The estimator work (everything after the store is in
memory up to the summary object) is reported as a ratio to it. The whole
commands are timed as subprocesses (start-up, store loading and hashing,
writing the summary included), and checked not to import torch.

Targets (issue 3): rebin ratio <= 5, rhale ratio <= 8 (K_max = 50), whole
``ale rhale`` command < 1 s of wall time.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ale_cli.core.rhale import default_min_points
from ale_cli.estimators.dale import rebin_features, rhale_features
from ale_cli.store.npz import Store, write_store

N, D, BINS, REPEAT = 100_000, 32, 20, 7


def best_of(fn: Callable[[], object], repeat: int = REPEAT) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def synthetic(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Mixed features: uniform, normal, skewed and two integer-valued (values on bin edges)."""
    X = np.empty((N, D))
    for j in range(D):
        kind = j % 4
        if kind == 0:
            X[:, j] = rng.uniform(-1, 1, N)
        elif kind == 1:
            X[:, j] = rng.normal(0, 2, N)
        elif kind == 2:
            X[:, j] = rng.lognormal(0, 1, N)
        else:
            X[:, j] = rng.integers(0, 10, N)
    coef = rng.normal(size=D)
    E = coef + 0.5 * np.sin(X) + 0.2 * rng.normal(size=(N, D)) * (X[:, :1] > 0)
    return X, E, [f"f{j:02d}" for j in range(D)]


def command_time(args: list[str], repeat: int = 3) -> tuple[float, bool]:
    """Best wall time of ``python -X importtime -m ale_cli ARGS`` and whether torch was imported."""
    cmd = [sys.executable, "-X", "importtime", "-m", "ale_cli", *args]
    best, torch_seen = float("inf"), False
    for _ in range(repeat):
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        best = min(best, time.perf_counter() - t0)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(args)} failed: {proc.stderr.strip().splitlines()[-1]}")
        torch_seen |= any(
            line.split("|")[-1].strip().split(".")[0] in ("torch", "onnxruntime", "matplotlib")
            for line in proc.stderr.splitlines()
            if line.startswith("import time:")
        )
    return best, torch_seen


def main() -> int:
    rng = np.random.default_rng(0)
    X, E, names = synthetic(rng)

    # reference: one bincount pass (counts, sums, sums of squares) into 20 bins per feature
    lo, hi = X.min(0), X.max(0)
    idx = np.clip(((X - lo) / (hi - lo) * BINS).astype(np.int64), 0, BINS - 1)
    flat = (idx + np.arange(D) * BINS).ravel()
    w = E.ravel()

    def reference() -> None:
        np.bincount(flat, minlength=D * BINS)
        np.bincount(flat, weights=w, minlength=D * BINS)
        np.bincount(flat, weights=w * w, minlength=D * BINS)

    t_ref = best_of(reference)
    min_points = default_min_points(N)
    t_rebin = best_of(lambda: rebin_features(X, E, names, bins=BINS))
    t_rebin_q = best_of(lambda: rebin_features(X, E, names, bins=BINS, binning="quantile"), 3)
    t_rhale = best_of(lambda: rhale_features(X, E, names, max_bins=50, min_points=min_points))

    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "bench.npz"
        meta = {"schema_version": 1, "feature_names": names, "n_rows": N, "method": "synthetic"}
        write_store(
            store,
            Store(X=X, local_effects=E, prediction=E[:, 0], feature_names=tuple(names), meta=meta),
        )
        out = str(Path(tmp) / "summary.json")
        cmd_rhale, heavy_rhale = command_time(["rhale", str(store), "-o", out])
        cmd_rebin, heavy_rebin = command_time(["rebin", str(store), "--bins", "20", "-o", out])
        cmd_help, _ = command_time(["--help"])

    def row(label: str, seconds: float, target: float | None) -> None:
        ratio = seconds / t_ref
        verdict = (
            ""
            if target is None
            else (" ok" if ratio <= target else f" MISSED (target <= {target})")
        )
        print(f"{label:<42} {seconds * 1e3:8.1f} ms  ratio {ratio:5.2f}{verdict}")

    print(f"N = {N}, D = {D}; best of {REPEAT}")
    print(f"{'reference: bincount counts+sums+sumsq, 20 bins':<42} {t_ref * 1e3:8.1f} ms")
    row("rebin --bins 20 (uniform), estimator work", t_rebin, 5.0)
    row("rebin --bins 20 --binning quantile", t_rebin_q, None)
    row("rhale (K_max 50), estimator work", t_rhale, 8.0)
    ok = "ok" if cmd_rhale < 1.0 else "MISSED (target < 1 s)"
    print(
        f"whole 'ale rhale' command: {cmd_rhale:.3f} s wall {ok}; "
        f"torch/onnxruntime/matplotlib imported: {heavy_rhale}"
    )
    print(
        f"whole 'ale rebin --bins 20' command: {cmd_rebin:.3f} s wall; heavy imports: {heavy_rebin}"
    )
    print(f"'ale --help' (start-up alone): {cmd_help:.3f} s wall")
    return 0


if __name__ == "__main__":
    sys.exit(main())
