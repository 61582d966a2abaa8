"""The chunk kernel of ``ale interact``: any cut of the rows into parts and chunks gives the
statistics of all rows in one chunk (the property every whole / streamed / store / Dask
run of interact rests on), and the cells hold what they should."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ale_cli.errors import ModelFailed
from ale_cli.estimators.interact_kernel import PairKernel, PairPlan, Passed
from ale_cli.passes.engine import LOCAL, ArraySource, Chunk, LocalEngine, Ready, Source
from ale_cli.store.npz import MIXED


class Product:
    """f = sin(a) b + 0.3 a c + log(d) (NaN where d <= 0); d2f/da db = cos(a),
    d2f/da dc = 0.3, d2f/db dc = 0."""

    method = "autodiff"
    format = "test"

    def describe(self) -> dict[str, Any]:
        return {}  # one output

    def predict(self, X: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.sin(X[:, 0]) * X[:, 1] + 0.3 * X[:, 0] * X[:, 2] + np.log(X[:, 3])

    def mixed_derivatives(
        self, X: np.ndarray, pairs: Sequence[tuple[int, int]], progress: Any = None
    ) -> np.ndarray:
        known = {(0, 1): np.cos(X[:, 0]), (0, 2): np.full(len(X), 0.3)}
        known |= {(b, a): v for (a, b), v in known.items()}
        return np.array([known.get(tuple(p), np.zeros(len(X))) for p in pairs])


@dataclass(frozen=True)
class Parts:
    """Arrays cut into parts, each cut again into chunks, every chunk with its offset."""

    arrays: dict[str, np.ndarray]
    part_cuts: tuple[int, ...]
    chunk_cuts: tuple[int, ...]

    def parts(self) -> Sequence[Source]:
        n = len(self.arrays["X"])
        bounds = [0, *sorted(set(self.part_cuts)), n]
        return [_Part(self, lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]

    def chunks(self, arrays: Sequence[str]) -> Iterator[Chunk]:
        for part in self.parts():
            yield from part.chunks(arrays)


@dataclass(frozen=True)
class _Part:
    whole: Parts
    lo: int
    hi: int

    def parts(self) -> Sequence[Source]:
        return (self,)

    def chunks(self, arrays: Sequence[str]) -> Iterator[Chunk]:
        cuts = [c for c in sorted(set(self.whole.chunk_cuts)) if self.lo < c < self.hi]
        bounds = [self.lo, *cuts, self.hi]
        for a, b in zip(bounds[:-1], bounds[1:], strict=True):
            yield Chunk(a, {n: _rows(self.whole.arrays[n], n, a, b) for n in arrays})


def _rows(array: np.ndarray, name: str, a: int, b: int) -> np.ndarray:
    return array[:, a:b] if name == MIXED else array[a:b]


N = 150


def _case(seed: int, nan_rows: Sequence[int]) -> tuple[dict[str, np.ndarray], tuple[PairPlan, ...]]:
    rng = np.random.default_rng(seed)
    X = np.column_stack(
        [rng.normal(size=N), rng.standard_t(3, size=N), np.round(rng.uniform(-2, 2, N)),
         rng.uniform(0.5, 2, N)]
    )  # fmt: skip
    X[list(nan_rows), 3] = -1.0  # log(-1): NaN predictions there
    model = Product()
    stored = model.mixed_derivatives(X, [(0, 1), (0, 2)])
    arrays = {"X": X, "prediction": model.predict(X), MIXED: stored}
    ea = np.quantile(X[:, 0], np.linspace(0.05, 0.95, 5))  # rows outside on both sides
    eb = np.linspace(-3, 3, 4)
    ec = np.array([-2.0, -0.5, 0.5, 2.0])
    plans = (
        PairPlan((0, 1), ea, eb, "corners"),
        PairPlan((0, 1), ea, eb, "autodiff"),
        PairPlan((0, 2), ea, ec, "stored", 1),
        PairPlan((1, 2), eb, ec, "autodiff"),
    )
    return arrays, plans


def _assert_same(a: Passed, b: Passed) -> None:
    for x, y in zip(a.pairs, b.pairs, strict=True):
        np.testing.assert_array_equal(x.cells.counts, y.cells.counts)
        scale = max(1.0, float(np.abs(y.cells.mean).max()))
        np.testing.assert_allclose(x.cells.mean, y.cells.mean, rtol=1e-12, atol=1e-13 * scale)
        np.testing.assert_allclose(x.cells.m2, y.cells.m2, rtol=1e-11, atol=1e-12 * scale)
        assert (x.outside, x.nonzero) == (y.outside, y.nonzero)
    np.testing.assert_array_equal(a.dropped_rows(), b.dropped_rows())
    np.testing.assert_array_equal(a.prediction(), b.prediction())


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    part_cuts=st.lists(st.integers(0, N), max_size=4),
    chunk_cuts=st.lists(st.integers(0, N), max_size=10),
    stored_prediction=st.booleans(),
    nan_rows=st.lists(st.integers(0, N - 1), max_size=5),
)
def test_any_cut_of_the_rows_gives_the_statistics_of_one_chunk(
    seed, part_cuts, chunk_cuts, stored_prediction, nan_rows
):
    arrays, plans = _case(seed, nan_rows)
    kernel = PairKernel(plans, "dale", "m.pt", drop=True, stored_prediction=stored_prediction)
    one = kernel(Chunk(0, {n: arrays[n] for n in kernel.arrays}), Product())
    cut = Parts(arrays, tuple(part_cuts), tuple(chunk_cuts))
    for engine in (LOCAL, LocalEngine(threads=1)):
        found = engine.run(
            cut, kernel, Passed.merge, Passed.empty(plans), arrays=kernel.arrays,
            shared=Ready(Product()),
        )  # fmt: skip
        _assert_same(found, one)
    assert one.dropped_rows().tolist() == sorted(set(nan_rows))  # log(-1): NaN there only
    assert one.kept == N - len(set(nan_rows))


def test_the_cells_hold_the_known_values_and_the_rows_outside():
    arrays, plans = _case(3, [])
    kernel = PairKernel(plans, "dale", "m.pt", drop=False)
    src = ArraySource({n: arrays[n] for n in kernel.arrays})
    found = LOCAL.run(
        src,
        kernel,
        Passed.merge,
        Passed.empty(plans),
        arrays=kernel.arrays,
        shared=Ready(Product()),
    )
    X = arrays["X"]
    a, b = X[:, 0], X[:, 1]
    ea, eb = plans[1].edges_a, plans[1].edges_b
    inside = (a >= ea[0]) & (a <= ea[-1]) & (b >= eb[0]) & (b <= eb[-1])
    ia = np.clip(np.searchsorted(ea, a, side="left") - 1, 0, len(ea) - 2)
    ib = np.clip(np.searchsorted(eb, b, side="left") - 1, 0, len(eb) - 2)
    dale = found.pairs[1]
    assert dale.outside == int((~inside).sum()) > 0
    for k in range(len(ea) - 1):
        for m in range(len(eb) - 1):
            sel = inside & (ia == k) & (ib == m)
            assert dale.cells.counts[k * (len(eb) - 1) + m] == sel.sum()
            if sel.any():
                np.testing.assert_allclose(
                    dale.cells.mean[k * (len(eb) - 1) + m], np.cos(a[sel]).mean(), rtol=1e-12
                )
    # the classic route on the same grid: sin(a) b is the only term mixing a and b, so the
    # corner difference is (sin z_k - sin z_{k-1}) (w_l - w_{l-1}) for every row of the cell
    corners = found.pairs[0]
    want = np.outer(np.diff(np.sin(ea)), np.diff(eb)).ravel()
    filled = corners.cells.counts > 0
    np.testing.assert_allclose(corners.cells.mean[filled], want[filled], rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(corners.cells.m2, 0.0, atol=1e-20)
    assert found.pairs[3].nonzero is False and found.pairs[2].nonzero is True


def test_non_finite_values_are_refused_with_the_row_numbers_of_the_source():
    arrays, plans = _case(5, [70, 71])
    kernel = PairKernel(plans, "dale", "m.pt", drop=False)
    cut = Parts(arrays, (50,), (60, 100))
    with pytest.raises(ModelFailed, match=r"predictions on 2 rows \(rows 70, 71\)"):
        LOCAL.run(
            cut, kernel, Passed.merge, Passed.empty(plans), arrays=kernel.arrays,
            shared=Ready(Product()),
        )  # fmt: skip
