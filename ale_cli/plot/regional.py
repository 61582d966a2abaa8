"""The figure of a feature's regions (``ale regional``): the global curve and each region's,
each centered on its own rows, as its record is.

:func:`regional_figure` returns a Figure on an Agg canvas (never pyplot). Artists' ``gid``
(the SVG ``id``): ``effect_axes``; ``global``, x = the global record's ``edges``, y = its
``effect``; ``region_<id>`` per leaf (node ``id``), x and y from the leaf's record,
labelled by :func:`region_label`; ``legend``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ale_cli.plot import style
from ale_cli.plot.layout import effect_label, figure_legend, new_figure, not_estimable_figure, wrap

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ale_cli.summary.regional import RegionalSummary, RegionNode

#: colours of the regions, in leaf order (then repeated)
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2")


def region_label(node: RegionNode) -> str:
    """A leaf in words with its share of the rows: ``"bmi > 27.5 (61% of rows)"``."""
    return f"{node.label} ({node.share:.0%} of rows)"


def regional_figure(result: RegionalSummary, name: str, *, ylabel: str | None = None) -> Figure:
    """Feature ``name``'s global curve and one curve per region (see the module docstring).

    A feature without a kept split shows its global curve and says so in the title; a
    not-estimable feature gives :func:`~ale_cli.plot.layout.not_estimable_figure`.
    """
    import matplotlib

    regions = result.feature(name)
    summary = result.summary
    if regions.status == "not_estimable":
        return not_estimable_figure(name, regions.reason)
    with matplotlib.rc_context(style.RC):
        fig = new_figure((7.0, 5.2))
        ax = fig.add_axes((0.12, 0.3, 0.84, 0.6), gid="effect_axes")
        record = summary.feature(name)
        (line,) = ax.plot(record.edges, record.effect, color="black", lw=2.0, ls="--", gid="global")
        handles, labels = [line], ["all rows (global)"]
        leaves = [n for n in regions.leaves if n.record is not None and n.parent is not None]
        for i, leaf in enumerate(leaves):
            if (r := leaf.record) is None or r.status != "ok":
                continue
            colour = COLOURS[i % len(COLOURS)]
            (line,) = ax.plot(r.edges, r.effect, color=colour, lw=1.6, gid=f"region_{leaf.id}")
            handles.append(line)
            labels.append(region_label(leaf))
        ax.axhline(0.0, color="0.6", lw=0.8, zorder=0).set_gid("zero")
        ax.set_xlabel(name)
        ax.set_ylabel(effect_label(summary, "centered effect", ylabel, width=45, name_width=40))
        if regions.status == "split":
            title = f"{name}: {len(leaves)} regions, heterogeneity {regions.drop:.0%} lower"
        else:
            title = f"{name}: no split lowers the heterogeneity enough; one region"
        ax.set_title(wrap(title, 70), loc="left")
        figure_legend(fig, handles, labels, ncols=1 if len(handles) > 3 else 2)
        return fig
