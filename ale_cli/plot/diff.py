"""``ale diff -o``: overlay figures of two summaries' curves, per feature and an overview.

Per-feature figure, :func:`diff_figure` (one axes, gid ``diff_axes``):
    ``a_effect``, ``b_effect``   Line2D of each curve at its own edges; B minus the
                                 comparison's centering offset (the gap is ``max |diff|``)
    ``a_band``, ``b_band``       PolyCollection ``effect +/- 2 stderr`` of each curve
    ``max_abs``                  Line2D (vertical) where ``|diff|`` is largest
    ``legend``                   the legend
A feature that cannot be compared gets the Text ``not_compared`` with the reason.
:func:`diff_overview`: ``f<i>.axes`` holding ``f<i>.a_effect``, ``f<i>.b_effect``.
Files are named, saved and replaced as a whole as ``ale plot``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ale_cli.plot import style
from ale_cli.plot.directory import figure_directory, save_figure
from ale_cli.plot.layout import centred_text, new_figure
from ale_cli.plot.render import DEFAULT_DPI, OVERVIEW, file_stems

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ale_cli.summary.compare import FeatureComparison
    from ale_cli.summary.model import FeatureSummary, Summary

A_COLOUR = style.BLUE
B_COLOUR = style.VERMILLION
_COLS = 3


def _both(
    ax: Axes,
    a: FeatureSummary,
    b: FeatureSummary,
    comp: FeatureComparison,
    labels: tuple[str, str],
    prefix: str = "",
    band: bool = True,
) -> None:
    """A solid and B dashed (minus the comparison's offset), each with its +/- 2 SE band."""
    offset = comp.difference.offset if comp.difference is not None else 0.0
    sides = ((a, 0.0, A_COLOUR, "a", labels[0], "-"), (b, offset, B_COLOUR, "b", labels[1], "--"))
    for feat, shift, colour, key, text, style_ in sides:
        label = None if prefix else text
        y = feat.effect - shift
        gid = f"{prefix}{key}_effect"
        ax.plot(feat.edges, y, color=colour, lw=1.6, label=label, ls=style_, gid=gid)
        if band:
            se = np.nan_to_num(feat.stderr)
            ax.fill_between(
                feat.edges,
                y - 2 * se,
                y + 2 * se,
                color=colour,
                alpha=0.18,
                lw=0,
                label=None if label is None else f"{label}: +/- 2 SE",
                gid=f"{prefix}{key}_band",
            )


def diff_figure(
    a: FeatureSummary | None,
    b: FeatureSummary | None,
    comp: FeatureComparison,
    *,
    labels: tuple[str, str] = ("A", "B"),
) -> Figure:
    """Both curves of one feature with their +/- 2 SE bands on the same axes."""
    fig = new_figure((7.0, 4.2), "constrained")
    ax = fig.add_subplot(gid="diff_axes")
    if comp.difference is None or a is None or b is None:
        ax.set_axis_off()
        centred_text(ax, f"{comp.name}: not compared\n{comp.reason}", wrap=True, gid="not_compared")
        return fig
    d = comp.difference
    _both(ax, a, b, comp, labels)
    ax.axvline(
        d.max_abs_at, color=style.GREY, lw=0.8, ls=":", label=f"max |diff| {d.max_abs:.4g}"
    ).set_gid("max_abs")
    shift = f" (B shifted by {-d.offset:+.4g} to A's centering)" if d.offset else ""
    ax.set_title(
        f"{comp.name}: max |diff| {d.max_abs:.4g} at {d.max_abs_at:.4g}, "
        f"max z {d.max_z:.3g}{shift}",
        fontsize=9,
    )
    ax.set_xlabel(comp.name)
    ax.set_ylabel("centered effect")
    ax.legend(loc="best", frameon=False).set_gid("legend")
    return fig


def diff_overview(
    sa: Summary,
    sb: Summary,
    comparisons: Sequence[FeatureComparison],
    *,
    labels: tuple[str, str] = ("A", "B"),
) -> Figure:
    """Small overlays of every compared feature, three per row."""
    fa, fb = {f.name: f for f in sa.features}, {f.name: f for f in sb.features}
    n = max(len(comparisons), 1)
    rows = -(-n // _COLS)
    fig = new_figure((3.2 * min(n, _COLS), 2.5 * rows + 0.4), "constrained")
    for i, comp in enumerate(comparisons):
        ax = fig.add_subplot(rows, min(n, _COLS), i + 1, gid=f"f{i}.axes")
        a, b = fa.get(comp.name), fb.get(comp.name)
        if comp.difference is None or a is None or b is None:
            ax.set_axis_off()
            ax.set_title(comp.name, fontsize=9)
            centred_text(ax, "not compared", gid=f"f{i}.not_compared")
            continue
        _both(ax, a, b, comp, labels, prefix=f"f{i}.", band=False)
        ax.set_title(f"{comp.name}: max |diff| {comp.difference.max_abs:.3g}", fontsize=9)
    fig.suptitle(f"A = {labels[0]} (solid), B = {labels[1]} (dashed)", fontsize=9)
    return fig


def render_diff(
    sa: Summary,
    sb: Summary,
    comparisons: Sequence[FeatureComparison],
    out_dir: str | Path,
    *,
    labels: tuple[str, str] = ("A", "B"),
    formats: Sequence[str] = ("png",),
    dpi: int = DEFAULT_DPI,
) -> list[Path]:
    """Write the overview and one overlay per feature into ``out_dir``, replacing it as a
    whole; returns the paths written."""
    out = Path(out_dir)
    fa, fb = {f.name: f for f in sa.features}, {f.name: f for f in sb.features}
    stems = file_stems([c.name for c in comparisons])
    written: list[Path] = []
    with figure_directory(out) as tmp:
        figures = [(OVERVIEW, lambda: diff_overview(sa, sb, comparisons, labels=labels))]
        figures += [
            (stem, lambda c=comp: diff_figure(fa.get(c.name), fb.get(c.name), c, labels=labels))
            for comp, stem in zip(comparisons, stems, strict=True)
        ]
        for stem, draw in figures:
            fig = draw()
            for fmt in formats:
                save_figure(fig, tmp / f"{stem}.{fmt}", fmt, dpi=dpi)
                written.append(out / f"{stem}.{fmt}")
            fig.clear()
    return written
