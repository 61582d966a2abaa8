"""Figures of ALE summaries: functions that take results and return matplotlib Figures.

Layer: plot sits above the adapters (summary, store) and below the CLI. Nothing
here calls ``plt.show()`` or touches pyplot's global figure list: figures are
plain :class:`matplotlib.figure.Figure` objects, rendered off-screen by Agg,
and importing this package does not import matplotlib (every module imports it
inside its functions, so ``ale --help``, ``ale rebin`` and ``ale rhale`` stay
free of it).

Modules
-------
:mod:`ale_cli.plot.first_order`
    One feature's two-panel figure (:func:`feature_figure`), the overview grid
    of all features (:func:`overview_figure`) and the small figure for a
    feature that could not be estimated (:func:`not_estimable_figure`). Its
    docstring lists every artist and the ``gid`` by which tests find it.
:mod:`ale_cli.plot.render`
    Picks the features, matches the store to the summary, names the files and
    saves every figure atomically and reproducibly (:func:`render_summary`).
:mod:`ale_cli.plot.style`
    The colour-blind-safe palette (Okabe-Ito) and the rc settings that make
    output byte-reproducible.

Second-order (interaction) heat maps will live in their own module beside
``first_order`` and be listed by :func:`ale_cli.plot.render.render_summary`
from ``Summary.interactions``.
"""

from __future__ import annotations

from typing import Any

_EXPORTS = {
    "feature_figure": "first_order",
    "not_estimable_figure": "first_order",
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
        import importlib

        return getattr(importlib.import_module(f"ale_cli.plot.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'ale_cli.plot' has no attribute {name!r}")
