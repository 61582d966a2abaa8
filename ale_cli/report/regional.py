"""The report's section on regional effects (``ale regional`` summaries among the inputs):
the features whose heterogeneity a split lowers most, each with its regions in words and
the figure of its global and regional curves."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ale_cli.plot.regional import region_label, regional_figure
from ale_cli.report.figures import svg_text
from ale_cli.summary.model import Summary
from ale_cli.summary.regional import REGIONAL, read_regional

#: the most features with regions drawn in the report (by largest drop)
MAX_FIGURES = 12


def regional_section(
    loaded: Sequence[tuple[str, Summary]],
    markup: Any,
    reused: Mapping[str, Mapping[tuple[str, Any], str]] | None = None,
) -> list[dict[str, Any]]:
    """Per regional summary: its features with a kept split, largest drop first (label,
    feature, drop, the leaves in words, the figure via ``markup``: the one its plot step
    drew when ``reused[label]`` holds it (:mod:`ale_cli.report.reuse`), else inline SVG)."""
    out = []
    for j, (label, summary) in enumerate(loaded):
        if summary.estimator != REGIONAL:
            continue
        found = read_regional(label)
        split = sorted(
            (r for r in found.regions if r.status == "split"), key=lambda r: (-r.drop, r.name)
        )
        rows = []
        for i, r in enumerate(split):
            drawn = (reused or {}).get(label, {}).get(("regional", r.name))
            if i < MAX_FIGURES and drawn is None:
                drawn = svg_text(regional_figure(found, r.name), prefix=f"reg{j}-{i}-")
            svg = markup(drawn) if i < MAX_FIGURES else None
            rows.append(
                {
                    "name": r.name,
                    "drop": r.drop,
                    "regions": [region_label(n) for n in r.leaves],
                    "svg": svg,
                }
            )
        unsplit = [r.name for r in found.regions if r.status == "no_split"]
        out.append({"label": label, "features": rows, "unsplit": unsplit})
    return out
