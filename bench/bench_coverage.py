"""Coverage of the bootstrap bands of ``rebin`` and ``rhale`` on small data, against a known curve.

S simulated data sets of N rows: x ~ U(-1, 1), a second input w ~ N(0, 1), and local
effects of x ``e = 2 x + 0.5 w`` (the model ``x^2 + 0.5 x w``: its ALE in x is ``x^2``
up to a constant; w makes the rows' effects differ). Each set gets a 95 % band from B
bootstrap replicates (rows resampled, the bins held fixed: for ``rhale`` the bins chosen
on the same rows). The truth at the edges ``z_k^2``, centered as the estimator centers
(count-weighted mean of the trapezoid midpoints with the set's counts), is covered at
an edge when it lies in ``[ci_low, ci_high]``; the coverage is the share of covered
edges over all sets (the first edge excluded: its band is set by the centering alone).

Today (S = 200, N = 500, B = 200; the coverage's own sampling error about 1 point):
rebin on 20 quantile bins 93.4 %, rhale 91.1 %, for a nominal 95 %. docs/estimators.md
states these numbers.

Run: ``PYTHONPATH=. python bench/bench_coverage.py [S] [N] [B]``.
"""

from __future__ import annotations

import sys

import numpy as np

from ale_cli.estimators.bands import Bootstrap
from ale_cli.estimators.dale import rebin_features, rhale_features


def coverage(feat) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """Covered and counted edges of one summary feature (the truth is x^2)."""
    z, n = feat.edges, feat.counts.astype(np.float64)
    truth = z**2
    truth = truth - float(np.dot(n, (truth[:-1] + truth[1:]) / 2.0) / n.sum())
    inside = (feat.ci_low[1:] <= truth[1:]) & (truth[1:] <= feat.ci_high[1:])
    return int(inside.sum()), int(inside.size)


def main(argv: list[str]) -> None:
    sims = int(argv[0]) if argv else 200
    n = int(argv[1]) if len(argv) > 1 else 500
    b = int(argv[2]) if len(argv) > 2 else 200
    rng = np.random.default_rng(0)
    tally = {"rebin": [0, 0], "rhale": [0, 0]}
    for s in range(sims):
        x = rng.uniform(-1.0, 1.0, size=n)
        w = rng.normal(size=n)
        X, E = x[:, None], (2.0 * x + 0.5 * w)[:, None]
        boot = Bootstrap(b, 0.95, s)
        fits = {
            "rebin": rebin_features(X, E, ["x"], bins=20, binning="quantile", bootstrap=boot),
            "rhale": rhale_features(X, E, ["x"], min_points=-(-n // 20), bootstrap=boot),
        }
        for name, (feat,) in fits.items():
            covered, counted = coverage(feat)
            tally[name][0] += covered
            tally[name][1] += counted
    for name, (covered, counted) in tally.items():
        print(
            f"{name}: coverage of the 95 % band {100 * covered / counted:.1f} % "
            f"({counted} edges over {sims} sets of {n} rows, B = {b})"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
