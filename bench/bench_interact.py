"""Second order (``ale interact``) on the sample TorchScript MLP at N rows (diabetes rows
resampled with noise), one pair (s1, s2), 10 x 10 quantile cells:

1. DALE: the mixed derivatives of one pair against one gradient pass (local effects)
   over the N rows; the cost of the extra backward pass with ``create_graph``.
2. classic: the 4 stacked corner evaluations per row against 4 bare ``predict``
   passes over the N rows (target <= 1.15).
3. The estimator core (cells, fill, accumulation, centering) on cached values.

Set BENCH_QUICK=1 for a smaller run.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from ale_cli.core.binning import assign, quantile_edges
from ale_cli.core.second_order import pair_cells, second_order_from_cells
from ale_cli.estimators.interact_kernel import second_differences
from ale_cli.models import Columns, LoadOptions, load_model

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_formats import interleaved  # noqa: E402  (best time of each, in turn per round)

QUICK = os.environ.get("BENCH_QUICK") == "1"
ROOT = Path(__file__).resolve().parent.parent
N = 20_000 if QUICK else 100_000


def main() -> None:
    from ale_cli.sample import DIABETES_FEATURES, build, diabetes_frame

    build(ROOT / "sample_data")
    base = diabetes_frame()[list(DIABETES_FEATURES)].to_numpy(dtype=np.float64)
    rng = np.random.default_rng(0)
    X = base[rng.integers(0, len(base), N)] * (1 + 0.01 * rng.normal(size=(N, base.shape[1])))
    model: Any = load_model(
        ROOT / "sample_data/models/diabetes_mlp.pt",
        options=LoadOptions(),
        columns=Columns(names=tuple(DIABETES_FEATURES)),
        X=X,
    )
    a, b = DIABETES_FEATURES.index("s1"), DIABETES_FEATURES.index("s2")
    ea, eb = quantile_edges(X[:, a], bins=10), quantile_edges(X[:, b], bins=10)
    ia, ib = assign(X[:, a], ea).index, assign(X[:, b], eb).index
    values = model.mixed_derivatives(X, [(a, b)])[0]

    t = interleaved(
        {
            "gradient pass": lambda: model.local_effects(X),
            "mixed derivatives": lambda: model.mixed_derivatives(X, [(a, b)]),
            "4 bare predict passes": lambda: [model.predict(X) for _ in range(4)],
            "classic corners": lambda: second_differences(model.predict, X, (a, b), ea, eb, ia, ib),
            "core (dale)": lambda: second_order_from_cells(
                pair_cells(ia, ib, values, shape=(ea.size - 1, eb.size - 1)),
                edges_a=ea,
                edges_b=eb,
                route="dale",
            ),
        },
        repeat=3,
    )
    print(f"N = {N:,} rows, D = {X.shape[1]}, pair (s1, s2), 10 x 10 quantile cells")
    for name, seconds in t.items():
        print(f"  {name:<24} {seconds * 1e3:9.1f} ms")
    print(
        f"  mixed derivatives / gradient pass   {t['mixed derivatives'] / t['gradient pass']:.2f}"
    )
    ratio = t["classic corners"] / t["4 bare predict passes"]
    print(f"  classic corners / 4 bare passes     {ratio:.2f} (target <= 1.15)")


if __name__ == "__main__":
    main()
