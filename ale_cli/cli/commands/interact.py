"""``ale interact``: second-order effects of feature pairs (classic ALE or DALE)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from ale_cli.checks import make_request
from ale_cli.cli.command import Outcome, Run, command, refuse_stdio, summary_outcome
from ale_cli.cli.model_options import GROUP_ALIASES, GROUP_ALIASES_NOTE, model_data_options
from ale_cli.cli.options import (
    BinningOption,
    EdgesOption,
    EngineOption,
    OutOption,
    ReadChunkOption,
    SchedulerOption,
    TimestampOption,
    unshown,
)
from ale_cli.data.stream import DEFAULT_CHUNK_ROWS
from ale_cli.engines import engine_for
from ale_cli.estimators.inputs import ModelInputs
from ale_cli.estimators.interact import InteractRequest
from ale_cli.estimators.interact import interact as run_interact


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
        unshown(
            "--pair",
            help="Two features A,B whose second-order effect to estimate (repeat for more "
            "pairs). Default: every pair of --features.",
        ),
    ] = None,
    estimator: Annotated[
        str | None,
        unshown(
            "--estimator",
            help="dale (mixed derivatives at the data points, needs autodiff: TorchScript or "
            "a translatable ONNX graph) or ale (Apley-Zhu finite differences at the cell "
            "corners, any model). Default: dale when the model has autodiff, else ale.",
        ),
    ] = None,
    bins: Annotated[
        int | None, unshown("--bins", help="Bins per feature (default: 10), K x K cells.", min=1)
    ] = None,
    binning: BinningOption = None,
    edges: EdgesOption = None,
    store: Annotated[
        Path | None,
        unshown(
            "--store",
            help="Store from 'ale compute --pair A,B': its mixed derivatives are used when "
            "it was made from the same model, data and options (dale only).",
        ),
    ] = None,
    timestamp: TimestampOption = True,
    chunk_rows: ReadChunkOption = DEFAULT_CHUNK_ROWS,
    engine: EngineOption = "local",
    scheduler: SchedulerOption = None,
) -> Outcome:
    """Second-order ALE of feature pairs: the doubly-centered interaction surface on a grid
    of cells, with empty cells filled from the nearest non-empty cell."""
    refuse_stdio(store, "store", "a store")
    request = make_request(InteractRequest, locals(), pairs=tuple(pairs or ()))
    with run.progress("interact") as progress:
        result = run_interact(request, engine=engine_for(engine, scheduler), progress=progress)
    return summary_outcome("interact", result, out, timestamp, run)
