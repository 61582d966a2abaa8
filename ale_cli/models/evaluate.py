"""Evaluate a model at copies of the rows with some columns moved, stacked per chunk.

The classic ALE estimators need the model at the bin limits rather than at the
data: first order moves feature s of every row to the two limits of its bin
(2 evaluations per row and feature), second order moves a pair of features to
the four corners of the row's cell (4 per row and pair). For a chunk of m rows
and B moves, one call of ``f`` evaluates the stacked (B m, D) array
``[X with move 1; X with move 2; ...]``, which keeps model calls few and large.

Several groups of B moves (one group per feature in first order) share the
stack: it is filled with B copies of a chunk once, and each group only writes
its own columns before its call and puts the data back after it, so the rows
are copied once per chunk rather than once per chunk and group.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ale_cli.models.base import ProgressFn, stacked_chunks
from ale_cli.models.finite_diff import DEFAULT_EVAL_ROWS, PredictFn


class RowValues(Protocol):
    """Anything that gives the (m, C) values of a slice of rows: ``values[sl]``."""

    def __getitem__(self, sl: slice) -> np.ndarray: ...


@dataclass(frozen=True)
class Lookup:
    """Values ``table[index]`` as one column, looked up per slice of rows.

    Moves a feature to a limit of each row's bin without holding an (N,) array
    of values per limit: with edges z and bins ``index`` in ``0 .. K-1``,
    ``Lookup(z[:-1], index)`` are the lower limits, ``Lookup(z[1:], index)``
    the upper ones.

    >>> Lookup(np.array([1.0, 3.0]), np.array([1, 0, 0]))[0:3].tolist()
    [[3.0], [1.0], [1.0]]
    """

    table: np.ndarray
    index: np.ndarray

    def __getitem__(self, sl: slice) -> np.ndarray:
        return self.table.take(self.index[sl])[:, None]  # take: ~2x faster than []


@dataclass(frozen=True)
class Move:
    """Set ``columns`` of every row to ``values``.

    Attributes
    ----------
    columns : tuple of int, length C
    values : ndarray of shape (N, C), or RowValues
        The value each row gets in each of the columns (``values[sl]`` is (m, C)).
    """

    columns: tuple[int, ...]
    values: np.ndarray | RowValues


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

    Every group has the same number B of moves; ``out`` has shape (B, m) and
    is the caller's to keep. Chunks of ``eval_rows // B`` rows are the outer
    loop, groups the inner one, so each group makes one call of ``f`` on a
    stack of B m rows per chunk.

    Parameters
    ----------
    f : callable
        (M, D) float64 -> (M,) float64, e.g. ``model.predict``.
    X : ndarray, shape (N, D)
    groups : sequence of sequences of Move, G groups of B moves each
    eval_rows : int
        Stacked evaluation rows per call of ``f``.
    progress : callable, optional
        Told the number of data rows finished after each call (G N in all).
    columns : mapping of int to ndarray (N,), optional
        ``X[:, c]`` as a contiguous array for every column c the groups move,
        if the caller has it: the data are put back from it rather than from
        a transposed copy of each chunk.

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
