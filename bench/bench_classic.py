"""`ale classic` (Apley-Zhu first order) at N = 100k rows against bare model passes.

Classic ALE evaluates the model twice per row and feature (at both limits of the
row's bin), so its floor is 2 D model passes over the N rows. Measured in the
same run, interleaved (shared machine):

1. the sample TorchScript MLP (diabetes, D = 10) on resampled diabetes rows, as
   bench_compute.py; reference: 2 D forward passes of the bare module under
   ``torch.inference_mode`` in chunks of the adapter's default batch size;
2. a HistGradientBoostingRegressor, D = 8 (as bench_formats.py); reference:
   2 D bare ``est.predict(X)`` calls over the N rows.

Our side is :func:`ale_cli.estimators.classic.classic_features` on the loaded adapter: bin
edges (20 quantile bins), bin membership, the stacked evaluations, the
estimate. Target ratio <= 1.15. The time spent inside the model calls (in the
best run) is reported too, so the overhead that is ours (quantile edges, bin
membership, stacking, the estimate) shows apart from the model's own cost.
Set BENCH_QUICK=1 for a smaller run.

How our side works (see ale_cli/estimators/classic.py): quantile edges and bin membership
come from core.outofcore (exact type-1 quantiles by bucketed selection) and
binning.assign; the rows are evaluated chunk by
chunk (32k stacked rows per call), every feature sharing the chunk's stack (one
copy, then one column moved and put back from classic's own feature rows per
feature); the differences go straight into one row per feature, and the bins'
statistics of the slopes are those of the differences divided by the bin
widths (no division pass over the rows).

Measured on 2 shared cores, whose speed varies by 20-30% within seconds
(hence the paired ratios). 2026-11-22 (reference 250-388 ms): the MLP's median
paired ratio 1.12-1.23 over fourteen runs, ours 35-60 ms; before that day's
changes 1.27-1.31 with ~76 ms of our own work. 2026-11-23, after the division
was folded into the bin statistics and the buckets made smaller (reference
304-339 ms), nine runs: best-vs-best 1.14 in six, 1.15 in one, 1.16 in two;
median paired 1.10-1.17, median of the nine 1.15; ours 36-44 ms (39 ms against
46 ms for the previous code, median of 20 rounds A/B in one process, same
numbers to 1e-12). HistGradientBoosting 1.01-1.07.

Where the MLP's remaining ~40 ms go (line profiler, real model): quantile
edges and membership ~10 ms, the estimate ~6 ms, looking up the limits ~4 ms,
~15 ms moving and restoring the column in the stack, the transposed copy of the
estimated columns ~2.5 ms, the differences ~2.5 ms, the chunk copies ~2 ms. The
moves are memory traffic: after each model call the stack is no longer in cache
(the same strided writes cost ~4 ms in all with a do-nothing model, ~11 ms
after a 64 MB sweep), so every call's restore reads the whole stack back. A
column-major stack makes those writes contiguous (25 -> 9 ms) but the model
itself ~4% slower on such input (addmm on a transposed operand; median of 60
paired rounds of 10 calls): no net gain. Restoring in L2-sized row blocks, or
writing two adjacent columns at once, was slower. Smaller or larger chunks
(2k-64k rows) made no difference beyond noise; neither did a float32 stack for
a float32 model (the conversion is 0.05 ms per call). The model calls
themselves run 1-4% slower inside the loop than back to back: a stack just
written before the call costs the model ~2-4% (25 paired rounds of 70 calls),
and anything that evicts the cache between calls more (a 64 MB sweep: +13%).
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from bench_compute import MODEL, make_data
from bench_formats import best_of, hgb_data

from ale_cli.core.binning import assign, quantile_edges
from ale_cli.estimators.classic import classic_features
from ale_cli.models import Columns, LoadOptions, load_model
from ale_cli.models.base import LoadRequest
from ale_cli.models.finite_diff import DEFAULT_EVAL_ROWS
from ale_cli.models.scikit import SklearnModel

QUICK = os.environ.get("BENCH_QUICK") == "1"
N_ROWS = 20_000 if QUICK else 100_000
TARGET = 1.15


class Timed:
    """Wraps a predict function and adds up the time spent inside it."""

    def __init__(self, f: Callable[[np.ndarray], np.ndarray]) -> None:
        self.f = f
        self.seconds = 0.0

    def __call__(self, X: np.ndarray) -> np.ndarray:
        t = time.perf_counter()
        out = self.f(X)
        self.seconds += time.perf_counter() - t
        return out


def report(
    label: str,
    X: np.ndarray,
    predict: Callable[[np.ndarray], np.ndarray],
    bare: Callable[[], object],
    repeat: int,
) -> None:
    n, d = X.shape
    names = [f"x{j}" for j in range(d)]
    timed = Timed(predict)
    runs: list[tuple[float, float]] = []  # (classic total, of which in model calls)

    def ours() -> None:
        timed.seconds = 0.0
        t = time.perf_counter()
        classic_features(timed, X, names)
        runs.append((time.perf_counter() - t, timed.seconds))

    bares: list[float] = []
    for _ in range(repeat):  # alternate, so load from other processes hits both alike
        t = time.perf_counter()
        for _ in range(2 * d):
            bare()
        bares.append(time.perf_counter() - t)
        ours()
    ref = min(bares)
    total, inside = min(runs)
    paired = float(np.median([r[0] / b for r, b in zip(runs, bares, strict=True)]))
    print(f"{label}, N = {n:,}, D = {d}, 20 quantile bins, {DEFAULT_EVAL_ROWS:,} rows per call")
    print(f"  2 D bare passes (reference)     {ref * 1e3:8.1f} ms  (best of {repeat})")
    print(
        f"  classic_features                {total * 1e3:8.1f} ms  ratio {total / ref:5.2f} "
        f"(target <= {TARGET}); median of the {repeat} paired ratios {paired:5.2f}"
    )
    print(f"    in model calls                {inside * 1e3:8.1f} ms  ratio {inside / ref:5.2f}")
    print(
        f"    ours: edges, bins, stacking,  {(total - inside) * 1e3:8.1f} ms  "
        f"({(total - inside) / n / d * 1e9:.0f} ns per row and feature)"
    )
    print("          estimate")
    cols = np.ascontiguousarray(X.T)
    binning = best_of(lambda: [assign(x, quantile_edges(x, bins=20)) for x in cols], 5)
    print(f"      of which quantile edges and bin membership alone {binning * 1e3:.1f} ms")


def mlp() -> None:
    import torch

    from ale_cli.models.torchscript import DEFAULT_BATCH_SIZE

    with tempfile.TemporaryDirectory() as tmp:
        _, X = make_data(Path(tmp))
    X = np.ascontiguousarray(X[:N_ROWS])
    columns = Columns(names=tuple(f"x{j}" for j in range(X.shape[1])))
    model = load_model(MODEL, options=LoadOptions(), columns=columns, X=X)
    module = torch.jit.load(str(MODEL))
    module.eval()
    dtype = next(module.parameters()).dtype

    def bare() -> None:
        with torch.inference_mode():
            for start in range(0, len(X), DEFAULT_BATCH_SIZE):
                module(torch.from_numpy(X[start : start + DEFAULT_BATCH_SIZE]).to(dtype))

    print(f"torch threads {torch.get_num_threads()}, model dtype {dtype}")
    report(f"TorchScript MLP ({MODEL.name})", X, model.predict, bare, repeat=30)


def hgb() -> None:
    X, est = hgb_data(N_ROWS, 8)
    names = tuple(f"x{j}" for j in range(X.shape[1]))
    model = SklearnModel.of(
        est, LoadRequest(Path("hgb"), "skops", LoadOptions(), Columns(names=names), X)
    )
    report("HistGradientBoostingRegressor", X, model.predict, lambda: est.predict(X), repeat=3)


def main() -> None:
    mlp()
    print()
    hgb()


if __name__ == "__main__":
    main()
