"""Figures of discrete and categorical features: one dot per level, in the estimated order.

Artists (``gid``), for a feature with K levels at x = 0 .. K-1:

``levels``      Line2D of dots, y = ``effect`` (K,)
``level_se``    LineCollection of bars ``effect +/- 2 stderr`` (estimation uncertainty)
``level_std``   LineCollection of wide light bars ``effect +/- std`` (heterogeneity)
``level_ci``    LineCollection of dotted bars from ``ci_low`` to ``ci_high`` beside each
                dot (bootstrap band; only when the summary has one)
``zero``        Line2D at y = 0
``legend``      the figure legend (single-feature figure)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ale_cli.plot import style
from ale_cli.plot.layout import bootstrap_label, effect_label, figure_legend, new_figure

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ale_cli.summary.model import FeatureSummary, Summary


def level_artists(
    ax: Axes, feat: FeatureSummary, prefix: str = "", *, labels: bool, band: str = ""
) -> None:
    """Dots, +/- 2 SE bars and +/- STD bars of one per-level feature on ``ax``; the
    bootstrap band (legend text ``band``) when the feature has one."""
    x = np.arange(len(feat.effect), dtype=np.float64)
    if feat.ci_low is not None and feat.ci_high is not None:
        ax.vlines(
            x + 0.15,
            feat.ci_low,
            feat.ci_high,
            color=style.ORANGE,
            linestyle=":",
            linewidth=1.6,
            gid=f"{prefix}level_ci",
            label=band if labels else "_nolegend_",
        )
    ax.vlines(
        x,
        feat.effect - feat.std,
        feat.effect + feat.std,
        color=style.STD_BAND,
        linewidth=8,
        alpha=0.5,
        gid=f"{prefix}level_std",
        label="± STD (heterogeneity)" if labels else "_nolegend_",
    )
    ax.vlines(
        x,
        feat.effect - 2 * feat.stderr,
        feat.effect + 2 * feat.stderr,
        color=style.STDERR,
        linewidth=1.5,
        gid=f"{prefix}level_se",
        label="± 2 SE (estimation uncertainty)" if labels else "_nolegend_",
    )
    ax.plot(
        x,
        feat.effect,
        linestyle="none",
        marker="o",
        color=style.CURVE,
        zorder=3,
        gid=f"{prefix}levels",
        label=f"ALE per level ({feat.kind})" if labels else "_nolegend_",
    )
    ax.axhline(0.0, color=style.GREY, linewidth=0.8, gid=f"{prefix}zero")
    ax.set_xticks(x, [f"{v:g}" if isinstance(v, float) else str(v) for v in feat.levels or ()])
    ax.set_xlim(-0.5, len(x) - 0.5)


def level_figure(summary: Summary, feat: FeatureSummary, *, ylabel: str | None = None) -> Figure:
    """One feature's per-level effect: dots with +/- 2 SE and +/- STD bars, legend below."""
    import matplotlib

    with matplotlib.rc_context(style.RC):
        fig = new_figure((7.0, 5.0))
        ax = fig.add_axes((0.14, 0.3, 0.8, 0.58))
        ax.set_gid("effect_axes")
        level_artists(ax, feat, labels=True, band=bootstrap_label(summary))
        ax.set_ylabel(effect_label(summary, "centered effect", ylabel, width=45, name_width=40))
        order = "estimated order" if feat.kind == "categorical" else "numeric order"
        ax.set_xlabel(f"{feat.name} (levels in {order})")
        counts = ", ".join(str(int(c)) for c in feat.counts)
        ax.set_title(f"{feat.name}: {len(feat.counts)} levels, rows {counts}", loc="left")
        handles, texts = ax.get_legend_handles_labels()
        figure_legend(fig, handles, texts, ncols=2)
    return fig
