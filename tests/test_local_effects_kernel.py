"""The compute kernel is chunk-invariant: for any cut of the rows into parts and chunks,
the store it writes through the sink holds the rows of one pass over all of them, and the
rows dropped for non-finite model values are numbered as one pass numbers them."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ale_cli.estimators.local_effects_kernel import (
    Computed,
    FileSink,
    LocalEffectsKernel,
)
from ale_cli.models.base import Effects
from ale_cli.passes.engine import LOCAL, ArraySource, Parts, Ready

W = np.array([1.0, -2.0, 0.5])


class _Sines:
    """f(x) = sum_j w_j sin(x_j), NaN where x_0 > 1.5 (known gradients)."""

    method = "finite-differences"
    format = "test"

    def describe(self) -> dict:  # type: ignore[type-arg]
        return {}

    def predict(self, X: np.ndarray) -> np.ndarray:
        y = np.sin(X) @ W
        return np.where(X[:, 0] > 1.5, np.nan, y)

    def local_effects(self, X, features, progress=None) -> Effects:  # type: ignore[no-untyped-def]
        return Effects(local_effects=(np.cos(X) * W)[:, features], prediction=self.predict(X))


class _Rows:
    """What a store writer is given (:meth:`add`), kept."""

    def __init__(self) -> None:
        self.chunks: list[dict[str, np.ndarray]] = []

    def add(self, arrays: dict[str, np.ndarray]) -> None:
        self.chunks.append(dict(arrays))

    def array(self, name: str) -> np.ndarray:
        return np.concatenate([c[name] for c in self.chunks])


def _store(source, kernel) -> tuple[Computed, _Rows]:  # type: ignore[no-untyped-def]
    rows = _Rows()
    state = LOCAL.run(
        source,
        kernel,
        Computed.merge,
        Computed(),
        arrays=("X",),
        shared=Ready(_Sines()),
        sink=FileSink(rows),  # type: ignore[arg-type]
    )
    return state, rows


cuts = st.lists(st.tuples(st.integers(0, 30), st.integers(1, 12)), min_size=1, max_size=5)


@settings(max_examples=20, deadline=None)
@given(cut=cuts, seed=st.integers(0, 2**16))
def test_any_cut_writes_the_store_of_one_pass(cut, seed):
    sizes = [s for s, _ in cut]
    X = np.random.default_rng(seed).normal(size=(sum(sizes) + 2, 3))
    sizes[-1] += 2
    kernel = LocalEffectsKernel(columns=(0, 1, 2), model_path="m", drop_nonfinite=True)
    parts, start = [], 0
    for size, (_, rows) in zip(sizes, cut, strict=True):
        parts.append(ArraySource({"X": X[start : start + size]}, offset=start, chunk_rows=rows))
        start += size
    whole_state, whole = _store(ArraySource({"X": X}), kernel)
    cut_state, cut_store = _store(Parts(tuple(parts)), kernel)
    bad = np.flatnonzero(X[:, 0] > 1.5)
    np.testing.assert_array_equal(whole_state.nonfinite, bad)
    np.testing.assert_array_equal(cut_state.nonfinite, bad)
    assert cut_state.rows == whole_state.rows == len(X) - len(bad)
    keep = np.delete(np.arange(len(X)), bad)
    for store in (whole, cut_store):
        np.testing.assert_array_equal(store.array("X"), X[keep])
        np.testing.assert_array_equal(store.array("local_effects"), (np.cos(X) * W)[keep])
        np.testing.assert_array_equal(store.array("prediction"), (np.sin(X) @ W)[keep])
