"""How much ``ale classic`` depends on ``--chunk-rows``: float32 rounding for a float32 model
(its predictions change with the batch's shape), the rounding of merged means for float64."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ale_cli import api


def mlp(path: Path, dtype) -> Path:  # type: ignore[no-untyped-def]
    import torch

    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Linear(4, 32), torch.nn.Tanh(), torch.nn.Linear(32, 32), torch.nn.Tanh(),
        torch.nn.Linear(32, 1),
    ).to(dtype).eval()  # fmt: skip
    torch.jit.save(torch.jit.script(net), str(path))
    return path


@pytest.mark.parametrize(("precision", "bound"), [("float32", 1e-6), ("float64", 1e-12)])
def test_classic_between_chunk_sizes_within_the_model_precision(tmp_path, precision, bound):
    import torch

    model = mlp(tmp_path / "m.pt", getattr(torch, precision))
    data = tmp_path / "d.csv"
    X = np.random.default_rng(1).normal(size=(3000, 4))
    pd.DataFrame(X, columns=[f"x{i}" for i in range(4)]).to_csv(data, index=False)
    whole = api.classic(model, data, chunk_rows=None)
    for rows in (1000, 37):
        chunked = api.classic(model, data, chunk_rows=rows)
        for a, b in zip(whole.features, chunked.features, strict=True):
            np.testing.assert_array_equal(a.edges, b.edges)
            gap = np.max(np.abs(a.effect - b.effect)) / np.ptp(a.effect)
            assert gap <= bound, (precision, rows, a.name, gap)
