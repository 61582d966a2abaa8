"""Colours and rc settings shared by every figure.

The palette is Okabe & Ito's (2008), distinguishable with the common forms of
colour blindness; no meaning is carried by colour alone (the standard-error
band is also dashed, filled bins are also hatched). The rc settings fix what
would otherwise make two renders of the same figure differ (SVG ids, the
creation date) and give the defaults a readable size.

SVG text stays text (``svg.fonttype: none``): every label is a ``<text>``
element that a browser can search and a screen reader can read, in the font
stack ``'DejaVu Sans', sans-serif``. Matplotlib lays text out with DejaVu Sans
(it ships with matplotlib, so layout and PNG files do not depend on the
installed fonts); a viewer without it uses its own sans-serif font, usually
narrower (DejaVu Sans is one of the wide ones), so labels keep their room.
"""

from __future__ import annotations

from typing import Any

# Okabe-Ito: https://jfly.uni-koeln.de/color/
BLACK = "#000000"
ORANGE = "#E69F00"
SKY_BLUE = "#56B4E9"
BLUISH_GREEN = "#009E73"
YELLOW = "#F0E442"
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
    # one font, shipped with matplotlib: the same layout everywhere; in SVG files the
    # font-family is "'DejaVu Sans', sans-serif"
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"],
    # feature names are data, not TeX: "price ($) per $unit" is drawn as written
    "text.parse_math": False,
    # reproducible output: fixed SVG ids; text as <text> elements (searchable, readable)
    "svg.hashsalt": "ale",
    "svg.fonttype": "none",
    "path.simplify": True,
}

# savefig metadata: no creation date, no software version (both change between runs/installs);
# the tool's name marks the file as written by ale
SVG_METADATA: dict[str, Any] = {"Date": None, "Creator": "ale"}
PNG_METADATA: dict[str, Any] = {"Software": "ale"}
