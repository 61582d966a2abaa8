"""Figures of a summary of several model outputs (``--output all`` or a list): small
multiples, a row per feature and a column per output, on one y scale per row.

Artists carry a ``gid`` (the SVG ``id``), ``r<i>`` the row of ``names[i]`` and ``o<k>``
the column of the summary's k-th output:

    ``r<i>.o<k>.axes``       the panel
    ``r<i>.o<k>.effect``     Line2D, x = ``edges`` (K+1), y = ``effect``; per level: the
                             levels' positions 0..L-1 and their effects, as dots
    ``r<i>.o<k>.std_band``   PolyCollection between ``effect -/+ std`` (curves only)
    ``r<i>.o<k>.not_estimable``  Text naming the reason
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ale_cli.plot import style
from ale_cli.plot.layout import (
    centered_on_mean,
    centred_text,
    estimator_label,
    few_ticks,
    new_figure,
)
from ale_cli.store.format import output_label, output_records

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ale_cli.store.format import Store
    from ale_cli.summary.model import FeatureSummary, Summary

_PANEL = (2.9, 2.1)  # inches per panel (width, height), titles and ticks included


def output_store(store: Store | None, output: str | None) -> Store | None:
    """The rows of ``output`` (a record's output in a summary of several) in ``store``."""
    if store is None or output is None:
        return store
    names = [output_label(record) for record in output_records(store.meta)]
    return store.select_output(names.index(output))


def _draw(ax: Axes, feat: FeatureSummary, gid: str) -> None:
    """One record on ``ax``: the curve and its +/- STD band, dots per level, or why not."""
    if not feat.estimable:
        text = f"not estimable\n({feat.reason})"
        centred_text(ax, text, fontsize=8, wrap=True, gid=f"{gid}.not_estimable")
        ax.set_xticks([])
        ax.set_yticks([])
        return
    if feat.kind is not None:
        x = np.arange(len(feat.effect), dtype=np.float64)
        ax.plot(x, feat.effect, "o", color=style.CURVE, gid=f"{gid}.effect")
        ax.set_xticks(x, [str(v) for v in (feat.levels or ())] or None, fontsize=7)
        return
    ax.plot(feat.edges, feat.effect, color=style.CURVE, linewidth=1.5, gid=f"{gid}.effect")
    low, high = feat.effect - feat.std, feat.effect + feat.std
    ax.fill_between(feat.edges, low, high, color=style.STD_BAND, alpha=0.35, linewidth=0,
                    gid=f"{gid}.std_band")  # fmt: skip
    few_ticks(ax, 4)


def outputs_figure(summary: Summary, names: Sequence[str], *, ylabel: str | None = None) -> Figure:
    """Features ``names`` of a summary of several outputs: a row of panels per feature,
    a panel per output, each row's panels on one y scale (``ylabel`` on the left)."""
    import matplotlib

    outputs = summary.outputs
    records = {(f.name, f.output): f for f in summary.features}
    rows, cols = len(names), len(outputs)
    words = "centered effect" if centered_on_mean(summary) else "effect"
    with matplotlib.rc_context(style.RC):
        fig = new_figure((_PANEL[0] * cols + 0.6, _PANEL[1] * rows + 0.6), layout="constrained")
        grid = fig.subplots(rows, cols, squeeze=False, sharey="row")
        for i, name in enumerate(names):
            for k, output in enumerate(outputs):
                ax = grid[i][k]
                ax.set_gid(f"r{i}.o{k}.axes")
                feat = records.get((name, output))
                if feat is not None:
                    _draw(ax, feat, f"r{i}.o{k}")
                ax.set_title(f"{name} [{output}]", fontsize=9, loc="left")
                ax.axhline(0.0, color=style.GREY, linewidth=0.6)
            grid[i][0].set_ylabel(ylabel or words, fontsize=8)
        fig.suptitle(
            f"{estimator_label(summary.estimator)}, N = {summary.n_rows:,} rows, {cols} outputs; "
            "band: ± STD (heterogeneity)",
            fontsize=10,
        )
        return fig
