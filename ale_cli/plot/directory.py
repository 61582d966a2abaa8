"""A figure directory, replaced as a whole or not at all, and reproducible saves.

A directory holding anything its manifest (``.ale-plots.json``) does not list is
refused, so a mistyped ``-o`` never deletes other files. SVG and PNG files carry no
date or version (fixed ``svg.hashsalt``, ``Software: ale``): same inputs, same bytes.
"""

from __future__ import annotations

import contextlib
import io
import shutil
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ale_cli.errors import InputError, RunError
from ale_cli.io.files import atomic_write, swap_in, temporary_name
from ale_cli.outputs import figures
from ale_cli.plot import style

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@contextlib.contextmanager
def figure_directory(out: Path) -> Iterator[Path]:
    """Yield a new empty directory beside ``out`` to draw figures into. On success the
    manifest of its files is written into it and it replaces ``out`` (a symlink's target),
    SIGINT and SIGTERM waiting for the swap; on any exception it is removed and ``out``
    untouched. InputError unless ``out`` is absent, or a directory holding only what ale
    wrote."""
    if out.exists() and not out.is_dir():
        raise InputError(f"output directory '{out}' is a file", param="out_dir")
    if out.exists() and (reason := figures.refusal(out)) is not None:
        raise InputError(reason, param="out_dir")
    target = out.resolve() if out.is_symlink() else out
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.parent / temporary_name(target.name)
        tmp.mkdir()
    except OSError as exc:
        raise RunError(f"cannot write '{target}': {exc.strerror or exc}") from exc
    try:
        yield tmp
        drawn = sorted(p for p in tmp.iterdir() if p.is_file() and not p.is_symlink())
        figures.write_manifest(tmp, drawn)
        try:
            if target.exists():
                tmp.chmod(target.stat().st_mode & 0o7777)
            swap_in(tmp, target)
        except OSError as exc:
            raise RunError(f"cannot replace '{target}': {exc.strerror or exc}") from exc
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def save_figure(fig: Figure, path: Path, fmt: str, *, dpi: int) -> None:
    """Save ``fig`` atomically to ``path`` as ``fmt``, without dates or version strings."""
    import matplotlib

    with matplotlib.rc_context(style.RC), atomic_write(path) as fh:
        if fmt == "png":
            fh.write(png_bytes(fig, dpi))
        else:
            fig.savefig(fh, format=fmt, dpi=dpi, metadata=style.SVG_METADATA)


def png_bytes(fig: Figure, dpi: int) -> bytes:
    """``fig`` as an RGBA PNG (its pixels as ``savefig`` draws them, ``dpi`` in ``pHYs``,
    ``style.PNG_METADATA`` as ``tEXt``): rows unfiltered, zlib level 3 (Pillow's encoder
    tries five filters per row: smaller files for more CPU)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="rgba", dpi=dpi)
    width = int(fig.get_figwidth() * dpi)
    rows = np.frombuffer(buffer.getbuffer(), np.uint8).reshape(-1, 4 * width)
    filtered = np.zeros((len(rows), 1 + 4 * width), np.uint8)  # filter byte 0: none
    filtered[:, 1:] = rows
    ppm = round(dpi / 0.0254)
    chunks = [
        (b"IHDR", struct.pack(">IIBBBBB", width, len(rows), 8, 6, 0, 0, 0)),
        (b"pHYs", struct.pack(">IIB", ppm, ppm, 1)),
        *((b"tEXt", f"{k}\0{v}".encode("latin-1")) for k, v in style.PNG_METADATA.items()),
        (b"IDAT", zlib.compress(filtered.data, 3)),
        (b"IEND", b""),
    ]
    return b"\x89PNG\r\n\x1a\n" + b"".join(
        struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        for kind, data in chunks
    )
