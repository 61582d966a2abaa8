"""Stacked evaluation of moved rows (ale_cli.models.evaluate)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ale_cli.models.base import chunks
from ale_cli.models.evaluate import Lookup, Move, evaluate_moved, predict_moved


def weighted(A: np.ndarray) -> np.ndarray:
    return A @ np.array([1.0, 10.0, 100.0, 1000.0])


def brute(X: np.ndarray, group: list[tuple[int, np.ndarray]]) -> np.ndarray:
    """Evaluate each move on its own copy of X."""
    out = []
    for col, values in group:
        moved = X.copy()
        moved[:, col] = values
        out.append(weighted(moved))
    return np.array(out)


@pytest.mark.parametrize("eval_rows", [2, 7, 50, 10_000])
def test_groups_share_a_stack_and_each_sees_only_its_own_moves(eval_rows: int) -> None:
    """Every group's result is as if evaluated alone: the columns another group moved in
    the shared stack are put back before the next call, whatever the chunking."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(23, 4))
    edges = np.array([-5.0, 0.0, 5.0])
    k = (X[:, 1] > 0).astype(np.int64)
    groups = [
        [Move((1,), Lookup(edges[:-1], k)), Move((1,), Lookup(edges[1:], k))],
        [Move((3,), np.full((23, 1), 7.0)), Move((0,), X[:, [2]] * 2)],
        [Move((2,), np.zeros((23, 1))), Move((1,), np.ones((23, 1)))],
    ]
    expected = [
        brute(X, [(1, edges[k]), (1, edges[k + 1])]),
        brute(X, [(3, 7.0), (0, X[:, 2] * 2)]),
        brute(X, [(2, 0.0), (1, 1.0)]),
    ]
    got = np.full((3, 2, 23), np.nan)
    seen: list[int] = []
    for g, sl, out in evaluate_moved(
        weighted, X, groups, eval_rows=eval_rows, progress=seen.append
    ):
        got[g, :, sl] = out
    np.testing.assert_allclose(got, np.array(expected), rtol=0, atol=1e-9)
    assert sum(seen) == 3 * 23
    assert max(seen) <= max(1, eval_rows // 2)


def test_results_are_kept_when_the_model_returns_a_view_of_its_input() -> None:
    X = np.arange(12.0).reshape(6, 2)
    groups = [[Move((0,), np.full((6, 1), -1.0))], [Move((1,), np.full((6, 1), -2.0))]]
    outs = [out.copy() for _, _, out in evaluate_moved(lambda a: a[:, 0], X, groups)]
    kept = [out for _, _, out in evaluate_moved(lambda a: a[:, 0], X, groups)]
    np.testing.assert_array_equal(outs[0], [[-1.0] * 6])
    np.testing.assert_array_equal(outs[1], [X[:, 0]])
    for a, b in zip(outs, kept, strict=True):
        np.testing.assert_array_equal(a, b)


def test_groups_must_have_the_same_number_of_moves() -> None:
    X = np.zeros((3, 2))
    groups = [[Move((0,), np.zeros((3, 1)))], []]
    with pytest.raises(ValueError, match="same number of moves"):
        list(evaluate_moved(weighted, X, groups))


def test_predict_moved_is_one_group() -> None:
    X = np.random.default_rng(1).normal(size=(9, 4))
    moves = [Move((0, 3), np.ones((9, 2))), Move((2,), np.zeros((9, 1)))]
    expected = np.array(
        [weighted(np.c_[np.ones(9), X[:, 1:3], np.ones(9)]), weighted(X * [1, 1, 0, 1])]
    )
    np.testing.assert_allclose(predict_moved(weighted, X, moves, eval_rows=4), expected, atol=1e-12)


@settings(max_examples=200, deadline=None)
@given(n=st.integers(0, 100_000), size=st.integers(1, 9000))
def test_chunks_are_as_few_as_possible_and_of_equal_lengths(n: int, size: int) -> None:
    parts = list(chunks(n, size))
    lengths = [sl.stop - sl.start for sl in parts]
    assert len(parts) == -(-n // size)
    assert all(a.stop == b.start for a, b in zip(parts, parts[1:], strict=False))
    if parts:
        assert parts[0].start == 0 and parts[-1].stop == n
        assert max(lengths) <= size and max(lengths) - min(lengths) <= 1
