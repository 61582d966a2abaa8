"""The chunk kernel of ``ale classic``: cut into any parts and chunks, its merged cells are
those of the whole table in one chunk (binned and per-level features, rows screened out,
every row's values kept for bootstrap bands)."""

from __future__ import annotations

import pickle
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ale_cli.errors import ModelFailed
from ale_cli.estimators.bin_limits import LimitCells, LimitKernel, RowValues
from ale_cli.estimators.classic import Function
from ale_cli.estimators.level_plans import level_plans
from ale_cli.estimators.rows import ROWS, Rows
from ale_cli.passes.engine import LOCAL, Chunk, Ready, Source

N = 90


def model(X: np.ndarray) -> np.ndarray:
    """Smooth in a and b, a level effect of c, NaN where a > 1.8 (a row screened out)."""
    out = np.sin(X[:, 0]) * X[:, 1] + X[:, 2] ** 2 + 0.3 * X[:, 0] * X[:, 2]
    return np.where(X[:, 0] > 1.8, np.nan, out)


@dataclass(frozen=True)
class Cut:
    """Rows in memory cut into parts, each cut into chunks (offsets in the whole table)."""

    X: np.ndarray
    parts_at: tuple[int, ...]
    chunks_at: tuple[int, ...]
    lo: int = 0
    hi: int = -1

    def parts(self) -> Sequence[Source]:
        bounds = [0, *sorted(set(self.parts_at)), len(self.X)]
        return [
            Cut(self.X, (), self.chunks_at, a, b)
            for a, b in zip(bounds, bounds[1:], strict=False)
            if b > a
        ]

    def chunks(self, arrays: Sequence[str]) -> Iterator[Chunk]:
        hi = len(self.X) if self.hi < 0 else self.hi
        cuts = [self.lo, *sorted(c for c in set(self.chunks_at) if self.lo < c < hi), hi]
        for a, b in zip(cuts, cuts[1:], strict=False):
            yield Chunk(a, {ROWS: self.X[a:b]})


EDGES_A = np.array([-1.0, -0.2, 0.3, 1.7])


def rows(seed: int, *, nan_row: bool = True) -> np.ndarray:
    """Rows of a, b, c; with ``nan_row`` row 2 (outside a's edges) gives NaN everywhere."""
    rng = np.random.default_rng(seed)
    X = np.column_stack(
        [
            np.minimum(rng.normal(size=N), 1.7),
            rng.uniform(-2, 2, N),
            rng.integers(0, 4, N).astype(float),
        ]
    )
    X[:2, 0] = [-0.5, 0.5]
    if nan_row:
        X[2, 0] = 1.9
    return X


def kernel(X: np.ndarray, *, drop: bool, keep_rows: bool, levels: bool = True) -> LimitKernel:
    plan = level_plans(Rows.of(X, "abc"), "c", discrete=("c",))["c"]
    assert not isinstance(plan, str)
    return LimitKernel(
        cols=(0, 1),
        edges=(EDGES_A, np.linspace(-2, 2, 6)),
        levels=((2, plan),) if levels else (),
        eval_rows=7,
        drop_nonfinite=drop,
        keep_rows=keep_rows,
    )


def run(k: LimitKernel, source: Source) -> LimitCells:
    return LOCAL.run(
        source, k, LimitCells.merge, k.empty(), arrays=[ROWS], shared=Ready(Function(model))
    )


def assert_same_cells(a: LimitCells, b: LimitCells) -> None:
    for x, y in zip(
        a.binned.stats + tuple(c for c, _ in a.levels),
        b.binned.stats + tuple(c for c, _ in b.levels),
        strict=True,
    ):
        np.testing.assert_array_equal(x.counts, y.counts)
        np.testing.assert_allclose(x.mean, y.mean, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(x.m2, y.m2, rtol=1e-12, atol=1e-12)
    assert a.binned.outside == b.binned.outside
    for (_, m), (_, n) in zip(a.levels, b.levels, strict=True):
        np.testing.assert_array_equal(m, n)
    np.testing.assert_array_equal(a.rows_dropped, b.rows_dropped)
    np.testing.assert_array_equal(np.concatenate(a.predictions), np.concatenate(b.predictions))


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 5),
    parts_at=st.lists(st.integers(1, N - 1), max_size=3),
    chunks_at=st.lists(st.integers(1, N - 1), max_size=6),
    keep_rows=st.booleans(),
    nan_row=st.booleans(),
)
def test_any_cut_of_the_rows_merges_to_the_whole_table(
    seed, parts_at, chunks_at, keep_rows, nan_row
):
    """Per level features are not screened: the row giving NaN goes with them."""
    X = rows(seed, nan_row=nan_row)
    k = kernel(X, drop=True, keep_rows=keep_rows, levels=not nan_row)
    whole = run(k, Cut(X, (), ()))
    cut = run(k, Cut(X, tuple(parts_at), tuple(chunks_at)))
    assert_same_cells(cut, whole)
    np.testing.assert_array_equal(whole.rows_dropped, [2] if nan_row else [])
    assert whole.kept == N - nan_row
    if keep_rows:
        a, b = RowValues.joined(cut.rows), RowValues.joined(whole.rows)
        for name in ("index", "diffs", "position", "up", "down"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        assert a.index.shape == (2, N) and a.position.shape == (0 if nan_row else 1, N)
        assert a.index[1, 2] == (-1 if nan_row else b.index[1, 2])  # screened out of b too


def test_known_cells_of_one_chunk():
    X = rows(0)
    state = run(kernel(X, drop=True, keep_rows=False, levels=False), Cut(X, (), ()))
    a, edges = X[:, 0], EDGES_A
    inside = (a >= -1.0) & (a <= 1.7)
    k = np.searchsorted(edges, a, side="left") - 1
    k[a == edges[0]] = 0

    def moved(z: np.ndarray) -> np.ndarray:
        Z = X.copy()
        Z[:, 0] = z
        return model(Z)

    d = moved(edges[np.clip(k + 1, 0, 3)]) - moved(edges[np.clip(k, 0, 3)])
    for j in range(3):
        sel = inside & (k == j)
        np.testing.assert_allclose(state.binned.stats[0].mean[j], d[sel].mean(), rtol=1e-12)
        assert state.binned.stats[0].counts[j] == sel.sum()
    assert state.binned.outside[0] == int(np.sum((a < -1.0) | (a > 1.7)))


def test_without_drop_a_nonfinite_row_is_refused_with_its_row_number():
    X = rows(1)
    with pytest.raises(ModelFailed, match=r"predictions on 1 row \(row 2\)"):
        run(kernel(X, drop=False, keep_rows=False, levels=False), Cut(X, (40,), (1, 2, 3)))


def test_the_kernel_travels_without_its_progress_bar():
    X = rows(2, nan_row=False)
    told: list[int] = []
    k = kernel(X, drop=True, keep_rows=False)
    k = LimitKernel(**{**k.__dict__, "progress": told.append})
    back = pickle.loads(pickle.dumps(k))
    assert back.progress is None and back.cols == k.cols
    assert_same_cells(run(back, Cut(X, (), ())), run(k, Cut(X, (), ())))
    outside = int(np.sum((X[:, 0] < -1.0) | (X[:, 0] > 1.7)))
    assert sum(told) == (N - outside) + N  # the rows evaluated, feature by feature
