"""``ale export``: a summary as one long CSV/Parquet table for pandas, R and BI tools."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from ale_cli.cli.command import Outcome, Run, command, is_stdio
from ale_cli.cli.options import SummaryArgument, unshown
from ale_cli.outputs.tables import export_summary, table_format


def _table_kind(values: Mapping[str, Any]) -> str:
    """The output kind of -o: a CSV or a Parquet export, by --format or the extension."""
    return "table-" + table_format(values["out"], values.get("fmt"))


@command(
    outputs={"out": _table_kind},
    inputs=("summary",),
    epilog="Example: ale export out/diabetes-rhale.json -o out/effects.parquet; "
    "ale export out/diabetes-rhale.json -o - | head",
)
def export(
    run: Run,
    summary: SummaryArgument,
    out: Annotated[
        Path,
        unshown(
            "--out",
            "-o",
            help="Table to write: .csv, .parquet or .pq (written atomically); '-' writes "
            "CSV to standard output.",
        ),
    ],
    fmt: Annotated[
        str | None,
        unshown(
            "--format",
            metavar="<csv|parquet>",
            help="csv or parquet (default: by the extension of --out).",
        ),
    ] = None,
) -> Outcome:
    """Write the summary as ONE long table with a 'kind' column: a row per feature and
    edge ('edge'; lower/upper = effect -/+ 2 stderr, the band 'ale plot' draws), bin ('bin')
    and statistic ('stat'), per pair and cell ('cell') and grid corner ('corner'); every row
    has estimator and feature, the columns of other kinds are empty (the columns:
    docs/store-and-summary.md, "One tidy table"). Not-estimable features have no rows and
    are counted in the result line, which goes to stderr (stdout carries only the table).
    """
    run.claim_stdout(out, "out")
    result = export_summary(summary, out, fmt=fmt)
    per = ", ".join(f"{name}={n}" for name, n in result.rows.items())
    line = f"export: {result.n_rows} rows" + (f" ({per})" if per else "")
    if result.not_estimable:
        skipped = ", ".join(result.not_estimable)
        line += f"; {len(result.not_estimable)} not estimable, left out ({skipped})"
    target = "stdout" if is_stdio(out) else f"'{out}'"
    return Outcome(
        message=f"{line} -> {target} ({result.fmt})",
        outputs=(str(out),),
        counts={"rows": result.n_rows, **result.rows, "not_estimable": len(result.not_estimable)},
        details={"format": result.fmt, "not_estimable": list(result.not_estimable)},
        data_on_stdout=True,
    )
