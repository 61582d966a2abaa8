"""First-order ALE figures: one feature, the overview grid, a not-estimable note.

Every function returns a :class:`matplotlib.figure.Figure` with an Agg canvas
(never pyplot, never shown). Artists carry a ``gid`` (written as the SVG
``id``) so tests and other tools find the plotted data:

Per-feature figure, :func:`feature_figure` (two panels sharing the x axis)
    ``effect_axes``        top axes
    ``effect``             Line2D, x = ``edges`` (K+1), y = ``effect`` (K+1): the
                           centered ALE curve, linear between edges
    ``std_band``           PolyCollection filled between ``effect - std`` and
                           ``effect + std`` at the edges (heterogeneity)
    ``stderr_upper``,      dashed Line2D, y = ``effect +/- 2 stderr`` (estimation
    ``stderr_lower``       uncertainty)
    ``ci_high``,           dotted Line2D, y = ``ci_high`` / ``ci_low`` (bootstrap
    ``ci_low``             percentile band; only when the summary has one)
    ``rug``                Line2D of ``|`` markers, x = the feature's data values
                           (store only; a quantile subsample of :data:`RUG_MAX`
                           rows when there are more), y in axes coordinates
    ``mean_prediction``    Line2D at y = 0 = the average prediction (store only,
                           default centering only)
    ``bins_axes``          bottom axes
    ``bin_<k>``            Rectangle of bin k: x = ``edges[k]``, width =
                           ``edges[k+1] - edges[k]``, height = ``bin_effect[k]``;
                           grey and hatched where ``bin_filled[k]``
    ``bin_std``            LineCollection of whiskers ``bin_effect +/- bin_std`` at
                           the bin centres (bins with a finite ``bin_std``)
    ``violin_<k>``         the store's local effects of the rows in bin k: a
                           PolyCollection (KDE outline, y from their min to their
                           max) or, when they are all equal, a flat Line2D; bins
                           with fewer than :data:`VIOLIN_MIN` rows have none, bins
                           with more than :data:`VIOLIN_MAX` are quantile-subsampled
                           (min and max kept)
    ``zero``               Line2D at y = 0
    ``method_note``        Text above the bins panel when the local effects are
                           secants of a piecewise-constant model (feature
                           ``method`` "secant"): what they are, from its ``note``
    ``legend``             the figure legend (every mark above is in it)

Overview, :func:`overview_figure`: one axes per feature ``f<i>.axes`` (i = the
position in the figure) titled with the feature name, holding ``f<i>.effect``,
``f<i>.std_band``, ``f<i>.stderr_upper``/``f<i>.stderr_lower`` as above, all on a
common y scale; a not-estimable feature's axes hold the Text ``f<i>.not_estimable``.
The title says when the local effects are secants.

Not estimable, :func:`not_estimable_figure`: the Text ``not_estimable`` gives the
feature name and the summary's ``reason``.

Bins are (z_{k-1}, z_k] with z_0 in the first bin, as in the summary; rows of
the store outside [z_0, z_K] are in no violin and the figure says how many.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ale_cli.core.binning import assign
from ale_cli.plot import style

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ale_cli.store.npz import Store
    from ale_cli.summary.model import FeatureSummary, Summary

RUG_MAX = 2000
VIOLIN_MIN = 5
VIOLIN_MAX = 1000
_ESTIMATOR_LABELS = {
    "dale": "DALE, fixed bins",
    "rhale": "RHALE, automatic bins",
    "ale": "classic ALE (finite differences)",
}
_NOT_ESTIMABLE_SIZE = (5.0, 1.8)
#: How effect axes name the output when the summary records none.
GENERIC_OUTPUT = "the model output"

# Fixed layout, in inches (text heights come from the number of wrapped lines).
# A fixed layout keeps every figure of a feature the same shape, and is about
# twice as fast to render as matplotlib's constrained layout, which lays out
# every tick label twice before each save.
_FIG_WIDTH = 7.5
_LEFT = 1.1  # y tick labels (up to ~9 characters) and a two-line y label
_RIGHT = 0.25
_TOP_PANEL = 3.3
_PANEL_GAP = 0.2
_BOTTOM_PANEL = 2.2
_X_TICKS = 0.3  # x tick labels and their padding
_LEGEND_ROW = 0.2
_MARGIN = 0.12
_CELL_WIDTH, _CELL_AXES_WIDTH = 3.1, 2.45  # overview: one cell, and its axes
_CELL_TITLE, _CELL_AXES_HEIGHT = 0.45, 1.75  # two title lines; axes
_OVERVIEW_YLABEL = 0.3
_OVERVIEW_TITLE = 11 * 1.2 / 72 + 2 * _MARGIN  # one title line of 11 points
_OVERVIEW_ROW = _CELL_TITLE + _CELL_AXES_HEIGHT + _X_TICKS
_OVERVIEW_LEGEND = _LEGEND_ROW + 2 * _MARGIN


def estimator_label(estimator: str) -> str:
    """Human name of an estimator key of the summary.

    >>> estimator_label("rhale")
    'RHALE, automatic bins'
    """
    return _ESTIMATOR_LABELS.get(estimator, estimator)


def output_name(summary: Summary) -> str | None:
    """How figures name the explained model output recorded in ``summary.store["output"]``.

    The store records the output as the model adapter describes it: a string,
    or a mapping with the user's ``selector`` and, depending on the format, the
    scikit-learn ``kind`` (``predict``, ``proba``, ``decision``) with its
    ``column`` and ``class``, or the ONNX output ``name`` and ``column``.
    A class probability reads "probability of class <label>", a regressor's
    only prediction "prediction", anything else the recorded name (with
    ``:<column>`` for an ONNX output column) or ``output <selector>``; None
    when nothing is recorded (a single-output TorchScript model).

    >>> from ale_cli.summary.model import Summary
    >>> def named(output):
    ...     return output_name(Summary("dale", {}, {"output": output}, 0, ()))
    >>> named({"selector": "proba:1", "kind": "proba", "column": 1, "class": "yes",
    ...        "name": "proba:1"})
    'probability of class yes'
    >>> named({"selector": None, "kind": "predict", "column": None, "name": "predict"})
    'prediction'
    >>> named({"selector": None, "name": "probabilities", "column": 1})
    'probabilities:1'
    >>> named({"selector": "2", "shape": [10, 3]}), named({"selector": None}), named(None)
    ('output 2', None, None)
    """
    out = summary.store.get("output")
    if isinstance(out, str):
        return out or None
    if not isinstance(out, dict):
        return None
    kind, column = out.get("kind"), out.get("column")
    if kind == "proba" and out.get("class") not in (None, ""):
        return f"probability of class {out['class']}"
    if kind == "predict" and column is None:
        return "prediction"
    name = out.get("name")
    if name:
        name = str(name)
        return name if column is None or ":" in name else f"{name}:{column}"
    if out.get("selector") not in (None, ""):
        return f"output {out['selector']}"
    return None


def effect_label(
    summary: Summary,
    words: str,
    ylabel: str | None,
    *,
    width: int,
    name_width: int,
    max_lines: int = 2,
) -> str:
    """The label of an effect axis.

    ``ylabel`` when given, wrapped to ``max_lines`` lines of ``width``
    characters (its own line breaks kept, cut with "…" beyond); else
    "<words> on <output>" with the summary's :func:`output_name` wrapped to
    ``max_lines`` lines of ``name_width`` characters ("the model output" when
    the summary records none).

    >>> from ale_cli.summary.model import Summary
    >>> s = Summary("dale", {}, {"output": {"kind": "predict", "name": "predict"}}, 0, ())
    >>> effect_label(s, "effect", None, width=20, name_width=20)
    'effect on prediction'
    >>> effect_label(Summary("dale", {}, {}, 0, ()), "effect", None, width=20, name_width=20)
    'effect on the model output'
    >>> print(effect_label(s, "effect", "a long label of many words", width=10, name_width=8))
    a long
    label of …
    """
    if ylabel is not None:
        return _wrap_lines(ylabel, width, max_lines)
    return f"{words} on {_wrap(output_name(summary) or GENERIC_OUTPUT, name_width, max_lines)}"


def centered_on_mean(summary: Summary) -> bool:
    """True when the effect is centered so that 0 is the average prediction (the default)."""
    for key in ("center", "centering"):
        value = summary.params.get(key)
        if value is not None:
            return str(value) not in ("start", "none")
    return True


def quantile_subsample(values: np.ndarray, m: int) -> np.ndarray:
    """``values`` sorted; if more than ``m``, ``m`` of them at evenly spaced ranks.

    Deterministic, and keeps the minimum and the maximum.

    >>> quantile_subsample(np.array([5.0, 1.0, 3.0, 2.0, 4.0]), 3)
    array([1., 3., 5.])
    """
    ordered = np.sort(values)
    if len(ordered) <= m:
        return ordered
    ranks = np.round(np.linspace(0, len(ordered) - 1, m)).astype(np.int64)
    return ordered[ranks]


def kde_outline(values: np.ndarray, n_points: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian KDE of ``values`` (Scott's bandwidth) from their min to their max.

    Returns the evaluation points (n_points,) and the density scaled to a
    maximum of 1 (n_points,), the outline of a violin of half-width 1. The
    bandwidth is h = s n^(-1/5) with s the sample std (ddof=1), as in
    matplotlib's ``violinplot``. ``values`` must not be all equal.

    >>> y, half = kde_outline(np.array([0.0, 1.0, 1.0, 2.0]), 5)
    >>> y.tolist(), float(half.max()), bool(half[2] == 1.0)
    ([0.0, 0.5, 1.0, 1.5, 2.0], 1.0, True)
    """
    h = np.std(values, ddof=1) * len(values) ** (-1 / 5)
    y = np.linspace(values.min(), values.max(), n_points)
    density = np.exp(-0.5 * ((y[:, None] - values[None, :]) / h) ** 2).sum(axis=1)
    return y, density / density.max()


def _new_figure(size: tuple[float, float]) -> Figure:
    """A Figure of ``size`` inches on its own Agg canvas (not in pyplot's figure list)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size)
    FigureCanvasAgg(fig)
    return fig


def _few_ticks(ax: Axes, nbins: int) -> None:
    """At most ``nbins`` intervals per axis: readable, and fewer tick artists to draw."""
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(nbins))
    ax.yaxis.set_major_locator(MaxNLocator(nbins))


def _figure_legend(fig: Figure, handles: list[Any], labels: list[str], *, ncols: int) -> None:
    """The legend of every mark, centred in the bottom margin of the figure."""
    fig.legend(
        handles,
        labels,
        loc="lower center",
        bbox_to_anchor=(0.5, _MARGIN / fig.get_figheight()),
        ncols=ncols,
        frameon=False,
        borderaxespad=0.0,
    ).set_gid("legend")


def _lines_in(points: float, n_lines: int) -> float:
    """Height in inches of ``n_lines`` of text of size ``points`` (line spacing 1.2)."""
    return n_lines * points * 1.2 / 72


def _n_lines(text: str) -> int:
    """Lines of ``text``."""
    return text.count("\n") + 1


def _wrap(text: str, width: int, max_lines: int | None = None) -> str:
    """``text`` filled to lines of ``width`` characters (at most ``max_lines``, cut with "…")."""
    kwargs: dict[str, Any] = {"width": width, "break_on_hyphens": False}
    if max_lines is not None:
        kwargs |= {"max_lines": max_lines, "placeholder": "…"}
    return textwrap.fill(text, **kwargs) or text


def _wrap_lines(text: str, width: int, max_lines: int) -> str:
    """``text`` with its own line breaks kept, each line wrapped to ``width`` characters,
    at most ``max_lines`` lines (the last one ending in "…" when text was left out)."""
    lines = [
        part
        for line in text.splitlines()
        for part in (textwrap.wrap(line, width, break_on_hyphens=False) or [""])
    ]
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = lines[-1][: width - 2].rstrip() + " …"
    return "\n".join(lines)


def bootstrap_label(summary: Summary) -> str:
    """Legend text of the bootstrap band, e.g. "bootstrap 95 % band (B = 200)".

    >>> from ale_cli.summary.model import Summary
    >>> bootstrap_label(Summary("dale", {"bootstrap": 200, "ci": 0.95}, {}, 10, ()))
    'bootstrap 95 % band (B = 200)'
    """
    level = float(summary.params.get("ci", 0.95)) * 100
    return f"bootstrap {level:g} % band (B = {summary.params.get('bootstrap')})"


def _effect_artists(
    ax: Axes, feat: FeatureSummary, prefix: str = "", *, labels: bool, band: str = ""
) -> None:
    """Curve, +/- STD band and dashed +/- 2 SE lines of one feature on ``ax``; the
    bootstrap band (dotted, legend text ``band``) when the feature has one."""
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


def _store_column(store: Store, name: str) -> tuple[np.ndarray, np.ndarray]:
    """The store's values (N,) and local effects (N,) of feature ``name``."""
    x, e = store.feature_data([name])
    return x[:, 0], e[:, 0]


def _draw_violins(ax: Axes, feat: FeatureSummary, x: np.ndarray, effects: np.ndarray) -> int:
    """Violins of the local effects per bin; returns the number of rows outside the bins."""
    idx = assign(x, feat.edges).index
    centres = (feat.edges[:-1] + feat.edges[1:]) / 2
    widths = 0.9 * np.diff(feat.edges)
    order = np.argsort(idx, kind="stable")
    bounds = np.searchsorted(idx[order], np.arange(-1, feat.n_bins + 1))
    from matplotlib.collections import PolyCollection

    data, ks = [], []
    labelled = False
    for k in range(feat.n_bins):
        rows = order[bounds[k + 1] : bounds[k + 2]]
        if len(rows) < VIOLIN_MIN:
            continue
        values = quantile_subsample(effects[rows], VIOLIN_MAX)
        if values[0] == values[-1]:  # no spread: a KDE is undefined, draw a flat mark
            ax.plot(
                [centres[k] - widths[k] / 2, centres[k] + widths[k] / 2],
                [values[0], values[0]],
                color=style.VIOLIN,
                linewidth=1.5,
                alpha=0.8,
                zorder=1.5,
                gid=f"violin_{k}",
                label=None if labelled else _VIOLIN_LABEL,
            )
            labelled = True
            continue
        data.append(values)
        ks.append(k)
    for k, values in zip(ks, data, strict=True):
        y, half = kde_outline(values)
        half *= widths[k] / 2
        outline = np.column_stack(
            [np.concatenate([centres[k] + half, centres[k] - half[::-1]]), np.r_[y, y[::-1]]]
        )
        body = PolyCollection(
            [outline],
            facecolors=style.VIOLIN,
            edgecolors=style.VIOLIN,
            alpha=0.4,
            linewidths=0.5 if feat.n_bins <= 40 else 0.0,
            zorder=1.5,
            gid=f"violin_{k}",
            label=None if labelled else _VIOLIN_LABEL,
        )
        labelled = True
        ax.add_collection(body, autolim=True)
    ax.autoscale_view()
    return int(bounds[1] - bounds[0])


_VIOLIN_LABEL = f"local effects per bin (bins with ≥ {VIOLIN_MIN} rows)"
_BAR_LABEL = "bin effect (mean local effect)"
_FILLED_LABEL = "empty bin, effect interpolated"
_STD_LABEL = "± bin std"
_BOTTOM_ORDER = (_BAR_LABEL, _FILLED_LABEL, _STD_LABEL, _VIOLIN_LABEL)


def _draw_bins(ax: Axes, feat: FeatureSummary) -> list[Any]:
    """Bars and whiskers of the bin effects; returns legend proxies to add after the bars."""
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
    extra: list[Any] = []
    if feat.bin_filled.any():
        extra.append(
            Patch(
                facecolor=style.FILLED,
                edgecolor=style.GREY,
                hatch="///",
                label=_FILLED_LABEL,
            )
        )
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
    return extra


def not_estimable_figure(feat: FeatureSummary) -> Figure:
    """A small figure saying that ``feat`` could not be estimated, and why."""
    fig = _new_figure(_NOT_ESTIMABLE_SIZE)
    reason = feat.reason or "no reason recorded"
    fig.text(
        0.5,
        0.5,
        f"{_wrap(feat.name, 60)}: not estimable\n{_wrap(reason, 70)}",
        ha="center",
        va="center",
        fontsize=10,
        wrap=False,
        gid="not_estimable",
    )
    return fig


def feature_figure(
    summary: Summary, name: str, *, store: Store | None = None, ylabel: str | None = None
) -> Figure:
    """The two-panel figure of feature ``name``: the effect curve above, the bins below.

    Parameters
    ----------
    summary : Summary
        An estimator run; ``name`` must be one of its features.
    name : str
        The feature to draw. A not-estimable feature gives
        :func:`not_estimable_figure`.
    store : Store, optional
        The store the summary was made from; adds the rug of data values, the
        average-prediction line and the violins of local effects per bin.
    ylabel : str, optional
        Label of the effect axis (two lines of at most 45 characters).
        Default: "centered effect on <output>" with the output recorded in the
        summary (see :func:`output_name`), "effect on <output>" when the curve
        is not centered on the average prediction.

    Returns
    -------
    matplotlib.figure.Figure
        Not saved, not shown, not in pyplot's figure list. Two axes sharing x:
        ``effect_axes`` with the curve over the feature's K+1 edges, and
        ``bins_axes`` with its K bins; artists as listed in the module
        docstring. A not-estimable feature gives a figure without axes.
    """
    import matplotlib

    feat = summary.feature(name)
    if feat.status != "ok" or feat.n_bins == 0:
        return not_estimable_figure(feat)
    if feat.kind is not None:  # discrete or categorical: a dot per level
        from ale_cli.plot.levels import level_figure

        return level_figure(summary, feat, ylabel=ylabel)
    with matplotlib.rc_context(style.RC):
        fig = _new_figure((_FIG_WIDTH, 7.0))
        top, bottom = _feature_axes(fig)
        _effect_artists(top, feat, labels=True, band=bootstrap_label(summary))
        column = _store_column(store, name) if store is not None else None
        if store is not None and column is not None:
            _draw_store_marks(top, summary, store, column[0])
        words = "centered effect" if centered_on_mean(summary) else "effect"
        top.set_ylabel(effect_label(summary, words, ylabel, width=45, name_width=40))
        top.set_title(_bins_title(summary, feat), loc="left")
        extra = _draw_bins(bottom, feat)
        n_outside_store = _draw_violins(bottom, feat, *column) if column is not None else 0
        _finish_bins_panel(bottom, feat, name, n_outside=max(feat.n_outside, n_outside_store))
        note_lines = _method_note(bottom, feat)
        handles, labels = _feature_legend_entries(top, bottom, extra)
        _lay_out_feature(fig, top, bottom, name, n_legend=len(handles), note_lines=note_lines)
        _figure_legend(fig, handles, labels, ncols=2)
        return fig


def _feature_axes(fig: Figure) -> tuple[Axes, Axes]:
    """The effect axes above and the bins axes below, sharing x (placed by
    :func:`_lay_out_feature` once the text sizes are known)."""
    top = fig.add_axes((0.1, 0.5, 0.8, 0.4))
    bottom = fig.add_axes((0.1, 0.1, 0.8, 0.3), sharex=top)
    top.tick_params(labelbottom=False)
    _few_ticks(top, 6)
    _few_ticks(bottom, 6)
    top.set_gid("effect_axes")
    bottom.set_gid("bins_axes")
    return top, bottom


def _draw_store_marks(ax: Axes, summary: Summary, store: Store, x: np.ndarray) -> None:
    """The rug of the data values ``x`` and, with the default centering, the line of the
    average prediction (y = 0) on the effect axes."""
    rug = quantile_subsample(x, RUG_MAX)
    shown = "all" if len(rug) == len(x) else f"{len(rug):,} of"
    ax.plot(
        rug,
        np.full(len(rug), 0.02),
        linestyle="none",
        marker="|",
        markersize=7,
        markeredgewidth=0.6,
        color=style.RUG,
        alpha=0.25 if len(rug) > 300 else 0.5,
        transform=ax.get_xaxis_transform(),
        gid="rug",
        label=f"data values ({shown} {len(x):,} rows)",
    )
    if centered_on_mean(summary):
        mean_prediction = float(np.mean(store.prediction))
        ax.axhline(
            0.0,
            color=style.GREY,
            linestyle=":",
            linewidth=1.0,
            gid="mean_prediction",
            label=f"average prediction ({mean_prediction:.4g})",
        )


def _bins_title(summary: Summary, feat: FeatureSummary) -> str:
    """The estimator, the number of bins (and of empty ones) and of rows, one line."""
    n_filled = int(feat.bin_filled.sum())
    bins_text = f"K = {feat.n_bins} bin{'s' if feat.n_bins != 1 else ''}" + (
        f", {n_filled} empty" if n_filled else ""
    )
    return f"{estimator_label(summary.estimator)}, {bins_text}, N = {summary.n_rows:,} rows"


def _finish_bins_panel(ax: Axes, feat: FeatureSummary, name: str, *, n_outside: int) -> None:
    """The zero line, the axis labels, the note of rows outside the edges and the x range
    of the bins axes."""
    ax.axhline(0.0, color=style.BLACK, linewidth=0.6, zorder=2, gid="zero")
    ax.set_ylabel("bin effect\n(d output / d feature)")
    ax.set_xlabel(_wrap(name, 90, 2))
    if n_outside:
        ax.text(
            1.0,
            1.0,
            f"{n_outside:,} rows outside [z₀, z_K] not shown",
            transform=ax.transAxes,
            ha="right",
            va="bottom",
            fontsize=7,
            color=style.GREY,
            gid="outside_note",
        )
    lo, hi = feat.edges[0], feat.edges[-1]
    pad = 0.02 * (hi - lo) if hi > lo else 0.5
    ax.set_xlim(lo - pad, hi + pad)


def method_text(feat: FeatureSummary) -> str | None:
    """The short line a figure shows when the local effects are not derivatives.

    >>> from ale_cli.summary.model import FeatureSummary
    >>> method_text(FeatureSummary(name="x", method="secant", note="secants on a fine grid"))
    'piecewise-constant model: secants on a fine grid'
    """
    if feat.method != "secant":
        return None
    detail = (feat.note or "secants across the bins of a fine grid").split(";")[0]
    return f"piecewise-constant model: {detail}"


def _method_note(ax: Axes, feat: FeatureSummary) -> int:
    """The method line above the bins panel, on the left (the rows-outside note is on
    the right); returns its number of lines (0: none), for the layout's panel gap."""
    text = method_text(feat)
    if text is None:
        return 0
    wrapped = _wrap(text, 100, 2)
    ax.text(
        0.0,
        1.0,
        wrapped,
        transform=ax.transAxes,
        ha="left",
        va="bottom",
        fontsize=7,
        color=style.GREY,
        gid="method_note",
    )
    return _n_lines(wrapped)


def _feature_legend_entries(
    top: Axes, bottom: Axes, extra: list[Any]
) -> tuple[list[Any], list[str]]:
    """Legend handles and labels: the effect panel's marks, then the bins panel's in
    reading order (bars, empty bins, whiskers, violins)."""
    handles, labels = top.get_legend_handles_labels()
    bottom_handles = dict(zip(*reversed(bottom.get_legend_handles_labels()), strict=True))
    bottom_handles |= {p.get_label(): p for p in extra}
    for label in sorted(bottom_handles, key=_BOTTOM_ORDER.index):
        handles.append(bottom_handles[label])
        labels.append(label)
    return handles, labels


def _lay_out_feature(
    fig: Figure, top: Axes, bottom: Axes, name: str, *, n_legend: int, note_lines: int = 0
) -> None:
    """Size the figure and place both panels and the title in a fixed layout (inches):
    title, effect panel, gap (with ``note_lines`` lines of a 7-point note), bins panel,
    x label, legend of ``n_legend`` entries in two columns, from the top down."""
    gap = _PANEL_GAP + (_lines_in(7, note_lines) + 0.05 if note_lines else 0.0)
    xlabel = _wrap(name, 90, 2)
    title = _wrap(name, 70, 2)
    legend_height = _LEGEND_ROW * -(-n_legend // 2)
    bottom_margin = _MARGIN + legend_height + _MARGIN + _lines_in(9, _n_lines(xlabel)) + _X_TICKS
    top_margin = _MARGIN + _lines_in(12, _n_lines(title)) + 0.1 + _lines_in(10, 1) + 0.05
    height = top_margin + _TOP_PANEL + gap + _BOTTOM_PANEL + bottom_margin
    fig.set_size_inches(_FIG_WIDTH, height)
    width = (_FIG_WIDTH - _LEFT - _RIGHT) / _FIG_WIDTH
    bottom.set_position((_LEFT / _FIG_WIDTH, bottom_margin / height, width, _BOTTOM_PANEL / height))
    top.set_position(
        (
            _LEFT / _FIG_WIDTH,
            (bottom_margin + _BOTTOM_PANEL + gap) / height,
            width,
            _TOP_PANEL / height,
        )
    )
    fig.suptitle(title, y=1 - _MARGIN / height, va="top", fontsize=12, fontweight="bold")


def overview_figure(
    summary: Summary, *, names: Sequence[str] | None = None, ylabel: str | None = None
) -> Figure:
    """All features (or ``names``) in a grid of small effect plots on a common y scale.

    Each cell is the curve with its +/- STD band and +/- 2 SE lines, titled with
    the feature name; a not-estimable feature's cell says so.

    Parameters
    ----------
    summary : Summary
        An estimator run.
    names : sequence of str, optional
        The features to show, in this order (default: all, in summary order).
    ylabel : str, optional
        Label of the effect axis of the first column (one line of at most 28
        characters, cut with "…"). Default: "effect on <output>" (see
        :func:`output_name`).

    Returns
    -------
    matplotlib.figure.Figure
        One axes per feature, ``len(names)`` of them in a grid of at most 4
        columns; artists as listed in the module docstring.
    """
    import matplotlib

    feats = [summary.feature(n) for n in names] if names is not None else list(summary.features)
    grid = _OverviewGrid.for_cells(len(feats))
    with matplotlib.rc_context(style.RC):
        fig = _new_figure((grid.width, grid.height))
        labelled = False
        axes: list[Axes] = []
        for i, feat in enumerate(feats):
            ax = fig.add_axes(grid.rect(i), sharey=axes[0] if axes else None)
            axes.append(ax)
            _few_ticks(ax, 5)
            ax.set_gid(f"f{i}.axes")
            ax.set_title(_wrap(feat.name, 36, 2), fontsize=9)
            if feat.status != "ok" or feat.n_bins == 0:
                _not_estimable_cell(ax, feat, i)
                continue
            if feat.kind is not None:
                from ale_cli.plot.levels import level_artists

                level_artists(ax, feat, f"f{i}.", labels=False)
                continue
            _effect_artists(ax, feat, f"f{i}.", labels=not labelled, band=bootstrap_label(summary))
            labelled = True
            if i % grid.ncols == 0:
                label = effect_label(
                    summary, "effect", ylabel, width=28, name_width=24, max_lines=1
                )
                ax.set_ylabel(label)
        secant = any(f.method == "secant" for f in feats)
        fig.suptitle(
            f"{estimator_label(summary.estimator)}: {len(feats)} features, "
            f"N = {summary.n_rows:,} rows, common y scale"
            + ("; local effects: secants" if secant else ""),
            y=1 - _MARGIN / grid.height,
            va="top",
            fontsize=11,
        )
        for ax in axes:
            handles, labels = ax.get_legend_handles_labels()
            if handles:
                _figure_legend(fig, handles, labels, ncols=3)
                break
        return fig


@dataclass(frozen=True)
class _OverviewGrid:
    """The fixed layout of the overview (inches): a title line, ``nrows`` x ``ncols``
    cells (title, axes, x tick labels), a legend row."""

    ncols: int
    nrows: int
    width: float
    height: float

    @classmethod
    def for_cells(cls, n_cells: int) -> _OverviewGrid:
        """At most 4 columns, as many rows as needed (one cell for an empty overview)."""
        n = max(n_cells, 1)
        ncols = min(n, 4)
        nrows = -(-n // ncols)
        height = _OVERVIEW_TITLE + nrows * _OVERVIEW_ROW + _OVERVIEW_LEGEND
        return cls(ncols, nrows, _OVERVIEW_YLABEL + ncols * _CELL_WIDTH, height)

    def rect(self, i: int) -> tuple[float, float, float, float]:
        """The axes rectangle of cell ``i`` (row-major) in figure coordinates."""
        row, col = divmod(i, self.ncols)
        left_pad = _CELL_WIDTH - _CELL_AXES_WIDTH - 0.15
        return (
            (_OVERVIEW_YLABEL + col * _CELL_WIDTH + left_pad) / self.width,
            (_OVERVIEW_LEGEND + (self.nrows - 1 - row) * _OVERVIEW_ROW + _X_TICKS) / self.height,
            _CELL_AXES_WIDTH / self.width,
            _CELL_AXES_HEIGHT / self.height,
        )


def _not_estimable_cell(ax: Axes, feat: FeatureSummary, i: int) -> None:
    """An overview cell without axes saying that ``feat`` is not estimable, and why."""
    ax.text(
        0.5,
        0.5,
        "not estimable\n" + _wrap(feat.reason or "no reason recorded", 36, 4),
        transform=ax.transAxes,
        ha="center",
        va="center",
        fontsize=8,
        color=style.GREY,
        gid=f"f{i}.not_estimable",
    )
    ax.set_axis_off()
