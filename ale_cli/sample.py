"""Build the sample datasets and models: ``python -m ale_cli.sample [DIR] [--force]``.

Datasets (CSV and Parquet, committed under ``sample_data/``): ``diabetes``
(scikit-learn's 442 rows in raw units, read from its package, no download),
``rhale_synthetic`` (the RHALE paper's example) and ``credit`` (600 synthetic loan
approvals with a text column ``region``). Models (rebuilt in seconds with fixed seeds
under ``models/``, not committed): :data:`MODEL_BUILDERS`; ``diabetes_gbr.onnx`` needs
skl2onnx (the ``test`` extra).
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from torch import nn

CREDIT_NUMERIC = ("age", "income", "debt_ratio")
DIABETES_FEATURES = ("age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6")


def diabetes_frame():  # type: ignore[no-untyped-def]
    """scikit-learn's diabetes data in original units, with a ``target`` column."""
    from sklearn.datasets import load_diabetes

    bunch = load_diabetes(as_frame=True, scaled=False)
    frame = bunch.frame.copy()
    frame.columns = [*DIABETES_FEATURES, "target"]
    return frame


def rhale_frame(n: int = 1000, seed: int = 2023, noise: float = 0.1):  # type: ignore[no-untyped-def]
    """The RHALE paper's example: x ~ U(-1, 1)^3, y = 0.2 x1 - 5 x2 + 10 x2 1{x3>0} + e."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 1.0, size=(n, 3))
    y = 0.2 * x[:, 0] - 5.0 * x[:, 1] + 10.0 * x[:, 1] * (x[:, 2] > 0) + rng.normal(0, noise, n)
    return pd.DataFrame({"x1": x[:, 0], "x2": x[:, 1], "x3": x[:, 2], "y": y})


def credit_frame(n: int = 600, seed: int = 7):  # type: ignore[no-untyped-def]
    """Synthetic loan approvals: logit = -0.5 + 0.04 (age - 45) + 1.2 log(income / 40k)
    - 3 (debt_ratio - 0.4) + region offset (north 0, south -0.6, east 0.4, west 0.2)."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    age = rng.integers(21, 70, n)
    income = np.round(np.exp(rng.normal(np.log(40_000), 0.45, n)), -2)
    debt = np.round(rng.uniform(0.0, 1.0, n), 3)
    regions = np.array(["north", "south", "east", "west"])
    region = regions[rng.integers(0, 4, n)]
    offset = {"north": 0.0, "south": -0.6, "east": 0.4, "west": 0.2}
    logit = (
        -0.5
        + 0.04 * (age - 45)
        + 1.2 * np.log(income / 40_000)
        - 3.0 * (debt - 0.4)
        + np.array([offset[r] for r in region])
    )
    approved = (rng.uniform(size=n) < 1.0 / (1.0 + np.exp(-logit))).astype(int)
    return pd.DataFrame(
        {"age": age, "income": income, "debt_ratio": debt, "region": region, "approved": approved}
    )


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


@functools.lru_cache(maxsize=1)
def train_diabetes_mlp(steps: int = 150) -> StandardisedMLP:
    """Fit the MLP on the diabetes data with a fixed seed (about a second on a CPU).

    Small and briefly trained on purpose (in-sample R^2 near 0.6): a larger one overfits
    442 rows into a wiggly function.
    """
    frame = diabetes_frame()
    X = torch.tensor(frame[list(DIABETES_FEATURES)].to_numpy(), dtype=torch.float64)
    y = torch.tensor(frame["target"].to_numpy(), dtype=torch.float64)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # 442 x 32 matrices: threads only add overhead
    try:
        torch.manual_seed(0)
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
    torch.jit.save(torch.jit.script(module.eval()), str(path))
    return path


def save_exported(module: nn.Module, width: int, path: Path) -> Path:
    """``torch.export`` (what PyTorch recommends over TorchScript), any number of rows."""
    x = torch.zeros(8, width, dtype=next(module.parameters()).dtype)
    batch = torch.export.Dim("batch", min=1)
    program = torch.export.export(module.eval(), (x,), dynamic_shapes=({0: batch},))
    torch.export.save(program, str(path))
    return path


def save_onnx(module: nn.Module, width: int, path: Path) -> Path:
    """Export with the TorchScript-based exporter (no onnxscript needed), dynamic batch."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "legacy exporter" deprecation notice
        torch.onnx.export(
            module.eval(),
            (torch.zeros(2, width, dtype=next(module.parameters()).dtype),),
            str(path),
            dynamo=False,
            input_names=["x"],
            output_names=["y"],
            dynamic_axes={"x": {0: "n"}, "y": {0: "n"}},
        )
    return path


def save_skops(estimator, path: Path) -> Path:  # type: ignore[no-untyped-def]
    import skops.io as sio

    sio.dump(estimator, path)
    return path


def build_diabetes_hgb(path: Path) -> Path:
    from sklearn.ensemble import HistGradientBoostingRegressor

    frame = diabetes_frame()
    model = HistGradientBoostingRegressor(max_iter=100, random_state=0)
    model.fit(frame[list(DIABETES_FEATURES)], frame["target"])
    return save_skops(model, path)


def build_credit_logreg(path: Path) -> Path:
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    frame = credit_frame()
    prep = ColumnTransformer(
        [
            ("num", StandardScaler(), list(CREDIT_NUMERIC)),
            ("cat", OneHotEncoder(handle_unknown="ignore"), ["region"]),
        ]
    )
    model = Pipeline([("prep", prep), ("clf", LogisticRegression())])
    model.fit(frame[[*CREDIT_NUMERIC, "region"]], frame["approved"])
    return save_skops(model, path)


def build_diabetes_gbr_onnx(path: Path) -> Path | None:
    """None (and a note) when skl2onnx cannot be imported: not installed, or broken."""
    try:
        from skl2onnx import to_onnx
    except ImportError as exc:  # a ModuleNotFoundError of skl2onnx or of its dependencies
        print(
            f"skipped {path}: {path.name} needs skl2onnx, which cannot be imported ({exc}); "
            "install the test extra: pip install -e '.[test]'",
            file=sys.stderr,
        )
        return None
    from sklearn.ensemble import GradientBoostingRegressor

    frame = diabetes_frame()
    X = frame[list(DIABETES_FEATURES)].to_numpy(dtype=np.float32)
    model = GradientBoostingRegressor(n_estimators=100, max_depth=3, random_state=0)
    model.fit(X, frame["target"].to_numpy())
    path.write_bytes(
        to_onnx(model, X[:1], target_opset={"": 17, "ai.onnx.ml": 3}).SerializeToString()
    )
    return path


#: model file name (under ``models/``) -> builder (None: an optional model skipped).
MODEL_BUILDERS: dict[str, Callable[[Path], Path | None]] = {
    "diabetes_mlp.pt": lambda path: save_torchscript(train_diabetes_mlp(), path),
    "diabetes_mlp.pt2": lambda path: save_exported(
        train_diabetes_mlp(), len(DIABETES_FEATURES), path
    ),
    "rhale_synthetic.pt": lambda path: save_torchscript(RhaleFunction(), path),
    "diabetes_mlp.onnx": lambda path: save_onnx(train_diabetes_mlp(), len(DIABETES_FEATURES), path),
    "diabetes_hgb.skops": build_diabetes_hgb,
    "credit_logreg.skops": build_credit_logreg,
    "diabetes_gbr.onnx": build_diabetes_gbr_onnx,
}

DATASETS = {"diabetes": diabetes_frame, "rhale_synthetic": rhale_frame, "credit": credit_frame}


def build(root: Path, *, force: bool = False) -> list[Path]:
    """Write missing datasets and models under ``root``; returns what was written."""
    written: list[Path] = []
    root.mkdir(parents=True, exist_ok=True)
    for name, make in DATASETS.items():
        csv, parquet = root / f"{name}.csv", root / f"{name}.parquet"
        if force or not (csv.exists() and parquet.exists()):
            frame = make()
            frame.to_csv(csv, index=False)
            frame.to_parquet(parquet, index=False)
            written += [csv, parquet]
    for name, builder in MODEL_BUILDERS.items():
        path = root / "models" / name
        if force or not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            if (made := builder(path)) is not None:
                written.append(made)
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
