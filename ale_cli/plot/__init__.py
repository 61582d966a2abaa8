"""Figures of ALE summaries: functions that take results and return matplotlib Figures,
neither saved nor shown (never pyplot; matplotlib is imported inside functions, so
importing this is free); :func:`render_summary` writes a directory of them.
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
