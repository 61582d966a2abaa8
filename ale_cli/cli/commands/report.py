"""``ale report``: one self-contained HTML page of summaries, a store, an audit, a history."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from ale_cli.cli.command import (
    Outcome,
    Run,
    command,
    counted,
    out_message,
    refuse_stdio,
    write_out,
)
from ale_cli.cli.options import SourceStoreOption, TimestampOption, unshown
from ale_cli.report import build_report


@command(
    epilog="Example: ale report out/diabetes-mlp-rhale.json out/diabetes-mlp-interact.json "
    "--store out/diabetes-mlp.npz --audit out/audit.json -o out/report.html",
    outputs={"out": "html"},
    inputs=("summaries", "store", "audit", "history"),
)
def report(
    run: Run,
    summaries: Annotated[
        list[Path],
        typer.Argument(
            help="Summary JSON files; the first first-order one ranks the features, "
            "interact summaries add heat maps."
        ),
    ],
    out: Annotated[
        Path, unshown("--out", "-o", help="The HTML file to write ('-': standard output).")
    ],
    store: SourceStoreOption = None,
    audit: Annotated[
        Path | None,
        unshown(
            "--audit",
            help="JSON report of 'ale audit --json-report': the verdict banner and its table.",
        ),
    ] = None,
    history: Annotated[
        Path | None,
        unshown(
            "--history",
            help="Directory of earlier runs (one subdirectory of summaries per run, names "
            "in time order, as 'ale run' keeps them): drift per feature and the features "
            "that moved most.",
        ),
    ] = None,
    timestamp: TimestampOption = True,
) -> Outcome:
    """One self-contained HTML page: header, audit verdict, features ranked by importance
    (sortable), every feature's figure and notes, interaction heat maps, drift over runs.

    Nothing on the page is fetched from elsewhere (inline SVG, CSS and script);
    it opens offline and prints.
    """
    refuse_stdio(store, "store", "a file")
    refuse_stdio(audit, "audit", "a file")
    run.claim_stdout(out, "out")
    t0 = time.perf_counter()
    result = build_report(summaries, store=store, audit=audit, history=history, timestamp=timestamp)
    page = result.html.encode("utf-8")
    to_stdout = write_out(run, out, page)
    size = len(page)
    seconds = time.perf_counter() - t0
    verdict = ""
    if result.audit_passed is not None:
        verdict = f", audit {'passed' if result.audit_passed else 'failed'}"
    runs = f", {counted(result.history_runs, 'earlier run')}" if history is not None else ""
    return Outcome(
        message=f"report: {counted(result.features, 'feature')}, "
        f"{counted(result.figures, 'figure')}{verdict}{runs}, "
        f"{size / 1024:.0f} KiB, {seconds:.2f} s -> {out_message(out)}",
        outputs=(str(out),),
        counts={
            "features": result.features,
            "figures": result.figures,
            "interactions": result.interactions,
            "history_runs": result.history_runs,
            "bytes": size,
        },
        timings=result.timings,
        seconds=seconds,
        details={"audit_passed": result.audit_passed},
        data_on_stdout=to_stdout,
    )
