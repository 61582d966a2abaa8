"""The outcome of a command that writes a summary (rebin, rhale, classic, interact)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ale_cli.cli.command import Outcome, Run, out_message, write_out
from ale_cli.summary.model import summary_json

if TYPE_CHECKING:
    from ale_cli.summary.build import EstimateResult


def summary_outcome(
    name: str, result: EstimateResult, out: Path, timestamp: bool, run: Run
) -> Outcome:
    """Write the summary (``-``: standard output) and describe it in one line."""
    to_stdout = write_out(run, out, summary_json(result.summary, timestamp=timestamp))
    feats, items = result.summary.features, result.summary.interactions
    ok = sum(f.status == "ok" for f in (*feats, *items))
    if items:
        grids = " ".join(
            f"{i.name}={i.shape[0]}x{i.shape[1]}" if i.status == "ok" else f"{i.name}=-"
            for i in items
        )
        cached = result.summary.params.get("cached_pairs") or []
        source = f", {len(cached)} from the store" if cached else ""
        what = (
            f"{name} ({result.summary.estimator}{source}): {len(items)} "
            f"pair{'s' if len(items) != 1 else ''} ({ok} ok), cells {grids}"
        )
    else:
        bins = " ".join(
            f"{f.name}={f.n_bins}" if f.status == "ok" else f"{f.name}=-" for f in feats[:50]
        )
        more = f" ... ({len(feats) - 50} more)" if len(feats) > 50 else ""
        what = (
            f"{name}: {len(feats)} feature{'s' if len(feats) != 1 else ''} ({ok} ok), "
            f"bins {bins}{more}"
        )
    return Outcome(
        message=f"{what}, {result.seconds:.2f} s -> {out_message(out)}",
        outputs=(str(out),),
        counts={
            "rows": result.summary.n_rows,
            "features": len(feats),
            "pairs": len(items),
            "ok": ok,
            "not_estimable": len(feats) + len(items) - ok,
        },
        notes=result.notes,
        timings=result.timings,
        seconds=result.seconds,
        details={
            "estimator": result.summary.estimator,
            "params": result.summary.params,
            # how the store's local effects were made (secant: a piecewise-constant model)
            "method": result.summary.store.get("method"),
        },
        data_on_stdout=to_stdout,
    )
