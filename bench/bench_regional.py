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
  feature (global RHALE records, candidate quantiles, one pass per searched depth, leaf
  records);
  and with ``search_rows`` (``--search-rows``, default 1e5: the splits chosen on a sample
  of the rows, the records from every row);
- effector: ``RHALE(X, None, data_effect=E, nof_instances="all").find_regions(j,
  finder=Best(max_depth=2))`` for the first ``--effector-features`` features on the same
  rows (every feature would take hours at 1e6 rows), and that time per feature times D.

Target: ale regional <= 5x one read of the store. Not met: the split cells are N x D x
(D - 1) bincount updates (counts, sums, sums of squares: every feature against every
input) at the root and about half that at depth 1 (the smaller child counted, its
sibling by subtraction; no pass at the last depth). Profiled at N = 1e6 (cProfile, the
chunk kernels run in this thread): ``split_cells`` alone is 14.8 s of 31.0 s, some 16x one
read (0.93 s), so with numpy's bincount the every-row search cannot reach 5x at D = 32.
The rest: the kernels' other work (grid cells, shifts, rows of open nodes) ~5 s, the
candidate quantiles 2.3 s, bucketing 1.2 s, the held read 1.4 s, the global cells 0.7 s.

With ``--search-rows`` the search passes count the split cells on the sample's rows alone
(inputs bucketed after sampling) and the leaves' records (every row) come from one last
pass; what is left is mostly every-row work: the held read, global cells, the candidate
quantiles (exact, on every row) and the leaf records.

Measured 2026-11-26 08:24-08:29 UTC (load average 2.5-5 on 2 shared cores), N = 1e6,
D = 32, 2 rounds interleaved, each run in its own process, against the branch before
these changes (6714378): one read 0.81 s (0.57-1.02); ale regional 31.0 s (30.7-31.2),
38x the median read (before: 32.7 s, 40x); with --search-rows 100000 14.1 s (12.6-15.6),
17x (before: 20.9 s, 26x). An earlier run under load 6-12 (07:35-07:45) gave 175.5 s,
38x; effector 0.6.0's find_regions at N = 1e5 took 295-501 s per feature, some 200-445x
ale's time per feature.

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
from ale_cli.store.npz import open_store  # noqa: E402
from ale_cli.store.writer import StoreWriter  # noqa: E402
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
