"""Model formats: cost of local effects against bare model passes in the same run.

1. The sample ONNX MLP (diabetes, D = 10) on N rows: the torch-translated autodiff
   path and the onnxruntime finite-difference path, each as a ratio to one
   onnxruntime forward pass over the N rows.
2. A HistGradientBoostingRegressor at N = 100k, D = 8: finite differences
   (2 D + 1 stacked evaluations per row) against 2 D bare ``predict`` passes over
   N rows (target <= 1.2).
3. Evaluation rows per call for the stacked finite differences (the chunk size
   behind ``finite_diff.DEFAULT_EVAL_ROWS``), at D = 8 and D = 50.
4. Every class at once: ``ale compute --output all`` of a 3-class classifier against
   three single-class computes (``proba:0``, ``proba:1``, ``proba:2``), interleaved, for
   a smooth model (finite differences), a tree ensemble (secants) and the smooth model
   exported to ONNX (finite differences through onnxruntime).

Set BENCH_QUICK=1 for a smaller run.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ale_cli.models import Columns, LoadOptions, load_model
from ale_cli.models import finite_diff as fd
from ale_cli.models.base import LoadRequest
from ale_cli.models.scikit import SklearnModel

QUICK = os.environ.get("BENCH_QUICK") == "1"
ROOT = Path(__file__).resolve().parent.parent


def best_of(fn: Callable[[], object], repeat: int = 3) -> float:
    return interleaved({"": fn}, repeat)[""]


def interleaved(fns: dict[Any, Callable[[], object]], repeat: int) -> dict[Any, float]:
    """Best time of each function over ``repeat`` rounds, run in turn within each round,
    so load from other processes on a shared machine hits all of them alike."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t)
    return best


def onnx_mlp(n: int) -> None:
    from ale_cli.sample import build, diabetes_frame

    samples = ROOT / "sample_data"
    build(samples)
    path = samples / "models" / "diabetes_mlp.onnx"
    base = diabetes_frame().drop(columns="target").to_numpy(dtype=np.float64)
    rng = np.random.default_rng(0)
    X = base[rng.integers(0, len(base), n)] + rng.normal(0, 0.01, (n, base.shape[1]))
    names = tuple(f"x{j}" for j in range(X.shape[1]))

    columns = Columns(names=names)
    auto = load_model(path, options=LoadOptions(), columns=columns, X=X)
    fdm = load_model(path, options=LoadOptions(method="finite-differences"), columns=columns, X=X)
    forward = best_of(lambda: fdm.graph.run(X))  # one onnxruntime pass, all rows in one call
    t_torch = best_of(lambda: auto.local_effects(X))
    t_fd = best_of(lambda: fdm.local_effects(X))
    print(f"ONNX MLP (diabetes, D = {X.shape[1]}), N = {n}, float32 graph")
    print(f"  one onnxruntime forward pass       {forward * 1e3:8.1f} ms  (reference)")
    print(
        f"  torch path ({auto.method:<12})        {t_torch * 1e3:8.1f} ms  "
        f"ratio {t_torch / forward:6.1f}"
    )
    print(
        f"  onnxruntime finite differences     {t_fd * 1e3:8.1f} ms  ratio {t_fd / forward:6.1f}"
        f"  (2D+1 = {2 * X.shape[1] + 1} evaluations per row)"
    )


def hgb_data(n: int, d: int, seed: int = 0):  # type: ignore[no-untyped-def]
    from sklearn.ensemble import HistGradientBoostingRegressor

    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, d))
    y = X[:, 0] + X[:, 1] ** 2 + np.sin(X[:, 2] * 2) + rng.normal(0, 0.1, n)
    est = HistGradientBoostingRegressor(max_iter=100, random_state=0)
    est.fit(X[:20_000], y[:20_000])
    return X, est


def hgb_ratio(n: int, d: int) -> None:
    X, est = hgb_data(n, d)
    names = tuple(f"x{j}" for j in range(d))
    model = SklearnModel.of(
        est, LoadRequest(Path("hgb"), "skops", LoadOptions(), Columns(names=names), X)
    )
    # the reference really runs 2 D bare passes, so that load from other processes on a
    # shared machine weighs on both sides alike
    times = interleaved(
        {
            "bare": lambda: [est.predict(X) for _ in range(2 * d)],
            "fd": lambda: model.local_effects(X),
        },
        repeat=2,
    )
    ref, t_fd = times["bare"], times["fd"]
    bare = ref / (2 * d)
    print(f"HistGradientBoostingRegressor, N = {n}, D = {d} (max_iter 100)")
    print(f"  one bare predict pass over N rows  {bare * 1e3:8.1f} ms  (mean of the 2 D)")
    print(f"  2 D bare passes (reference)        {ref * 1e3:8.1f} ms")
    print(
        f"  finite differences (stacked)       {t_fd * 1e3:8.1f} ms  ratio {t_fd / ref:5.2f} "
        f"(target <= 1.2; includes the base rows, (2D+1)/2D = {(2 * d + 1) / (2 * d):.3f})"
    )


def chunk_sweep(n: int, d: int, sizes: tuple[int, ...]) -> None:
    X, est = hgb_data(n, d, seed=1)
    steps = 0.05 * fd.DataProfile.of(X).scale()
    f = est.predict
    print(f"evaluation rows per call, HistGradientBoosting N = {n}, D = {d}:")
    results = interleaved(
        {
            size: lambda s=size: fd.FdPlan(steps, np.zeros(d, bool), s).effects(f, X)
            for size in sizes
        },
        repeat=3,
    )
    best = min(results.values())
    for size, t in results.items():
        mark = "  <- default" if size == fd.DEFAULT_EVAL_ROWS else ""
        print(f"  {size:>7} rows/call  {t * 1e3:8.1f} ms  x{t / best:5.2f} of best{mark}")


def _onnx(est: Any, frame: Any, path: Path) -> Path:
    """``est`` exported with skl2onnx (probabilities as a tensor, no ZipMap)."""
    import skl2onnx

    X = frame.to_numpy(np.float32)[:1]
    proto = skl2onnx.to_onnx(est, X, options={id(est): {"zipmap": False}})
    path.write_bytes(proto.SerializeToString())
    return path


def every_class(n: int, d: int) -> None:
    """One compute of every class against one compute per class (same run, interleaved)."""
    import tempfile

    import pandas as pd
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.neural_network import MLPClassifier

    from ale_cli import api

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(n, d)), columns=[f"x{j}" for j in range(d)])
    y = (frame["x0"] + frame["x1"] > 0).astype(int) + (frame["x2"] > 0.5)
    models = {
        "MLP (finite differences)": MLPClassifier((32,), max_iter=50, random_state=0),
        "HGB (secants)": HistGradientBoostingClassifier(max_iter=50, random_state=0),
    }
    print(f"every class at once: N = {n:,}, D = {d}, 3 classes; best of 3 interleaved")
    with tempfile.TemporaryDirectory() as tmp:
        for est in models.values():
            est.fit(frame[:5000], y[:5000])
        models["MLP as ONNX (finite differences, onnxruntime)"] = _onnx(
            models["MLP (finite differences)"], frame, Path(tmp) / "mlp.onnx"
        )
        for label, est in models.items():

            def one(output: str, est: Any = est) -> None:
                api.compute(est, frame, out=Path(tmp) / f"{output}.npz", output=output, force=True)

            times = interleaved(
                {
                    "all": lambda: one("all"),
                    "three": lambda: [one(f"proba:{k}") for k in range(3)],
                },
                3,
            )
            print(
                f"  {label}: --output all {times['all']:.2f} s, three single-class computes "
                f"{times['three']:.2f} s (ratio {times['all'] / times['three']:.2f})"
            )


def main() -> None:
    onnx_mlp(20_000 if QUICK else 100_000)
    print()
    hgb_ratio(20_000 if QUICK else 100_000, 8)
    print()
    sweep = (8_000, 16_000, 50_000, 100_000, 200_000)
    chunk_sweep(5_000 if QUICK else 12_000, 8, sweep)
    chunk_sweep(1_000 if QUICK else 2_000, 50, sweep)
    print()
    every_class(5_000 if QUICK else 20_000, 8)


if __name__ == "__main__":
    main()
