"""The model-and-data option group of ``compute``, ``classic`` and ``interact``.

:func:`model_data_options` adds the two arguments and eleven options that make
one :class:`~ale_cli.estimators.inputs.ModelInputs`, which the command receives as
``inputs``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from ale_cli.cli.command import with_params
from ale_cli.estimators.inputs import ModelInputs

_K = inspect.Parameter.KEYWORD_ONLY


def _option(name: str, annotation: Any, default: Any) -> inspect.Parameter:
    return inspect.Parameter(name, _K, default=default, annotation=annotation)


_ARGUMENTS = [
    inspect.Parameter(
        "model",
        _K,
        annotation=Annotated[
            Path,
            typer.Argument(
                help="Model file: torch.export (.pt2, what PyTorch recommends), TorchScript "
                "(.pt/.ts, deprecated by PyTorch), ONNX (.onnx), skops (.skops), a "
                "pickle (.pkl/.pickle/.joblib, needs --trust-pickle), or a booster with its "
                "extra: XGBoost (.json/.ubj), LightGBM (.txt), CatBoost (.cbm)."
            ),
        ],
    ),
    inspect.Parameter(
        "data",
        _K,
        annotation=Annotated[
            Path,
            typer.Argument(
                help="Data file: CSV (also .csv.gz) or Parquet, or a partitioned Parquet "
                "dataset: a directory of .parquet files or a quoted glob ('data/part-*.parquet')."
            ),
        ],
    ),
]
_GROUP = [
    _option(
        "features",
        Annotated[
            str | None,
            typer.Option(
                "--features",
                help="Comma-separated model inputs to explain (default: all). Finite "
                "differences perturb only these.",
                show_default=False,
            ),
        ],
        None,
    ),
    _option(
        "inputs",
        Annotated[
            str | None,
            typer.Option(
                "--inputs",
                help="Comma-separated data columns the model takes, in the model's order "
                "(default: every column but --exclude, in the file's order).",
                show_default=False,
            ),
        ],
        None,
    ),
    _option(
        "exclude",
        Annotated[
            str | None,
            typer.Option(
                "--exclude",
                help="Comma-separated columns that are not model inputs (e.g. the target).",
                show_default=False,
            ),
        ],
        None,
    ),
    _option(
        "data_format",
        Annotated[
            str | None,
            typer.Option(
                "--data-format",
                help="Format of the data file, csv or parquet (default: by extension).",
                show_default=False,
            ),
        ],
        None,
    ),
    _option(
        "dropna",
        Annotated[
            bool, typer.Option("--dropna", help="Drop rows with NaN/inf values and say how many.")
        ],
        False,
    ),
    _option(
        "drop_nonfinite",
        Annotated[
            bool,
            typer.Option(
                "--drop-nonfinite",
                help="Drop the rows where the model gives NaN/inf (prediction, local effect "
                "or evaluation) and say how many, instead of stopping with exit 1.",
            ),
        ],
        False,
    ),
    _option(
        "model_format",
        Annotated[
            str | None,
            typer.Option(
                "--model-format",
                help="Model format: torch-export, torchscript, onnx, skops, pickle, xgboost, "
                "lightgbm or catboost (default: by extension).",
                show_default=False,
            ),
        ],
        None,
    ),
    _option(
        "output",
        Annotated[
            str | None,
            typer.Option(
                "--output",
                help="Model output to explain. Tensor models: a column INDEX, ELEMENT:INDEX "
                "for a tuple output, or NAME / NAME:INDEX for ONNX outputs. scikit-learn: "
                "predict (regressors' default), proba:CLASS (label or index), decision or "
                "decision:INDEX. Default: the model's only output; classifiers must choose.",
                show_default=False,
            ),
        ],
        None,
    ),
    _option(
        "categorical",
        Annotated[
            str | None,
            typer.Option(
                "--categorical",
                help="Comma-separated integer-coded categorical columns: never perturbed by a "
                "gradient, estimated per level (classic; compute stores their jumps for "
                "rebin and rhale), levels ordered by their similarity in the other inputs. "
                "Text columns of scikit-learn models are categorical automatically.",
                show_default=False,
            ),
        ],
        None,
    ),
    _option(
        "trust",
        Annotated[
            str | None,
            typer.Option(
                "--trust",
                help="Comma-separated types a skops file may load beyond the safe defaults "
                "(ale lists them when they are needed).",
                show_default=False,
            ),
        ],
        None,
    ),
    _option(
        "trust_pickle",
        Annotated[
            bool,
            typer.Option(
                "--trust-pickle",
                help="Allow loading a pickle; this runs code stored in the file, so only for "
                "files from a trusted source.",
            ),
        ],
        False,
    ),
    _option(
        "batch_size",
        Annotated[
            int | None,
            typer.Option(
                "--batch-size",
                help="Rows per model call (default: chosen by the model format; see "
                "'ale info' of a store for what was used).",
                min=1,
                show_default=False,
            ),
        ],
        None,
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
    """Add the model-and-data group to a command; the command receives ``inputs``.

    The model and data arguments come first, then the command's own
    options, then the group's. Values are checked by
    :class:`~ale_cli.estimators.inputs.ModelInputs` (errors name the flag).
    """

    def wrapper(**kw: Any) -> Any:
        group = {name: kw.pop(name) for name in GROUP_NAMES}
        kw["inputs"] = ModelInputs(**group)
        return func(**kw)

    return with_params(func, _GROUP, wrapper, drop=("inputs",), first=_ARGUMENTS)
