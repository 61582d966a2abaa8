"""Options shared by several commands, declared once (the model-and-data group is
:mod:`ale_cli.cli.model_options`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer


def unshown(*decls: str, **kw: Any) -> Any:
    """A ``typer.Option`` whose default is not shown in the help."""
    return typer.Option(*decls, show_default=False, **kw)


FeaturesOption = Annotated[
    str | None,
    unshown("--features", help="Comma-separated features to explain (default: every model input)."),
]
OutOption = Annotated[
    Path, unshown("--out", "-o", help="Summary JSON to write ('-': standard output).")
]
CenterOption = Annotated[
    str,
    typer.Option(
        "--center",
        help="Centering: mean (count-weighted mean of the curve is 0), start (f(z_0) = 0) or none.",
    ),
]
StatisticsOption = Annotated[
    str,
    typer.Option(
        "--statistics",
        help="Definitions of ALED/NALED: ale-cli (a bin crossing zero split at the crossing; "
        "NALED in percentiles of the predictions) or r (R's ale package: bin midpoints, its "
        "normalisation). params.statistics_note says how they differ.",
    ),
]
BinningOption = Annotated[
    str | None,
    unshown(
        "--binning",
        help="uniform (equal widths over [min, max]) or quantile (type-1 quantiles, "
        "deduplicated, as ALEPlot and PyALE). Default: uniform in 'ale rebin', quantile in "
        "'ale classic' and 'ale interact'.",
    ),
]
SummaryArgument = Annotated[
    Path,
    typer.Argument(
        help="Summary JSON written by 'ale rebin', 'ale rhale', 'ale classic' or "
        "'ale interact' ('-': standard input).",
        show_default=False,
    ),
]
MaxBinsOption = Annotated[
    int,
    typer.Option("--max-bins", help="K_max: cells of the RHALE grid of candidate limits.", min=1),
]
SourceStoreOption = Annotated[
    Path | None,
    unshown(
        "--store",
        help="The store the summaries were made from: adds the rug of data values, the "
        "average prediction and violins of the local effects per bin (the data points "
        "on interaction heat maps).",
    ),
]
BinsOption = Annotated[int | None, unshown("--bins", help="Bins per feature (default: 20).", min=1)]
EdgesOption = Annotated[
    Path | None,
    unshown(
        "--edges",
        help="JSON file with the edges per feature ('-': standard input): a previous summary "
        'or {"feature": [edges]}; rows outside are left out and counted.',
    ),
]
TimestampOption = Annotated[
    bool,
    typer.Option(
        "--timestamp/--no-timestamp",
        help="Record the creation time; --no-timestamp makes reruns byte-identical.",
    ),
]
StoreArgument = Annotated[
    Path,
    typer.Argument(
        help="Store written by 'ale compute' (.npz, or a directory store from --engine dask)."
    ),
]
DiscreteOption = Annotated[
    str | None,
    unshown(
        "--discrete",
        help="Comma-separated numeric features estimated per distinct value (adjacent-value "
        "differences); 'auto': every numeric input with 2 to 10 distinct values; 'none': "
        "slopes for every numeric input. Default: the binary (two-valued) numeric inputs. "
        "Text and --categorical columns are always estimated per level.",
    ),
]
BootstrapOption = Annotated[
    int,
    typer.Option(
        "--bootstrap",
        help="B replicates with rows resampled (edges fixed) for percentile bands "
        "ci_low/ci_high (0: none; at most 10,000; no model call).",
        min=0,
    ),
]
CiOption = Annotated[
    float, typer.Option("--ci", help="Level of the bootstrap bands, between 0 and 1.")
]
SeedOption = Annotated[
    int | None,
    unshown("--seed", help="Seed of the bootstrap (same seed, same bands; default: fresh).", min=0),
]
ReadChunkOption = Annotated[
    int,
    typer.Option(
        "--chunk-rows",
        help="Rows of the data file read and evaluated at a time: memory grows with it, the "
        "results do not change (the whole table is read when the inputs need it; a note says "
        "why).",
        min=2,
    ),
]

EngineOption = Annotated[
    str,
    typer.Option(
        "--engine",
        help="Where the work runs: local (this process) or dask (the partitions on the "
        "workers of a Dask cluster; needs pip install ale-cli[dask]). Same results.",
    ),
]
SchedulerOption = Annotated[
    str | None,
    unshown(
        "--scheduler",
        help="Address of the Dask scheduler for --engine dask (e.g. tcp://10.0.0.5:8786; "
        "default: a local cluster of worker processes on this machine).",
    ),
]
