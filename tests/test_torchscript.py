"""TorchScript adapter: exact gradients, output selection, and refusing unsuitable models."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from ale_cli.errors import ModelError
from ale_cli.models import Columns, LoadOptions, load_model, torchscript


def save(module: nn.Module, path: Path, *, trace_with: torch.Tensor | None = None) -> Path:
    if trace_with is None:
        scripted = torch.jit.script(module)
    else:
        scripted = torch.jit.trace(module, trace_with, check_trace=False)
    torch.jit.save(scripted, str(path))
    return path


def load(path: Path, X: np.ndarray, output: str | None = None, batch_size: int | None = None):  # type: ignore[no-untyped-def]
    """Load and check the model on X."""
    return load_model(
        path,
        options=LoadOptions(output=output, batch_size=batch_size),
        columns=Columns(names=tuple(f"x{j}" for j in range(X.shape[1]))),
        X=X,
    )


def test_rhale_function_effects_equal_its_analytic_gradient(rhale_model: Path):
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(500, 3))
    model = load(rhale_model, X)
    effects = model.local_effects(X)
    expected = np.column_stack([np.full(500, 0.2), -5.0 + 10.0 * (X[:, 2] > 0), np.zeros(500)])
    np.testing.assert_allclose(effects.local_effects, expected, atol=1e-6, rtol=0)
    truth = 0.2 * X[:, 0] - 5 * X[:, 1] + 10 * X[:, 1] * (X[:, 2] > 0)
    np.testing.assert_allclose(effects.prediction, truth, atol=1e-6)


def test_mlp_effects_equal_the_autograd_jacobian(mlp_model: Path, sample_dir: Path):
    import pandas as pd

    X = pd.read_csv(sample_dir / "diabetes.csv").drop(columns="target").to_numpy()[:6]
    model = load(mlp_model, X)
    got = model.local_effects(X).local_effects
    module = torch.jit.load(str(mlp_model))
    x = torch.tensor(X, dtype=torch.float64)
    jac = torch.autograd.functional.jacobian(module, x).numpy()  # (6, 6, 10): d y_i / d x_j
    np.testing.assert_allclose(got, jac[np.arange(6), np.arange(6)], rtol=1e-6, atol=1e-6)
    off_diagonal = jac.copy()
    off_diagonal[np.arange(6), np.arange(6)] = 0.0
    np.testing.assert_array_equal(off_diagonal, 0.0)  # rows are independent


def test_chunking_does_not_change_the_result(mlp_model: Path, sample_dir: Path):
    import pandas as pd

    X = pd.read_csv(sample_dir / "diabetes.csv").drop(columns="target").to_numpy()
    whole = load(mlp_model, X).local_effects(X)
    calls: list[int] = []
    small = load(mlp_model, X, batch_size=37).local_effects(X, progress=calls.append)
    np.testing.assert_allclose(small.local_effects, whole.local_effects, rtol=1e-10)
    np.testing.assert_allclose(small.prediction, whole.prediction, rtol=1e-10)
    assert sum(calls) == len(X) and len(calls) == -(-len(X) // 37)
    np.testing.assert_allclose(load(mlp_model, X).predict(X), whole.prediction, rtol=1e-10)


def test_float32_model_gradients_match_float64_within_float32_precision(tmp_path: Path):
    torch.manual_seed(3)
    net = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
    X = np.random.default_rng(3).normal(size=(300, 4))
    path32 = save(net.float(), tmp_path / "f32.pt")
    path64 = save(net.double(), tmp_path / "f64.pt")
    m32 = load(path32, X)
    assert m32.describe()["dtype"] == "float32"
    g32 = m32.local_effects(X).local_effects
    g64 = load(path64, X).local_effects(X).local_effects
    scale = np.abs(g64).max(axis=0)
    np.testing.assert_allclose(g32 / scale, g64 / scale, atol=1e-5, rtol=0)


class TwoOutputs(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.stack([x[:, 0] * 2.0, x[:, 0] * x[:, 1]], dim=1)


class TupleOutputs(nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return 3.0 * x[:, 0], torch.stack([x[:, 1], -x[:, 1]], dim=1)


def test_output_index_selects_a_column(tmp_path: Path):
    path = save(TwoOutputs(), tmp_path / "two.pt")
    X = np.array([[1.0, 2.0], [3.0, 5.0]])
    with pytest.raises(
        ModelError,
        match=r"output has shape \(2, 2\); choose one column with "
        r"output INDEX \(0\.\.1\)",
    ):
        load(path, X)
    eff = load(path, X, output="1").local_effects(X)
    np.testing.assert_allclose(eff.local_effects, [[2.0, 1.0], [5.0, 3.0]])
    with pytest.raises(ModelError, match=r"^output 2 is out of range"):
        load(path, X, output="2")


def test_tuple_outputs_are_selected_by_element_and_column(tmp_path: Path):
    path = save(TupleOutputs(), tmp_path / "tuple.pt")
    X = np.array([[1.0, 2.0], [3.0, 5.0]])
    with pytest.raises(ModelError, match=r"returns 2 outputs with shapes \(2,\), \(2, 2\)"):
        load(path, X)
    np.testing.assert_allclose(load(path, X, output="0").local_effects(X).local_effects[:, 0], 3.0)
    np.testing.assert_allclose(
        load(path, X, output="1:1").local_effects(X).local_effects[:, 1], -1.0
    )
    with pytest.raises(ModelError, match="^output 'proba:1' is not valid for a TorchScript model"):
        load(path, X, output="proba:1")


def test_a_tuple_outputs_errors_name_its_elements(tmp_path: Path):
    path = save(TupleOutputs(), tmp_path / "tuple.pt")
    X = np.array([[1.0, 2.0], [3.0, 5.0]])
    with pytest.raises(ModelError, match=r"\(2, 2\); choose one column with output 1:INDEX \(0"):
        load(path, X, output="1")  # 1 picks the element; its columns are 1:0 and 1:1
    with pytest.raises(
        ModelError, match=r"^output all: model '.*' returns 2 outputs; list the columns of one"
    ):
        load(path, X, output="all")  # not "one output column": it has 3
    np.testing.assert_allclose(
        load(path, X, output="1:0,1:1").local_effects(X).local_effects[:, :, 1], [[1, -1]] * 2
    )


class Weights(nn.Module):
    """x @ w: no 2-D layer gives its width, 3."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.tensor([2.0, -3.0, 0.5], dtype=torch.float64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.w


def test_a_width_mismatch_without_a_2d_layer_is_bad_input(tmp_path: Path):
    path = save(Weights(), tmp_path / "w.pt")
    with pytest.raises(
        ModelError,
        match=r"^model '.*' does not accept rows of 2 features \(.*\); it runs on rows of 3 "
        "features; select the model's inputs with inputs or exclude$",
    ):
        load(path, np.ones((4, 2)))
    X = np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 4.0]])
    np.testing.assert_allclose(load(path, X).predict(X), [2.0, -4.0])


def test_width_mismatch_names_both_widths(mlp_model: Path, cli, sample_dir: Path):
    result = cli("compute", mlp_model, sample_dir / "diabetes.csv", "-o", sample_dir / "x.npz")
    assert result.exit_code == 2
    assert result.stderr.startswith(
        f"error: model '{mlp_model}' does not accept rows of 11 features ("
    )
    assert result.stderr.rstrip().endswith(
        "its first layer takes 10 features; select the model's inputs with --inputs or --exclude"
    )


class Centering(nn.Module):
    """Mixes rows: subtracts the batch mean."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - x.mean(dim=0, keepdim=True)).sum(dim=1)


def batchnorm_in_train_mode() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 1)).train()


def test_models_that_mix_rows_are_refused(tmp_path: Path):
    X = np.random.default_rng(0).normal(size=(20, 3))
    mixing = [
        save(Centering(), tmp_path / "center.pt"),
        save(batchnorm_in_train_mode(), tmp_path / "bn.pt", trace_with=torch.randn(8, 3)),
    ]
    for path in mixing:
        with pytest.raises(ModelError) as info:
            load(path, X)
        assert "mixes rows" in str(info.value) or "fails on a batch" in str(info.value)
        assert "model.eval()" in str(info.value) or "on its own" in str(info.value)


def test_dropout_in_train_mode_is_refused_as_not_deterministic(tmp_path: Path):
    torch.manual_seed(0)
    module = nn.Sequential(nn.Linear(3, 64), nn.Dropout(0.5), nn.Linear(64, 1)).train()
    path = save(module, tmp_path / "drop.pt", trace_with=torch.randn(4, 3))
    with pytest.raises(ModelError, match="is not deterministic"):
        load(path, np.random.default_rng(0).normal(size=(10, 3)))


def test_not_a_torchscript_file(tmp_path: Path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ModelError, match=r"is not a TorchScript archive \(torch.jit.save\)"):
        load(bad, np.zeros((3, 2)))


class Rounded(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.round(2.0 * x[:, 0] - 3.0 * x[:, 1])


class Linear(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 2.0 * x[:, 0] - 3.0 * x[:, 1]


def test_a_step_model_whose_gradients_are_all_zero_is_noted(tmp_path: Path):
    """torch.round: autodiff gives every local effect 0 while the predictions vary; the
    store's notes say so (the effects stay the gradients); a smooth model has no note."""
    X = np.random.default_rng(0).uniform(0, 1, size=(50, 2))
    model = load(save(Rounded(), tmp_path / "round.pt"), X)
    np.testing.assert_array_equal(model.local_effects(X).local_effects, 0.0)
    assert model.describe()["notes"] == [torchscript.FLAT_NOTE]
    assert "notes" not in load(save(Linear(), tmp_path / "linear.pt"), X).describe()
