"""The edges and :class:`~ale_cli.core.binstats.CellStats` of the local effects per feature
(``rebin``, ``rhale``), as passes an engine runs over a source: given edges take one pass
(:func:`edge_cells`), uniform edges one after the ranges (on one grid), type-1 quantile
edges two (:class:`~ale_cli.core.quantile_cells.QuantilePlan`), more for a column they do
not finish; each pass an :class:`OnColumns` kernel.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from ale_cli.core import quantile_cells
from ale_cli.core.binning import UniformGrid, assign, uniform_edges
from ale_cli.core.binstats import CellStats, uniform_cells
from ale_cli.core.outofcore import chunked_quantile_edges, merge_accumulators, pass_accumulators
from ale_cli.core.quantile_cells import QuantilePlan, bucket_grid
from ale_cli.estimators.rows import extent, select
from ale_cli.passes.engine import ArraySource, Chunk, Engine, Source
from ale_cli.store.npz import Store, StoreFile

ROWS = ("X", "local_effects")


@dataclass(frozen=True)
class Columns:
    """The features asked for: names, their columns of ``X`` and of ``local_effects``."""

    names: tuple[str, ...]
    x: tuple[int, ...]
    e: tuple[int, ...]

    def pick(self, todo: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The columns of X and of the local effects of features ``todo``."""
        return tuple(self.x[j] for j in todo), tuple(self.e[j] for j in todo)


@dataclass(frozen=True)
class Passes:
    """Where the rows are (``source``), which features (``columns``), and the engine."""

    source: Source
    columns: Columns
    n_rows: int
    engine: Engine
    recorded: tuple[np.ndarray, np.ndarray] | None = None

    def run(self, kernel: Any, merge: Any, empty: Any, arrays: Sequence[str] = ROWS) -> Any:
        return self.engine.run(self.source, kernel, merge, empty, arrays=arrays)


@dataclass(frozen=True)
class Cells:
    """Per column: the statistics of its local effects per bin, and its rows outside the
    edges (left out). ``merge`` is exact (:meth:`CellStats.merge`, counts add up)."""

    stats: tuple[CellStats, ...]
    outside: tuple[int, ...]

    @classmethod
    def empty(cls, sizes: Sequence[int]) -> Cells:
        return cls(tuple(CellStats.empty(k) for k in sizes), (0,) * len(sizes))

    def merge(self, other: Cells) -> Cells:
        return Cells(
            tuple(a.merge(b) for a, b in zip(self.stats, other.stats, strict=True)),
            tuple(a + b for a, b in zip(self.outside, other.outside, strict=True)),
        )


@dataclass(frozen=True)
class OnColumns:
    """Kernel: ``fn(X[:, x])`` of a chunk, with ``e`` ``fn(X[:, x], E[:, e])`` (E: its local
    effects); ``fn``, a method or a partial of a module function, travels with it."""

    fn: Callable[..., Any]
    x: tuple[int, ...]
    e: tuple[int, ...] | None = None

    def __call__(self, chunk: Chunk, _shared: Any) -> Any:
        X = select(chunk["X"], self.x)
        return self.fn(X) if self.e is None else self.fn(X, select(chunk["local_effects"], self.e))


def edge_cells(
    X: np.ndarray,
    E: np.ndarray,
    edges: Sequence[np.ndarray] = (),
    grid: UniformGrid | None = None,
) -> Cells:
    """:class:`Cells` of the columns of X, E (n, F) on their own ``edges`` (K_j + 1,), or
    all on one uniform ``grid``."""
    if grid is not None:
        if not len(X):
            return Cells.empty([grid.bins] * X.shape[1])
        X, E = (np.ascontiguousarray(A, dtype=np.float64) for A in (X, E))
        return Cells(tuple(uniform_cells(X, E, grid)), (0,) * X.shape[1])
    stats, outside = [], []
    for i, z in enumerate(edges):
        a = assign(X[:, i], z)
        stats.append(CellStats.from_values(a.index, E[:, i], n_cells=z.size - 1))
        outside.append(a.n_outside)
    return Cells(tuple(stats), tuple(outside))


def _group_pass(X: np.ndarray, groups: list[Any], roots: list[Any]) -> list[Any]:
    """One pass of :func:`~ale_cli.core.outofcore.order_statistics` over a chunk's X."""
    return pass_accumulators(lambda: [X], groups, roots)


Binned = tuple[dict[int, np.ndarray], dict[int, CellStats], dict[int, int]]


def ranges(p: Passes, x: Sequence[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each feature's (or X's columns ``x``') minimum and maximum: recorded, else a pass."""
    x = p.columns.x if x is None else x
    if p.recorded is not None:
        lo, hi = p.recorded
        return lo[list(x)], hi[list(x)]
    _, lo, hi = extent(p.source, x, p.engine)
    return lo, hi


def on_edges(
    p: Passes, todo: list[int], edges: dict[int, np.ndarray], grid: UniformGrid | None = None
) -> Binned:
    """Cells of features ``todo`` on ``edges[j]`` (all a uniform ``grid``'s, if given), and
    their rows outside them."""
    if not todo:  # no pass over the rows for nothing
        return {}, {}, {}
    x, e = p.columns.pick(todo)
    z = tuple(edges[j] for j in todo)
    kernel = OnColumns(partial(edge_cells, edges=z, grid=grid), x, e)
    found = p.run(kernel, Cells.merge, Cells.empty([v.size - 1 for v in z]))
    return (
        {j: edges[j] for j in todo},
        dict(zip(todo, found.stats, strict=True)),
        dict(zip(todo, found.outside, strict=True)),
    )


def uniform(p: Passes, todo: list[int], lo: np.ndarray, hi: np.ndarray, bins: int) -> Binned:
    """``bins`` uniform bins over each feature's range: one grid for all of them, else
    per feature (:func:`~ale_cli.core.binning.uniform_edges`: fewer bins where edges round
    together)."""
    grid = UniformGrid.build(lo[todo], hi[todo], bins=bins)
    if grid is None:
        return on_edges(p, todo, {j: uniform_edges(lo[j], hi[j], bins=bins) for j in todo})
    return on_edges(p, todo, {j: np.linspace(lo[j], hi[j], bins + 1) for j in todo}, grid)


def quantile(p: Passes, todo: list[int], lo: np.ndarray, hi: np.ndarray, bins: int) -> Binned:
    """Exact type-1 quantile edges and their cells in two passes
    (:class:`~ale_cli.core.quantile_cells.QuantilePlan`); a column they do not finish (very
    skewed data) by :func:`~ale_cli.core.outofcore.chunked_quantile_edges`, then its cells."""
    x, e = p.columns.pick(todo)
    lo_t, hi_t = np.asarray(lo[todo], np.float64), np.asarray(hi[todo], np.float64)
    chunks = (c for part in p.source.parts() for c in part.chunks(("X",)))
    dtype = next((c["X"].dtype for c in chunks), np.dtype(np.float64))  # float32: in float32
    grid = bucket_grid(n=p.n_rows, lo=lo_t, hi=hi_t, dtype=dtype, bins=bins)
    empty = np.zeros(len(todo) * grid.size, dtype=np.int64)
    counts = p.run(OnColumns(grid.counts, x), np.add, empty, arrays=("X",))
    plan = QuantilePlan.build(
        grid,
        counts,
        n=p.n_rows,
        bins=bins,
        max_bucket=quantile_cells.MAX_BUCKET_ROWS,
        max_gathered=quantile_cells.MAX_GATHERED_ROWS,
    )
    empty_scan = plan.empty_scan()
    scan = p.run(OnColumns(plan.scan, x, e), type(empty_scan).merge, empty_scan)
    found = plan.finish(scan, lo_t, hi_t)
    edges = {j: f.edges for j, f in zip(todo, found, strict=True) if f is not None}
    cells = {j: f.cells for j, f in zip(todo, found, strict=True) if f is not None}
    rest = [j for j, f in zip(todo, found, strict=True) if f is None]
    if rest:
        run_pass = group_passes(p, p.columns.pick(rest)[0])
        deeper = chunked_quantile_edges(
            lambda: (), n=p.n_rows, bins=bins, lo=lo[rest], hi=hi[rest], run_pass=run_pass
        )
        more_edges, more_cells, _ = on_edges(p, rest, dict(zip(rest, deeper, strict=True)))
        edges |= more_edges
        cells |= more_cells
    return edges, cells, dict.fromkeys(todo, 0)


def group_passes(p: Passes, x: Sequence[int]) -> Callable[[list[Any], list[Any]], list[Any]]:
    """The ``run_pass`` of :mod:`~ale_cli.core.outofcore`'s quantile algorithms: each of
    their passes over the columns ``x`` run on the engine."""

    def run_pass(groups: list[Any], roots: list[Any]) -> list[Any]:
        sent = [g.shipped() for g in groups]
        empty = pass_accumulators(lambda: (), sent, roots)
        found: list[Any] = p.run(
            OnColumns(partial(_group_pass, groups=sent, roots=roots), tuple(x)),
            merge_accumulators,
            empty,
            arrays=("X",),
        )
        return found

    return run_pass


def binned(
    p: Passes,
    todo: list[int],
    lo: np.ndarray,
    hi: np.ndarray,
    *,
    bins: int,
    binning: str,
    edges: Mapping[str, np.ndarray] | None = None,
) -> Binned:
    """Edges, cells and rows outside of features ``todo``: on the given ``edges[name]``,
    else ``bins`` bins of ``binning`` ("uniform" or "quantile"); none for no feature."""
    if not todo:
        return {}, {}, {}
    if edges is not None:
        return on_edges(p, todo, {j: edges[p.columns.names[j]] for j in todo})
    if binning == "uniform":
        return uniform(p, todo, lo, hi, bins)
    return quantile(p, todo, lo, hi, bins)


def array_passes(X: np.ndarray, E: np.ndarray, names: Sequence[str], engine: Engine) -> Passes:
    """Values X (N, F) and local effects E (N, F) of features ``names`` as one chunk."""
    every = tuple(range(len(names)))
    columns = Columns(tuple(names), every, every)
    return Passes(ArraySource({"X": X, "local_effects": E}), columns, len(X), engine)


def store_passes(
    store: Store | StoreFile, features: Sequence[str] | None, engine: Engine
) -> Passes:
    """The features asked for (None: every explained feature) of a store; InputError
    naming a feature the store does not explain."""
    names = tuple(store.feature_names) if features is None else tuple(features)
    e = tuple(store.feature_index(n) for n in names)
    columns = Columns(names, tuple(store.input_index(n) for n in names), e)
    recorded = store.x_range() if isinstance(store, StoreFile) else None
    if recorded is not None and len(recorded[0]) != len(store.input_names):
        recorded = None
    return Passes(store, columns, store.n_rows, engine, recorded)
