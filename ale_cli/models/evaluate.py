"""Evaluate a model at copies of the rows with some columns moved, stacked per chunk.

The classic ALE estimators need the model at the bin limits rather than at the
data: first order moves feature s of every row to the two limits of its bin
(2 evaluations per row and feature), second order moves a pair of features to
the four corners of the row's cell (4 per row and pair). For a chunk of m rows
and B moves, one call of ``f`` evaluates the stacked (B m, D) array
``[X with move 1; X with move 2; ...]``, which keeps model calls few and large.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ale_cli.models.base import ProgressFn, stacked_chunks
from ale_cli.models.finite_diff import DEFAULT_EVAL_ROWS, PredictFn


@dataclass(frozen=True)
class Move:
    """Set ``columns`` of every row to ``values``.

    Attributes
    ----------
    columns : tuple of int, length C
    values : ndarray, shape (N, C)
        The value each row gets in each of the columns.
    """

    columns: tuple[int, ...]
    values: np.ndarray


def predict_moved(
    f: PredictFn,
    X: np.ndarray,
    moves: Sequence[Move],
    *,
    eval_rows: int = DEFAULT_EVAL_ROWS,
    progress: ProgressFn | None = None,
) -> np.ndarray:
    """``out[b, i] = f(X_i with moves[b] applied)``, shape (B, N).

    Parameters
    ----------
    f : callable
        (M, D) float64 -> (M,) float64, e.g. ``model.predict``.
    X : ndarray, shape (N, D)
    moves : sequence of Move, length B
    eval_rows : int
        Stacked evaluation rows per call of ``f`` (chunks hold eval_rows // B rows).
    progress : callable, optional
        Told the number of data rows finished after each call.

    >>> X = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> f = lambda a: a[:, 0] * 10 + a[:, 1]
    >>> moves = [Move((0,), np.zeros((2, 1))), Move((0, 1), np.ones((2, 2)))]
    >>> predict_moved(f, X, moves).tolist()
    [[2.0, 4.0], [11.0, 11.0]]
    """
    n = len(X)
    blocks = len(moves)
    out = np.empty((blocks, n), dtype=np.float64)
    if blocks == 0:
        return out
    for sl, stack in stacked_chunks(X, blocks, max(1, eval_rows // blocks)):
        m = sl.stop - sl.start
        for b, move in enumerate(moves):
            stack[b * m : (b + 1) * m, list(move.columns)] = move.values[sl]
        # copied out before the next chunk overwrites the buffer
        out[:, sl] = np.asarray(f(stack), dtype=np.float64).reshape(blocks, m)
        if progress is not None:
            progress(m)
    return out
