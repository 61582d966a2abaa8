"""``ale interact``: second-order effects of feature pairs (classic ALE or DALE)."""

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
from ale_cli.cli.estimate import EdgesOption, OutOption, TimestampOption, write_with_notes


@app.command(
    epilog="Example: ale interact sample_data/models/diabetes_mlp.pt sample_data/diabetes.csv "
    "--exclude target --pair s1,s2 --store out/diabetes-mlp.npz -o out/diabetes-interact.json"
)
def interact(
    model: ModelArgument,
    data: DataArgument,
    out: OutOption,
    pair: Annotated[
        list[str] | None,
        typer.Option(
            "--pair",
            help="Two features A,B whose second-order effect to estimate (repeat for more pairs).",
            show_default=False,
        ),
    ] = None,
    estimator: Annotated[
        str | None,
        typer.Option(
            "--estimator",
            help="dale (mixed derivatives at the data points, needs autodiff: TorchScript or "
            "a translatable ONNX graph) or ale (Apley-Zhu finite differences at the cell "
            "corners, any model). Default: dale when the model has autodiff, else ale.",
            show_default=False,
        ),
    ] = None,
    bins: Annotated[
        int | None,
        typer.Option(
            "--bins",
            help="Bins per feature (default: 10), K x K cells.",
            min=1,
            show_default=False,
        ),
    ] = None,
    binning: Annotated[
        str | None,
        typer.Option(
            "--binning",
            help="quantile (type-1 quantiles, deduplicated; the default, as ALEPlot) or "
            "uniform (equal widths over [min, max]).",
            show_default=False,
        ),
    ] = None,
    edges: EdgesOption = None,
    store: Annotated[
        Path | None,
        typer.Option(
            "--store",
            help="Store from 'ale compute --pairs A,B': its mixed derivatives are used when "
            "it was made from the same model, data and options (dale only).",
            show_default=False,
        ),
    ] = None,
    data_format: DataFormatOption = None,
    features: FeaturesOption = None,
    exclude: ExcludeOption = None,
    dropna: DropnaOption = False,
    model_format: ModelFormatOption = None,
    output: OutputOption = None,
    categorical: CategoricalOption = None,
    trust: TrustOption = None,
    trust_pickle: TrustPickleOption = False,
    batch_size: BatchSizeOption = None,
    timestamp: TimestampOption = True,
    quiet: QuietOption = False,
    config: ConfigOption = None,
) -> None:
    """Second-order ALE of feature pairs: the doubly-centered interaction surface on a grid
    of cells, with empty cells filled from the nearest non-empty cell.
    """
    from ale_cli.cli.progress import ProgressBars
    from ale_cli.interact import InteractRequest
    from ale_cli.interact import interact as run
    from ale_cli.pairs import parse_pairs

    request = InteractRequest(
        inputs=inputs_request(
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
        ),
        pairs=parse_pairs(pair, "--pair"),
        bins=bins,
        binning=binning,
        estimator=estimator,
        store=store,
        edges=edges,
    )
    with ProgressBars("interact", quiet=quiet) as progress:
        result = run(request, progress=progress)
    write_with_notes(result, out, timestamp)
    items = result.summary.interactions
    ok = sum(i.status == "ok" for i in items)
    grids = " ".join(
        f"{a},{b}={i.shape[0]}x{i.shape[1]}" if i.status == "ok" else f"{a},{b}=-"
        for i in items
        for a, b in [i.features]
    )
    cached = result.summary.params.get("cached_pairs") or []
    source = f", {len(cached)} from the store" if cached else ""
    typer.echo(
        f"interact ({result.summary.estimator}{source}): {len(items)} "
        f"pair{'s' if len(items) != 1 else ''} ({ok} ok), cells {grids}, "
        f"{result.seconds:.2f} s -> '{out}'"
    )
