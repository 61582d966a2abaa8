"""DALE (``rebin``) and RHALE on a store file, chunk by chunk, in memory bounded by a chunk.

Every estimator needs only per-cell counts, means and M2 of the local effects
(:class:`~ale_cli.core.binstats.CellStats`), which merge exactly across
chunks. So a store on disk is read chunk by chunk
(:meth:`~ale_cli.store.npz.StoreFile.chunks`) and:

- uniform edges come from the manifest's per-input ``x_min``/``x_max`` (a pass
  over the chunks for stores without one), then one pass gathers the cells;
- type-1 quantile edges come out of core in two passes
  (:func:`~ale_cli.core.outofcore.chunked_quantile_edges`), then one pass gathers
  the cells;
- given edges: one pass.

The results equal :func:`ale_cli.estimators.dale.rebin_features` /
:func:`~ale_cli.estimators.dale.rhale_features` on the whole arrays (to rounding of
the merges, ~1e-15 relative) and do not depend on the chunk sizes (tested).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ale_cli.core.binning import UniformGrid, assign, uniform_edges
from ale_cli.core.binstats import CellStats, uniform_cells
from ale_cli.core.outofcore import EdgeIndex, chunked_quantile_edges, quantile_cells
from ale_cli.io.threads import ordered_map
from ale_cli.store.npz import StoreFile
from ale_cli.summary.build import not_estimable, skip_reasons, summary_from_cells
from ale_cli.summary.model import FeatureSummary


@dataclass(frozen=True)
class Columns:
    """The features asked for in a store: names, columns of X and of the local effects."""

    names: tuple[str, ...]
    x: tuple[int, ...]
    e: tuple[int, ...]

    @classmethod
    def of(cls, store: StoreFile, features: Sequence[str] | None) -> Columns:
        names = tuple(store.feature_names) if features is None else tuple(features)
        e = tuple(store.feature_index(n) for n in names)
        x = tuple(store.input_index(n) for n in names)
        return cls(names, x, e)


def _pairs(store: StoreFile, cols: Columns) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(X_cols (n, F) float64, E_cols (n, F)) per chunk."""
    for chunk in store.chunks(("X", "local_effects")):
        yield _columns(chunk["X"], cols.x), _columns(chunk["local_effects"], cols.e)


def _columns(A: np.ndarray, cols: Sequence[int]) -> np.ndarray:
    """``A[:, cols]`` as a C-contiguous float64 array, with one copy at most."""
    if list(cols) == list(range(A.shape[1])):
        return np.ascontiguousarray(A, dtype=np.float64)
    if A.dtype == np.float64:
        return A[:, list(cols)]  # fancy indexing makes a C-contiguous copy
    return np.ascontiguousarray(A[:, list(cols)], dtype=np.float64)


def ranges(store: StoreFile, cols: Columns) -> tuple[np.ndarray, np.ndarray]:
    """Each feature's minimum and maximum: from the manifest, else by a pass."""
    known = store.x_range()
    if known is not None and len(known[0]) == len(store.input_names):
        return known[0][list(cols.x)], known[1][list(cols.x)]
    lo = np.full(len(cols.names), np.inf)
    hi = np.full(len(cols.names), -np.inf)
    for X, _ in _pairs(store, cols):
        if len(X):
            lo, hi = np.minimum(lo, X.min(axis=0)), np.maximum(hi, X.max(axis=0))
    return lo, hi


def _chunks(
    store: StoreFile, x_cols: list[int], e_cols: list[int]
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(X[:, x_cols], E[:, e_cols]) per chunk in the store's dtypes (converted by the
    workers of :func:`~ale_cli.io.threads.ordered_map`, not by the reading thread)."""
    for chunk in store.chunks(("X", "local_effects")):
        yield _select(chunk["X"], x_cols), _select(chunk["local_effects"], e_cols)


def _cells_on_edges(
    store: StoreFile, cols: Columns, todo: list[int], edges: dict[int, np.ndarray]
) -> tuple[dict[int, CellStats], dict[int, int]]:
    """Per feature j in ``todo``: cell statistics on ``edges[j]`` and rows outside them."""

    def one(chunk: tuple[np.ndarray, np.ndarray]) -> list[tuple[CellStats, int]]:
        X, E = chunk
        out = []
        for i, j in enumerate(todo):
            a = assign(X[:, i], edges[j])
            c = CellStats.from_values(a.index, E[:, i], n_cells=edges[j].size - 1)
            out.append((c, a.n_outside))
        return out

    cells = {j: CellStats.empty(edges[j].size - 1) for j in todo}
    outside = dict.fromkeys(todo, 0)
    x_cols, e_cols = [cols.x[j] for j in todo], [cols.e[j] for j in todo]
    for found in ordered_map(one, _chunks(store, x_cols, e_cols)):
        for j, (c, n_out) in zip(todo, found, strict=True):
            cells[j] = cells[j].merge(c)
            outside[j] += n_out
    return cells, outside


def _uniform(
    store: StoreFile, cols: Columns, todo: list[int], lo: np.ndarray, hi: np.ndarray, bins: int
) -> tuple[dict[int, np.ndarray], dict[int, CellStats]]:
    """Uniform edges and cells, as the in-memory path builds them (one grid, else per column)."""
    if not todo:
        return {}, {}
    grid = UniformGrid.build(lo[todo], hi[todo], bins=bins)
    if grid is None:
        edges = {j: uniform_edges(lo[j], hi[j], bins=bins) for j in todo}
        return edges, _cells_on_edges(store, cols, todo, edges)[0]

    def one(chunk: tuple[np.ndarray, np.ndarray]) -> list[CellStats] | None:
        X, E = chunk
        if not len(X):
            return None
        every = list(range(X.shape[1]))
        return uniform_cells(_columns(X, every), _columns(E, every), grid)

    acc: list[CellStats] | None = None
    x_cols, e_cols = [cols.x[j] for j in todo], [cols.e[j] for j in todo]
    for stats in ordered_map(one, _chunks(store, x_cols, e_cols)):
        if stats is not None:
            acc = stats if acc is None else [a.merge(s) for a, s in zip(acc, stats, strict=True)]
    if acc is None:
        raise ValueError("the store has no rows")
    edges = {j: np.linspace(lo[j], hi[j], bins + 1) for j in todo}
    return edges, dict(zip(todo, acc, strict=True))


def _select(A: np.ndarray, cols: list[int]) -> np.ndarray:
    """``A[:, cols]`` in A's dtype, without a copy when cols are all of A's columns."""
    return A if cols == list(range(A.shape[1])) else A[:, cols]


def _quantile(
    store: StoreFile, cols: Columns, todo: list[int], lo: np.ndarray, hi: np.ndarray, bins: int
) -> tuple[dict[int, np.ndarray], dict[int, CellStats]]:
    """Exact type-1 quantile edges and their cells in two passes
    (:func:`~ale_cli.core.outofcore.quantile_cells`); a column that needs more (a bucket
    holding a quantile and many distinct values: very skewed data) takes
    :func:`_quantile_slow`."""
    if not todo:
        return {}, {}
    x_cols = [cols.x[j] for j in todo]
    e_cols = [cols.e[j] for j in todo]

    def x_chunks() -> Iterator[np.ndarray]:  # X only: pass 1 counts
        for chunk in store.chunks(("X",)):
            yield _select(chunk["X"], x_cols)

    def xe_chunks() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for chunk in store.chunks(("X", "local_effects")):
            yield _select(chunk["X"], x_cols), _select(chunk["local_effects"], e_cols)

    found = quantile_cells(
        x_chunks,
        xe_chunks,
        n=store.n_rows,
        bins=bins,
        lo=lo[todo],
        hi=hi[todo],
        map_chunks=ordered_map,
    )
    return with_slower(todo, found, lambda rest: _quantile_slow(store, cols, rest, lo, hi, bins))


def with_slower(
    todo: list[int],
    found: Sequence[Any],
    slower: Callable[[list[int]], tuple[dict[int, np.ndarray], dict[int, CellStats]]],
) -> tuple[dict[int, np.ndarray], dict[int, CellStats]]:
    """The edges and cells of the columns ``todo`` that the two passes finished (``found``,
    :class:`~ale_cli.core.outofcore.QuantileCells` or None per column), and those of the
    others from ``slower(rest)``."""
    edges = {j: f.edges for j, f in zip(todo, found, strict=True) if f is not None}
    cells = {j: f.cells for j, f in zip(todo, found, strict=True) if f is not None}
    rest = [j for j, f in zip(todo, found, strict=True) if f is None]
    if rest:
        more_edges, more_cells = slower(rest)
        edges |= more_edges
        cells |= more_cells
    return edges, cells


def _quantile_slow(
    store: StoreFile, cols: Columns, todo: list[int], lo: np.ndarray, hi: np.ndarray, bins: int
) -> tuple[dict[int, np.ndarray], dict[int, CellStats]]:
    """Exact type-1 quantile edges out of core (two passes or more, buckets split again
    where needed), then the cells (one pass)."""
    x_cols = [cols.x[j] for j in todo]

    def chunks() -> Iterator[np.ndarray]:  # X only: the local effects are not needed here
        for chunk in store.chunks(("X",)):
            yield chunk["X"][:, x_cols]

    found = chunked_quantile_edges(chunks, n=store.n_rows, bins=bins, lo=lo[todo], hi=hi[todo])
    edges = dict(zip(todo, found, strict=True))
    lookups = {j: EdgeIndex.build(edges[j]) for j in todo}
    if any(ix is None for ix in lookups.values()):
        return edges, _cells_on_edges(store, cols, todo, edges)[0]
    cells: dict[int, CellStats] = {}
    for X, E in _pairs(store, cols):
        for j in todo:
            index = lookups[j].index(X[:, j])  # type: ignore[union-attr]
            c = CellStats.from_values(index, E[:, j], n_cells=edges[j].size - 1)
            cells[j] = c if j not in cells else cells[j].merge(c)
    return edges, cells


@dataclass(frozen=True)
class Passes:
    """How the cells are gathered: the functions above over a store's chunks in this
    process (:data:`LOCAL`), or the same reductions per partition on Dask workers
    (:func:`ale_cli.engines.dask.dask_passes`). Each has the signature of its local
    counterpart: ``cells_on_edges`` of :func:`_cells_on_edges`, ``uniform`` of
    :func:`_uniform`, ``quantile`` of :func:`_quantile`."""

    cells_on_edges: Callable[..., Any]
    uniform: Callable[..., Any]
    quantile: Callable[..., Any]


LOCAL = Passes(cells_on_edges=_cells_on_edges, uniform=_uniform, quantile=_quantile)


def rebin_store(
    store: StoreFile,
    cols: Columns,
    *,
    bins: int,
    binning: str,
    center: str,
    edges: dict[str, np.ndarray] | None,
    categorical: Sequence[str],
    passes: Passes = LOCAL,
) -> list[FeatureSummary]:
    """:func:`ale_cli.estimators.dale.rebin_features` over a store's chunks."""
    lo, hi = ranges(store, cols)
    skip = skip_reasons(cols.names, lo, hi, categorical, edges)
    todo = [j for j, name in enumerate(cols.names) if name not in skip]
    outside: dict[int, int] = {}
    if edges is not None:
        z = {j: edges[cols.names[j]] for j in todo}
        cells, outside = passes.cells_on_edges(store, cols, todo, z)
    elif binning == "uniform":
        z, cells = passes.uniform(store, cols, todo, lo, hi, bins)
    else:
        z, cells = passes.quantile(store, cols, todo, lo, hi, bins)
    out: list[FeatureSummary] = []
    for j, name in enumerate(cols.names):
        if name in skip:
            out.append(not_estimable(name, skip[name]))
            continue
        out.append(
            summary_from_cells(name, z[j], cells[j], n_outside=outside.get(j, 0), center=center)
        )
    return out


def rhale_cells(
    store: StoreFile,
    cols: Columns,
    *,
    max_bins: int,
    grid: str,
    categorical: Sequence[str],
    passes: Passes = LOCAL,
) -> tuple[dict[str, str], dict[int, np.ndarray], dict[int, CellStats]]:
    """The skipped features (with reasons) and every other feature's grid and cells."""
    lo, hi = ranges(store, cols)
    skip = skip_reasons(cols.names, lo, hi, categorical)
    todo = [j for j, name in enumerate(cols.names) if name not in skip]
    build = passes.uniform if grid == "uniform" else passes.quantile
    g, cells = build(store, cols, todo, lo, hi, max_bins)
    return skip, g, cells
