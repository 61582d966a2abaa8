"""``ale compute`` and ``ale info``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ale_cli.cli.app import app
from ale_cli.cli.common import (
    BatchSizeOption,
    CategoricalOption,
    ConfigOption,
    DataArgument,
    DataFormatOption,
    DropnaOption,
    ExcludeOption,
    FeaturesOption,
    ModelArgument,
    ModelFormatOption,
    OutputOption,
    QuietOption,
    TrustOption,
    TrustPickleOption,
    inputs_request,
)
from ale_cli.errors import InputError


@app.command(
    epilog="Example: ale compute sample_data/models/diabetes_mlp.pt "
    "sample_data/diabetes.csv --exclude target -o out/diabetes-mlp.npz"
)
def compute(
    model: ModelArgument,
    data: DataArgument,
    out: Annotated[Path, typer.Option("--out", "-o", help="Store to write (.npz).")] = Path(
        "effects.npz"
    ),
    data_format: DataFormatOption = None,
    features: FeaturesOption = None,
    exclude: ExcludeOption = None,
    dropna: DropnaOption = False,
    model_format: ModelFormatOption = None,
    output: OutputOption = None,
    categorical: CategoricalOption = None,
    method: Annotated[
        str,
        typer.Option(
            "--method",
            help="auto, autodiff or finite-differences. auto: autodiff for TorchScript and "
            "translatable ONNX graphs, finite differences otherwise.",
        ),
    ] = "auto",
    step: Annotated[
        float | None,
        typer.Option(
            "--step",
            help="Finite-difference step as a fraction of each feature's std (default: "
            "1e-5 for smooth float64 models, 1e-2 for float32 ONNX graphs, 0.05 for "
            "piecewise-constant models such as trees, chosen automatically).",
        ),
    ] = None,
    trust: TrustOption = None,
    trust_pickle: TrustPickleOption = False,
    batch_size: BatchSizeOption = None,
    pairs: Annotated[
        list[str] | None,
        typer.Option(
            "--pairs",
            help="Also cache the mixed derivatives d2f/dx_a dx_b of the pair A,B for "
            "'ale interact' (repeat for more pairs; needs autodiff).",
            show_default=False,
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Recompute even if the store is up to date.")
    ] = False,
    quiet: QuietOption = False,
    config: ConfigOption = None,
) -> None:
    """Compute the local effects (model gradients at every row) and cache them in a store.

    Reuses the store at -o when it was made from the same model bytes, data bytes
    and options (a cache hit); --force recomputes.
    """
    from ale_cli.cli.progress import ProgressBars
    from ale_cli.compute import compute as run
    from ale_cli.models.base import METHODS
    from ale_cli.pairs import parse_pairs

    if method not in METHODS:
        raise InputError(f"--method must be one of {', '.join(METHODS)}, got '{method}'")
    if step is not None and not step > 0:
        raise InputError(f"--step must be a positive fraction of each feature's std, got {step}")
    request = inputs_request(
        model,
        data,
        out,
        data_format=data_format,
        features=features,
        exclude=exclude,
        dropna=dropna,
        model_format=model_format,
        output=output,
        batch_size=batch_size,
        categorical=categorical,
        trust=trust,
        trust_pickle=trust_pickle,
        method=method,
        step=step,
        pairs=parse_pairs(pairs, "--pairs"),
    )
    with ProgressBars("local effects", "mixed derivatives", quiet=quiet) as progress:
        result = run(request, force=force, progress=progress)
    for note in () if quiet else result.notes:
        typer.echo(f"note: {note}", err=True)
    if result.reason is not None and not quiet:
        typer.echo(f"recomputed '{out}': {result.reason} since it was made", err=True)
    if result.rows_dropped:
        typer.echo(
            f"dropped {result.rows_dropped} rows with NaN or infinite values (--dropna)", err=True
        )
    if result.cache_hit:
        typer.echo(
            f"cache hit: '{out}' already holds local effects for this model, data and options "
            f"({result.n_rows} rows x {result.n_features} features, {result.method}); "
            "--force recomputes"
        )
    else:
        typer.echo(
            f"computed local effects: {result.n_rows} rows x {result.n_features} features, "
            f"{result.method}, {result.seconds:.2f} s -> '{out}' (cache miss)"
        )


def _flatten(prefix: str, value: object, rows: list[tuple[str, str]]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), item, rows)
    elif isinstance(value, list) and len(value) > 12:
        shown = ", ".join(str(v) for v in value[:12])
        rows.append((prefix, f"{shown}, ... ({len(value)} items)"))
    elif isinstance(value, list):
        rows.append((prefix, ", ".join(str(v) for v in value) or "-"))
    elif isinstance(value, float):
        rows.append((prefix, f"{value:.4g}"))
    else:
        rows.append((prefix, "-" if value is None else str(value)))


@app.command(epilog="Example: ale info out/diabetes-mlp.npz --json")
def info(
    store: Annotated[Path, typer.Argument(help="Store written by 'ale compute'.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the meta as JSON.")] = False,
) -> None:
    """Show how a store was made: model, data, method, output, row counts and timings."""
    from ale_cli.adapters.jsonio import dumps
    from ale_cli.adapters.store import read_meta

    if store.is_dir():
        raise InputError(f"store '{store}' is a directory, expected an .npz file")
    meta = read_meta(store)
    if as_json:
        typer.echo(dumps(meta), nl=False)
        return
    rows: list[tuple[str, str]] = []
    _flatten("", meta, rows)
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        typer.echo(f"{key.ljust(width)}  {value}")
