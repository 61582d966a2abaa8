"""Options shared by several commands, declared once."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ale_cli.cli.config import config_callback
from ale_cli.errors import InputError

ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        help="YAML file supplying any option of this command (flat, or a section per "
        "command); flags given on the command line win.",
        callback=config_callback,
        is_eager=True,
        show_default=False,
    ),
]
QuietOption = Annotated[
    bool, typer.Option("--quiet", "-q", help="No progress bar; print only the result line.")
]
FeaturesOption = Annotated[
    str | None,
    typer.Option(
        "--features", help="Comma-separated feature names (default: all).", show_default=False
    ),
]


# -- the model and data options of every command that loads the model (compute, classic)

ModelArgument = Annotated[
    Path,
    typer.Argument(
        help="Model file: TorchScript (.pt/.ts), ONNX (.onnx), skops (.skops) or a "
        "pickle (.pkl/.pickle/.joblib, needs --trust-pickle)."
    ),
]
DataArgument = Annotated[Path, typer.Argument(help="Data file: CSV or Parquet.")]
DataFormatOption = Annotated[
    str | None,
    typer.Option("--format", help="Data format, csv or parquet (default: by extension)."),
]
ExcludeOption = Annotated[
    str | None,
    typer.Option("--exclude", help="Comma-separated columns to leave out (e.g. the target)."),
]
DropnaOption = Annotated[
    bool, typer.Option("--dropna", help="Drop rows with NaN/inf values and say how many.")
]
ModelFormatOption = Annotated[
    str | None,
    typer.Option("--model-format", help="Model format (default: by extension)."),
]
OutputOption = Annotated[
    str | None,
    typer.Option(
        "--output",
        help="Model output to explain. Tensor models: a column INDEX, ELEMENT:INDEX for a "
        "tuple output, or NAME / NAME:INDEX for ONNX outputs. scikit-learn: predict "
        "(regressors' default), proba:CLASS (label or index), decision or decision:INDEX. "
        "Default: the model's only output; classifiers must choose.",
    ),
]
CategoricalOption = Annotated[
    str | None,
    typer.Option(
        "--categorical",
        help="Comma-separated integer-coded categorical columns: held fixed (never "
        "perturbed) and reported as not estimable. Text columns of scikit-learn models "
        "are categorical automatically.",
    ),
]
TrustOption = Annotated[
    str | None,
    typer.Option(
        "--trust",
        help="Comma-separated types a skops file may load beyond the safe defaults "
        "(ale lists them when they are needed).",
    ),
]
TrustPickleOption = Annotated[
    bool,
    typer.Option(
        "--trust-pickle",
        help="Allow loading a pickle; this runs code stored in the file, so only for "
        "files from a trusted source.",
    ),
]


def split_names(value: str | None, option: str) -> tuple[str, ...] | None:
    """``"a, b"`` -> ``("a", "b")``; None stays None; empty names are an error.

    >>> split_names("age, bmi", "--features")
    ('age', 'bmi')
    """
    if value is None:
        return None
    names = tuple(part.strip() for part in value.split(","))
    if not names or any(not n for n in names):
        raise InputError(f"{option} expects comma-separated names, got '{value}'")
    return names
