"""``ale regional`` on a store against one read of the same store, and effector's regional
search (``RHALE.find_regions``, effector 0.6.0, if installed) on the same rows.

Store: N rows, D inputs, every one explained; X Toeplitz-correlated normal (rho 0.5),
local effects ``e_j = 1 + 2 sign(x_{j+1}) + 0.3 noise`` (every feature has a split worth
keeping), written in chunks of 65536 rows. One thread everywhere (``ALE_THREADS=1``,
``OMP_NUM_THREADS=1``). Rounds are interleaved (read, regional, read, ...) so the load of
the shared machine hits both alike; each figure is the median over the rounds with its
min-max (the spread is the machine's noise).

- read: every chunk of ``X`` and ``local_effects`` read from the store (the floor of any
  estimator on it);
- ale regional: ``regional(RegionalRequest(store, max_depth=2, candidates=20))``, every
  feature, the splits chosen on a sample of about ``--search-rows`` rows (the default,
  ``SEARCH_ROWS`` = 100,000; the records on every row), and with ``search_rows="all"``
  (every row); whether the two split every feature first on the same input, and how far
  apart their thresholds are;
- effector: ``RHALE(X, None, data_effect=E, nof_instances="all").find_regions(j,
  finder=Best(max_depth=2))`` for the first ``--effector-features`` features on the same
  rows (every feature would take hours at 1e6 rows), and that time per feature times D.

Target: ale regional <= 5x one read of the store. Not met: 6.5x by default.

- Every row: the split cells are N x D x (D - 1) bincount updates (counts, sums, sums of
  squares: every feature against every input) at the root and about half that at depth
  1. numpy's bincount does them at about 7 ns per row and input (21 ms for 1e5 rows x 32
  inputs, one feature), some 10 s at N = 1e6, D = 32: no every-row search reaches 5x.
- The default sample: profiled at N = 1e6 (CPU seconds, load 4): the held read 1.0-1.4
  (one read and 512 MB of new pages), the search on the sample 1.7-2.0, the pass over
  every row for the leaves' cells 1.0-1.4, the trees' decisions and RHALE's bins per
  leaf 0.45, the rest 0.4. With a 2,000-row sample, 3.35 s against a read's 0.69 (4.9x):
  the every-row work alone is about 5x.

Measured 2026-11-26 10:14-10:17 UTC (load average 4.2-4.8 on 2 shared cores), N = 1e6,
D = 32, 3 rounds in one process: one read 0.61 s (0.40-0.76); ale regional (default
sample of 100,000 rows) 4.94 s (3.76-6.00), 6.5x the read (6.2-15.2); every row 28.8 s
(25.3-32.9), 47.5x (43.0-63.9); 32/32 first splits on the same input, thresholds within
0.010. With --search-rows 50000 (2 rounds, 10:17-10:19): 3.71 s (3.63-3.78) against a
read of 0.56 s, 6.7x (6.5-6.8): the every-row work dominates. Against the tree before
(c4a8ca3), each run in its own process, 3 rounds interleaved (10:06-10:12, load 4.4-4.9,
read 0.91 s, 0.51-1.37): the default 8.95 s (7.39-9.79), 8.1x, where --search-rows
100000 took 17.3 s (13.5-19.5), 21.8x; every row 31.7 s (26.5-33.9) where it took
34.0 s (32.7-41.4). effector 0.6.0's find_regions at N = 1e5 took 295-501 s per feature
(an earlier round), some 200-445x ale's time per feature; not run again.

Usage: python bench/bench_regional.py [--rows 1e6] [--dims 32] [--rounds 3]
       [--effector-features 1] [--search-rows 100000]
"""

from __future__ import annotations

import os

os.environ.setdefault("ALE_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ale_cli.estimators.regional import SEARCH_ROWS, RegionalRequest, regional  # noqa: E402
from ale_cli.store.format import StoreWriter  # noqa: E402
from ale_cli.store.npz import open_store  # noqa: E402
from ale_cli.summary.regional import RegionalSummary  # noqa: E402

CHUNK = 65536


def rows(n: int, d: int, seed: int = 0, start: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed + start)
    cov = 0.5 ** np.abs(np.subtract.outer(np.arange(d), np.arange(d)))
    X = rng.multivariate_normal(np.zeros(d), cov, size=n, method="cholesky")
    E = 1.0 + 2.0 * np.sign(np.roll(X, -1, axis=1)) + 0.3 * rng.normal(size=(n, d))
    return X, E


def make_store(path: Path, n: int, d: int) -> Path:
    names = tuple(f"x{j}" for j in range(d))
    with StoreWriter(path) as w:
        for a in range(0, n, CHUNK):
            X, E = rows(min(CHUNK, n - a), d, start=a)
            w.add({"X": X, "local_effects": E, "prediction": E.sum(1)})
        w.finish(
            feature_names=names,
            input_names=names,
            meta={"schema_version": 3, "n_rows": n, "categorical_features": []},
        )
    return path


def read_once(path: Path) -> float:
    t0 = time.perf_counter()
    total = 0.0
    for chunk in open_store(path).chunks(("X", "local_effects")):
        total += float(chunk["X"][0, 0]) + float(chunk["local_effects"][0, 0])
    return time.perf_counter() - t0


def ale_once(path: Path, search_rows: int | str) -> tuple[float, RegionalSummary]:
    t0 = time.perf_counter()
    request = RegionalRequest(path, max_depth=2, candidates=20, search_rows=search_rows)
    out = regional(request).summary
    return time.perf_counter() - t0, out


def first_splits(out: RegionalSummary) -> list[tuple[str, float] | None]:
    """Each feature's first split: (input, threshold), or None."""
    first = [r.nodes[0].split if r.nodes else None for r in out.regions]
    return [None if s is None else (s.input, s.value) for s in first]


def agreement(a: RegionalSummary, b: RegionalSummary) -> str:
    """How many features the two searches split first on the same input, and the largest
    difference of those thresholds."""
    pairs = [(x, y) for x, y in zip(first_splits(a), first_splits(b), strict=True)]
    same = [(x, y) for x, y in pairs if x is not None and y is not None and x[0] == y[0]]
    gap = max((abs(x[1] - y[1]) for x, y in same), default=0.0)
    return f"{len(same)}/{len(pairs)} first splits on the same input, thresholds within {gap:.3f}"


def effector_per_feature(path: Path, features: int) -> float | None:
    try:
        import effector
    except ImportError:
        return None
    s = open_store(path)
    parts = [(c["X"], c["local_effects"]) for c in s.chunks(("X", "local_effects"))]
    X = np.concatenate([p[0] for p in parts])
    E = np.concatenate([p[1] for p in parts])
    rh = effector.RHALE(X, lambda x: x.sum(1), data_effect=E, nof_instances="all")
    finder = effector.space_partitioning.Best(max_depth=2, numerical_features_grid_size=20)
    t0 = time.perf_counter()
    for j in range(features):
        rh.find_regions(j, finder=finder)
    return (time.perf_counter() - t0) / features


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s ({min(values):.2f}-{max(values):.2f})"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=float, default=1e6)
    ap.add_argument("--dims", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--effector-features", type=int, default=1)
    ap.add_argument("--search-rows", type=int, default=SEARCH_ROWS)
    args = ap.parse_args()
    n, d = int(args.rows), args.dims
    with tempfile.TemporaryDirectory() as tmp:
        path = make_store(Path(tmp) / "s.npz", n, d)
        reads, ales, sampled = [], [], []
        for _ in range(args.rounds):
            reads.append(read_once(path))
            t, every = ale_once(path, "all")
            ales.append(t)
            t, sample = ale_once(path, args.search_rows)
            sampled.append(t)
        split = sum(r.status == "split" for r in every.regions)
        split_s = sum(r.status == "split" for r in sample.regions)
        ratios = [a / r for a, r in zip(ales, reads, strict=True)]
        ratios_s = [a / r for a, r in zip(sampled, reads, strict=True)]
        print(f"N={n:.0e} D={d} depth 2, 20 candidates, one thread, {args.rounds} rounds")
        print(f"one read of the store   {spread(reads)}")
        print(
            f"ale regional (splits on a sample of {args.search_rows:,} rows, the default "
            f"{SEARCH_ROWS:,}): {spread(sampled)}: {split_s}/{d} features split; "
            f"ratio {statistics.median(ratios_s):.1f}x ({min(ratios_s):.1f}-{max(ratios_s):.1f})"
            "; target <= 5x"
        )
        print(
            f"ale regional --search-rows all: {spread(ales)}: {split}/{d} features split; "
            f"ratio {statistics.median(ratios):.1f}x ({min(ratios):.1f}-{max(ratios):.1f})"
        )
        print(f"sample against every row: {agreement(sample, every)}")
        per = effector_per_feature(path, args.effector_features) if args.effector_features else None
        if per is None:
            print("effector: not installed (pip install effector==0.6.0) or not asked for")
        else:
            ale_per = statistics.median(ales) / d
            print(
                f"effector find_regions  {per:.2f} s per feature ({args.effector_features} "
                f"timed), x{d} = {per * d:.0f} s; ale {ale_per:.2f} s per feature: "
                f"effector / ale {per / ale_per:.0f}x"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
