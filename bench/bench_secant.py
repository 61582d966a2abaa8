"""Tree models on the gradient route: store-based rebin/rhale against ``ale classic``.

For HistGradientBoosting, GradientBoosting and RandomForest regressors (saved as
``.skops``) on a synthetic 20k-row dataset and on the 442-row diabetes data, it
prints per feature the median and worst |store curve - classic curve| over the
edges, in % of the classic curve's range:

- ``before``: the old finite-difference store (step 0.05 x std, ``--step 0.05``)
  through ``rebin --bins 20 --binning quantile``;
- ``after``: the secant store (the default for these models) through the same
  rebin, and through ``rhale`` against classic on the RHALE edges;
- for the diabetes data, where the store-based estimators refuse the features
  (median rows per fine bin below the threshold), ``unrefused`` shows what the
  secant curves would be without the refusal (``min_rows=0``).

Today (each model explained on its training rows): synthetic 20k, after rebin, median /
worst 0.1-0.7 % / 0.7-1.8 % (hgb), 0.1-2.8 % / 0.5-3.7 % (gbr), 0.5-2.1 % / 1.7-4.2 % (rf);
after rhale at most 2.6 % / 3.6 %. Diabetes 442: every continuous feature refused;
unrefused rebin medians up to 15.9 % (hgb, s2), 27.3 % (gbr, s4), 32.7 % (rf, s4); worst
edges up to 33.7 % (hgb), 178.7 % (gbr), 98.6 % (rf).
docs/models.md states these numbers.

Run: ``PYTHONPATH=$PWD .venv/bin/python bench/bench_secant.py`` (about a minute on
2 shared cores).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def synthetic(n: int = 20_000, seed: int = 0, rho: float = 0.6):  # type: ignore[no-untyped-def]
    """Correlated inputs and an additive-plus-interaction function (also used by the tests)."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    x1 = rng.uniform(-2, 2, n)
    x2 = rho * x1 + np.sqrt(1 - rho**2) * rng.normal(0, 1, n)
    x3 = rng.normal(0, 1, n)
    y = np.sin(2 * x1) + x2**2 + x1 * x3 + x3 + rng.normal(0, 0.1, n)
    return pd.DataFrame({"x1": x1, "x2": x2, "x3": x3}), y


def models():  # type: ignore[no-untyped-def]
    """Small, fast fits (seconds on 20k rows)."""
    from sklearn.ensemble import (
        GradientBoostingRegressor,
        HistGradientBoostingRegressor,
        RandomForestRegressor,
    )

    return {
        "hgb": HistGradientBoostingRegressor(max_iter=40, early_stopping=False, random_state=0),
        "gbr": GradientBoostingRegressor(n_estimators=60, max_depth=3, random_state=0),
        "rf": RandomForestRegressor(
            n_estimators=20, min_samples_leaf=20, max_features=1.0, n_jobs=1, random_state=0
        ),
    }


def save(est, path: Path) -> tuple[str, ...]:  # type: ignore[no-untyped-def]
    """Dump with skops; the types to trust."""
    import skops.io as sio

    sio.dump(est, path)
    return tuple(sio.get_untrusted_types(file=path))


def gaps(store_feat, classic_feat) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """Median and worst |difference| over the edges in % of the classic curve's range."""
    np.testing.assert_array_equal(store_feat.edges, classic_feat.edges)
    span = float(np.ptp(classic_feat.effect))
    diff = np.abs(store_feat.effect - classic_feat.effect) / span * 100.0
    return float(np.median(diff)), float(np.max(diff))


def compare(
    model: Path, data: Path, trust: tuple[str, ...], work: Path, exclude: tuple[str, ...]
) -> list[str]:
    from ale_cli import api
    from ale_cli.estimators import secants as sec
    from ale_cli.store.npz import read_store
    from ale_cli.summary.model import write_summary

    rows: list[str] = []
    opts = {"exclude": exclude} if exclude else {}
    fd_store, sc_store = work / "fd.npz", work / "secant.npz"
    api.compute(model, data, out=fd_store, trust=trust, step=0.05, force=True, **opts)
    api.compute(model, data, out=sc_store, trust=trust, force=True, **opts)
    fd = api.rebin(fd_store, bins=20, binning="quantile")
    edges = work / "edges.json"
    write_summary(edges, fd)
    classic = api.classic(model, data, edges=edges, trust=trust, **opts)
    after = api.rebin(sc_store, bins=20, binning="quantile")
    rh = api.rhale(sc_store)
    store = read_store(sc_store)
    names = store.feature_names
    loose = sec.in_memory(store, bins=20, binning="quantile", center="mean", min_rows=0)
    loose_rh = sec.in_memory(store, rhale=(-(-store.n_rows // 20), 0.2), center="mean", min_rows=0)
    rh_edges = {f.name: f.edges.tolist() for f in loose_rh if f.status == "ok"}
    (work / "rh_edges.json").write_text(json.dumps(rh_edges))
    classic_rh = api.classic(model, data, edges=work / "rh_edges.json", trust=trust, **opts)
    for k, name in enumerate(names):
        c = classic.feature(name)
        if c.status != "ok":
            continue
        line = f"  {name:>4}: before {_pair(gaps(fd.feature(name), c))}"
        a = after.feature(name)
        r = rh.feature(name)
        if a.status == "ok":
            line += f"  after rebin {_pair(gaps(a, c))}"
            line += f"  after rhale {_pair(gaps(r, classic_rh.feature(name)))} ({r.n_bins} bins)"
        else:
            line += f"  after: refused ({a.reason.split(':')[0]})"
            line += f"  unrefused rebin {_pair(gaps(loose[k], c))}"
            line += f"  unrefused rhale {_pair(gaps(loose_rh[k], classic_rh.feature(name)))}"
        rows.append(line)
    return rows


def _pair(values: tuple[float, float]) -> str:
    return f"{values[0]:5.1f}% / {values[1]:5.1f}%"


def main() -> None:
    import pandas as pd

    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        frame, y = synthetic()
        frame.to_csv(work / "synthetic.csv", index=False)
        diabetes = pd.read_csv(ROOT / "sample_data" / "diabetes.csv")
        Xd, yd = diabetes.drop(columns="target"), diabetes["target"].to_numpy()
        for data_name, X, target, path in (
            ("synthetic 20k", frame, y, work / "synthetic.csv"),
            ("diabetes 442", Xd, yd, ROOT / "sample_data" / "diabetes.csv"),
        ):
            print(f"{data_name}: median / worst |store - classic| in % of the curve's range")
            for model_name, est in models().items():
                est.fit(X.to_numpy(), target)
                model = work / f"{model_name}.skops"
                trust = save(est, model)
                print(f" {model_name}")
                exclude = ("target",) if "target" in pd.read_csv(path, nrows=1) else ()
                for line in compare(model, path, trust, work, exclude):
                    print(line)


if __name__ == "__main__":
    main()
