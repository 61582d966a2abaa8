"""Evaluate a model at copies of the rows with some columns moved, stacked per chunk.

For a chunk of m rows and B moves (classic ALE: bin limits, cell corners), one call
of ``f`` evaluates the stacked (B m, D) array ``[X with move 1; X with move 2; ...]``.
Groups of B moves share the stack: each writes its columns and puts the data back.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ale_cli.models.base import ProgressFn, stacked_chunks
from ale_cli.models.finite_diff import DEFAULT_EVAL_ROWS, PredictFn


@dataclass(frozen=True)
class Lookup:
    """Values ``table[index]`` as one column, looked up per slice of rows (with edges
    z and bins ``index``, ``Lookup(z[:-1], index)`` are the lower limits).

    >>> Lookup(np.array([1.0, 3.0]), np.array([1, 0, 0]))[0:3].tolist()
    [[3.0], [1.0], [1.0]]
    """

    table: np.ndarray
    index: np.ndarray

    def __getitem__(self, sl: slice) -> np.ndarray:
        return self.table.take(self.index[sl])[:, None]  # take: ~2x faster than []


@dataclass(frozen=True)
class Move:
    """Set ``columns`` (C,) of every row to ``values`` (``values[sl]`` is (m, C))."""

    columns: tuple[int, ...]
    values: np.ndarray | Lookup


def evaluate_moved(
    f: PredictFn,
    X: np.ndarray,
    groups: Sequence[Sequence[Move]],
    *,
    eval_rows: int = DEFAULT_EVAL_ROWS,
    progress: ProgressFn | None = None,
    columns: Mapping[int, np.ndarray] | None = None,
) -> Iterator[tuple[int, slice, np.ndarray]]:
    """Yield ``(g, sl, out)`` with ``out[b, i] = f(X[sl][i] with groups[g][b] applied)``.

    Every group has B moves; ``out`` (B, m) is the caller's to keep. ``columns``:
    contiguous ``X[:, c]`` of the moved columns, if the caller has them.

    >>> X = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> f = lambda a: a[:, 0] * 10 + a[:, 1]
    >>> groups = [[Move((0,), np.zeros((2, 1)))], [Move((1,), np.ones((2, 1)))]]
    >>> [(g, out.tolist()) for g, _, out in evaluate_moved(f, X, groups)]
    [(0, [[2.0, 4.0]]), (1, [[11.0, 31.0]])]
    """
    if not groups:
        return
    blocks = len(groups[0])
    if any(len(group) != blocks for group in groups):
        raise ValueError("every group of moves must have the same number of moves")
    if blocks == 0:
        return
    touched = [sorted({c for move in group for c in move.columns}) for group in groups]
    for sl, stack in stacked_chunks(X, blocks, max(1, eval_rows // blocks)):
        m = sl.stop - sl.start
        view = stack.reshape(blocks, m, -1)
        if len(groups) > 1 and columns is None:
            data = np.ascontiguousarray(X[sl].T)  # the chunk's columns, each contiguous
        for g, group in enumerate(groups):
            for b, move in enumerate(group):
                values = move.values[sl]
                for i, c in enumerate(move.columns):  # column by column: strided, no gather
                    view[b, :, c] = values[:, i]
            out = np.asarray(f(stack), dtype=np.float64).reshape(blocks, m)
            if np.may_share_memory(out, stack):  # f returned a view of its input
                out = out.copy()
            if g + 1 < len(groups):
                for c in touched[g]:  # the data back for the next group
                    view[:, :, c] = data[c] if columns is None else columns[c][sl]
            yield g, sl, out
            if progress is not None:
                progress(m)


def predict_moved(
    f: PredictFn,
    X: np.ndarray,
    moves: Sequence[Move],
    *,
    eval_rows: int = DEFAULT_EVAL_ROWS,
    progress: ProgressFn | None = None,
) -> np.ndarray:
    """``out[b, i] = f(X_i with moves[b] applied)``, shape (B, N): one group of
    :func:`evaluate_moved`.

    >>> X = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> f = lambda a: a[:, 0] * 10 + a[:, 1]
    >>> moves = [Move((0,), np.zeros((2, 1))), Move((0, 1), np.ones((2, 2)))]
    >>> predict_moved(f, X, moves).tolist()
    [[2.0, 4.0], [11.0, 11.0]]
    """
    out = np.empty((len(moves), len(X)), dtype=np.float64)
    for _, sl, values in evaluate_moved(f, X, [moves], eval_rows=eval_rows, progress=progress):
        out[:, sl] = values
    return out
