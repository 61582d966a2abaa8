"""Second-order ALE figures: the doubly-centered surface of a feature pair as a heat map.

Artists of :func:`interaction_figure` (Agg canvas, never pyplot) carry a ``gid``; cells
(z_{k-1}, z_k] x (w_{l-1}, w_l] as in the summary:
    ``surface_axes``  x = first feature, y = second feature
    ``surface``       Gouraud QuadMesh, bilinear on R x R sub-cells per cell: its array is
                      (K_b R + 1, K_a R + 1), ``array[::R, ::R]`` is ``effect.T``; colours
                      symmetric about 0 up to :func:`colour_limit`, saturated beyond
    ``filled_cells``  PolyCollection, hatched, a rectangle per True of ``filled`` (row-major)
    ``cell_edges``    LineCollection of the bin limits of both features
    ``data_points``   Line2D of the rows' (x_a, x_b) (store only; :func:`scatter_rows`)
    ``colorbar``      the colour-bar axes, centred at 0
    ``legend``        filled cells, data points
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ale_cli.errors import InputError
from ale_cli.plot import style
from ale_cli.plot.layout import effect_label, figure_legend, new_figure, not_estimable_figure, wrap

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.collections import QuadMesh
    from matplotlib.figure import Figure

    from ale_cli.store.npz import Store
    from ale_cli.summary.model import InteractionSummary, Summary

SCATTER_MAX = 2000
#: Diverging, colour-blind-safe (ColorBrewer RdBu), reversed: red = positive effect.
CMAP = "RdBu_r"
_LABELS = {
    "dale": "DALE (mixed derivatives at the data points)",
    "ale": "classic ALE (finite differences at cell corners)",
}
_FILLED_LABEL = "empty cell (effect of the nearest non-empty cell)"
# fixed layout in inches: legend (2 rows) and x label below the axes, two title lines above
_WIDTH, _HEIGHT = 7.2, 6.25
_BOTTOM, _AXES = 1.1, 4.2


def pair_label(item: InteractionSummary) -> str:
    """``"a × b"``."""
    return f"{item.features[0]} × {item.features[1]}"


def find_interaction(summary: Summary, pair: int | tuple[str, str]) -> InteractionSummary:
    """The interaction at position ``pair``, or of the two named features.

    >>> from ale_cli.summary.model import InteractionSummary, Summary
    >>> s = Summary("dale", {}, {}, 0, (), interactions=(
    ...     InteractionSummary(features=("a", "b"), estimator="dale"),))
    >>> find_interaction(s, ("a", "b")).name, find_interaction(s, 0).name
    ('a,b', 'a,b')
    >>> find_interaction(s, ("b", "c"))
    Traceback (most recent call last):
    ...
    ale_cli.errors.InputError: pair must be an interaction of the summary (a,b), got b,c
    """
    known = ", ".join(item.name for item in summary.interactions) or "none"
    if isinstance(pair, int):
        if not 0 <= pair < len(summary.interactions):
            raise InputError(
                f"{{param}} must be an index below {len(summary.interactions)} "
                f"(interactions: {known}), got {pair}",
                param="pair",
            )
        return summary.interactions[pair]
    for item in summary.interactions:
        if tuple(item.features) == tuple(pair):
            return item
    raise InputError(
        f"{{param}} must be an interaction of the summary ({known}), got {','.join(pair)}",
        param="pair",
    )


def scatter_rows(n_rows: int, m: int = SCATTER_MAX) -> np.ndarray:
    """Rows to scatter: all if at most ``m``, else ``m`` rows of a fixed-seed draw (sorted).

    >>> scatter_rows(3).tolist(), len(scatter_rows(10_000, 50))
    ([0, 1, 2], 50)
    """
    if n_rows <= m:
        return np.arange(n_rows)
    return np.sort(np.random.default_rng(0).choice(n_rows, size=m, replace=False))


def refine(edges: np.ndarray, r: int) -> np.ndarray:
    """Each interval of ``edges`` split into ``r`` equal parts, (K r + 1,).

    >>> refine(np.array([0.0, 1.0, 3.0]), 2).tolist()
    [0.0, 0.5, 1.0, 2.0, 3.0]
    """
    t = np.linspace(0.0, 1.0, r + 1)[:-1]
    inner = (edges[:-1, None] + np.diff(edges)[:, None] * t[None, :]).ravel()
    return np.append(inner, edges[-1])


def bilinear(effect: np.ndarray, r: int) -> np.ndarray:
    """The corner surface (K_a+1, K_b+1) interpolated bilinearly on ``r`` x ``r`` sub-cells.

    >>> bilinear(np.array([[0.0, 2.0], [2.0, 4.0]]), 2).tolist()
    [[0.0, 1.0, 2.0], [1.0, 2.0, 3.0], [2.0, 3.0, 4.0]]
    """
    ia, ib = np.arange(effect.shape[0]), np.arange(effect.shape[1])
    rows = np.array([np.interp(refine(ia.astype(float), r), ia, col) for col in effect.T]).T
    return np.array([np.interp(refine(ib.astype(float), r), ib, row) for row in rows])


def sub_cells(shape: tuple[int, int]) -> int:
    """R: sub-cells per cell and axis, about 80 across the larger axis (at least 1).

    >>> sub_cells((10, 10)), sub_cells((200, 3))
    (8, 1)
    """
    return max(1, -(-80 // max(shape)))


def colour_limit(item: InteractionSummary) -> float:
    """max |effect| over the corners of the cells that hold rows (all corners if none do).

    >>> from ale_cli.summary.model import InteractionSummary
    >>> item = InteractionSummary(features=("a", "b"), estimator="ale",
    ...     effect=np.array([[1.0, -2.0, 9.0], [0.5, 0.0, 9.0]]),
    ...     filled=np.array([[False, True]]))
    >>> colour_limit(item)
    2.0
    """
    cells = np.pad(~item.filled, 1)  # a corner touches the (up to) four cells around it
    data = cells[:-1, :-1] | cells[1:, :-1] | cells[:-1, 1:] | cells[1:, 1:]
    values = item.effect[data] if data.any() else item.effect
    values = values[np.isfinite(values)]
    top = float(np.max(np.abs(values))) if values.size else 0.0
    return top if top > 0 else 1.0


def interaction_figure(
    summary: Summary,
    pair: int | tuple[str, str],
    *,
    store: Store | None = None,
    ylabel: str | None = None,
) -> Figure:
    """The heat map of interaction ``pair`` (its index, or its two feature names).

    ``store`` adds the data points; ``ylabel`` labels the colour bar (one line of 45
    characters). A not-estimable pair gives a note figure.
    """
    import matplotlib

    item = find_interaction(summary, pair)
    if not item.estimable:
        return not_estimable_figure(pair_label(item), item.reason)
    with matplotlib.rc_context(style.RC | {"axes.grid": False}):
        fig = new_figure((_WIDTH, _HEIGHT))
        rect = (0.13, _BOTTOM / _HEIGHT, 0.66, _AXES / _HEIGHT)
        ax = fig.add_axes(rect, gid="surface_axes")
        cax = fig.add_axes((0.83, rect[1], 0.03, rect[3]), gid="colorbar")
        lim = colour_limit(item)
        mesh = _draw_surface(ax, item, lim)
        handles = _draw_cells(ax, item)
        if store is not None:  # the rows' (x_a, x_b) as dots (:func:`scatter_rows`)
            n_rows = store.X.shape[0]
            rows = scatter_rows(n_rows)
            shown = "all" if len(rows) == n_rows else f"{len(rows):,} of"
            (points,) = ax.plot(
                store.X[rows, store.input_index(item.features[0])],
                store.X[rows, store.input_index(item.features[1])],
                linestyle="none",
                marker=".",
                markersize=2.5,
                color=style.BLACK,
                alpha=0.4 if len(rows) > 300 else 0.7,
                gid="data_points",
                label=f"data points ({shown} {n_rows:,} rows)",
            )
            handles.append(points)
        za, zb = item.edges_a, item.edges_b
        ax.set_xlim(za[0], za[-1])
        ax.set_ylim(zb[0], zb[-1])
        ax.set_xlabel(wrap(item.features[0], 80, 2))
        ax.set_ylabel(wrap(item.features[1], 60, 2))
        label = effect_label(
            summary, "doubly-centered effect", ylabel, width=45, name_width=30, max_lines=1
        )
        extend = {(True, True): "both", (True, False): "max", (False, True): "min"}
        high, low = np.nanmax(item.effect) > lim, np.nanmin(item.effect) < -lim
        fig.colorbar(mesh, cax=cax, extend=extend.get((high, low), "neither")).set_label(label)
        ka, kb = item.shape
        n_filled = int(item.filled.sum())
        empty = f", {n_filled} empty" if n_filled else ""
        ax.set_title(
            f"{_LABELS.get(item.estimator, item.estimator)}\n"
            f"{ka} × {kb} cells{empty}, N = {summary.n_rows:,} rows",
            loc="left",
        )
        fig.suptitle(
            wrap(f"Interaction {pair_label(item)}", 70, 1),
            x=0.13,
            ha="left",
            y=0.97,
            fontsize=12,
            fontweight="bold",
        )
        if handles:
            figure_legend(fig, handles, [h.get_label() for h in handles], ncols=1)
        return fig


def _draw_surface(ax: Axes, item: InteractionSummary, lim: float) -> QuadMesh:
    """The bilinear surface as a Gouraud-shaded mesh, colours from -``lim`` to ``lim``."""
    from matplotlib.colors import Normalize

    r = sub_cells(item.shape)
    gx, gy = np.meshgrid(refine(item.edges_a, r), refine(item.edges_b, r))
    return ax.pcolormesh(
        gx,
        gy,
        bilinear(item.effect, r).T,
        shading="gouraud",
        cmap=CMAP,
        norm=Normalize(-lim, lim),
        gid="surface",
        rasterized=True,  # one image in SVG files, not thousands of shaded triangles
    )


def _draw_cells(ax: Axes, item: InteractionSummary) -> list[Any]:
    """The bin limits and the hatched empty cells; returns their legend handle, if any."""
    from matplotlib.collections import LineCollection, PolyCollection
    from matplotlib.patches import Patch

    za, zb = item.edges_a, item.edges_b
    segments = [[(z, zb[0]), (z, zb[-1])] for z in za] + [[(za[0], w), (za[-1], w)] for w in zb]
    ax.add_collection(
        LineCollection(segments, colors=style.GREY, linewidths=0.3, alpha=0.5, gid="cell_edges")
    )
    if not item.filled.any():
        return []
    corners = [  # (4, 2) per filled cell, in row-major (k, l) order
        np.array([[za[k], zb[m]], [za[k + 1], zb[m]], [za[k + 1], zb[m + 1]], [za[k], zb[m + 1]]])
        for k, m in zip(*np.nonzero(item.filled), strict=True)
    ]
    ax.add_collection(
        PolyCollection(
            corners,
            facecolors="none",
            edgecolors=style.GREY,
            linewidths=0.4,
            hatch="///",
            gid="filled_cells",
        )
    )
    return [Patch(facecolor="none", edgecolor=style.GREY, hatch="///", label=_FILLED_LABEL)]
