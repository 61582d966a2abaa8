"""Figures of ALE summaries: functions that take results and return matplotlib Figures.

Layer: plot sits above the adapters (summary, store) and below the CLI. Nothing
here calls ``plt.show()`` or touches pyplot's global figure list: figures are
plain :class:`matplotlib.figure.Figure` objects, rendered off-screen by Agg,
and importing this package does not import matplotlib (every module imports it
inside its functions, so ``ale --help``, ``ale rebin`` and ``ale rhale`` stay
free of it).

The figure API for Python users: three functions that take a
:class:`~ale_cli.summary.model.Summary` (and optionally the
:class:`~ale_cli.store.npz.Store` it was made from) and return a Figure,
neither saved nor shown; every parameter after the first two is keyword-only.

``feature_figure(summary, name, *, store=None, ylabel=None)``
    One feature: the centered effect over its K+1 edges above, the K bin
    effects below.
``overview_figure(summary, *, names=None, ylabel=None)``
    Every feature (or ``names``) in a grid on a common y scale.
``interaction_figure(summary, pair, *, store=None, ylabel=None)``
    The heat map of one second-order interaction, ``pair`` its index in
    ``summary.interactions`` or its two feature names.

>>> from ale_cli.plot import feature_figure  # doctest: +SKIP
>>> fig = feature_figure(summary, "bmi", store=store, ylabel="risk")  # doctest: +SKIP
>>> fig.savefig("bmi.svg")  # doctest: +SKIP

Modules
-------
:mod:`ale_cli.plot.first_order`
    One feature's two-panel figure (:func:`feature_figure`) and the overview
    grid of all features (:func:`overview_figure`). Its docstring lists every
    artist and the ``gid`` by which tests find it.
:mod:`ale_cli.plot.layout`
    What every figure shares: the canvas, the legend, wrapped text, the labels
    of estimator, output and centering, and the small figure for a feature that
    could not be estimated (:func:`not_estimable_figure`).
:mod:`ale_cli.plot.marks`
    The marks drawn from the store: rug, average prediction, violins.
:mod:`ale_cli.plot.levels`
    Discrete and categorical features: one dot per level.
:mod:`ale_cli.plot.second_order`
    The heat map of a feature pair's doubly-centered surface
    (:func:`interaction_figure`).
:mod:`ale_cli.plot.render`
    Picks the features, matches the store to the summary, names the files and
    saves every figure reproducibly into a directory that replaces the
    previous one as a whole (:func:`render_summary`).
:mod:`ale_cli.plot.style`
    The colour-blind-safe palette (Okabe-Ito) and the rc settings that make
    output byte-reproducible and keep SVG text as text.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "feature_figure": "first_order",
    "interaction_figure": "second_order",
    "not_estimable_figure": "layout",
    "output_name": "layout",
    "overview_figure": "first_order",
    "RenderResult": "render",
    "plot_files": "render",
    "render_summary": "render",
    "safe_stem": "render",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Import the submodules on first use, so ``import ale_cli.plot`` costs nothing."""
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"ale_cli.plot.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'ale_cli.plot' has no attribute {name!r}")
