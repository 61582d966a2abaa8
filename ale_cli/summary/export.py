"""A summary as one long ("tidy") table that pandas, R and BI tools load directly (its
kinds and columns: ``docs/store-and-summary.md``, :data:`KIND_COLUMNS`; not-estimable
features and pairs have no rows). A regional summary has a ``region`` column after
``kind`` (``all rows``, then each leaf's edge and bin rows), a summary of several model
outputs an ``output`` column. The exact header row (:data:`HEADERS`) marks a CSV written
by ``ale export`` for the output guard. Integer columns are nullable ``Int64`` and
``filled`` ``boolean``, so an empty entry stays empty. Writing: :mod:`ale_cli.outputs.tables`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ale_cli.summary.model import Summary, load_summary
from ale_cli.summary.regional import RegionalFeature

if TYPE_CHECKING:
    import pandas as pd

#: the width of the band in standard errors (as ``ale plot``)
BAND_SE = 2.0

KIND_COLUMNS: dict[str, tuple[str, ...]] = {
    "edge": ("index", "x", "effect", "std", "stderr", "lower", "upper"),
    "bin": ("index", "left", "right", "count", "bin_effect", "bin_std", "bin_stderr", "filled"),
    "cell": (
        "index_a",
        "index_b",
        "x_a_left",
        "x_a_right",
        "x_b_left",
        "x_b_right",
        "count",
        "cell_effect",
        "cell_std",
        "filled",
    ),
    "corner": ("index_a", "index_b", "x_a", "x_b", "effect"),
    "stat": ("statistic", "value"),
}


def table_columns(kinds: list[str], *, region: bool = False, output: bool = False) -> list[str]:
    """The columns of a table holding rows of ``kinds``, in the order written (``region``,
    ``output``: with that column after ``kind``).

    >>> table_columns(["edge", "stat"])[:5]
    ['estimator', 'feature', 'kind', 'index', 'x']
    >>> table_columns(["edge"], region=True)[:5]
    ['estimator', 'feature', 'kind', 'region', 'index']
    """
    names = ["estimator", "feature", "kind", *(["region"] if region else [])]
    names += ["output"] if output else []
    for kind in KIND_COLUMNS:
        if kind in kinds:
            names += [c for c in KIND_COLUMNS[kind] if c not in names]
    return names


#: every header row ``ale export`` can write (one per non-empty set of kinds)
HEADERS = frozenset(
    ",".join(table_columns([k for i, k in enumerate(KIND_COLUMNS) if mask >> i & 1], **extra))
    for mask in range(1, 1 << len(KIND_COLUMNS))
    for extra in ({}, {"region": True}, {"output": True})
)

_INTEGER = ("index", "count", "index_a", "index_b")
_BOOLEAN = ("filled",)
_TEXT = ("estimator", "feature", "kind", "statistic")


def _add(
    blocks: list[dict[str, Any]], estimator: str, feature: str, kind: str, *values: Any
) -> None:
    """Append a block of rows of ``kind``: ``values`` its columns in :data:`KIND_COLUMNS` order."""
    n = len(values[0])
    if n:
        base = {"estimator": [estimator] * n, "feature": [feature] * n, "kind": [kind] * n}
        blocks.append(base | dict(zip(KIND_COLUMNS[kind], values, strict=True)))


def _table(blocks: list[dict[str, Any]]) -> pd.DataFrame:
    """The blocks one under the other; a column a block lacks is empty there."""
    import pandas as pd

    kinds = {cols["kind"][0] for cols in blocks}
    names = table_columns([k for k in KIND_COLUMNS if k in kinds] or ["edge", "bin"])
    sized = [(len(cols["kind"]), cols) for cols in blocks]
    out: dict[str, Any] = {}
    for name in names:
        if name in _TEXT:
            out[name] = [v for n, cols in sized for v in cols.get(name, [None] * n)]
            continue
        parts = [
            np.asarray(cols[name], dtype=np.float64) if name in cols else np.full(n, np.nan)
            for n, cols in sized
        ]
        values = np.concatenate(parts) if parts else np.zeros(0)
        if name in _INTEGER:
            out[name] = pd.array(values, dtype="Int64")  # NaN -> <NA>
        elif name in _BOOLEAN:
            out[name] = pd.array(np.where(np.isnan(values), None, values == 1.0), dtype="boolean")
        else:
            out[name] = values
    return pd.DataFrame(out, columns=names)


def summary_frame(summary: Summary, *, stats: bool = True) -> pd.DataFrame:
    """The long table of a summary. Per feature with K bins, in the summary's order: K+1
    edge rows, K bin rows, then (``stats``) its statistics; per pair ``K_a K_b`` cell rows
    and ``(K_a + 1)(K_b + 1)`` corner rows, row-major. ``lower``/``upper``: ``effect -/+ 2
    stderr``.

    >>> from ale_cli.summary.model import FeatureSummary
    >>> f = FeatureSummary(name="x", edges=np.array([0.0, 1.0]), counts=np.array([3]),
    ...     bin_effect=np.array([2.0]), bin_std=np.array([0.5]), bin_stderr=np.array([0.25]),
    ...     bin_filled=np.array([False]), effect=np.array([-1.0, 1.0]),
    ...     std=np.array([0.0, 0.5]), stderr=np.array([0.0, 0.25]))
    >>> s = Summary(estimator="dale", params={}, store={}, n_rows=3, features=(f,))
    >>> t = summary_frame(s)
    >>> t["kind"].tolist(), t["index"].tolist()
    (['edge', 'edge', 'bin'], [0, 1, 0])
    >>> t.loc[t["kind"] == "edge", "upper"].tolist()
    [-1.0, 1.5]
    """
    blocks: list[dict[str, Any]] = []
    for f in summary.features:
        if f.status != "ok":
            continue
        add = partial(_add, blocks, summary.estimator, f.name)
        band = BAND_SE * f.stderr
        curve = (f.effect, f.std, f.stderr, f.effect - band, f.effect + band)  # lower, upper
        add("edge", np.arange(len(f.edges)), f.edges, *curve)
        bins = (f.bin_counts, f.bin_effect, f.bin_std, f.bin_stderr, f.bin_filled)
        add("bin", np.arange(len(f.bin_effect)), f.edges[:-1], f.edges[1:], *bins)
        if stats and f.statistics is not None:
            values = [math.nan if v is None else float(v) for v in f.statistics.values()]
            add("stat", list(f.statistics), values)
    for pair in summary.interactions:
        if pair.status != "ok":
            continue
        add = partial(_add, blocks, pair.estimator, pair.name)
        ea, eb = pair.edges_a, pair.edges_b
        ka, kb = pair.shape
        k, m = np.divmod(np.arange(ka * kb), kb)  # row-major, as the summary's matrices
        cell_std = pair.cell_std if pair.cell_std is not None else np.full((ka, kb), np.nan)
        cells = (pair.counts, pair.cell_effect, cell_std, pair.filled)
        add("cell", k, m, ea[k], ea[k + 1], eb[m], eb[m + 1], *(c.ravel() for c in cells))
        k, m = np.divmod(np.arange((ka + 1) * (kb + 1)), kb + 1)
        add("corner", k, m, ea[k], eb[m], pair.effect.ravel())
    return _table(blocks)


def _with_regions(
    frame: pd.DataFrame, summary: Summary, regions: Iterable[RegionalFeature]
) -> pd.DataFrame:
    """The global rows (region ``all rows``), then each leaf's edge and bin rows by region."""
    parts = [frame.assign(region="all rows")]
    for item in regions:
        for node in item.nodes:
            if node.record is None or node.parent is None:
                continue  # the root's record is the global one
            leaf = replace(summary, n_rows=node.rows, features=(node.record,), interactions=())
            parts.append(summary_frame(leaf, stats=False).assign(region=node.label))
    return _joined(parts, region=True)


def _with_outputs(summary: Summary) -> pd.DataFrame:
    """A summary of several outputs: each output's rows, in an ``output`` column."""
    parts = [
        summary_frame(summary.of_output(label)).assign(output=label) for label in summary.outputs
    ]
    return _joined(parts, output=True)


def _joined(parts: list[pd.DataFrame], **column: bool) -> pd.DataFrame:
    """The tables one under the other, with the columns of the kinds present."""
    import pandas as pd

    out = pd.concat(parts, ignore_index=True)
    return out[table_columns([k for k in KIND_COLUMNS if k in set(out["kind"])], **column)]


@dataclass(frozen=True)
class ExportTable:
    """A summary's long table (:func:`summary_frame`), its rows per exported feature (or
    pair ``"a,b"``) in the summary's order, and the features and pairs left out (not
    estimable)."""

    frame: pd.DataFrame
    rows: dict[str, int]
    not_estimable: tuple[str, ...]

    @property
    def n_rows(self) -> int:
        return int(len(self.frame))


def export_table(source: str | Path) -> ExportTable:
    """Read a summary (``"-"``: standard input) and build its long table (written by
    :func:`ale_cli.outputs.tables.export_summary`)."""
    summary, data = load_summary(source)
    if summary.outputs:
        frame = _with_outputs(summary)
    else:
        frame = summary_frame(summary)
    if data.get("regions") is not None:  # ale regional: the leaves' rows, named by region
        frame = _with_regions(frame, summary, map(RegionalFeature.from_dict, data["regions"]))
    counts = frame["feature"].value_counts(sort=False)
    items = [*summary.features, *summary.interactions]
    rows = {i.name: int(counts[i.name]) for i in items if i.name in counts}
    skipped = tuple(i.name for i in items if i.status != "ok")
    return ExportTable(frame=frame, rows=rows, not_estimable=skipped)
