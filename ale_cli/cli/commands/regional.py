"""``ale regional``: regional effects from a store (no model, no torch)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ale_cli.checks import make_request
from ale_cli.cli.command import (
    Outcome,
    Run,
    command,
    counted,
    out_message,
    refuse_stdio,
    write_out,
)
from ale_cli.cli.options import (
    CenterOption,
    EngineOption,
    FeaturesOption,
    MaxBinsOption,
    OutOption,
    SchedulerOption,
    StoreArgument,
    TimestampOption,
    unshown,
)
from ale_cli.engines import engine_for
from ale_cli.estimators import regional as estimator
from ale_cli.io.jsonio import dumps


@command(
    epilog="Example: ale regional out/diabetes-mlp.npz --max-depth 2 --min-drop 0.1 "
    "-o out/diabetes-mlp-regional.json",
    outputs={"out": "summary"},
    inputs=("store",),
)
def regional(
    store: StoreArgument,
    out: OutOption,
    run: Run,
    max_depth: Annotated[
        int, typer.Option("--max-depth", help="Most splits from all rows to a region.", min=1)
    ] = 2,
    min_drop: Annotated[
        float,
        typer.Option(
            "--min-drop",
            help="Keep a split only when it lowers the heterogeneity by this share (from 0 "
            "to below 1).",
            min=0.0,
        ),
    ] = 0.1,
    min_rows: Annotated[
        int | None,
        unshown(
            "--min-rows", help="Fewest rows in a region (default: ceil(N/20), at least 2).", min=2
        ),
    ] = None,
    candidates: Annotated[
        int,
        typer.Option(
            "--candidates",
            help="C: thresholds of a numeric input at its quantiles c/C, c = 1..C-1.",
            min=1,
        ),
    ] = 20,
    search_rows: Annotated[
        str,
        typer.Option(
            "--search-rows",
            metavar="N|all",
            help="Choose the splits on a sample of about this many rows, or 'all' (every "
            "row; the work is rows x inputs x features); the regions' records use every row.",
        ),
    ] = str(estimator.SEARCH_ROWS),
    bins: Annotated[
        int | None,
        unshown(
            "--bins",
            help="Leaf records on this many uniform bins (default: RHALE bins per leaf).",
            min=1,
        ),
    ] = None,
    max_bins: MaxBinsOption = 50,
    center: CenterOption = "mean",
    features: FeaturesOption = None,
    timestamp: TimestampOption = True,
    engine: EngineOption = "local",
    scheduler: SchedulerOption = None,
) -> Outcome:
    """Regional effects: split the rows on the other inputs where a feature's local effects
    disagree, and give each region's curve."""

    refuse_stdio(store, "store", "a store")
    request = make_request(
        estimator.RegionalRequest, locals(), engine=engine_for(engine, scheduler)
    )
    return _outcome(estimator.regional(request), out, timestamp, run)


def _outcome(result: estimator.RegionalResult, out: Path, timestamp: bool, run: Run) -> Outcome:
    """Write the regional summary (``-``: standard output) and describe it in one line."""
    to_stdout = write_out(run, out, dumps(result.summary.to_dict(timestamp=timestamp)))
    regions = result.summary.regions
    shown = " ".join(
        f"{r.name}={len(r.leaves)}" if r.status != "not_estimable" else f"{r.name}=-"
        for r in regions[:50]
    )
    split = sum(r.status == "split" for r in regions)
    params = result.summary.summary.params
    n, searched = result.summary.summary.n_rows, params["searched_rows"]
    sample = f", splits chosen on a sample of {searched:,} of {n:,} rows" if searched < n else ""
    return Outcome(
        message=f"regional: {counted(len(regions), 'feature')} "
        f"({split} split), regions {shown}{sample}, {result.seconds:.2f} s -> "
        f"{out_message(out)}",
        outputs=(str(out),),
        counts={"rows": n, "features": len(regions), "split": split},
        notes=result.notes,
        seconds=result.seconds,
        details={"estimator": "regional", "params": params},
        data_on_stdout=to_stdout,
    )
