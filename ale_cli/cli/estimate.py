"""``ale rebin`` and ``ale rhale``: estimators on a cached store (no model, no torch)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ale_cli.cli.app import app
from ale_cli.cli.common import ConfigOption, FeaturesOption, split_names

if TYPE_CHECKING:
    from ale_cli.estimate import EstimateResult

StoreArgument = Annotated[Path, typer.Argument(help="Store written by 'ale compute' (.npz).")]
OutOption = Annotated[
    Path, typer.Option("--out", "-o", help="Summary JSON to write.", show_default=False)
]
CenterOption = Annotated[
    str,
    typer.Option(
        "--center",
        help="Centering: mean (count-weighted mean of the curve is 0), start (f(z_0) = 0) or none.",
    ),
]
BinsOption = Annotated[
    int | None,
    typer.Option("--bins", help="Bins per feature (default: 20).", min=1, show_default=False),
]
EdgesOption = Annotated[
    Path | None,
    typer.Option(
        "--edges",
        help="JSON file with the edges per feature: a previous summary or "
        '{"feature": [edges]}; rows outside are left out and counted.',
        show_default=False,
    ),
]
TimestampOption = Annotated[
    bool,
    typer.Option(
        "--timestamp/--no-timestamp",
        help="Record the creation time; --no-timestamp makes reruns byte-identical.",
    ),
]


def write_with_notes(result: EstimateResult, out: Path, timestamp: bool) -> None:
    """Write the summary and print the run's notes on stderr."""
    from ale_cli.adapters.summary import write_summary

    write_summary(out, result.summary, timestamp=timestamp)
    for note in result.notes:
        typer.echo(f"note: {note}", err=True)


def finish_summary(name: str, result: EstimateResult, out: Path, timestamp: bool) -> None:
    """Write the summary, print the notes (stderr) and the one-line result."""
    write_with_notes(result, out, timestamp)
    feats = result.summary.features
    ok = sum(f.status == "ok" for f in feats)
    bins = " ".join(f"{f.name}={f.n_bins}" if f.status == "ok" else f"{f.name}=-" for f in feats)
    typer.echo(
        f"{name}: {len(feats)} feature{'s' if len(feats) != 1 else ''} ({ok} ok), "
        f"bins {bins}, {result.seconds:.2f} s -> '{out}'"
    )


@app.command(
    epilog="Example: ale rebin out/diabetes-mlp.npz --bins 20 --binning quantile "
    "-o out/diabetes-dale.json"
)
def rebin(
    store: StoreArgument,
    out: OutOption,
    bins: BinsOption = None,
    binning: Annotated[
        str | None,
        typer.Option(
            "--binning",
            help="uniform (equal widths over [min, max], the default) or quantile (type-1 "
            "quantiles, deduplicated).",
            show_default=False,
        ),
    ] = None,
    edges: EdgesOption = None,
    center: CenterOption = "mean",
    features: FeaturesOption = None,
    timestamp: TimestampOption = True,
    config: ConfigOption = None,
) -> None:
    """DALE on fixed bins: bin effects, heterogeneity and standard error from the store."""
    from ale_cli.estimate import RebinRequest
    from ale_cli.estimate import rebin as run

    request = RebinRequest(
        store=store,
        bins=bins,
        binning=binning,
        center=center,
        features=split_names(features, "--features"),
        edges=edges,
    )
    finish_summary("rebin", run(request), out, timestamp)


@app.command(epilog="Example: ale rhale out/diabetes-mlp.npz -o out/diabetes-rhale.json")
def rhale(
    store: StoreArgument,
    out: OutOption,
    max_bins: Annotated[
        int,
        typer.Option("--max-bins", help="K_max: cells of the grid of candidate limits.", min=1),
    ] = 50,
    min_points: Annotated[
        int | None,
        typer.Option(
            "--min-points",
            help="N_ppb: fewest rows per bin (default: ceil(N/20), at least 2).",
            min=2,
            show_default=False,
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
    config: ConfigOption = None,
) -> None:
    """RHALE: automatic variable-size bins minimising heterogeneity, from the store."""
    from ale_cli.estimate import RhaleRequest
    from ale_cli.estimate import rhale as run

    request = RhaleRequest(
        store=store,
        max_bins=max_bins,
        min_points=min_points,
        alpha=alpha,
        grid=grid,
        center=center,
        features=split_names(features, "--features"),
    )
    finish_summary("rhale", run(request), out, timestamp)
