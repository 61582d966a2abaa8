"""Figures the plot step already drew, taken into the report instead of drawing them again.

``ale run`` draws every figure of a summary in its plot step (``plots/<estimator>/``:
one file per feature, ``overview``, one per interaction, or a regional summary's
``<feature>__regions`` per feature with a kept split, named by
:func:`ale_cli.plot.render.file_stems`, listed with their sha256 in the directory's
manifest). The report takes each of them as an ``<img>`` whose source is the file
itself as a ``data:`` URI (SVG when the step wrote SVG, else PNG), so the page stays
one self-contained file that asks for nothing. A file is taken only when the manifest
lists it and its bytes still have the listed sha256; any other figure is drawn.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from ale_cli.io.files import sha256_file
from ale_cli.outputs.figures import read_manifest
from ale_cli.plot.render import OVERVIEW, file_stems
from ale_cli.summary.model import Summary
from ale_cli.summary.regional import REGIONAL

#: the formats taken, in order of preference, with their media types
_MEDIA = (("svg", "image/svg+xml"), ("png", "image/png"))
#: a figure key: ("feature", name), ("overview", None), ("interaction", index) or
#: ("regional", name)
Key = tuple[str, Any]


def _stems(summary: Summary) -> dict[Key, str]:
    """The file stem of each figure the plot step draws for the whole ``summary``."""
    names = [f.name for f in summary.features]
    pairs = [f"{a}__{b}" for a, b in (item.features for item in summary.interactions)]
    stems = file_stems([*names, *pairs])
    out: dict[Key, str] = {("feature", n): s for n, s in zip(names, stems, strict=False)}
    if names:
        out[("overview", None)] = OVERVIEW
    for i, stem in enumerate(stems[len(names) :]):
        out[("interaction", i)] = stem
    if summary.estimator == REGIONAL:
        out |= {("regional", n): f"{s}__regions" for n, s in zip(names, stems, strict=False)}
    return out


def rendered_figures(summary: Summary, directory: str | Path) -> dict[Key, str]:
    """The ``<img>`` markup of every figure of ``summary`` found intact in ``directory``
    (see the module docstring); empty when the directory has no manifest."""
    import markupsafe

    root = Path(directory)
    listed = read_manifest(root)
    if listed is None:
        return {}
    out: dict[Key, str] = {}
    for key, stem in _stems(summary).items():
        for ext, media in _MEDIA:
            name = f"{stem}.{ext}"
            path = root / name
            if name not in listed or not path.is_file() or sha256_file(path) != listed[name]:
                continue
            data = base64.b64encode(path.read_bytes()).decode("ascii")
            alt = markupsafe.escape(f"{key[0]} {key[1] if key[1] is not None else ''}".strip())
            out[key] = f'<img class="figure" alt="{alt}" src="data:{media};base64,{data}">'
            break
    return out
