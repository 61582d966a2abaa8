"""First-order ALE figures: one feature (a curve, or dots per level), the overview grid.

Figures have an Agg canvas (never pyplot). Artists carry a ``gid`` (the SVG ``id``);
K bins (z_{k-1}, z_k], z_0 in the first; :func:`feature_figure`, two panels:
    ``effect_axes``      top axes
    ``effect``           Line2D, x = ``edges`` (K+1), y = ``effect`` (K+1), the centered ALE
    ``std_band``         PolyCollection between ``effect -/+ std`` (heterogeneity)
    ``stderr_upper``     dashed Line2D, y = ``effect + 2 stderr``; ``stderr_lower`` minus
    ``ci_high``          dotted Line2D, y = ``ci_high``; ``ci_low`` (bootstrap band, if any)
    ``rug``              Line2D of ``|`` at the data values (store only; at most
                         ``marks.RUG_MAX``, quantile-subsampled)
    ``mean_prediction``  Line2D at y = 0 (store only, default centering only)
    ``bins_axes``        bottom axes
    ``bin_<k>``          Rectangle x = ``edges[k]``, width ``edges[k+1] - edges[k]``, height
                         ``bin_effect[k]``; grey and hatched where ``bin_filled[k]``
    ``bin_std``          LineCollection of whiskers ``bin_effect -/+ bin_std`` at the centres
    ``violin_<k>``       local effects of bin k's rows (store only; rows outside [z_0, z_K]
                         in none, counted): KDE PolyCollection, or a flat Line2D
    ``zero``             Line2D at y = 0
    ``method_note``      Text above the bins when the local effects are secants
    ``legend``           the figure legend (every mark above)
:func:`overview_figure`: per feature ``f<i>.axes`` holding ``f<i>.effect``,
``f<i>.std_band``, ``f<i>.stderr_upper``/``_lower`` on a common y scale, or the Text
``f<i>.not_estimable``. A discrete or categorical feature, K levels at x = 0 .. K-1:
    ``levels``     Line2D of dots, y = ``effect`` (K,)
    ``level_se``   LineCollection of bars ``effect -/+ 2 stderr``
    ``level_std``  LineCollection of wide light bars ``effect -/+ std``
    ``level_ci``   LineCollection of dotted bars ``ci_low`` to ``ci_high`` (if any)
    ``zero``, ``legend``
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ale_cli.plot import style
from ale_cli.plot.layout import (
    MARGIN,
    bootstrap_label,
    centered_on_mean,
    centred_text,
    effect_label,
    estimator_label,
    few_ticks,
    figure_legend,
    method_text,
    new_figure,
    not_estimable_figure,
    wrap,
)
from ale_cli.plot.marks import VIOLIN_LABEL, draw_store_marks, draw_violins
from ale_cli.plot.outputs import outputs_figure

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ale_cli.store.npz import Store
    from ale_cli.summary.model import FeatureSummary, Summary

# Fixed layout in inches: the same shape for every feature, cheaper than constrained layout.
_FIG_WIDTH = 7.5
_LEFT = 1.1  # y tick labels (up to ~9 characters) and a two-line y label
_RIGHT = 0.25
_TOP_PANEL = 3.3
_PANEL_GAP = 0.2
_BOTTOM_PANEL = 2.2
_X_TICKS = 0.3  # x tick labels and their padding
_LEGEND_ROW = 0.2
_CELL_WIDTH, _CELL_AXES_WIDTH = 3.1, 2.45  # overview: one cell, and its axes
_CELL_TITLE, _CELL_AXES_HEIGHT = 0.45, 1.75  # two title lines; axes
_OVERVIEW_YLABEL = 0.3
_LEFT_PAD = _CELL_WIDTH - _CELL_AXES_WIDTH - 0.15
_OVERVIEW_TITLE = 11 * 1.2 / 72 + 2 * MARGIN  # one title line of 11 points
_OVERVIEW_ROW = _CELL_TITLE + _CELL_AXES_HEIGHT + _X_TICKS
_OVERVIEW_LEGEND = _LEGEND_ROW + 2 * MARGIN


def _effect_artists(
    ax: Axes, feat: FeatureSummary, prefix: str = "", *, labels: bool, band: str = ""
) -> None:
    """Curve, +/- STD band, dashed +/- 2 SE lines and any bootstrap band (legend ``band``)."""
    z = feat.edges
    ax.plot(
        z,
        feat.effect,
        color=style.CURVE,
        linewidth=1.8,
        zorder=3,
        gid=f"{prefix}effect",
        label="ALE (centered effect)" if labels else None,
    )
    ax.fill_between(
        z,
        feat.effect - feat.std,
        feat.effect + feat.std,
        color=style.STD_BAND,
        alpha=0.35,
        linewidth=0,
        gid=f"{prefix}std_band",
        label="± STD (heterogeneity)" if labels else None,
    )
    for sign, side in ((1, "upper"), (-1, "lower")):
        ax.plot(
            z,
            feat.effect + sign * 2 * feat.stderr,
            color=style.STDERR,
            linestyle=(0, (4, 2)),
            linewidth=1.0,
            gid=f"{prefix}stderr_{side}",
            label="± 2 SE (estimation uncertainty)" if labels and sign == 1 else None,
        )
    if feat.ci_low is not None and feat.ci_high is not None:
        for values, side in ((feat.ci_high, "high"), (feat.ci_low, "low")):
            ax.plot(
                z,
                values,
                color=style.ORANGE,
                linestyle=":",
                linewidth=1.4,
                gid=f"{prefix}ci_{side}",
                label=band if labels and side == "high" else None,
            )


_BAR_LABEL = "bin effect (mean local effect)"
_FILLED_LABEL = "empty bin, effect interpolated"
_STD_LABEL = "± bin std"
#: the grey notes just above the bins panel
_NOTE = {"va": "bottom", "fontsize": 7, "color": style.GREY}
_BOTTOM_ORDER = (_BAR_LABEL, _FILLED_LABEL, _STD_LABEL, VIOLIN_LABEL)


def _draw_bins(ax: Axes, feat: FeatureSummary, column: tuple[Any, Any] | None) -> list[Any]:
    """Bin bars and whiskers, ``column``'s violins, zero line, labels; extra legend proxies."""
    from matplotlib.patches import Patch

    z = feat.edges
    width = np.diff(z)
    centres = (z[:-1] + z[1:]) / 2
    bars = ax.bar(
        z[:-1],
        feat.bin_effect,
        width=width,
        align="edge",
        color=style.BAR,
        alpha=0.5,
        edgecolor=style.BAR,
        linewidth=0.6 if feat.n_bins <= 60 else 0.2,
        zorder=1,
        label=_BAR_LABEL,
    )
    for k, rect in enumerate(bars.patches):
        rect.set_gid(f"bin_{k}")
        if feat.bin_filled[k]:
            rect.set_facecolor(style.FILLED)
            rect.set_edgecolor(style.GREY)
            rect.set_alpha(1.0)
            rect.set_hatch("///")
    filled = Patch(facecolor=style.FILLED, edgecolor=style.GREY, hatch="///", label=_FILLED_LABEL)
    ok = np.isfinite(feat.bin_std) & np.isfinite(feat.bin_effect)
    if ok.any():
        err = ax.errorbar(
            centres[ok],
            feat.bin_effect[ok],
            yerr=feat.bin_std[ok],
            fmt="none",
            ecolor=style.BLACK,
            elinewidth=0.9 if feat.n_bins <= 60 else 0.5,
            capsize=2.5 if feat.n_bins <= 30 else 0,
            zorder=3,
            label=_STD_LABEL,
        )
        err.lines[2][0].set_gid("bin_std")
    n_outside = max(feat.n_outside, draw_violins(ax, feat, *column) if column else 0)
    ax.axhline(0.0, color=style.BLACK, linewidth=0.6, zorder=2, gid="zero")
    ax.set_ylabel("bin effect\n(d output / d feature)")
    ax.set_xlabel(wrap(feat.name, 90, 2))
    if n_outside:
        note = f"{n_outside:,} rows outside [z₀, z_K] not shown"
        ax.text(1.0, 1.0, note, transform=ax.transAxes, ha="right", gid="outside_note", **_NOTE)
    lo, hi = z[0], z[-1]
    pad = 0.02 * (hi - lo) if hi > lo else 0.5
    ax.set_xlim(lo - pad, hi + pad)
    return [filled] if feat.bin_filled.any() else []


_REUSED: list[tuple[Figure, Axes, Axes]] = []  # what ``reuse=True`` draws into again


def _panels(reuse: bool) -> tuple[Figure, Axes, Axes]:
    """A feature figure, its effect and bins axes: new, or the reused ones emptied."""
    if reuse and _REUSED:
        fig, top, bottom = _REUSED[0]
        fig.legends.clear()
        for ax in (top, bottom):
            for artist in [*ax.lines, *ax.collections, *ax.patches, *ax.texts]:
                artist.remove()
            ax.containers.clear()
            ax.dataLim.set_points(type(ax.dataLim).null().get_points())
            ax.ignore_existing_data_limits = True
            ax.set_autoscale_on(True)
        return fig, top, bottom
    fig = new_figure((_FIG_WIDTH, 7.0))
    top = fig.add_axes((0.1, 0.5, 0.8, 0.4), gid="effect_axes")
    bottom = fig.add_axes((0.1, 0.1, 0.8, 0.3), sharex=top, gid="bins_axes")
    top.tick_params(labelbottom=False)
    if reuse:
        _REUSED[:] = [(fig, top, bottom)]
    return fig, top, bottom


def release() -> None:
    """Forget the reused feature figure (other figures go with their last reference:
    emptying one first costs a tenth of an overview)."""
    _REUSED.clear()


def feature_figure(
    summary: Summary,
    name: str,
    *,
    store: Store | None = None,
    ylabel: str | None = None,
    reuse: bool = False,
) -> Figure:
    """Feature ``name``: the effect curve over its K+1 edges above, the K bins below.

    ``store`` (the summary's store) adds the rug, the average-prediction line and the
    violins; ``ylabel`` (two lines of 45 characters) defaults to "[centered] effect on
    <output>". A not-estimable feature gives :func:`not_estimable_figure`. ``reuse``:
    draw into the last such figure, emptied (same bytes, cheaper than new axes and ticks).
    """
    import matplotlib

    feat = summary.feature(name)
    if not feat.estimable:
        return not_estimable_figure(feat.name, feat.reason)
    if feat.kind is not None:  # discrete or categorical: a dot per level
        return level_figure(summary, feat, ylabel=ylabel)
    with matplotlib.rc_context(style.RC):
        fig, top, bottom = _panels(reuse)
        few_ticks(top, 6)
        few_ticks(bottom, 6)
        _effect_artists(top, feat, labels=True, band=bootstrap_label(summary))
        column = None
        if store is not None:  # the store's values (N,) and local effects (N,)
            x, e = store.feature_data([name])
            column = x[:, 0], e[:, 0]
            draw_store_marks(top, summary, store, column[0])
        words = "centered effect" if centered_on_mean(summary) else "effect"
        top.set_ylabel(effect_label(summary, words, ylabel, width=45, name_width=40))
        n_filled = int(feat.bin_filled.sum())
        bins = f"K = {feat.n_bins} bin{'s' if feat.n_bins != 1 else ''}" + (
            f", {n_filled} empty" if n_filled else ""
        )
        title = f"{estimator_label(summary.estimator)}, {bins}, N = {summary.n_rows:,} rows"
        top.set_title(title, loc="left")
        extra = _draw_bins(bottom, feat, column)
        note = None
        if (text := method_text(feat)) is not None:  # above the bins panel, on the left
            note = wrap(text, 100, 2)
            bottom.text(
                0.0, 1.0, note, transform=bottom.transAxes, ha="left", gid="method_note", **_NOTE
            )
        handles, labels = top.get_legend_handles_labels()  # then the bins panel's, in order
        bottom_handles = dict(zip(*reversed(bottom.get_legend_handles_labels()), strict=True))
        bottom_handles |= {p.get_label(): p for p in extra}
        for label in sorted(bottom_handles, key=_BOTTOM_ORDER.index):
            handles.append(bottom_handles[label])
            labels.append(label)
        _lay_out_feature(fig, top, bottom, name, n_legend=len(handles), note=note)
        figure_legend(fig, handles, labels, ncols=2)
        return fig


def _lines_in(points: float, text: str) -> float:
    """Height in inches of ``text`` in ``points`` (line spacing 1.2)."""
    return (text.count("\n") + 1) * points * 1.2 / 72


def _lay_out_feature(
    fig: Figure, top: Axes, bottom: Axes, name: str, *, n_legend: int, note: str | None
) -> None:
    """Size the figure; place title, effect panel, gap (note), bins panel, x label, legend."""
    gap = _PANEL_GAP + (_lines_in(7, note) + 0.05 if note else 0.0)
    title = wrap(name, 70, 2)
    legend_height = _LEGEND_ROW * -(-n_legend // 2)
    bottom_margin = MARGIN + legend_height + MARGIN + _lines_in(9, wrap(name, 90, 2)) + _X_TICKS
    top_margin = MARGIN + _lines_in(12, title) + 0.1 + _lines_in(10, "") + 0.05
    height = top_margin + _TOP_PANEL + gap + _BOTTOM_PANEL + bottom_margin
    fig.set_size_inches(_FIG_WIDTH, height)
    left, width = _LEFT / _FIG_WIDTH, (_FIG_WIDTH - _LEFT - _RIGHT) / _FIG_WIDTH
    bottom.set_position((left, bottom_margin / height, width, _BOTTOM_PANEL / height))
    top_y = (bottom_margin + _BOTTOM_PANEL + gap) / height
    top.set_position((left, top_y, width, _TOP_PANEL / height))
    fig.suptitle(title, y=1 - MARGIN / height, va="top", fontsize=12, fontweight="bold")


def overview_figure(
    summary: Summary, *, names: Sequence[str] | None = None, ylabel: str | None = None
) -> Figure:
    """All features (or ``names``, in order) in a grid of at most 4 columns, common y; a
    summary of several outputs: :func:`~ale_cli.plot.outputs.outputs_figure` of the names.

    ``ylabel``: the first column's label (of one output: one line of 28 characters cut with "…").
    """
    import matplotlib

    feats = [summary.feature(n) for n in names] if names is not None else list(summary.features)
    if summary.outputs:
        unique = list(dict.fromkeys(f.name for f in feats))
        return outputs_figure(summary, unique, ylabel=ylabel)
    ncols = min(max(len(feats), 1), 4)  # a title line, nrows x ncols cells, a legend
    nrows = -(-max(len(feats), 1) // ncols)
    width = _OVERVIEW_YLABEL + ncols * _CELL_WIDTH
    height = _OVERVIEW_TITLE + nrows * _OVERVIEW_ROW + _OVERVIEW_LEGEND
    with matplotlib.rc_context(style.RC):
        fig = new_figure((width, height))
        labelled: Axes | None = None  # the axes whose marks the legend shows
        axes: list[Axes] = []
        for i, feat in enumerate(feats):
            row, col = divmod(i, ncols)
            rect = (
                (_OVERVIEW_YLABEL + col * _CELL_WIDTH + _LEFT_PAD) / width,
                (_OVERVIEW_LEGEND + (nrows - 1 - row) * _OVERVIEW_ROW + _X_TICKS) / height,
                _CELL_AXES_WIDTH / width,
                _CELL_AXES_HEIGHT / height,
            )
            ax = fig.add_axes(rect, sharey=axes[0] if axes else None, gid=f"f{i}.axes")
            axes.append(ax)
            few_ticks(ax, 4)
            ax.tick_params(labelleft=col == 0)  # one y scale: labelled on the left
            ax.set_title(wrap(feat.name, 36, 2), fontsize=9)
            if not feat.estimable:  # a cell without axes saying why
                reason = wrap(feat.reason or "no reason recorded", 36, 4)
                text = "not estimable\n" + reason
                centred_text(ax, text, fontsize=8, color=style.GREY, gid=f"f{i}.not_estimable")
                ax.set_axis_off()
                continue
            if feat.kind is not None:
                level_artists(ax, feat, f"f{i}.", labels=False)
                continue
            band = bootstrap_label(summary)
            _effect_artists(ax, feat, f"f{i}.", labels=labelled is None, band=band)
            labelled = labelled or ax
            if col == 0:
                label = effect_label(
                    summary, "effect", ylabel, width=28, name_width=24, max_lines=1
                )
                ax.set_ylabel(label)
        secant = any(f.method == "secant" for f in feats)
        fig.suptitle(
            f"{estimator_label(summary.estimator)}: {len(feats)} features, "
            f"N = {summary.n_rows:,} rows, common y scale"
            + ("; local effects: secants" if secant else ""),
            y=1 - MARGIN / height,
            va="top",
            fontsize=11,
        )
        if labelled is not None:
            figure_legend(fig, *labelled.get_legend_handles_labels(), ncols=3)
        return fig


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
        ax = fig.add_axes((0.14, 0.3, 0.8, 0.58), gid="effect_axes")
        level_artists(ax, feat, labels=True, band=bootstrap_label(summary))
        ax.set_ylabel(effect_label(summary, "centered effect", ylabel, width=45, name_width=40))
        order = "estimated order" if feat.kind == "categorical" else "numeric order"
        ax.set_xlabel(f"{feat.name} (levels in {order})")
        counts = ", ".join(str(int(c)) for c in feat.counts)
        ax.set_title(f"{feat.name}: {len(feat.counts)} levels, rows {counts}", loc="left")
        handles, texts = ax.get_legend_handles_labels()
        figure_legend(fig, handles, texts, ncols=2)
    return fig
