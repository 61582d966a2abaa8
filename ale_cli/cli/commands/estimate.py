"""``ale rebin`` and ``ale rhale``: estimators on a cached store (no model, no torch)."""

from __future__ import annotations

from typing import Annotated

import typer

from ale_cli.checks import make_request
from ale_cli.cli.command import Outcome, Run, command, refuse_stdio, summary_outcome
from ale_cli.cli.options import (
    BinningOption,
    BinsOption,
    BootstrapOption,
    CenterOption,
    CiOption,
    EdgesOption,
    EngineOption,
    FeaturesOption,
    MaxBinsOption,
    OutOption,
    SchedulerOption,
    SeedOption,
    StatisticsOption,
    StoreArgument,
    TimestampOption,
    unshown,
)
from ale_cli.engines import engine_for
from ale_cli.estimators import dale
from ale_cli.estimators.bands import Bootstrap


@command(
    epilog="Example: ale rebin out/diabetes-mlp.npz --bins 20 --binning quantile "
    "-o out/diabetes-mlp-dale.json",
    outputs={"out": "summary"},
    inputs=("store", "edges"),
)
def rebin(
    store: StoreArgument,
    out: OutOption,
    run: Run,
    bins: BinsOption = None,
    binning: BinningOption = None,
    edges: EdgesOption = None,
    center: CenterOption = "mean",
    features: FeaturesOption = None,
    timestamp: TimestampOption = True,
    bootstrap: BootstrapOption = 0,
    ci: CiOption = 0.95,
    seed: SeedOption = None,
    engine: EngineOption = "local",
    scheduler: SchedulerOption = None,
    statistics: StatisticsOption = "ale-cli",
) -> Outcome:
    """DALE on fixed bins: bin effects, heterogeneity and standard error from the store."""
    refuse_stdio(store, "store", "a store")
    request = make_request(
        dale.RebinRequest,
        locals(),
        bootstrap=Bootstrap(bootstrap, ci, seed),
        engine=engine_for(engine, scheduler),
    )
    return summary_outcome("rebin", dale.rebin(request), out, timestamp, run)


@command(
    epilog="Example: ale rhale out/diabetes-mlp.npz -o out/diabetes-mlp-rhale.json",
    outputs={"out": "summary"},
    inputs=("store",),
)
def rhale(
    store: StoreArgument,
    out: OutOption,
    run: Run,
    max_bins: MaxBinsOption = 50,
    min_points: Annotated[
        int | None,
        unshown(
            "--min-points",
            help="N_ppb: fewest rows per bin (default: ceil(N/20), at least 2).",
            min=2,
        ),
    ] = None,
    alpha: Annotated[
        float,
        typer.Option(
            "--alpha", help="Discount for large bins, tau = 1 - alpha n_k / N.", min=0.0, max=1.0
        ),
    ] = 0.2,
    grid: Annotated[
        str,
        typer.Option("--grid", help="Grid cells: uniform or quantile (type-1 quantiles)."),
    ] = "uniform",
    center: CenterOption = "mean",
    features: FeaturesOption = None,
    timestamp: TimestampOption = True,
    bootstrap: BootstrapOption = 0,
    ci: CiOption = 0.95,
    seed: SeedOption = None,
    engine: EngineOption = "local",
    scheduler: SchedulerOption = None,
    statistics: StatisticsOption = "ale-cli",
) -> Outcome:
    """RHALE: automatic variable-size bins minimising heterogeneity, from the store."""
    refuse_stdio(store, "store", "a store")
    request = make_request(
        dale.RhaleRequest,
        locals(),
        bootstrap=Bootstrap(bootstrap, ci, seed),
        engine=engine_for(engine, scheduler),
    )
    return summary_outcome("rhale", dale.rhale(request), out, timestamp, run)
