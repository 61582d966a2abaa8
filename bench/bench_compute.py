"""Benchmark `ale compute` on the sample MLP at N = 100k rows.

Reference, measured in the same run: one bare forward+backward pass of the same
TorchScript model over the same rows (same chunking, best of several runs).
Reports the ratio of our local-effects step to it, a batch-size sweep (how the
default was chosen), the whole command's wall time split into start-up, data
loading, model loading, checks, local effects and writing, and its peak memory.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "sample_data" / "models" / "diabetes_mlp.pt"
N_ROWS = 100_000
REPEATS = 5


def best_of(fn, repeats: int = REPEATS) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def run_compute(data: Path, out: Path) -> None:
    """``ale compute`` on the sample MLP in a fresh process (start-up included)."""
    args = [sys.executable, "-m", "ale_cli", "compute", str(MODEL), str(data), "-o", str(out)]
    subprocess.run([*args, "--quiet"], check=True, capture_output=True)


def make_data(folder: Path) -> tuple[Path, np.ndarray]:
    import pandas as pd

    base = pd.read_csv(ROOT / "sample_data" / "diabetes.csv").drop(columns="target")
    rng = np.random.default_rng(0)
    rows = base.to_numpy()[rng.integers(0, len(base), N_ROWS)]
    rows = rows + rng.normal(0, 0.01, rows.shape) * base.std().to_numpy()
    frame = pd.DataFrame(rows, columns=base.columns)
    path = folder / "diabetes_100k.parquet"
    frame.to_parquet(path, index=False)
    return path, rows


def main() -> None:
    import torch

    from ale_cli.models import Columns, LoadOptions, load_model
    from ale_cli.models.torchscript import DEFAULT_BATCH_SIZE

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        data, X = make_data(folder)
        module = torch.jit.load(str(MODEL))
        module.eval()
        for p in module.parameters():
            p.requires_grad_(False)
        dtype = next(module.parameters()).dtype
        columns = Columns(names=tuple(f"x{j}" for j in range(X.shape[1])))

        def bare(batch: int) -> None:
            for start in range(0, N_ROWS, batch):
                x = torch.from_numpy(X[start : start + batch]).to(dtype).requires_grad_(True)
                module(x).sum().backward()

        print(
            f"rows {N_ROWS:,}, features {X.shape[1]}, model {MODEL.name} ({dtype}), "
            f"torch threads {torch.get_num_threads()}"
        )
        print("batch size sweep (local effects, best of 5):")
        sweep = {}
        for batch in (1024, 4096, 8192, 32768, N_ROWS):
            model = load_model(MODEL, options=LoadOptions(batch_size=batch), columns=columns, X=X)
            ours = best_of(lambda m=model: m.local_effects(X))
            ref = best_of(lambda b=batch: bare(b))
            sweep[batch] = ours
            print(
                f"  batch {batch:>6}: ours {ours * 1e3:7.1f} ms, bare fwd+bwd "
                f"{ref * 1e3:7.1f} ms, ratio {ours / ref:.2f}"
            )
        best = min(sweep, key=sweep.get)  # type: ignore[arg-type]
        print(f"  fastest batch size here: {best} (default {DEFAULT_BATCH_SIZE})")

        model = load_model(MODEL, options=LoadOptions(), columns=columns, X=X)
        # interleaved, so that the machine's speed (shared, it varies by 20-30% over
        # seconds) is the same for the reference and for ours
        rounds = [
            (
                best_of(lambda: bare(DEFAULT_BATCH_SIZE), 1),
                best_of(lambda: model.local_effects(X), 1),
                # loading includes the checks on X (torch.jit.load itself: a few ms)
                best_of(lambda: load_model(MODEL, options=LoadOptions(), columns=columns, X=X), 1),
            )
            for _ in range(3 * REPEATS)
        ]
        ref, ours, check = (min(column) for column in zip(*rounds, strict=True))
        paired = float(np.median([(o + c) / r for r, o, c in rounds]))
        print(
            f"default batch: local effects {ours * 1e3:.1f} ms + load and check "
            f"{check * 1e3:.1f} ms "
            f"vs bare fwd+bwd {ref * 1e3:.1f} ms -> ratio {(ours + check) / ref:.2f} "
            f"(target <= 1.3); median of {len(rounds)} paired ratios {paired:.2f}"
        )

        out = folder / "store.npz"
        help_t = best_of(
            lambda: subprocess.run(
                [sys.executable, "-m", "ale_cli", "--help"], capture_output=True, check=True
            ),
            3,
        )
        t0 = time.perf_counter()
        run_compute(data, out)
        wall = time.perf_counter() - t0
        peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        meta = json.loads(
            subprocess.run(
                [sys.executable, "-m", "ale_cli", "info", str(out), "--json"],
                capture_output=True,
                check=True,
                text=True,
            ).stdout
        )
        t = meta["timings"]
        from ale_cli.store.npz import read_store, write_store

        stored = read_store(out)
        write = best_of(lambda: write_store(folder / "again.npz", stored), 3)
        rest = wall - help_t - t["total_before_write_s"] - write
        print(
            f"`ale compute` wall {wall:.2f} s: python+CLI start-up {help_t:.2f} s, "
            f"data loading {t['load_data_s']:.2f} s, model loading (torch import) "
            f"and checks {t['load_model_s']:.2f} s, "
            f"local effects {t['local_effects_s'] * 1e3:.0f} ms, "
            f"hashing {t['hash_inputs_s'] * 1e3:.0f} ms, write {write * 1e3:.0f} ms, "
            f"interpreter exit and the rest {rest:.2f} s"
        )
        print(
            f"`ale compute` peak memory (max RSS) {peak_mib:.0f} MiB; "
            f"arrays X + effects = {2 * X.nbytes / 2**20:.0f} MiB"
        )
        hit0 = time.perf_counter()
        run_compute(data, out)
        print(f"cache hit wall {time.perf_counter() - hit0:.2f} s")


if __name__ == "__main__":
    main()
