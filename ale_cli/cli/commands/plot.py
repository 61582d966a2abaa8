"""``ale plot``: PNG/SVG figures of a summary."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from ale_cli.checks import names_tuple
from ale_cli.cli.command import Outcome, command, counted, refuse_stdio
from ale_cli.cli.options import SourceStoreOption, SummaryArgument, unshown
from ale_cli.plot.render import DEFAULT_DPI, DPI_RANGE, plot_files


class FigureFormat(StrEnum):
    png = "png"
    svg = "svg"
    both = "both"


OutOption = Annotated[
    Path,
    typer.Option(
        "--out",
        "-o",
        help="Directory to write the figures to (replaced as a whole; it must be new, empty "
        "or a figure directory ale wrote).",
    ),
]

FeaturesOption = Annotated[
    str | None,
    unshown(
        "--features",
        help="Comma-separated feature names (default: all): their figures, and the "
        "heat maps of the interactions that involve any of them.",
    ),
]

YlabelOption = Annotated[
    str | None,
    unshown(
        "--ylabel",
        help="Label of the effect axes (default: names the model output the summary "
        "records, e.g. 'centered effect on probability of class 1').",
    ),
]


@command(
    epilog="Example: ale plot out/diabetes-mlp-rhale.json --store out/diabetes-mlp.npz "
    "-o out/plots --format both",
    outputs={"out": "figures"},
    inputs=("summary", "store"),
)
def plot(
    summary: SummaryArgument,
    out: OutOption = Path("plots"),
    store: SourceStoreOption = None,
    fmt: Annotated[
        FigureFormat, typer.Option("--format", help="png, svg or both.")
    ] = FigureFormat.png,
    features: FeaturesOption = None,
    dpi: Annotated[
        int,
        typer.Option(
            "--dpi",
            help="Resolution of PNG figures (dots per inch).",
            min=DPI_RANGE[0],
            max=DPI_RANGE[1],
        ),
    ] = DEFAULT_DPI,
    ylabel: YlabelOption = None,
    jobs: Annotated[
        int | None,
        unshown(
            "--jobs",
            "-j",
            help="Worker processes drawing figures (default: one per core, at most 4; "
            "1 draws in this process).",
            min=1,
        ),
    ] = None,
) -> Outcome:
    """Draw one figure per feature (effect curve with bands above, bin effects below), an
    overview of all features, and a heat map per second-order interaction ('ale interact');
    print the paths written.

    The output directory is replaced as a whole when every figure is written; it must be
    new, empty or hold only what ale wrote there (its manifest, .ale-plots.json, lists
    the figures; a figure changed since is replaced only with --force, another file never).
    Interrupted (Ctrl-C, SIGTERM), the previous figures stay as they were.
    """
    refuse_stdio(store, "store", "a store")
    formats = ("png", "svg") if fmt is FigureFormat.both else (fmt.value,)
    # SIGTERM raises like Ctrl-C around every command (ale_cli.signals): the figure
    # directory is then left as it was and the workers are stopped
    result = plot_files(
        summary,
        out,
        store_path=store,
        features=names_tuple(features, "features"),
        formats=formats,
        dpi=dpi,
        jobs=jobs,
        ylabel=ylabel,
    )
    note = f", {len(result.not_estimable)} not estimable" if result.not_estimable else ""
    if result.interactions:
        note += f" and {counted(len(result.interactions), 'interaction')}"
    return Outcome(
        message=f"wrote {counted(len(result.paths), 'file')} for "
        f"{counted(len(result.features), 'feature')}{note} to '{out}'",
        outputs=tuple(str(p) for p in result.paths),
        counts={
            "files": len(result.paths),
            "features": len(result.features),
            "not_estimable": len(result.not_estimable),
            "interactions": len(result.interactions),
        },
        lines=tuple(str(p) for p in result.paths),
        details={"directory": str(out)},
        data_on_stdout=True,
    )
