"""``ale classic`` on the Dask engine: the partitions of a Parquet dataset evaluated on the
workers, the model shipped once per worker; the summaries equal the local engine's (bins,
bootstrap bands, per-level features), and the command line builds the engine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from ale_cli.engines import engine_for
from ale_cli.estimators.bands import Bootstrap
from ale_cli.estimators.classic import ClassicRequest, classic
from ale_cli.estimators.inputs import ModelInputs
from ale_cli.passes.engine import LOCAL
from ale_cli.summary.model import summary_json

pytest.importorskip("distributed")


class Smooth(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sin(x[:, 0]) * x[:, 1] + x[:, 2] ** 2 + 0.5 * x[:, 3] * x[:, 0]


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A TorchScript model and 3 Parquet files of 800 rows (row groups of 200): a, b
    continuous, c with 5 values, d with 3 levels."""
    root = tmp_path_factory.mktemp("classic-dask")
    rng = np.random.default_rng(3)
    for k in range(3):
        X = np.column_stack(
            [
                rng.normal(size=800),
                rng.uniform(-2, 2, 800),
                rng.integers(0, 5, 800) / 2.0,
                rng.integers(0, 3, 800).astype(float),
            ]
        )
        folder = root / "data" / f"part={k}"
        folder.mkdir(parents=True)
        frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
        frame.to_parquet(folder / "p.parquet", row_group_size=200, index=False)
    model = root / "m.pt"
    torch.jit.save(torch.jit.script(Smooth()), str(model))
    return {"data": root / "data", "model": model}


def _numbers(result: Any) -> dict[str, Any]:
    return json.loads(summary_json(result.summary, timestamp=False))


def _close(a: Any, b: Any, path: str = "") -> None:
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            _close(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list) and a and all(isinstance(v, float | int | None) for v in a):
        x = np.array([np.nan if v is None else v for v in a], dtype=float)
        y = np.array([np.nan if v is None else v for v in b], dtype=float)
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12, err_msg=path)
    elif isinstance(a, list):
        assert len(a) == len(b), path
        for i, (u, v) in enumerate(zip(a, b, strict=True)):
            _close(u, v, f"{path}[{i}]")
    elif isinstance(a, float):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=path)
    else:
        assert a == b, path


@pytest.mark.parametrize(
    "options",
    [
        {"bins": 8},
        {"binning": "uniform", "bins": 5, "bootstrap": Bootstrap(12, 0.9, 5)},
        {"discrete": ("c",), "categorical": ("d",)},
    ],
)
def test_classic_on_dask_equals_the_local_engine(case, cluster, options):
    options = dict(options)
    inputs = ModelInputs(
        model=case["model"], data=case["data"], categorical=options.pop("categorical", ())
    )
    request = ClassicRequest(inputs=inputs, chunk_rows=150, **options)
    engine = engine_for("dask", cluster)
    with engine:
        assert engine.slots == 2
        dask = classic(request, engine=engine)
    local = classic(request, engine=LOCAL)
    assert dask.summary.n_rows == local.summary.n_rows == 2400
    _close(_numbers(dask), _numbers(local))
    assert dask.notes == local.notes


def test_the_command_line_hands_the_dask_engine_down(case, cluster, cli, tmp_path, monkeypatch):
    from ale_cli.data.sources import DataSource

    parts: list[int] = []
    split = DataSource.split

    def spy(self, slots):  # type: ignore[no-untyped-def]
        out = split(self, slots)
        parts.append(len(out.parts()))
        return out

    monkeypatch.setattr(DataSource, "split", spy)
    out = tmp_path / "c.json"
    args = ("classic", case["model"], case["data"], "-o", out, "--bootstrap", "4")
    r = cli(*args, "--engine", "dask", "--scheduler", cluster)
    assert r.exit_code == 0, r.output
    assert json.loads(out.read_text())["n_rows"] == 2400
    assert parts and parts[0] >= 3  # a partition per file at least
    r = cli(*args, "--scheduler", cluster)
    assert r.exit_code == 2 and "--scheduler is the address of a Dask scheduler" in r.stderr
