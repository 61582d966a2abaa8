"""The report's figures: inline SVG, the plot step's files reused, and the drift trend line."""

from __future__ import annotations

import base64
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ale_cli.io.files import sha256_file
from ale_cli.outputs.figures import read_manifest
from ale_cli.plot import style
from ale_cli.plot.render import figure_tasks
from ale_cli.summary.model import Summary
from ale_cli.summary.regional import RegionalSummary

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_PROLOG = re.compile(r"\A.*?(?=<svg\b)", re.S)
_METADATA = re.compile(r"\s*<metadata>.*?</metadata>", re.S)
_ID = re.compile(r'\bid="([^"]+)"')
_URL = re.compile(r"url\(#([^)]+)\)")
_HREF = re.compile(r'(xlink:href|href)="#([^"]+)"')
_COORDS = re.compile(r'\b(d|x|y|x1|x2|y1|y2|width|height|points)="([^"]*)"')
_DECIMALS = re.compile(r"(-?\d+\.\d)\d+")
_SIZE = re.compile(r'<svg([^>]*?) width="([0-9.]+)pt" height="([0-9.]+)pt"')


def svg_text(fig: Figure, *, prefix: str) -> str:
    """The figure as one ``<svg>`` element (``ale plot``'s rc settings; no prolog, DOCTYPE or
    metadata; coordinates to 0.1 pt) whose ids all start with ``prefix`` (unique in the page)."""
    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context(style.RC):
        fig.savefig(buffer, format="svg", metadata=style.SVG_METADATA)
    text = _METADATA.sub("", _PROLOG.sub("", buffer.getvalue(), count=1), count=1)
    # coordinates to 0.1 pt: a third smaller, the same picture
    text = _COORDS.sub(lambda m: f'{m.group(1)}="{_DECIMALS.sub(_round, m.group(2))}"', text)
    text = _ID.sub(lambda m: f'id="{prefix}{m.group(1)}"', text)
    text = _URL.sub(lambda m: f"url(#{prefix}{m.group(1)})", text)
    text = _HREF.sub(lambda m: f'{m.group(1)}="#{prefix}{m.group(2)}"', text)
    # a width/height in pt fixes the size; the page scales it down to its column instead
    size = r'<svg\1 class="figure" width="\2pt" height="\3pt" role="img"'
    return _SIZE.sub(size, text, count=1).strip()


def _round(match: re.Match[str]) -> str:
    return f"{float(match.group(0)):.1f}"


@dataclass(frozen=True)
class Trend:
    """A small line chart of values over runs, in SVG user units (``width`` x ``height``):
    ``points`` ``(x, y, value, label)`` of the runs with a value, ``polyline`` the line."""

    width: int
    height: int
    points: tuple[tuple[float, float, float, str], ...]
    polyline: str
    maximum: float


def trend(
    values: Sequence[float | None], labels: Sequence[str], *, width: int = 180, height: int = 40
) -> Trend:
    """The trend line of ``values`` (one per run, oldest first) scaled to the box,
    0 at the bottom and the largest value at the top.

    >>> t = trend([2.0, None, 0.0], ["a", "b", "c"], width=100, height=20)
    >>> [(x, y) for x, y, _, _ in t.points], t.polyline
    ([(4.0, 4.0), (96.0, 16.0)], '4.0,4.0 96.0,16.0')
    """
    pad = 4.0
    known = [v for v in values if v is not None]
    top = max(known, default=0.0)
    n = len(values)
    points = []
    for i, (v, label) in enumerate(zip(values, labels, strict=True)):
        if v is None:
            continue
        x = pad + (width - 2 * pad) * (i / (n - 1) if n > 1 else 0.5)
        y = height - pad - ((height - 2 * pad) * v / top if top > 0 else 0.0)
        points.append((round(x, 2), round(y, 2), v, label))
    line = " ".join(f"{x},{y}" for x, y, _, _ in points)
    return Trend(width, height, tuple(points), line, top)


#: the formats taken, in order of preference, with their media types
_MEDIA = (("svg", "image/svg+xml"), ("png", "image/png"))
#: a figure key: ("feature", name), ("overview", None), ("interaction", index) or
#: ("regional", name)
Key = tuple[str, Any]


def rendered_figures(
    summary: Summary, directory: str | Path, regions: RegionalSummary | None = None
) -> dict[Key, str]:
    """The ``<img>`` of each figure of ``summary`` (or ``regions``) that ``ale run``'s plot
    step wrote in ``directory`` (:func:`~ale_cli.plot.render.figure_tasks`), its file as a
    ``data:`` URI, when the manifest lists it with the sha256 its bytes still have; empty
    without a manifest. The report draws any other figure."""
    import markupsafe

    root = Path(directory)
    listed = read_manifest(root)
    if listed is None:
        return {}
    out: dict[Key, str] = {}
    names = list(dict.fromkeys(f.name for f in summary.features))
    for kind, key, stem in figure_tasks(summary, names, regions):
        alt = markupsafe.escape(f"{kind} {key if key is not None else ''}".strip())
        for ext, media in _MEDIA:
            file = f"{stem}.{ext}"
            path = root / file
            if file not in listed or not path.is_file() or sha256_file(path) != listed[file]:
                continue
            data = base64.b64encode(path.read_bytes()).decode("ascii")
            out[(kind, key)] = f'<img class="figure" alt="{alt}" src="data:{media};base64,{data}">'
            break
    return out
