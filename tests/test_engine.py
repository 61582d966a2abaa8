"""The engine protocol: the local and the Dask engine fold a kernel's states over any cut
of the rows into parts and chunks to the result of one pass over all rows, in row order
(checked with a merge that is not commutative), ship ``shared`` to the kernels, stop at
the first failing part in part order, and pass each chunk's state through a sink."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ale_cli.core.binstats import CellStats
from ale_cli.errors import InputError
from ale_cli.passes.engine import LOCAL, ArraySource, Chunk, Parts, Ready

N_CELLS = 7


def _sum(chunk: Chunk, _: object) -> float:
    return float(chunk["x"].sum())


def _add(a: float, b: float) -> float:
    return a + b


def _cells(chunk: Chunk, n_cells: int) -> CellStats:
    return CellStats.from_values(chunk["cell"], chunk["x"], n_cells=n_cells)


def _merge_cells(a: CellStats, b: CellStats) -> CellStats:
    return a.merge(b)


def _rows(chunk: Chunk, _: object) -> tuple[tuple[int, np.ndarray], ...]:
    """The chunk's offset and values: merged by concatenation, which is not commutative."""
    return ((chunk.offset, chunk["x"]),)


def _concat(a: tuple, b: tuple) -> tuple:  # type: ignore[type-arg]
    return a + b


def _fails(chunk: Chunk, _: object) -> float:
    bad = chunk["x"] < -1e9
    if bad.any():
        raise InputError(f"row {chunk.offset + int(np.argmax(bad))} is bad")
    return 0.0


def _source(sizes: list[int], chunk_rows: list[int], seed: int) -> tuple[Parts, dict]:  # type: ignore[type-arg]
    rng = np.random.default_rng(seed)
    n = sum(sizes)
    columns = {"x": rng.normal(size=n), "cell": rng.integers(-1, N_CELLS, size=n)}
    parts, start = [], 0
    for size, rows in zip(sizes, chunk_rows, strict=True):
        piece = {k: v[start : start + size] for k, v in columns.items()}
        parts.append(ArraySource(piece, offset=start, chunk_rows=rows))
        start += size
    return Parts(tuple(parts)), columns


cuts = st.lists(st.tuples(st.integers(0, 40), st.integers(1, 15)), min_size=1, max_size=6).filter(
    lambda c: sum(s for s, _ in c) > 0
)


@pytest.fixture(scope="module")
def dask_engine(cluster):  # type: ignore[no-untyped-def]
    pytest.importorskip("distributed", reason="the dask extra is not installed")
    import cloudpickle

    from ale_cli.engines.cluster import DaskEngine

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the kernels of this module
    with DaskEngine(cluster) as engine:
        yield engine


def _check_engine(engine, cut, seed) -> None:  # type: ignore[no-untyped-def]
    sizes, chunk_rows = [s for s, _ in cut], [r for _, r in cut]
    source, columns = _source(sizes, chunk_rows, seed)
    total = engine.run(source, _sum, _add, 0.0, arrays=["x"])
    # summing in another order moves a sum by rounding of its terms' size, not its own
    scale = np.abs(columns["x"]).sum()
    np.testing.assert_allclose(total, columns["x"].sum(), rtol=1e-12, atol=1e-12 * scale)
    cells = engine.run(
        source,
        _cells,
        _merge_cells,
        CellStats.empty(N_CELLS),
        arrays=["x", "cell"],
        shared=Ready(N_CELLS),
    )
    once = CellStats.from_values(columns["cell"], columns["x"], n_cells=N_CELLS)
    np.testing.assert_array_equal(cells.counts, once.counts)
    np.testing.assert_allclose(cells.mean, once.mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(cells.m2, once.m2, rtol=1e-12, atol=1e-12)
    rows = engine.run(source, _rows, _concat, (), arrays=["x"])
    offsets = [offset for offset, _ in rows]
    assert offsets == sorted(offsets)
    np.testing.assert_array_equal(np.concatenate([x for _, x in rows]), columns["x"])
    n_rows = [len(x) for _, x in rows]
    np.testing.assert_array_equal(np.cumsum([0, *n_rows])[:-1], offsets)


@settings(max_examples=25, deadline=None)
@given(cut=cuts, seed=st.integers(0, 2**16))
def test_the_local_engine_folds_any_cut_as_one_pass(cut, seed):
    _check_engine(LOCAL, cut, seed)


@settings(max_examples=3, deadline=None)
@given(cut=cuts, seed=st.integers(0, 2**16))
def test_the_dask_engine_folds_any_cut_as_one_pass(dask_engine, cut, seed):
    _check_engine(dask_engine, cut, seed)


@pytest.mark.parametrize("which", ["local", "dask"])
def test_the_first_failing_part_in_row_order_is_raised(which, request):
    engine = LOCAL if which == "local" else request.getfixturevalue("dask_engine")
    source, columns = _source([30, 30, 30], [7, 7, 7], 0)
    columns["x"][[40, 75]] = -1e10  # parts 1 and 2 fail; part 1 is reported
    parts = Parts(
        tuple(
            ArraySource({"x": columns["x"][i : i + 30]}, offset=i, chunk_rows=7)
            for i in (0, 30, 60)
        )
    )
    with pytest.raises(InputError, match="row 40 is bad"):
        engine.run(parts, _fails, _add, 0.0, arrays=["x"])


@dataclass(frozen=True)
class _FileSink:
    """A sink writing each part's values to a file of its own (as part stores are)."""

    folder: str

    def part(self, index: int) -> _PartFile:
        return _PartFile(Path(self.folder) / f"{index}.npy")

    def stop(self) -> None:
        (Path(self.folder) / "stop").touch()


@dataclass
class _PartFile:
    path: Path
    values: list | None = None  # type: ignore[type-arg]

    def __enter__(self) -> _PartFile:
        self.values = []
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None and self.values:
            np.save(self.path, np.concatenate(self.values))

    def write(self, state: tuple) -> tuple:  # type: ignore[type-arg]
        self.values.append(np.concatenate([x for _, x in state]))  # type: ignore[union-attr]
        return tuple((offset, len(x)) for offset, x in state)

    def done(self, state: tuple) -> tuple:  # type: ignore[type-arg]
        return ((str(self.path), sum(n for _, n in state)),)


@pytest.mark.parametrize("which", ["local", "dask"])
def test_a_sink_writes_each_part_and_gives_back_what_is_folded(which, request, tmp_path):
    engine = LOCAL if which == "local" else request.getfixturevalue("dask_engine")
    source, columns = _source([10, 0, 25], [4, 3, 6], 1)
    told: list[int] = []
    found = engine.run(
        source,
        _rows,
        _concat,
        (),
        arrays=["x"],
        sink=_FileSink(str(tmp_path)),
        progress=told.append,
    )
    assert [n for _, n in found] == [10, 0, 25]
    assert sum(told) == 35
    written = [np.load(path) for path, n in found if n]
    np.testing.assert_array_equal(np.concatenate(written), columns["x"])


# -- sources --------------------------------------------------------------------------------


def _chunked_store(path: Path, sizes: list[int]) -> np.ndarray:
    from ale_cli.store.npz import StoreWriter

    X = np.random.default_rng(len(sizes)).normal(size=(sum(sizes), 2))
    with StoreWriter(path) as w:
        start = 0
        for size in sizes:
            rows = slice(start, start + size)
            w.add({"X": X[rows], "local_effects": X[rows], "prediction": X[rows, 0]})
            start += size
        w.finish(
            feature_names=("a", "b"),
            input_names=("a", "b"),
            meta={"schema_version": 3, "n_rows": len(X)},
        )
    return X


def test_a_store_file_is_a_source_of_chunk_ranges(tmp_path: Path, monkeypatch):
    from ale_cli.store.npz import Store, open_store

    monkeypatch.setattr("ale_cli.store.reader.CHUNKS_PER_PART", 2)
    X = _chunked_store(tmp_path / "s.npz", [3, 0, 4, 5, 1])
    store = open_store(tmp_path / "s.npz")
    parts = store.parts()
    assert [p.n_rows for p in parts] == [3, 9, 1]
    chunks = [c for p in parts for c in p.chunks(("X",))]
    assert [c.offset for c in chunks] == [0, 3, 3, 7, 12]
    np.testing.assert_array_equal(np.concatenate([c["X"] for c in chunks]), X)
    total = LOCAL.run(store, _sum_x, _add, 0.0, arrays=["X"])
    np.testing.assert_allclose(total, X.sum(), rtol=1e-12)
    memory = Store(X=X, local_effects=X, prediction=X[:, 0], feature_names=("a", "b"), meta={})
    (one,) = list(memory.chunks(("X",)))
    assert one.offset == 0 and one.n_rows == len(X)


def _sum_x(chunk: Chunk, _: object) -> float:
    return float(chunk["X"].sum())
