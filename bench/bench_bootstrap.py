"""Bootstrap bands on ``rebin``: B = 200 replicates on N = 1e5 rows, D = 32 features.

Times, in the same run, one bincount pass (the cell statistics of every
feature on 20 uniform bins: what ``rebin`` does once) and ``rebin_features``
with ``bootstrap=200`` (the same pass plus the replicates: weights, the float32
products, the per-replicate estimates and the percentile bands). Target: the
bootstrap run under 3 s.

Run: ``PYTHONPATH=. python bench/bench_bootstrap.py [N] [D] [B]``.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from ale_cli.estimators.bands import Bootstrap
from ale_cli.estimators.dale import rebin_features


def main(argv: list[str]) -> None:
    n = int(argv[0]) if argv else 100_000
    d = int(argv[1]) if len(argv) > 1 else 32
    b = int(argv[2]) if len(argv) > 2 else 200
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    E = np.cos(X) + rng.normal(0, 0.5, size=(n, d))
    names = [f"x{j}" for j in range(d)]
    t0 = time.perf_counter()
    rebin_features(X, E, names, bins=20)
    t1 = time.perf_counter()
    rebin_features(X, E, names, bins=20, bootstrap=Bootstrap(b, seed=0))
    t2 = time.perf_counter()
    print(
        f"N={n} D={d} bins=20: one bincount pass (rebin) {t1 - t0:.3f} s; "
        f"rebin with B={b} bootstrap {t2 - t1:.3f} s ({(t2 - t1) / (t1 - t0):.0f}x)"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
