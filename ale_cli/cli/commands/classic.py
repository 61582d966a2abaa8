"""``ale classic``: Apley-Zhu first-order ALE from the model at the bin limits."""

from __future__ import annotations

from ale_cli.checks import make_request
from ale_cli.cli.command import Outcome, Run, command, summary_outcome
from ale_cli.cli.model_options import GROUP_ALIASES, GROUP_ALIASES_NOTE, model_data_options
from ale_cli.cli.options import (
    BinningOption,
    BinsOption,
    BootstrapOption,
    CenterOption,
    CiOption,
    DiscreteOption,
    EdgesOption,
    EngineOption,
    OutOption,
    ReadChunkOption,
    SchedulerOption,
    SeedOption,
    StatisticsOption,
    TimestampOption,
)
from ale_cli.data.stream import DEFAULT_CHUNK_ROWS
from ale_cli.engines import engine_for
from ale_cli.estimators.bands import Bootstrap
from ale_cli.estimators.classic import ClassicRequest
from ale_cli.estimators.classic import classic as run_classic
from ale_cli.estimators.inputs import ModelInputs


@command(
    epilog=f"{GROUP_ALIASES_NOTE}\n\n"
    "Example: ale classic sample_data/models/diabetes_mlp.pt sample_data/diabetes.csv "
    "--exclude target --bins 20 -o out/diabetes-mlp-classic.json",
    outputs={"out": "summary"},
    inputs=("model", "data", "edges"),
    aliases=GROUP_ALIASES,  # old spellings, hidden, for one release
)
@model_data_options
def classic(
    inputs: ModelInputs,
    run: Run,
    out: OutOption,
    bins: BinsOption = None,
    binning: BinningOption = None,
    edges: EdgesOption = None,
    center: CenterOption = "mean",
    timestamp: TimestampOption = True,
    bootstrap: BootstrapOption = 0,
    ci: CiOption = 0.95,
    seed: SeedOption = None,
    discrete: DiscreteOption = None,
    chunk_rows: ReadChunkOption = DEFAULT_CHUNK_ROWS,
    engine: EngineOption = "local",
    scheduler: SchedulerOption = None,
    statistics: StatisticsOption = "ale-cli",
) -> Outcome:
    """Classic ALE (Apley-Zhu): the model at both limits of each row's bin, per feature.

    2 model evaluations per row and explained feature; works for every model format, with
    or without gradients. Writes the same summary as rebin/rhale (estimator "ale");
    heterogeneity is the per-bin std of the differences divided by the bin width.
    """
    request = make_request(ClassicRequest, locals(), bootstrap=Bootstrap(bootstrap, ci, seed))
    with run.progress("classic ALE") as progress:
        result = run_classic(request, progress=progress, engine=engine_for(engine, scheduler))
    return summary_outcome("classic", result, out, timestamp, run)
