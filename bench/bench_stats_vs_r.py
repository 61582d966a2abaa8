"""ALED and NALED as ``ale`` records them against R's ``ale`` package definitions (Okoli 2023).

Two departures (:mod:`ale_cli.core.statistics`), measured on the sample diabetes MLP:

- ALED: R weights each bin's midpoint ``m_k`` by its count; ``ale`` splits a bin whose
  segment crosses zero at the crossing. ``r_aled`` below is R's formula on the same
  mean-centered curve; the difference is printed in % of R's value, per feature, on
  ``rebin`` (20 quantile bins) and on ``rhale`` (a few wide bins).
- NALED: R maps an effect to percentile points of the *observed outcome* for a numeric
  target; ``ale`` uses the model's predictions (always available, no target needed).
  ``r_naled`` maps with the percentiles of the diabetes ``target`` column instead.

Today (the sample MLP, 442 rows): ALED on rebin (20 bins) differs from R's by a median
of 0.3 % (largest 1.1 %); on rhale (1-10 bins) by a median of 15 % (largest 322 %, s2 on
2 bins whose segments cross zero), and s1's one wide bin has ALED 0 in R's definition
(19.5 here). NALED on the predictions is larger than on the observed target by a median
of 37 % (largest 42 %) on rebin, 30 % (largest 49 %) on rhale: the MLP's predictions
spread less than the outcome, so the same effect covers more of their percentiles.
docs/audit.md states these numbers.

Run: ``PYTHONPATH=. python bench/bench_stats_vs_r.py`` (needs ``make samples``).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from ale_cli import api
from ale_cli.core.statistics import aled, mean_centered, naled, prediction_distribution

ROOT = Path(__file__).resolve().parent.parent


def r_aled(effect: np.ndarray, counts: np.ndarray) -> float:
    """R ``ale``'s ALED: ``sum_k n_k |m_k| / N`` on the mean-centered curve (no split)."""
    c = mean_centered(effect=effect, counts=counts)
    mids = (c[:-1] + c[1:]) / 2.0
    return float(np.dot(counts, np.abs(mids)) / counts.sum())


def main() -> None:
    import pandas as pd

    data = ROOT / "sample_data" / "diabetes.csv"
    target = pd.read_csv(data)["target"].to_numpy(dtype=np.float64)
    y_quantiles = prediction_distribution(prediction=target).quantiles
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "s.npz"
        api.compute(ROOT / "sample_data" / "models" / "diabetes_mlp.pt", data, out=store,
                    exclude=["target"])  # fmt: skip
        for name, summary in (("rebin", api.rebin(store, bins=20)), ("rhale", api.rhale(store))):
            q = np.asarray(summary.prediction["quantiles"], dtype=np.float64)
            aled_pct, naled_pct = [], []
            print(f"{name}: feature, bins, ALED ale / R (diff %), NALED predictions / target")
            for f in summary.features:
                if f.status != "ok" or f.kind is not None:
                    continue
                ours, theirs = aled(effect=f.effect, counts=f.counts), r_aled(f.effect, f.counts)
                n_ours = naled(effect=f.effect, counts=f.counts, quantiles=q)
                n_r = naled(effect=f.effect, counts=f.counts, quantiles=y_quantiles)
                # a one-bin curve: R's midpoint is 0 (ALED 0); the percentage is undefined
                aled_pct.append(100 * abs(ours - theirs) / theirs if theirs else np.nan)
                naled_pct.append(100 * abs(n_ours - n_r) / n_r if n_r else 0.0)
                print(
                    f"  {f.name:4s} {f.n_bins:3d}  {ours:8.3f} / {theirs:8.3f} "
                    f"({aled_pct[-1]:5.1f} %)  {n_ours:6.2f} / {n_r:6.2f} ({naled_pct[-1]:5.1f} %)"
                )
            print(
                f"{name}: ALED differs from R's by a median of {np.nanmedian(aled_pct):.1f} % "
                f"(largest {np.nanmax(aled_pct):.1f} %; {int(np.isnan(aled_pct).sum())} "
                "one-bin curve(s) where R's ALED is 0); NALED on predictions vs on the target: "
                f"median {np.median(naled_pct):.1f} % (largest {max(naled_pct):.1f} %)"
            )


if __name__ == "__main__":
    main()
