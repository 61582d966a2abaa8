"""``ale classic``: Apley-Zhu first-order ALE from the model at the bin limits."""

from __future__ import annotations

from typing import Annotated

import typer

from ale_cli.cli.app import app
from ale_cli.cli.common import (
    CategoricalOption,
    ConfigOption,
    DataArgument,
    DataFormatOption,
    DropnaOption,
    ExcludeOption,
    ModelArgument,
    ModelFormatOption,
    OutputOption,
    QuietOption,
    TrustOption,
    TrustPickleOption,
    inputs_request,
    split_names,
)
from ale_cli.cli.estimate import (
    BinsOption,
    CenterOption,
    EdgesOption,
    OutOption,
    TimestampOption,
    finish_summary,
)


@app.command(
    epilog="Example: ale classic sample_data/models/diabetes_mlp.pt sample_data/diabetes.csv "
    "--exclude target --bins 20 -o out/diabetes-mlp-classic.json"
)
def classic(
    model: ModelArgument,
    data: DataArgument,
    out: OutOption,
    bins: BinsOption = None,
    binning: Annotated[
        str | None,
        typer.Option(
            "--binning",
            help="quantile (type-1 quantiles, deduplicated, the default, as ALEPlot and PyALE) "
            "or uniform (equal widths over [min, max]).",
            show_default=False,
        ),
    ] = None,
    edges: EdgesOption = None,
    center: CenterOption = "mean",
    features: Annotated[
        str | None,
        typer.Option(
            "--features",
            help="Comma-separated features to estimate (default: all). The model's inputs "
            "are all data columns but --exclude.",
            show_default=False,
        ),
    ] = None,
    data_format: DataFormatOption = None,
    exclude: ExcludeOption = None,
    dropna: DropnaOption = False,
    model_format: ModelFormatOption = None,
    output: OutputOption = None,
    categorical: CategoricalOption = None,
    trust: TrustOption = None,
    trust_pickle: TrustPickleOption = False,
    batch_size: Annotated[
        int | None,
        typer.Option(
            "--batch-size",
            help="Stacked evaluation rows per model call (default: 50000).",
            min=1,
            show_default=False,
        ),
    ] = None,
    timestamp: TimestampOption = True,
    quiet: QuietOption = False,
    config: ConfigOption = None,
) -> None:
    """Classic ALE (Apley-Zhu): the model at both limits of each row's bin, per feature.

    2 model evaluations per row and feature; works for every model format, with
    or without gradients. Writes the same summary as rebin/rhale (estimator "ale");
    heterogeneity is the per-bin std of the differences divided by the bin width.
    """
    from ale_cli.classic import ClassicRequest
    from ale_cli.classic import classic as run
    from ale_cli.cli.progress import ProgressBars

    request = ClassicRequest(
        inputs=inputs_request(
            model,
            data,
            out,
            data_format=data_format,
            features=None,  # the model's inputs: every column but --exclude
            exclude=exclude,
            dropna=dropna,
            model_format=model_format,
            output=output,
            batch_size=batch_size,
            categorical=categorical,
            trust=trust,
            trust_pickle=trust_pickle,
        ),
        bins=bins,
        binning=binning,
        edges=edges,
        center=center,
        features=split_names(features, "--features"),
    )
    with ProgressBars("classic ALE", quiet=quiet) as progress:
        result = run(request, progress=progress)
    finish_summary("classic", result, out, timestamp)
