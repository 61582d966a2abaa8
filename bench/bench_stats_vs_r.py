"""ALED and NALED by ``ale``'s own definitions against ``--statistics r`` (R's ``ale``
package, Okoli 2023), on the sample diabetes MLP.

Per feature, on ``rebin`` (20 uniform bins, its default) and on ``rhale`` (a few wide bins):

- ALED: ``ale-cli`` splits a bin whose segment crosses zero at the crossing; ``r`` takes
  the bin's midpoint (``R/stats.R`` ``calc_stats``). Printed: both, and their difference
  in % of R's value.
- NALED: both map effects to percentile points of the model's predictions. R's ``ale``
  maps with the *observed outcome* for a numeric target: ``r (target)`` applies R's
  normalisation with the diabetes ``target`` column as its reference values. ``r (all)``
  uses every prediction instead of the 101 recorded percentiles ``--statistics r`` has:
  the rounding of keeping only the percentiles.

Today (the sample MLP, 442 rows; sex is per level and left out):

- rebin: ALED ale-cli vs r median 0.4 % (largest 1.1 %); NALED ale-cli vs R's on the
  target median 37 % (largest 51 %), r vs R's on the target median 46 % (largest 57 %);
  r on the 101 percentiles vs on every prediction within 0.50 points.
- rhale: ALED median 36 % (largest 322 %: s2, 2 bins whose segments cross zero), and
  s1's one bin has ALED 0 in R's definition; NALED ale-cli vs R's on the target median
  82 % (largest 891 %), r vs R's on the target median 37 % (largest 52 %); r on the
  percentiles vs on every prediction within 0.30 points.

docs/audit.md states these numbers.

Run: ``PYTHONPATH=. python bench/bench_stats_vs_r.py`` (needs ``make samples``).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from ale_cli import api
from ale_cli.core.statistics import R, aled
from ale_cli.store.npz import read_store

ROOT = Path(__file__).resolve().parent.parent


def pct(a: float, b: float) -> float:
    """``|a - b|`` in % of ``b`` (NaN when ``b`` is 0: a one-bin curve's R ALED)."""
    return 100 * abs(a - b) / b if b else np.nan


def main() -> None:
    import pandas as pd

    data = ROOT / "sample_data" / "diabetes.csv"
    target = pd.read_csv(data)["target"].to_numpy(dtype=np.float64)
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "s.npz"
        api.compute(ROOT / "sample_data" / "models" / "diabetes_mlp.pt", data, out=store,
                    exclude=["target"])  # fmt: skip
        predictions = read_store(store).prediction
        for name, make in (("rebin", api.rebin), ("rhale", api.rhale)):
            ours = make(store, **({"bins": 20} if name == "rebin" else {}))
            theirs = make(store, statistics="r", **({"bins": 20} if name == "rebin" else {}))
            aled_pct, default_pct, reference_pct, rounding = [], [], [], []
            print(f"{name}: feature, bins, ALED ale-cli / r (diff %), "
                  "NALED ale-cli / r / r (all) / r (target)")  # fmt: skip
            for a, r in zip(ours.features, theirs.features, strict=True):
                if a.status != "ok" or a.kind is not None:
                    continue
                curve = {"effect": r.effect, "counts": r.counts, "definitions": R}
                n_all = aled(quantiles=predictions, **curve)
                n_target = aled(quantiles=target, **curve)
                sa, sr = a.statistics or {}, r.statistics or {}
                aled_pct.append(pct(sa["aled"], sr["aled"]))
                default_pct.append(pct(sa["naled"], n_target))
                reference_pct.append(pct(sr["naled"], n_target))
                rounding.append(abs(sr["naled"] - n_all))
                print(
                    f"  {a.name:4s} {a.n_bins:3d}  {sa['aled']:8.3f} / {sr['aled']:8.3f} "
                    f"({aled_pct[-1]:5.1f} %)  {sa['naled']:6.2f} / {sr['naled']:6.2f} / "
                    f"{n_all:6.2f} / {n_target:6.2f}"
                )
            print(
                f"{name}: ALED differs from R's by a median of {np.nanmedian(aled_pct):.1f} % "
                f"(largest {np.nanmax(aled_pct):.1f} %; {int(np.isnan(aled_pct).sum())} "
                "one-bin curve(s) where R's ALED is 0)\n"
                f"{name}: NALED ale-cli vs R's on the target: median "
                f"{np.nanmedian(default_pct):.0f} % (largest {np.nanmax(default_pct):.0f} %); "
                f"r on the predictions vs on the target: median "
                f"{np.nanmedian(reference_pct):.0f} % (largest {np.nanmax(reference_pct):.0f} %); "
                f"r on the 101 percentiles vs on every prediction: within "
                f"{max(rounding):.2f} points"
            )


if __name__ == "__main__":
    main()
