"""RHALE and exact ties: local effects equal up to rounding (a linear term) get one bin."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ale_cli.core.binning import assign
from ale_cli.core.binstats import CellStats
from ale_cli.core.rhale import RTOL, default_min_points, optimal_partition
from ale_cli.estimators.dale import RhaleRequest, rhale
from ale_cli.store.npz import Store

COEF = np.array([1.5, -0.25, 3e2, 2e-3])
SCALE = np.array([2.0, 0.3, 1.5, 7.0])
SHIFT = np.array([1.0, -2.0, 0.5, 300.0])


def linear_store(rng: np.random.Generator, n: int = 3000) -> Store:
    """The local effects of f(x) = 1000 + x . COEF by central differences with a step of
    1e-5 std: the exact coefficients plus the rounding of f (relative 1e-11 to 3e-7)."""
    X = rng.normal(size=(n, 4)) * SCALE + SHIFT
    h = 1e-5 * X.std(0)
    E = np.empty_like(X)
    for j in range(4):
        up, down = X.copy(), X.copy()
        up[:, j] += h[j]
        down[:, j] -= h[j]
        E[:, j] = (1000.0 + up @ COEF - (1000.0 + down @ COEF)) / (up[:, j] - down[:, j])
    names = ("a", "b", "c", "d")
    meta = {"schema_version": 1, "feature_names": list(names), "n_rows": n}
    return Store(X=X, local_effects=E, prediction=1000.0 + X @ COEF, feature_names=names, meta=meta)


@pytest.mark.parametrize("grid", ["uniform", "quantile"])
def test_rhale_gives_one_bin_for_linear_local_effects_with_rounding_noise(grid: str) -> None:
    store = linear_store(np.random.default_rng(3))
    summary = rhale(RhaleRequest(store=store, grid=grid)).summary
    for j, f in enumerate(summary.features):
        assert f.n_bins == 1, (f.name, f.edges)
        np.testing.assert_allclose(f.bin_effect, COEF[j], rtol=1e-8)
        assert f.objective == 0.0


def test_without_the_tolerance_rounding_noise_splits_the_feature() -> None:
    """The test above could fail: with rtol = 0 the optimiser splits on the noise."""
    store = linear_store(np.random.default_rng(3))
    mp = default_min_points(store.X.shape[0])
    splits = []
    for x, e in zip(store.X.T, store.local_effects.T, strict=True):
        grid = np.linspace(x.min(), x.max(), 51)
        cells = CellStats.from_values(assign(x, grid).index, e, n_cells=50)
        splits.append(optimal_partition(grid, cells, min_points=mp, rtol=0.0).n_bins)
        assert optimal_partition(grid, cells, min_points=mp).n_bins == 1
    assert max(splits) > 1, splits


def test_heterogeneity_above_the_tolerance_still_splits() -> None:
    """Two slopes differing by 100 x RTOL of their size are still told apart."""
    rng = np.random.default_rng(5)
    x = rng.uniform(0, 1, 4000)
    e = np.where(x < 0.5, 1.0, 1.0 + 100 * RTOL) * (1 + rng.normal(0, 1e-12, x.size))
    grid = np.linspace(0, 1, 21)
    cells = CellStats.from_values(assign(x, grid).index, e, n_cells=20)
    part = optimal_partition(grid, cells, min_points=default_min_points(x.size))
    assert part.edges.tolist() == [0.0, 0.5, 1.0]


def test_rhale_one_bin_for_a_torchscript_linear_model(tmp_path: Path) -> None:
    """A float32 linear network whose gradients carry rounding (log(exp(z)) at the output)."""
    import torch

    from ale_cli.estimators.inputs import ModelInputs
    from ale_cli.estimators.local_effects import ComputeRequest, compute

    torch.manual_seed(0)

    class Linear(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Linear(16, 1))
            self.register_buffer("m", torch.tensor([1.0, -2.0, 0.5, 3.0]))
            self.register_buffer("s", torch.tensor([2.0, 0.3, 1.5, 7.0]))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            z = self.net((x - self.m) / self.s).squeeze(-1)
            return torch.log(torch.exp(z)) * 25.0 + 150.0

    model = tmp_path / "lin.pt"
    torch.jit.save(torch.jit.script(Linear()), str(model))
    rng = np.random.default_rng(1)
    X = rng.normal(size=(3000, 4)) * [2, 0.3, 1.5, 7] + [1, -2, 0.5, 3]
    data = tmp_path / "lin.csv"
    pd.DataFrame(X, columns=list("abcd")).to_csv(data, index=False)
    store = tmp_path / "lin.npz"
    compute(ComputeRequest(inputs=ModelInputs(model=model, data=data), out=store))
    summary = rhale(RhaleRequest(store=store)).summary
    for f in summary.features:
        assert f.status == "ok" and f.n_bins == 1, (f.name, f.edges)
