"""Memory of ``ale interact --store``: the store read chunk by chunk against read whole.

A memory check, not a timed test. N = 1e6 rows, D = 32 float64 inputs (the data
and model of ``bench_classic_memory.py``: a Parquet file, tanh(x w) + 0.1 x_0 x_1),
a store from ``ale compute --pairs`` holding the mixed derivatives of 3 pairs
(one explained feature, so X is most of the store: 256 MB), DALE second order of
the 3 pairs with 10 type-1 quantile bins per feature. Each variant runs in a fresh
process (:func:`ale_cli.estimators.interact.interact`, the library call behind the
command); the peak RSS is that process's VmHWM, the baseline its RSS after the
imports (torch included).

- whole store (``chunk_rows=None``): X, the predictions and the mixed derivatives
  in memory at once, so the peak grows with N;
- streamed: the store's own chunks (65536 and 16384 rows, two stores), one at a
  time, so the peak is about a chunk.

The streamed summaries are checked against the whole store's (max |difference|
of the surfaces, which must be under 1e-12).

Usage: python bench/bench_interact_store_memory.py [--rows 1e6] [--folder DIR] [--keep]
       (BENCH_QUICK=1: 2e5 rows)

Measured 2026-11-23 on the shared 2-core VM (baseline after the imports: 222 MB;
store of 282 MB):

============================  ======  ========  ===============
variant (N = 1e6, D = 32)     wall    peak RSS  peak - baseline
============================  ======  ========  ===============
whole store                   5.2 s    720 MB   498 MB
streamed, 65536-row chunks    2.5 s    287 MB    65 MB
streamed, 16384-row chunks    2.7 s    243 MB    21 MB
============================  ======  ========  ===============

At N = 2e5 (BENCH_QUICK=1) the streamed peaks were 267 MB and 237 MB and the whole
store's 324 MB: the streamed peak follows the chunk, not N. The whole store is
slower as well: it checks every member's CRC and reads X to check it is finite
before reading the store again. The surfaces equal the whole store's to 8e-15.
Wall times vary by 2x between runs on the shared machine.
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
from bench_classic_memory import ENV, ROOT, _status, make_data, make_model

PAIRS = (("x00", "x01"), ("x02", "x03"), ("x04", "x05"))


def make_store(folder: Path, model: Path, data: Path, chunk_rows: int) -> Path:
    """``ale compute --pairs ... --features x00 --chunk-rows chunk_rows``, once."""
    out = folder / f"store-{data.stem}-{chunk_rows}.npz"
    if out.exists():
        return out
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from ale_cli.estimators.local_effects import ComputeRequest, compute;"
        "from ale_cli.estimators.inputs import ModelInputs;"
        "from pathlib import Path;"
        "inputs = ModelInputs(model=sys.argv[2], data=sys.argv[3], features=('x00',));"
        f"compute(ComputeRequest(inputs=inputs, out=Path(sys.argv[4]), pairs={PAIRS!r},"
        " chunk_rows=int(sys.argv[5])))"
    )
    cmd = [sys.executable, "-c", code, str(ROOT), str(model), str(data), str(out), str(chunk_rows)]
    subprocess.run(cmd, env=ENV, check=True)
    return out


def child(model: str, data: str, store: str, variant: str, out: str) -> None:
    """One variant in this process: print wall time, baseline and peak RSS (MB)."""
    sys.path.insert(0, str(ROOT))
    import torch  # noqa: F401 -- in the baseline, as in any run of a TorchScript model

    from ale_cli.estimators.inputs import ModelInputs
    from ale_cli.estimators.interact import InteractRequest, interact
    from ale_cli.summary.model import write_summary

    baseline = _status("VmRSS")
    t0 = time.perf_counter()
    request = InteractRequest(
        inputs=ModelInputs(model=model, data=data),
        pairs=PAIRS,
        store=Path(store),
        chunk_rows=None if variant == "whole" else 65536,
    )
    result = interact(request)
    wall = time.perf_counter() - t0
    if result.summary.params["cached_pairs"] != [list(p) for p in PAIRS]:
        raise SystemExit(f"the store was not used: {result.notes}")
    write_summary(out, result.summary, timestamp=False)
    print(json.dumps({"wall": wall, "baseline": baseline, "peak": _status("VmHWM")}))


def run(model: Path, data: Path, store: Path, variant: str, out: Path) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--child", str(model), str(data), str(store), variant]
    done = subprocess.run([*cmd, str(out)], env=ENV, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"variant {variant} failed: {done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


def max_difference(a: Path, b: Path) -> float:
    ia = json.loads(a.read_text())["interactions"]
    ib = json.loads(b.read_text())["interactions"]
    worst = 0.0
    for x, y in zip(ia, ib, strict=True):
        if x["counts"] != y["counts"] or x["edges_a"] != y["edges_a"]:
            return float("inf")
        worst = max(worst, float(np.max(np.abs(np.subtract(x["effect"], y["effect"])))))
    return worst


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(*sys.argv[2:7])
        return
    parser = argparse.ArgumentParser()
    quick = os.environ.get("BENCH_QUICK") == "1"
    parser.add_argument("--rows", default="2e5" if quick else "1e6")
    parser.add_argument("--folder", type=Path, default=None)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    n = int(float(args.rows))
    folder = args.folder or Path(tempfile.mkdtemp(prefix="ale-bench-istore-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        data = make_data(folder, n)
        model = make_model(folder)
        stores = {rows: make_store(folder, model, data, rows) for rows in (65536, 16384)}
        size = stores[65536].stat().st_size / 2**20
        print(
            f"ale interact --store, N = {n:.0e}, D = 32, {len(PAIRS)} cached pairs, "
            f"10 quantile bins, store {size:.0f} MB, one thread"
        )
        outs = {}
        for variant, store in (
            ("whole", stores[65536]),
            ("65536", stores[65536]),
            ("16384", stores[16384]),
        ):
            out = folder / f"interact-{variant}.json"
            r = run(model, data, store, variant, out)
            outs[variant] = out
            label = "whole store" if variant == "whole" else f"streamed, {variant}-row chunks"
            print(
                f"  {label:30s} wall {r['wall']:7.2f} s   peak RSS {r['peak']:7.0f} MB   "
                f"peak - baseline {r['peak'] - r['baseline']:7.0f} MB",
                flush=True,
            )
        for variant in ("65536", "16384"):
            diff = max_difference(outs["whole"], outs[variant])
            print(f"  max |effect difference|, {variant}-row chunks vs whole store: {diff:.1e}")
            if not diff < 1e-12:
                raise SystemExit("the streamed surfaces differ from the whole store's")
    finally:
        if not args.keep and args.folder is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
