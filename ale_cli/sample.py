"""Build the sample datasets and models: ``python -m ale_cli.sample [DIR] [--force]``.

Datasets (small, committed under ``sample_data/``):

- ``diabetes.csv`` / ``.parquet``: scikit-learn's diabetes data (442 rows, the
  10 raw baseline variables and the ``target``), read from the copy inside the
  scikit-learn package, no download.
- ``rhale_synthetic.csv`` / ``.parquet``: the RHALE paper's example,
  y = 0.2 x1 - 5 x2 + 10 x2 1{x3 > 0} + e with x1, x2, x3 ~ U(-1, 1), N = 1000.

Models (rebuilt in seconds with fixed seeds, not committed; ``models/``):

- ``diabetes_mlp.pt``: a small TorchScript MLP trained on the diabetes data
  (standardisation of inputs and target built into the module, so it takes raw
  feature values and predicts the raw target). It is float64 so that its
  gradients can be checked against other routes to 1e-6; float32 models are
  exercised by the tests with their own tolerances.
- ``rhale_synthetic.pt``: the RHALE example's function itself (no noise), so its
  local effects are known exactly: (0.2, -5 + 10 1{x3 > 0}, 0).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from torch import nn

RHALE_N = 1000
RHALE_SEED = 2023
MLP_SEED = 0
DIABETES_FEATURES = ("age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6")


# -- datasets --------------------------------------------------------------------------------


def diabetes_frame():  # type: ignore[no-untyped-def]
    """scikit-learn's diabetes data in original units, with a ``target`` column."""
    from sklearn.datasets import load_diabetes

    bunch = load_diabetes(as_frame=True, scaled=False)
    frame = bunch.frame.copy()
    frame.columns = [*DIABETES_FEATURES, "target"]
    return frame


def rhale_frame(n: int = RHALE_N, seed: int = RHALE_SEED, noise: float = 0.1):  # type: ignore[no-untyped-def]
    """The RHALE paper's example: x ~ U(-1, 1)^3, y = 0.2 x1 - 5 x2 + 10 x2 1{x3>0} + e."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 1.0, size=(n, 3))
    y = 0.2 * x[:, 0] - 5.0 * x[:, 1] + 10.0 * x[:, 1] * (x[:, 2] > 0) + rng.normal(0, noise, n)
    return pd.DataFrame({"x1": x[:, 0], "x2": x[:, 1], "x3": x[:, 2], "y": y})


def write_frame(frame, base: Path) -> list[Path]:  # type: ignore[no-untyped-def]
    """Write ``base.csv`` and ``base.parquet``."""
    csv, parquet = base.with_suffix(".csv"), base.with_suffix(".parquet")
    frame.to_csv(csv, index=False)
    frame.to_parquet(parquet, index=False)
    return [csv, parquet]


# -- models ----------------------------------------------------------------------------------


class RhaleFunction(nn.Module):
    """f(x) = 0.2 x1 - 5 x2 + 10 x2 1{x3 > 0} for x of shape (N, 3)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate = (x[:, 2] > 0).to(x.dtype)
        return 0.2 * x[:, 0] - 5.0 * x[:, 1] + 10.0 * x[:, 1] * gate


class StandardisedMLP(nn.Module):
    """An MLP on standardised inputs that predicts in the target's original units."""

    def __init__(self, x_mean: torch.Tensor, x_std: torch.Tensor, y_mean: float, y_std: float):
        super().__init__()
        width = x_mean.shape[0]
        self.register_buffer("x_mean", x_mean)
        self.register_buffer("x_std", x_std)
        self.register_buffer("y_mean", torch.tensor(y_mean, dtype=x_mean.dtype))
        self.register_buffer("y_std", torch.tensor(y_std, dtype=x_mean.dtype))
        self.net = nn.Sequential(
            nn.Linear(width, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 1)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = (x - self.x_mean) / self.x_std
        return self.net(z).squeeze(-1) * self.y_std + self.y_mean


def train_diabetes_mlp(steps: int = 150) -> StandardisedMLP:
    """Fit the MLP on the diabetes data with a fixed seed (about a second on a CPU).

    Small and briefly trained on purpose: 442 rows overfit a larger or longer-trained
    net into a wiggly function (in-sample R^2 0.98, held-out R^2 < 0), which makes a
    poor example; this one reaches an in-sample R^2 near 0.6, like a linear model.
    """
    frame = diabetes_frame()
    X = torch.tensor(frame[list(DIABETES_FEATURES)].to_numpy(), dtype=torch.float64)
    y = torch.tensor(frame["target"].to_numpy(), dtype=torch.float64)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # 442 x 32 matrices: threads only add overhead
    try:
        torch.manual_seed(MLP_SEED)
        model = StandardisedMLP(X.mean(0), X.std(0), float(y.mean()), float(y.std())).double()
        opt = torch.optim.Adam(model.parameters(), lr=3e-3)
        z = (X - model.x_mean) / model.x_std
        target = (y - y.mean()) / y.std()
        for _ in range(steps):
            opt.zero_grad()
            loss = ((model.net(z).squeeze(-1) - target) ** 2).mean()
            loss.backward()
            opt.step()
    finally:
        torch.set_num_threads(threads)
    return model.eval()


def save_torchscript(module: nn.Module, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.jit.save(torch.jit.script(module.eval()), str(path))
    return path


def build_diabetes_mlp(path: Path) -> Path:
    return save_torchscript(train_diabetes_mlp(), path)


def build_rhale_model(path: Path) -> Path:
    return save_torchscript(RhaleFunction(), path)


#: model file name (under ``models/``) -> builder; later formats add entries here.
MODEL_BUILDERS: dict[str, Callable[[Path], Path]] = {
    "diabetes_mlp.pt": build_diabetes_mlp,
    "rhale_synthetic.pt": build_rhale_model,
}

DATASETS = {"diabetes": diabetes_frame, "rhale_synthetic": rhale_frame}


def build(root: Path, *, force: bool = False) -> list[Path]:
    """Write missing datasets and models under ``root``; returns what was written."""
    written: list[Path] = []
    root.mkdir(parents=True, exist_ok=True)
    for name, make in DATASETS.items():
        base = root / name
        if force or not (
            base.with_suffix(".csv").exists() and base.with_suffix(".parquet").exists()
        ):
            written += write_frame(make(), base)
    for name, builder in MODEL_BUILDERS.items():
        path = root / "models" / name
        if force or not path.exists():
            written.append(builder(path))
    return written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m ale_cli.sample", description=__doc__.split("\n")[0]
    )
    parser.add_argument("root", nargs="?", default="sample_data", type=Path)
    parser.add_argument("--force", action="store_true", help="rebuild everything")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    written = build(args.root, force=args.force)
    for path in written:
        print(f"wrote {path}")
    print(
        f"sample data ready in '{args.root}' ({len(written)} files built, "
        f"{time.perf_counter() - t0:.1f} s)"
    )


if __name__ == "__main__":
    main()
