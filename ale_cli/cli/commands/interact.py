"""``ale interact``: second-order effects of feature pairs (classic ALE or DALE)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ale_cli.cli.command import Outcome, Run, command, refuse_stdio
from ale_cli.cli.model_options import GROUP_ALIASES, GROUP_ALIASES_NOTE, model_data_options
from ale_cli.cli.options import (
    EdgesOption,
    EngineOption,
    OutOption,
    ReadChunkOption,
    SchedulerOption,
    TimestampOption,
)
from ale_cli.cli.outcomes import summary_outcome
from ale_cli.data.stream import DEFAULT_CHUNK_ROWS
from ale_cli.estimators.inputs import ModelInputs
from ale_cli.estimators.interact import InteractRequest
from ale_cli.estimators.interact import interact as run_interact

PairBinsOption = Annotated[
    int | None,
    typer.Option(
        "--bins", help="Bins per feature (default: 10), K x K cells.", min=1, show_default=False
    ),
]


@command(
    epilog=f"{GROUP_ALIASES_NOTE}\n\n"
    "Example: ale interact sample_data/models/diabetes_mlp.pt sample_data/diabetes.csv "
    "--exclude target --pair s1,s2 --store out/diabetes-mlp.npz -o out/diabetes-mlp-interact.json",
    outputs={"out": "summary"},
    inputs=("model", "data", "store", "edges"),
    aliases=GROUP_ALIASES,  # old spellings, hidden, for one release
)
@model_data_options
def interact(
    inputs: ModelInputs,
    run: Run,
    out: OutOption,
    pairs: Annotated[
        list[str] | None,
        typer.Option(
            "--pair",
            help="Two features A,B whose second-order effect to estimate (repeat for more "
            "pairs). Default: every pair of --features.",
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
    bins: PairBinsOption = None,
    binning: Annotated[
        str | None,
        typer.Option(
            "--binning",
            help="quantile (type-1 quantiles, deduplicated; the default here, as ALEPlot, and "
            "in 'ale classic') or uniform (equal widths over [min, max]; the default of "
            "'ale rebin').",
            show_default=False,
        ),
    ] = None,
    edges: EdgesOption = None,
    store: Annotated[
        Path | None,
        typer.Option(
            "--store",
            help="Store from 'ale compute --pair A,B': its mixed derivatives are used when "
            "it was made from the same model, data and options (dale only).",
            show_default=False,
        ),
    ] = None,
    timestamp: TimestampOption = True,
    chunk_rows: ReadChunkOption = DEFAULT_CHUNK_ROWS,
    engine: EngineOption = "local",
    scheduler: SchedulerOption = None,
) -> Outcome:
    """Second-order ALE of feature pairs: the doubly-centered interaction surface on a grid
    of cells, with empty cells filled from the nearest non-empty cell. A data file is read
    --chunk-rows rows at a time; a store (--store) by its own chunks. --engine dask runs
    the model calls on the partitions of the data on the workers of a Dask cluster.
    """

    refuse_stdio(store, "store", "a store")
    request = InteractRequest(
        inputs=inputs,
        pairs=tuple(pairs or ()),
        bins=bins,
        binning=binning,
        estimator=estimator,
        store=store,
        edges=edges,
        chunk_rows=chunk_rows,
        engine=engine,
        scheduler=scheduler,
    )
    with run.progress("interact") as progress:
        result = run_interact(request, progress=progress)
    return summary_outcome("interact", result, out, timestamp, run)
