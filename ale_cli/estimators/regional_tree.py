"""Growing ``ale regional``'s trees, one pass over the rows per depth for every feature.

Each pass (:class:`~ale_cli.estimators.regional_passes.RegionPass`) gives, per feature and
open node, the split cells of its candidate splits; a node keeps its best split when it
lowers its heterogeneity by at least ``min_drop``, each child has ``min_rows`` rows and
the heterogeneity is not below its rounding noise (``Feature.noise``).
For a feature not held per level, the same rows' sums give the rest: a child's bins are
its side of its parent's split (:meth:`~ale_cli.core.regional.ShiftedSums.children`; so
the pass at ``max_depth`` is not run), and of two siblings the pass counts the smaller,
the other's split cells its parent's less those. A feature held per level has its bins
from each pass. After a sampled search, one last pass over every row gives the leaves.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ale_cli.core.binstats import CellStats
from ale_cli.core.regional import ShiftedSums, Splitter, split_scores
from ale_cli.estimators.levels import level_summary
from ale_cli.estimators.regional_passes import Feature, LevelCells, RegionPass, conditions
from ale_cli.estimators.rows import merge_each
from ale_cli.summary.model import FeatureSummary
from ale_cli.summary.regional import NO_SPLIT_NOTE, RegionalFeature, RegionNode, Split

#: why a feature has one region, beside :data:`NO_SPLIT_NOTE`
NO_CANDIDATE_NOTE = (
    "no candidate split on another input (thresholds need candidates of at least 2); one region"
)
NO_ROWS_NOTE = "no candidate split leaves min_rows rows on both sides; one region"


@dataclass(frozen=True)
class Growth:
    """How the trees grow; ``sampled``: the search runs on a sample, ``min_rows`` on it;
    ``n``: all rows; ``labels``: the texts of text inputs' codes."""

    max_depth: int
    min_drop: float
    min_rows: int
    sampled: bool
    center: str
    record: Callable[[str, np.ndarray, CellStats], FeatureSummary]
    n: int
    labels: dict[str, Any]


@dataclass
class _Tree:
    """A growing tree: nodes, open ids, bins from the parent's split, split nodes' cells."""

    nodes: dict[int, RegionNode]
    open: list[int]
    grids: dict[int, CellStats] = field(default_factory=dict)
    splits: dict[int, ShiftedSums] = field(default_factory=dict)
    leaves: list[int] = field(default_factory=list)  # closed, their records still to count
    why: str | None = None  # why the root is not split (its first decision's reason)


def grow(
    p: Any,
    searched: Any,
    feats: list[Feature],
    found: tuple[Splitter, ...],
    g: Growth,
) -> tuple[dict[str, RegionalFeature], dict[str, CellStats]]:
    """Every feature's tree, searched on the rows of ``searched`` (``p``'s, or a sample),
    and each feature's cells on all rows after a sampled search (its leaves' sum)."""
    root = RegionNode(0, None, (), g.n, 1.0, float("nan"))
    trees = {f.name: _Tree({0: root}, [0], {} if f.cells is None else {0: f.cells}) for f in feats}
    whole: dict[str, CellStats] = {}
    for depth in range(g.max_depth + 1):
        search = depth < g.max_depth and bool(found)
        every = not search and g.sampled  # the records of a sampled search's leaves
        if every:
            for tree in trees.values():
                tree.open, tree.leaves = tree.open + tree.leaves, []
                tree.grids.clear()
        work = [f for f in feats if trees[f.name].open]
        counted = {f.name: _counted(trees[f.name], f, search, every) for f in work}
        tasks = {
            f.name: replace(f, regions=tuple(trees[f.name].nodes[i].conditions for i in ids))
            for f in work
            if (ids := counted[f.name])
        }
        kernel = RegionPass(tuple(tasks.values()), found if search else ())
        cells: tuple[Any, ...] = ()
        if tasks:
            rows = searched if search else p
            cells = rows.run(kernel, merge_each, (), arrays=kernel.arrays) or kernel.empty()
        levels = dict(zip(tasks, cells, strict=True))
        if every:
            whole |= {
                name: _whole(levels[name], len(t.regions))
                for name, t in tasks.items()
                if t.plan is None
            }
        for f in work:
            got = _inputs(trees[f.name], counted[f.name], levels.get(f.name))
            _decide(trees[f.name], f, got, kernel if search else None, g)
    return {f.name: _finished(f, trees[f.name], g.n) for f in feats}, whole


def _whole(cells: LevelCells, nodes: int) -> CellStats:
    """The sum of ``nodes`` nodes' bins."""
    return functools.reduce(CellStats.merge, (cells.node(i, nodes).grid for i in range(nodes)))


def _counted(tree: _Tree, f: Feature, search: bool, every: bool) -> list[int]:
    """The open nodes a pass counts: all (held per level, or the leaves' records), none
    without a search, else the root, or of two siblings the one with fewer rows."""
    if f.plan is not None or every:
        return list(tree.open)
    out = []
    for i in tree.open if search else ():
        parent = tree.nodes[i].parent
        a, b = (i, i) if parent is None else tree.nodes[parent].split.children  # type: ignore[union-attr]
        if i == (a if tree.nodes[a].rows <= tree.nodes[b].rows else b):
            out.append(i)
    return out


def _inputs(tree: _Tree, counted: list[int], level: LevelCells | None) -> dict[int, LevelCells]:
    """Each open node's bins and split cells: from the pass, or derived."""
    out = {i: level.node(pos, len(counted)) for pos, i in enumerate(counted)}  # type: ignore[union-attr]
    for i in tree.open:
        if i not in tree.grids:  # the pass counted its bins
            continue
        split = out[i].split if i in counted else None
        if i not in counted and counted:  # the sibling's less from its parent's
            parent = tree.nodes[i].parent
            a, b = tree.nodes[parent].split.children  # type: ignore[union-attr]
            split = tree.splits[parent].minus(out[b if i == a else a].split)  # type: ignore[index, arg-type]
        out[i] = LevelCells(tree.grids.pop(i), split)
    for i in tree.open:  # the parents' split cells are used up
        tree.splits.pop(tree.nodes[i].parent, None)  # type: ignore[arg-type]
    return out


def _decide(
    tree: _Tree,
    f: Feature,
    got: dict[int, LevelCells],
    kernel: RegionPass | None,
    g: Growth,
) -> None:
    """Split or close every open node of one feature."""
    n = g.n
    still: list[int] = []
    for node_id in tree.open:
        data = got[node_id]
        total = data.grid.total if data.levels is None else int(data.levels.sum())
        scores = None
        if kernel is not None and data.split is not None:
            scores = _scores(f, data.split, kernel, g)
        best = None if scores is None else scores.best()
        h = tree.nodes[node_id].heterogeneity if scores is None else scores.before
        node = replace(tree.nodes[node_id], rows=total, share=total / n, heterogeneity=h)
        why = _unsplit(scores, best, f.noise, g.min_drop)
        if why is not None:
            if node_id == 0 and tree.why is None:  # a sampled search's, not the last pass's
                tree.why = why
            if kernel is not None and g.sampled:  # its record from the last pass
                tree.nodes[node_id] = node
                tree.leaves.append(node_id)
                continue
            if f.plan is None:
                record = g.record(f.name, f.grid, data.grid)
            else:
                record = level_summary(f.plan, data.grid, data.levels, center=g.center)  # type: ignore[arg-type]
            tree.nodes[node_id] = replace(node, record=record)
            continue
        j, c = best
        s = kernel.splitters[j]
        sides = conditions(s, c, g.labels.get(s.name))
        ids = (len(tree.nodes), len(tree.nodes) + 1)
        rows = (int(scores.rows[j, c, 0]), int(scores.rows[j, c, 1]))
        after = float(scores.after[j, c])
        split = Split(s.name, s.kind, float(s.values[c]), sides, ids, rows, scores.before, after)
        tree.nodes[node_id] = replace(node, split=split)
        for side, child, r, h in zip(sides, ids, rows, scores.parts[j, c], strict=True):
            tree.nodes[child] = RegionNode(
                child, node_id, (*node.conditions, side), r, r / n, float(h)
            )
            still.append(child)
        if f.plan is None and data.split is not None:
            shape = kernel.shape(f)[1:]
            tree.grids.update(
                zip(ids, data.split.children(shape, j, c, s.kind, f.shift), strict=True)
            )
            tree.splits[node_id] = data.split
    tree.open = still


def _unsplit(
    scores: Any, best: tuple[int, int] | None, noise: float, min_drop: float
) -> str | None:
    """Why a node is not split (a root's is its feature's note), or None."""
    if scores is None or not scores.candidates:
        return NO_CANDIDATE_NOTE
    if best is None:
        return NO_ROWS_NOTE
    if scores.before < noise:
        return (
            f"the heterogeneity is below the rounding noise of the local effects ({noise:.2g}); "
            "one region"
        )
    return NO_SPLIT_NOTE if scores.drop(*best) < min_drop else None


def _scores(f: Feature, split: ShiftedSums, kernel: RegionPass, g: Growth) -> Any:
    dz = np.diff(f.grid) if f.plan is None else np.append(np.ones(f.n_cells - 1), 0.0)
    return split_scores(
        split,
        shape=kernel.shape(f)[1:],
        dz=dz,
        rows_cell=f.plan is not None,
        kinds=tuple(s.kind for s in kernel.splitters),
        n_candidates=tuple(s.values.size for s in kernel.splitters),
        min_rows=g.min_rows,
        excluded=tuple(j for j, s in enumerate(kernel.splitters) if s.name == f.name),
    )


def _finished(f: Feature, tree: _Tree, n: int) -> RegionalFeature:
    """The feature's regions; each split node's rows are its children's (every row)."""
    got = tree.nodes
    for i in sorted(got, reverse=True):  # children after their parents
        node = got[i]
        if node.split is not None:
            a, b = node.split.children
            rows = got[a].rows + got[b].rows
            split = replace(node.split, rows=(got[a].rows, got[b].rows))
            got[i] = replace(node, rows=rows, share=rows / n, split=split)
    nodes = tuple(got[i] for i in sorted(got))
    root = nodes[0]
    if root.split is None:
        note = tree.why or NO_SPLIT_NOTE
        return RegionalFeature(f.name, "no_split", root.heterogeneity, nodes, note=note)
    return RegionalFeature(f.name, "split", root.heterogeneity, nodes)
