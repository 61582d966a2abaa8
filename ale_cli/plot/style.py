"""Colours and rc settings shared by every figure.

Okabe & Ito's colour-blind-safe palette; no meaning by colour alone (dashes, hatches).
The rc settings make renders reproducible (SVG ids, no date) and keep SVG text as
searchable ``<text>`` in DejaVu Sans (shipped with matplotlib, one of the wide fonts).
"""

from __future__ import annotations

from typing import Any

# Okabe-Ito: https://jfly.uni-koeln.de/color/
BLACK = "#000000"
ORANGE = "#E69F00"
SKY_BLUE = "#56B4E9"
BLUISH_GREEN = "#009E73"
BLUE = "#0072B2"
VERMILLION = "#D55E00"
REDDISH_PURPLE = "#CC79A7"
GREY = "#7F7F7F"
LIGHT_GREY = "#D9D9D9"

CURVE = BLUE
STD_BAND = SKY_BLUE
STDERR = VERMILLION
BAR = BLUISH_GREEN
VIOLIN = REDDISH_PURPLE
RUG = BLACK
FILLED = LIGHT_GREY

RC: dict[str, Any] = {
    "font.size": 9.0,
    "axes.titlesize": 10.0,
    "axes.labelsize": 9.0,
    "legend.fontsize": 8.0,
    "xtick.labelsize": 8.0,
    "ytick.labelsize": 8.0,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#EBEBEB",
    "grid.linewidth": 0.6,
    "hatch.color": GREY,
    "hatch.linewidth": 0.6,
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"],
    # feature names are data, not TeX: "price ($) per $unit" is drawn as written
    "text.parse_math": False,
    "svg.hashsalt": "ale",
    "svg.fonttype": "none",
    "path.simplify": True,
    # cheaper draws: titles at a fixed height (no search of the tick labels' boxes), no hinting
    "axes.titley": 1.0,
    "text.hinting": "no_hinting",
}

# savefig metadata: no date or version (they change between runs and installs)
SVG_METADATA: dict[str, Any] = {"Date": None, "Creator": "ale"}
PNG_METADATA: dict[str, Any] = {"Software": "ale"}
