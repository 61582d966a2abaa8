"""The model-and-data option group of ``compute``, ``classic`` and ``interact``: two
arguments and eleven options that make one :class:`~ale_cli.estimators.inputs.ModelInputs`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from ale_cli.cli.command import option, with_params
from ale_cli.estimators.inputs import ModelInputs

_K = inspect.Parameter.KEYWORD_ONLY


def _argument(name: str, help: str) -> inspect.Parameter:
    return inspect.Parameter(name, _K, annotation=Annotated[Path, typer.Argument(help=help)])


_ARGUMENTS = [
    _argument(
        "model",
        "Model file: torch.export (.pt2, what PyTorch recommends), TorchScript "
        "(.pt/.ts, deprecated by PyTorch), ONNX (.onnx), skops (.skops), a "
        "pickle (.pkl/.pickle/.joblib, needs --trust-pickle), or a booster with its "
        "extra: XGBoost (.json/.ubj), LightGBM (.txt), CatBoost (.cbm); or an MLflow "
        "model directory, models:/NAME/VERSION or runs:/ID/PATH (the mlflow extra).",
    ),
    _argument(
        "data",
        "Data file: CSV (also .csv.gz) or Parquet, or a partitioned Parquet "
        "dataset: a directory of .parquet files or a quoted glob ('data/part-*.parquet').",
    ),
]
_GROUP = [
    option(
        "--features",
        "Comma-separated model inputs to explain (default: all). Finite "
        "differences perturb only these.",
    ),
    option(
        "--inputs",
        "Comma-separated data columns the model takes, in the model's order "
        "(default: every column but --exclude, in the file's order).",
    ),
    option("--exclude", "Comma-separated columns that are not model inputs (e.g. the target)."),
    option("--data-format", "Format of the data file, csv or parquet (default: by extension)."),
    option("--dropna", "Drop rows with NaN/inf values and say how many.", bool),
    option(
        "--drop-nonfinite",
        "Drop the rows where the model gives NaN/inf (prediction, local effect "
        "or evaluation) and say how many, instead of stopping with exit 1.",
        bool,
    ),
    option(
        "--model-format",
        "Model format: torch-export, torchscript, onnx, skops, pickle, xgboost, "
        "lightgbm or catboost (default: by extension).",
    ),
    option(
        "--output",
        "Model output to explain. Tensor models: a column INDEX, ELEMENT:INDEX "
        "for a tuple output, or NAME / NAME:INDEX for ONNX outputs. scikit-learn: "
        "predict (regressors' default), proba:CLASS (label or index), decision or "
        "decision:INDEX. scikit-learn and torch models: 'all' (every class, or every "
        "column) or a list such as proba:0,proba:2 or 0,2, computed in one pass, a "
        "curve per output (compute, classic). Default: the model's only output; "
        "classifiers must choose.",
    ),
    option(
        "--categorical",
        "Comma-separated integer-coded categorical columns: never perturbed by a "
        "gradient, estimated per level (classic; compute stores their jumps for "
        "rebin and rhale), levels ordered by their similarity in the other inputs. "
        "Text columns of scikit-learn models are categorical automatically.",
    ),
    option(
        "--trust",
        "Comma-separated types a skops file may load beyond the safe defaults "
        "(ale lists them when they are needed).",
    ),
    option(
        "--trust-pickle",
        "Allow loading a pickle; this runs code stored in the file, so only for "
        "files from a trusted source.",
        bool,
    ),
    option(
        "--batch-size",
        "Rows per model call (default: chosen by the model format; see "
        "'ale info' of a store for what was used).",
        int | None,
        min=1,
    ),
]
GROUP_NAMES = tuple(p.name for p in (*_ARGUMENTS, *_GROUP))
#: Old spellings of the group's options, hidden and kept for one release (``--format``
#: now always means the format of a command's output).
GROUP_ALIASES = {"--format": "data_format"}
#: What the help of a command with the group says about them.
GROUP_ALIASES_NOTE = (
    "Renamed: --format (the data file's format) is now --data-format; the old spelling "
    "still works in this release."
)


def model_data_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add the model-and-data group to a command, which receives ``inputs``: the model
    and data arguments first, then the command's own options, then the group's."""

    def wrapper(**kw: Any) -> Any:
        group = {name: kw.pop(name) for name in GROUP_NAMES}
        kw["inputs"] = ModelInputs(**group)
        return func(**kw)

    return with_params(func, _GROUP, wrapper, drop=("inputs",), first=_ARGUMENTS)
