"""Marks drawn from the store on first-order figures: the rug of data values, the
average prediction and violins of the local effects per bin (bins as in the summary)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ale_cli.core.binning import assign
from ale_cli.plot import style
from ale_cli.plot.layout import centered_on_mean

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from ale_cli.store.npz import Store
    from ale_cli.summary.model import FeatureSummary, Summary


RUG_MAX = 2000
VIOLIN_MIN = 5
VIOLIN_MAX = 1000


def quantile_subsample(values: np.ndarray, m: int) -> np.ndarray:
    """``values`` sorted; if more than ``m``, ``m`` of them at evenly spaced ranks
    (min and max kept).

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

    Returns the points (n_points,) and the density scaled to max 1 (n_points,);
    h = s n^(-1/5), s the std (ddof=1), as ``violinplot``. ``values`` not all equal.

    >>> y, half = kde_outline(np.array([0.0, 1.0, 1.0, 2.0]), 5)
    >>> y.tolist(), float(half.max()), bool(half[2] == 1.0)
    ([0.0, 0.5, 1.0, 1.5, 2.0], 1.0, True)
    """
    h = np.std(values, ddof=1) * len(values) ** (-1 / 5)
    y = np.linspace(values.min(), values.max(), n_points)
    density = np.exp(-0.5 * ((y[:, None] - values[None, :]) / h) ** 2).sum(axis=1)
    return y, density / density.max()


def draw_violins(ax: Axes, feat: FeatureSummary, x: np.ndarray, effects: np.ndarray) -> int:
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
                label=None if labelled else VIOLIN_LABEL,
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
            label=None if labelled else VIOLIN_LABEL,
        )
        labelled = True
        ax.add_collection(body, autolim=False)
        ax.update_datalim(outline)  # the collection's limits, without a pass per violin
    ax.autoscale_view()
    return int(bounds[1] - bounds[0])


VIOLIN_LABEL = f"local effects per bin (bins with ≥ {VIOLIN_MIN} rows)"


def draw_store_marks(ax: Axes, summary: Summary, store: Store, x: np.ndarray) -> None:
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
