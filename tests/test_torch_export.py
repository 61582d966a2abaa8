"""torch.export programs (``.pt2``): read as TorchScript is, autodiff, the same numbers."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from ale_cli import api
from ale_cli.errors import ModelError


@pytest.fixture(scope="module")
def pt2_model(sample_dir: Path) -> Path:
    return sample_dir / "models" / "diabetes_mlp.pt2"


def test_pt2_equals_pt_on_the_sample_mlp(pt2_model: Path, mlp_model: Path, sample_dir, tmp_path):
    data = sample_dir / "diabetes.csv"
    a = api.compute(pt2_model, data, exclude="target", out=tmp_path / "a.npz")
    b = api.compute(mlp_model, data, exclude="target", out=tmp_path / "b.npz")
    assert a.method == b.method == "autodiff"
    sa, sb = api.read_store(tmp_path / "a.npz"), api.read_store(tmp_path / "b.npz")
    # the same network; agreement to float32 rounding is the bound (it is float64 here)
    scale = np.abs(sb.local_effects).max(axis=0)
    np.testing.assert_allclose(sa.local_effects, sb.local_effects, rtol=0, atol=1e-6 * scale.max())
    np.testing.assert_allclose(sa.prediction, sb.prediction, rtol=1e-6)
    assert sa.meta["model"]["format"] == "torch-export"
    ra, rb = api.rhale(tmp_path / "a.npz"), api.rhale(tmp_path / "b.npz")
    for fa, fb in zip(ra.features, rb.features, strict=True):
        np.testing.assert_allclose(fa.effect, fb.effect, rtol=1e-6, atol=1e-6)


def test_exported_program_object_equals_its_file(pt2_model: Path, sample_dir) -> None:
    import pandas as pd
    import torch

    program = torch.export.load(str(pt2_model))
    frame = pd.read_csv(sample_dir / "diabetes.csv")
    a = api.classic(program, frame, exclude="target", features="bmi,s5")
    b = api.classic(pt2_model, frame, exclude="target", features="bmi,s5")
    for fa, fb in zip(a.features, b.features, strict=True):
        np.testing.assert_allclose(fa.effect, fb.effect, rtol=0, atol=1e-12)
    assert a.store["model"]["format"] == "torch-export" and len(a.store["model"]["sha256"]) == 64


def test_renamed_archives_are_told_apart(pt2_model: Path, mlp_model: Path, sample_dir, tmp_path):
    data = sample_dir / "diabetes.csv"
    as_pt = tmp_path / "m.pt"
    shutil.copy(pt2_model, as_pt)
    with pytest.raises(
        ModelError, match=r"is not a TorchScript archive .*looks like a torch\.export"
    ):
        api.compute(as_pt, data, exclude="target", out=tmp_path / "o.npz")
    as_pt2 = tmp_path / "m.pt2"
    shutil.copy(mlp_model, as_pt2)
    with pytest.raises(
        ModelError, match=r"is not a torch\.export archive .*looks like a TorchScript"
    ):
        api.compute(as_pt2, data, exclude="target", out=tmp_path / "o.npz")


def test_fixed_batch_program_is_refused_with_the_hint(cli, sample_dir: Path, tmp_path) -> None:
    import torch

    net = torch.nn.Sequential(torch.nn.Linear(10, 1)).double().eval()
    program = torch.export.export(net, (torch.zeros(4, 10, dtype=torch.float64),))
    path = tmp_path / "fixed.pt2"
    torch.export.save(program, str(path))
    result = cli("compute", path, sample_dir / "diabetes.csv", "--exclude", "target",
                 "-o", tmp_path / "o.npz")  # fmt: skip
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: model '{path}' was exported for batches of exactly 4 rows; local effects "
        "need any number of rows: export it with a dynamic first dimension: "
        "torch.export.export(model, (x,), "
        'dynamic_shapes=({0: torch.export.Dim("batch", min=1)},))\n'
    )


def test_help_says_which_format_pytorch_recommends(cli) -> None:
    out = cli("compute", "--help").stdout
    assert "torch.export (.pt2, what PyTorch recommends)" in " ".join(out.split())
