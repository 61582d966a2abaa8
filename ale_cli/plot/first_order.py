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
    ``legend``             the figure legend (every mark above is in it)

Overview, :func:`overview_figure`: one axes per feature ``f<i>.axes`` (i = the
position in the figure) titled with the feature name, holding ``f<i>.effect``,
``f<i>.std_band``, ``f<i>.stderr_upper``/``f<i>.stderr_lower`` as above, all on a
common y scale; a not-estimable feature's axes hold the Text ``f<i>.not_estimable``.

Not estimable, :func:`not_estimable_figure`: the Text ``not_estimable`` gives the
feature name and the summary's ``reason``.

Bins are (z_{k-1}, z_k] with z_0 in the first bin, as in the summary; rows of
the store outside [z_0, z_K] are in no violin and the figure says how many.
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any

import numpy as np

from ale_cli.plot import style

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ale_cli.adapters.store import Store
    from ale_cli.adapters.summary import FeatureSummary, Summary

RUG_MAX = 2000
VIOLIN_MIN = 5
VIOLIN_MAX = 1000
_ESTIMATOR_LABELS = {
    "dale": "DALE, fixed bins",
    "rhale": "RHALE, automatic bins",
    "ale": "classic ALE (finite differences)",
}
_FEATURE_SIZE = (7.5, 6.5)
_NOT_ESTIMABLE_SIZE = (5.0, 1.8)


def estimator_label(estimator: str) -> str:
    """Human name of an estimator key of the summary.

    >>> estimator_label("rhale")
    'RHALE, automatic bins'
    """
    return _ESTIMATOR_LABELS.get(estimator, estimator)


def output_name(summary: Summary) -> str:
    """Name of the explained model output, from the store part of the summary.

    Accepts the store meta's ``output`` as a string or as a mapping with a
    ``name`` or a ``selector``; falls back to ``"prediction"``.
    """
    out = summary.store.get("output")
    if isinstance(out, str) and out:
        return out
    if isinstance(out, dict):
        if out.get("name"):
            return str(out["name"])
        if out.get("selector") not in (None, ""):
            return f"output {out['selector']}"
    return "prediction"


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


def bin_index(x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Bin of each value, bins (z_{k-1}, z_k] with z_0 in bin 0; -1 outside [z_0, z_K].

    >>> bin_index(np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0]), np.array([0.0, 1.0, 2.0]))
    array([ 0,  0,  0,  1,  1, -1])
    """
    idx = np.searchsorted(edges, x, side="left") - 1
    idx[x == edges[0]] = 0
    idx[(idx < 0) | (idx >= len(edges) - 1)] = -1
    return idx


def _new_figure(size: tuple[float, float], *, layout: str | None = "constrained") -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, layout=layout)
    FigureCanvasAgg(fig)
    return fig


def _wrap(text: str, width: int, max_lines: int | None = None) -> str:
    kwargs: dict[str, Any] = {"width": width, "break_on_hyphens": False}
    if max_lines is not None:
        kwargs |= {"max_lines": max_lines, "placeholder": "…"}
    return textwrap.fill(text, **kwargs) or text


def _effect_artists(ax: Axes, feat: FeatureSummary, prefix: str = "", *, labels: bool) -> None:
    """Curve, +/- STD band and dashed +/- 2 SE lines of one feature on ``ax``."""
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


def _store_column(store: Store, name: str) -> tuple[np.ndarray, np.ndarray]:
    j = store.feature_index(name)
    return store.X[:, j], store.local_effects[:, j]


def _draw_violins(ax: Axes, feat: FeatureSummary, x: np.ndarray, effects: np.ndarray) -> int:
    """Violins of the local effects per bin; returns the number of rows outside the bins."""
    idx = bin_index(x, feat.edges)
    centres = (feat.edges[:-1] + feat.edges[1:]) / 2
    widths = 0.9 * np.diff(feat.edges)
    order = np.argsort(idx, kind="stable")
    bounds = np.searchsorted(idx[order], np.arange(-1, feat.n_bins + 1))
    data, positions, width, ks = [], [], [], []
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
        positions.append(centres[k])
        width.append(widths[k])
        ks.append(k)
    if data:
        parts = ax.violinplot(
            data,
            positions=positions,
            widths=width,
            showextrema=False,
            showmeans=False,
            showmedians=False,
        )
        for k, body in zip(ks, parts["bodies"], strict=True):
            body.set_facecolor(style.VIOLIN)
            body.set_edgecolor(style.VIOLIN)
            body.set_alpha(0.4)
            body.set_linewidth(0.5 if feat.n_bins <= 40 else 0.0)
            body.set_zorder(1.5)
            body.set_gid(f"violin_{k}")
        if not labelled:
            parts["bodies"][0].set_label(_VIOLIN_LABEL)
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
    fig = _new_figure(_NOT_ESTIMABLE_SIZE, layout=None)
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


def feature_figure(summary: Summary, name: str, *, store: Store | None = None) -> Figure:
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

    Returns
    -------
    matplotlib.figure.Figure
        Artists as listed in the module docstring.
    """
    import matplotlib

    feat = summary.feature(name)
    if feat.status != "ok" or feat.n_bins == 0:
        return not_estimable_figure(feat)
    output = output_name(summary)
    with matplotlib.rc_context(style.RC):
        fig = _new_figure(_FEATURE_SIZE)
        top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(3, 2))
        top.set_gid("effect_axes")
        bottom.set_gid("bins_axes")

        _effect_artists(top, feat, labels=True)
        n_outside_store = 0
        if store is not None:
            x, effects = _store_column(store, name)
            rug = quantile_subsample(x, RUG_MAX)
            shown = "all" if len(rug) == len(x) else f"{len(rug):,} of"
            top.plot(
                rug,
                np.full(len(rug), 0.02),
                linestyle="none",
                marker="|",
                markersize=7,
                markeredgewidth=0.6,
                color=style.RUG,
                alpha=0.25 if len(rug) > 300 else 0.5,
                transform=top.get_xaxis_transform(),
                gid="rug",
                label=f"data values ({shown} {len(x):,} rows)",
            )
            if centered_on_mean(summary):
                mean_prediction = float(np.mean(store.prediction))
                top.axhline(
                    0.0,
                    color=style.GREY,
                    linestyle=":",
                    linewidth=1.0,
                    gid="mean_prediction",
                    label=f"average prediction ({mean_prediction:.4g})",
                )
        top.set_ylabel(f"centered effect on {_wrap(output, 40, 2)}")
        n_filled = int(feat.bin_filled.sum())
        bins_text = f"K = {feat.n_bins} bins" + (f", {n_filled} empty" if n_filled else "")
        top.set_title(
            f"{estimator_label(summary.estimator)}, {bins_text}, N = {summary.n_rows:,} rows",
            loc="left",
        )
        fig.suptitle(_wrap(name, 70, 2), fontsize=12, fontweight="bold")

        extra = _draw_bins(bottom, feat)
        if store is not None:
            n_outside_store = _draw_violins(bottom, feat, x, effects)
        bottom.axhline(0.0, color=style.BLACK, linewidth=0.6, zorder=2, gid="zero")
        bottom.set_ylabel("bin effect\n(d output / d feature)")
        bottom.set_xlabel(_wrap(name, 90, 2))
        outside = max(feat.n_outside, n_outside_store)
        if outside:
            bottom.text(
                1.0,
                1.0,
                f"{outside:,} rows outside [z₀, z_K] not shown",
                transform=bottom.transAxes,
                ha="right",
                va="bottom",
                fontsize=7,
                color=style.GREY,
                gid="outside_note",
            )
        lo, hi = feat.edges[0], feat.edges[-1]
        pad = 0.02 * (hi - lo) if hi > lo else 0.5
        bottom.set_xlim(lo - pad, hi + pad)
        handles, labels = top.get_legend_handles_labels()
        bottom_handles = dict(zip(*reversed(bottom.get_legend_handles_labels()), strict=True))
        bottom_handles |= {p.get_label(): p for p in extra}
        # bottom panel in reading order: bars, empty bins, whiskers, violins
        for label in sorted(bottom_handles, key=_BOTTOM_ORDER.index):
            handles.append(bottom_handles[label])
            labels.append(label)
        fig.legend(handles, labels, loc="outside lower center", ncols=2, frameon=False).set_gid(
            "legend"
        )
    return fig


def overview_figure(summary: Summary, names: list[str] | tuple[str, ...] | None = None) -> Figure:
    """All features (or ``names``) in a grid of small effect plots on a common y scale.

    Each cell is the curve with its +/- STD band and +/- 2 SE lines, titled with
    the feature name; a not-estimable feature's cell says so. Artists as in the
    module docstring.
    """
    import matplotlib

    feats = [summary.feature(n) for n in names] if names is not None else list(summary.features)
    n = max(len(feats), 1)
    ncols = min(n, 4)
    nrows = -(-n // ncols)
    with matplotlib.rc_context(style.RC):
        fig = _new_figure((0.4 + 3.1 * ncols, 1.0 + 2.4 * nrows))
        axes = np.atleast_1d(fig.subplots(nrows, ncols, sharey=True, squeeze=False)).ravel()
        labelled = False
        for i, ax in enumerate(axes):
            if i >= len(feats):
                ax.set_visible(False)
                continue
            feat = feats[i]
            ax.set_gid(f"f{i}.axes")
            ax.set_title(_wrap(feat.name, 36, 2), fontsize=9)
            if feat.status != "ok" or feat.n_bins == 0:
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
                continue
            _effect_artists(ax, feat, f"f{i}.", labels=not labelled)
            labelled = True
            ax.tick_params(labelleft=True)
        for row in range(nrows):
            axes[row * ncols].set_ylabel(f"effect on {_wrap(output_name(summary), 24, 1)}")
        fig.suptitle(
            f"{estimator_label(summary.estimator)}: {len(feats)} features, "
            f"N = {summary.n_rows:,} rows, common y scale",
            fontsize=11,
        )
        if labelled:
            handles, labels = axes[0].get_legend_handles_labels()
            for ax in axes[1:]:
                if not handles:
                    handles, labels = ax.get_legend_handles_labels()
            fig.legend(handles, labels, loc="outside lower center", ncols=3, frameon=False).set_gid(
                "legend"
            )
    return fig
