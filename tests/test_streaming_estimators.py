"""Streaming rebin/rhale over chunked stores: equal to the in-memory estimators to 1e-12,
whatever the chunk sizes; out-of-core type-1 quantiles against a full sort."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from ale_cli.core.binning import UniformGrid, quantile_edges, uniform_edges
from ale_cli.core.outofcore import chunked_quantile_edges, order_statistics
from ale_cli.core.quantile_cells import (
    MAX_BUCKET_ROWS,
    MAX_GATHERED_ROWS,
    QuantilePlan,
    bucket_grid,
)
from ale_cli.estimators.cells import (
    ROWS,
    Cells,
    Columns,
    OnColumns,
    Passes,
    edge_cells,
    quantile,
)
from ale_cli.estimators.dale import RebinRequest, RhaleRequest, rebin, rhale
from ale_cli.estimators.rows import Ranges, merge_extents
from ale_cli.passes.engine import LOCAL, ArraySource, Parts
from ale_cli.store.npz import Store, StoreWriter, open_store, write_store

NAMES = ("smooth", "heavy", "ties", "const")


def _data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Columns: normal, heavy-tailed with an outlier, few distinct values, constant."""
    rng = np.random.default_rng(seed)
    X = np.column_stack(
        [
            rng.normal(size=n),
            rng.standard_cauchy(size=n),
            rng.integers(0, 4, size=n).astype(float),
            np.full(n, 2.5),
        ]
    )
    X[0, 1] = 1e6
    E = np.column_stack([3.0 * X[:, 0] ** 2, np.sin(X[:, 1]), X[:, 2] - 1, np.ones(n)])
    E += rng.normal(scale=0.1, size=E.shape)
    return X, E


def chunked_store(
    path: Path, X: np.ndarray, E: np.ndarray, cuts: list[int], names: tuple[str, ...] = NAMES
) -> Path:
    """A store file of the rows X, E cut into chunks at ``cuts``."""
    meta = {"schema_version": 3, "n_rows": len(X), "categorical_features": []}
    bounds = [0, *sorted(set(cuts)), len(X)]
    with StoreWriter(path) as w:
        for a, b in zip(bounds[:-1], bounds[1:], strict=True):
            if b > a:
                w.add({"X": X[a:b], "local_effects": E[a:b], "prediction": E[a:b].sum(1)})
        w.finish(feature_names=names, input_names=names, meta=meta)
    return path


def _in_memory(X: np.ndarray, E: np.ndarray) -> Store:
    meta = {"schema_version": 3, "n_rows": len(X), "categorical_features": []}
    return Store(X=X, local_effects=E, prediction=E.sum(1), feature_names=NAMES, meta=meta)


def _assert_same(a, b) -> None:  # type: ignore[no-untyped-def]
    a, b = a.summary, b.summary
    assert a.n_rows == b.n_rows
    assert len(a.features) == len(b.features)
    for fa, fb in zip(a.features, b.features, strict=True):
        assert fa.name == fb.name and fa.status == fb.status and fa.reason == fb.reason
        if fa.status != "ok":
            continue
        np.testing.assert_array_equal(fa.edges, fb.edges)
        np.testing.assert_array_equal(fa.counts, fb.counts)
        for field in ("effect", "std", "stderr", "bin_effect", "bin_std", "bin_stderr"):
            np.testing.assert_allclose(
                getattr(fa, field), getattr(fb, field), rtol=1e-12, atol=1e-12, err_msg=field
            )
        assert fa.n_outside == fb.n_outside and fa.note == fb.note
        if fa.objective is not None:
            np.testing.assert_allclose(fa.objective, fb.objective, rtol=1e-12, atol=1e-12)


REQUESTS = [
    lambda s: rebin(RebinRequest(store=s, bins=7)),
    lambda s: rebin(RebinRequest(store=s, bins=20, binning="quantile")),
    lambda s: rhale(RhaleRequest(store=s, max_bins=30)),
    lambda s: rhale(RhaleRequest(store=s, max_bins=25, grid="quantile", min_points=5)),
]


@settings(
    max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    n=st.integers(min_value=30, max_value=600),
    seed=st.integers(0, 2**16),
    cuts=st.lists(st.integers(1, 599), max_size=6),
    which=st.integers(0, len(REQUESTS) - 1),
)
def test_streaming_equals_in_memory_for_any_chunks(tmp_path: Path, n, seed, cuts, which):
    """End to end (a handful of examples; the kernels' invariance is the property below):
    a chunked store file gives the numbers of the store in memory."""
    X, E = _data(n, seed)
    path = chunked_store(tmp_path / f"s{n}-{seed}.npz", X, E, [c for c in cuts if c < n])
    run = REQUESTS[which]
    _assert_same(run(path), run(_in_memory(X, E)))


def test_given_edges_and_rows_outside(tmp_path: Path):
    X, E = _data(500, 3)
    edges = tmp_path / "edges.json"
    edges.write_text('{"smooth": [-1.0, 0.0, 0.5, 1.5], "ties": [0.5, 1.5, 2.5]}')
    path = chunked_store(tmp_path / "s.npz", X, E, [100, 333])
    request = RebinRequest(store=path, edges=edges, features=("smooth", "ties"))
    streamed = rebin(request)
    whole = rebin(RebinRequest(store=_in_memory(X, E), edges=edges, features=("smooth", "ties")))
    _assert_same(streamed, whole)
    assert streamed.summary.features[0].n_outside == int(np.sum((X[:, 0] < -1) | (X[:, 0] > 1.5)))


def test_old_layout_store_file_gives_the_in_memory_numbers(tmp_path: Path):
    X, E = _data(300, 9)
    path = tmp_path / "old.npz"
    write_store(path, _in_memory(X, E))  # schema-2 single arrays
    for run in REQUESTS:
        _assert_same(run(path), run(_in_memory(X, E)))


def test_summary_records_the_store_file(tmp_path: Path):
    X, E = _data(200, 1)
    path = chunked_store(tmp_path / "s.npz", X, E, [50])
    summary = rhale(RhaleRequest(store=path)).summary
    assert summary.n_rows == 200 and summary.store["path"] == str(path)
    assert summary.params["min_points"] == 10  # ceil(200 / 20)
    assert open_store(path).rows == (50, 150)


@settings(max_examples=80, deadline=None)
@given(
    values=st.lists(
        st.one_of(
            st.floats(-1e3, 1e3, allow_nan=False),
            st.sampled_from([0.0, 1.0, 1.0 + 2**-40]),
            st.sampled_from([-1.7e308, 1.7e308, 5e-324, 1e-310]),
        ),
        min_size=2,
        max_size=400,
    ),
    bins=st.integers(1, 30),
    split=st.integers(1, 50),
    cap=st.sampled_from([1, 3, 10_000]),
)
def test_out_of_core_quantiles_match_a_full_sort(values, bins, split, cap):
    x = np.array(values)
    assume(x.max() > x.min())
    X = x[:, None]
    chunks = lambda: [X[i : i + split] for i in range(0, len(X), split)]  # noqa: E731
    n = len(x)
    positions = np.arange(n)
    stats = order_statistics(
        chunks, n=n, positions=positions, lo=X.min(0), hi=X.max(0), max_candidates=cap
    )
    np.testing.assert_array_equal(stats[0], np.sort(x))
    (z,) = chunked_quantile_edges(chunks, n=n, bins=bins, lo=X.min(0), hi=X.max(0))
    np.testing.assert_array_equal(z, quantile_edges(x, bins=bins))


def test_point_mass_bigger_than_the_gather_limit():
    x = np.concatenate([np.zeros(5000), np.linspace(1, 2, 50)])
    X = x[:, None]
    stats = order_statistics(
        lambda: [X[:1000], X[1000:]],
        n=x.size,
        positions=np.array([0, 2500, 4999, 5000, 5049]),
        lo=np.array([0.0]),
        hi=np.array([2.0]),
        max_candidates=100,
    )
    np.testing.assert_array_equal(stats[0], np.sort(x)[[0, 2500, 4999, 5000, 5049]])


@pytest.mark.parametrize("chunk", [1, 7, 1000])
def test_float32_x_is_read_as_float64_values(tmp_path: Path, chunk: int):
    rng = np.random.default_rng(0)
    X32 = rng.normal(size=(300, 4)).astype(np.float32)
    X32[:, 3] = 2.5
    E = rng.normal(size=(300, 4))
    path = chunked_store(tmp_path / "s.npz", X32, E, list(range(chunk, 300, chunk)))
    whole = _in_memory(X32.astype(np.float64), E)
    for run in REQUESTS:
        _assert_same(run(path), run(whole))


def test_damaged_chunked_stores_are_input_errors(tmp_path: Path):
    from ale_cli.errors import InputError

    X, E = _data(200, 2)
    path = chunked_store(tmp_path / "s.npz", X, E, [100])
    data = path.read_bytes()
    cut = tmp_path / "cut.npz"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match="is not a local-effects store"):
        rhale(RhaleRequest(store=cut))
    # a chunk's local header overwritten: named, not a crash
    bad = bytearray(data)
    start = bad.index(b"PK\x03\x04", 10)  # the second entry's local header
    bad[start : start + 4] = b"XXXX"
    broken = tmp_path / "broken.npz"
    broken.write_bytes(bytes(bad))
    with pytest.raises(InputError, match="is damaged"):
        rhale(RhaleRequest(store=broken))


def _cut(arrays: dict[str, np.ndarray], pairs, chunk_rows: int | None = None) -> Parts:  # type: ignore[no-untyped-def]
    """Arrays cut into parts at ``pairs`` [(start, stop), ...], each in chunks of ``chunk_rows``."""
    return Parts(
        tuple(ArraySource({k: v[a:b] for k, v in arrays.items()}, a, chunk_rows) for a, b in pairs)
    )


def quantile_cells(  # type: ignore[no-untyped-def]
    X, E, pairs, *, bins, lo, hi, max_bucket=MAX_BUCKET_ROWS, max_gathered=MAX_GATHERED_ROWS
):
    """The two quantile passes (their kernels on the local engine) over X, E cut at ``pairs``."""
    source = _cut({"X": X, "local_effects": E}, pairs)
    cols = tuple(range(X.shape[1]))
    grid = bucket_grid(n=len(X), lo=lo, hi=hi, dtype=X.dtype, bins=bins)
    empty = np.zeros(len(cols) * grid.size, dtype=np.int64)
    counts = LOCAL.run(source, OnColumns(grid.counts, cols), np.add, empty, arrays=("X",))
    plan = QuantilePlan.build(
        grid, counts, n=len(X), bins=bins, max_bucket=max_bucket, max_gathered=max_gathered
    )
    scan = LOCAL.run(
        source,
        OnColumns(plan.scan, cols, cols),
        type(plan.empty_scan()).merge,
        plan.empty_scan(),
        arrays=ROWS,
    )
    return plan.finish(scan, lo, hi)


def _one_pass_cells(x: np.ndarray, e: np.ndarray, bins: int):  # type: ignore[no-untyped-def]
    from ale_cli.core.binning import assign
    from ale_cli.core.binstats import CellStats

    z = quantile_edges(x, bins=bins)
    return z, CellStats.from_values(assign(x, z).index, e, n_cells=z.size - 1)


@settings(max_examples=120, deadline=None)
@given(
    values=st.lists(
        st.one_of(
            st.floats(-1e3, 1e3, allow_nan=False),
            st.sampled_from([0.0, 1.0, 1.0 + 2**-40, 7.0]),
            st.sampled_from([-1e300, 1e300, 5e-324, 1e-310]),
        ),
        min_size=2,
        max_size=300,
    ),
    bins=st.integers(1, 30),
    split=st.integers(1, 80),
    max_bucket=st.sampled_from([0, 1, 3, 10_000]),
    max_gathered=st.sampled_from([0, 5, 10_000]),
    float32=st.booleans(),
    seed=st.integers(0, 2**16),
)
@example(  # a subnormal range: no bucket grid, the column comes back None
    values=[0.0, 5e-324], bins=1, split=1, max_bucket=3, max_gathered=10_000, float32=False, seed=0
)
def test_two_pass_quantile_cells_equal_the_one_pass_bins(
    values, bins, split, max_bucket, max_gathered, float32, seed
):
    """The two quantile passes (any chunks, any gather limits) give the edges of a full
    sort and the cells of one pass over the whole column; a column comes back None only
    when a bucket holding a quantile is over the limits or the range is not a finite width."""
    rng = np.random.default_rng(seed)
    with np.errstate(over="ignore"):  # 1e300 is inf in float32: assumed away
        x = np.array(values, dtype=np.float32 if float32 else np.float64)
    assume(np.all(np.isfinite(x)) and x.max() > x.min())
    n = x.size
    ties = rng.integers(0, 3, size=n).astype(x.dtype)  # few distinct values: big buckets
    X = np.column_stack([x, ties, np.sort(x)])  # a sorted column: chunks see one range each
    E = rng.normal(size=X.shape) + np.sin(X.astype(np.float64))
    E[:, 1] = 2.5  # constant effects: M2 exactly 0
    bounds = list(range(0, n, split)) + [n]
    pairs = list(zip(bounds[:-1], bounds[1:], strict=True))
    lo, hi = X.min(0).astype(np.float64), X.max(0).astype(np.float64)
    out = quantile_cells(
        X,
        E,
        pairs,
        bins=bins,
        lo=lo,
        hi=hi,
        max_bucket=max_bucket,
        max_gathered=max_gathered,
    )
    for j, found in enumerate(out):
        if hi[j] == lo[j]:
            continue
        if found is None:
            # the gather limits count the rows of all columns together; a range not a
            # finite width, or so narrow (subnormal) that buckets per unit overflow, has no grid
            width = hi[j] - lo[j]
            assert max_bucket < n or max_gathered < X.size or not (1e-290 < width < np.inf)
            continue
        z, cells = _one_pass_cells(X[:, j].astype(np.float64), E[:, j], bins)
        np.testing.assert_array_equal(found.edges, z)
        np.testing.assert_array_equal(found.cells.counts, cells.counts)
        np.testing.assert_allclose(found.cells.mean, cells.mean, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(found.cells.m2, cells.m2, rtol=1e-12, atol=1e-12)
        if j == 1:
            np.testing.assert_array_equal(found.cells.m2, 0.0)


def test_two_pass_quantile_cells_on_many_rows_and_chunk_sizes():
    """Enough rows for thousands of buckets: a normal, a heavy-tailed column with an
    outlier, integer ties and a point mass; the same edges and cells for every chunking."""
    rng = np.random.default_rng(5)
    n = 60_000
    X = np.column_stack(
        [
            rng.normal(size=n),
            rng.standard_cauchy(size=n),
            rng.integers(0, 7, size=n).astype(float),
            np.where(rng.random(n) < 0.7, 0.0, rng.exponential(size=n)),
        ]
    )
    X[0, 1] = 1e9
    E = np.column_stack([X[:, 0] ** 2, np.tanh(X[:, 1]), X[:, 2], X[:, 3] * 3]) + rng.normal(
        scale=0.01, size=X.shape
    )
    lo, hi = X.min(0), X.max(0)
    for split in (999, 8192, n):
        bounds = list(range(0, n, split)) + [n]
        pairs = list(zip(bounds[:-1], bounds[1:], strict=True))
        out = quantile_cells(X, E, pairs, bins=20, lo=lo, hi=hi)
        for j, found in enumerate(out):
            assert found is not None
            z, cells = _one_pass_cells(X[:, j], E[:, j], 20)
            np.testing.assert_array_equal(found.edges, z)
            np.testing.assert_array_equal(found.cells.counts, cells.counts)
            np.testing.assert_allclose(found.cells.mean, cells.mean, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(found.cells.m2, cells.m2, rtol=1e-12, atol=1e-12)


def test_columns_past_the_gather_limit_take_the_slower_path(tmp_path: Path, monkeypatch):
    """With a tiny bucket limit the heavy-tailed and point-mass columns cannot be finished
    in two passes; the streaming rebin/rhale then select them the slower way, and the
    summaries still equal the in-memory ones."""
    import ale_cli.core.quantile_cells as quantile_cells

    rng = np.random.default_rng(11)
    X, E = _data(3000, 4)
    X[:, 2] = np.where(rng.random(3000) < 0.6, 0.5, rng.normal(size=3000))  # a point mass
    path = chunked_store(tmp_path / "s.npz", X, E, [700, 1500, 2999])
    monkeypatch.setattr(quantile_cells, "MAX_BUCKET_ROWS", 2)
    for run in (REQUESTS[1], REQUESTS[3]):
        _assert_same(run(path), run(_in_memory(X, E)))


@settings(max_examples=10, deadline=None)
@given(
    n=st.integers(min_value=30, max_value=400),
    seed=st.integers(0, 2**16),
    cuts=st.lists(st.integers(1, 399), max_size=5),
)
def test_the_manifest_records_the_prediction_distribution_the_summary_reports(
    tmp_path_factory, n, seed, cuts
):
    """The manifest's percentiles of the predictions are the numbers the estimators would
    get from reading them all: the same summary statistics, bit for bit."""
    from ale_cli.core.statistics import prediction_distribution

    X, E = _data(n, seed)  # finite: ale writes no NaN (a store holding one is refused)
    path = chunked_store(tmp_path_factory.mktemp("m") / "s.npz", X, E, [c for c in cuts if c < n])
    want = prediction_distribution(prediction=E.sum(1))
    found = open_store(path).recorded_prediction()
    assert found is not None and found["n"] == n
    assert found["mean"] == want.mean
    np.testing.assert_array_equal(found["quantiles"], want.quantiles)
    for run in REQUESTS:
        streamed, whole = run(path).summary, run(_in_memory(X, E)).summary
        assert streamed.prediction["n"] == whole.prediction["n"]
        np.testing.assert_array_equal(
            streamed.prediction["quantiles"], whole.prediction["quantiles"]
        )
        for fa, fb in zip(streamed.features, whole.features, strict=True):
            assert (fa.statistics is None) == (fb.statistics is None)
            for key in fa.statistics or {}:  # the effects agree to rounding (the merges)
                a, b = fa.statistics[key], fb.statistics[key]
                if a is None or b is None:
                    assert a is b, key
                else:
                    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=key)


def test_estimators_do_not_read_the_predictions_when_the_manifest_has_them(
    tmp_path: Path, monkeypatch
):
    from ale_cli.store.npz import StoreFile

    X, E = _data(300, 4)
    path = chunked_store(tmp_path / "s.npz", X, E, [120])

    def refuse(self):  # type: ignore[no-untyped-def]
        raise AssertionError("the predictions were read")

    monkeypatch.setattr(StoreFile, "prediction", refuse)
    summary = rebin(RebinRequest(store=path, bins=10, binning="quantile")).summary
    assert summary.prediction["n"] == 300


def test_a_store_of_infinite_values_is_not_written_and_a_damaged_record_is_refused(
    tmp_path: Path,
):
    import json
    import zipfile

    from ale_cli.errors import InputError

    X, E = _data(100, 5)
    E[:, 0] = np.inf  # every reader refuses such a store: the writer writes none
    with pytest.raises(ValueError, match="chunk 0 of 'local_effects' holds NaN or infinite"):
        chunked_store(tmp_path / "inf.npz", X, E, [40])
    X, E = _data(100, 6)
    path = chunked_store(tmp_path / "s.npz", X, E, [40])
    with zipfile.ZipFile(path) as zf:
        entries = {name: zf.read(name) for name in zf.namelist()}
    meta = json.loads(np.load(path)["meta"].item())
    meta["chunks"]["prediction"]["quantiles"][3] = 1e9  # no longer increasing
    damaged = tmp_path / "damaged.npz"
    with zipfile.ZipFile(damaged, "w") as zf:
        for name, data in entries.items():
            if name != "meta.npy":
                zf.writestr(name, data)
        with zf.open("meta.npy", "w") as f:
            np.lib.format.write_array(f, np.array(json.dumps(meta), dtype=np.str_))
    with pytest.raises(InputError, match="damaged.npz.*prediction distribution is damaged"):
        rhale(RhaleRequest(store=damaged))


@settings(max_examples=10, deadline=None)
@given(n=st.integers(1, 50_000), seed=st.integers(0, 2**16), f32=st.booleans())
def test_bucket_counts_in_blocks_equal_one_bincount(n, seed, f32):
    """Pass 1 counts a chunk COUNT_ROWS rows at a time: the same counts as one bincount of
    every value's bucket, and every value counted once."""
    from ale_cli.core.quantile_cells import COUNT_ROWS, BucketGrid

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3)) * [1.0, 1e3, 1e-3]
    X = X.astype(np.float32) if f32 else X
    grid = BucketGrid.build(X.min(0), X.max(0), size=97, dtype=X.dtype)
    counts = grid.counts(X)
    np.testing.assert_array_equal(counts, np.bincount(grid.flat(X).ravel(), minlength=3 * 97))
    assert counts.sum() == 3 * n
    assert n <= COUNT_ROWS or counts.dtype == np.int64


def _same_cells(a: Cells, b: Cells) -> None:
    assert a.outside == b.outside
    for x, y in zip(a.stats, b.stats, strict=True):
        np.testing.assert_array_equal(x.counts, y.counts)
        np.testing.assert_allclose(x.mean, y.mean, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(x.m2, y.m2, rtol=1e-12, atol=1e-9)


@settings(max_examples=12, deadline=None)
@given(
    n=st.integers(min_value=2, max_value=700),
    seed=st.integers(0, 2**16),
    cuts=st.lists(st.integers(1, 699), max_size=5),
    chunk_rows=st.sampled_from([None, 1, 17, 256]),
    f32=st.booleans(),
)
def test_kernels_do_not_depend_on_how_the_rows_are_cut(n, seed, cuts, chunk_rows, f32):
    """Every first-order kernel run over parts and chunks of the rows, merged in row order,
    equals its one pass over the whole arrays (counts and ranges exactly, means and M2 to
    rounding); the quantile passes give the full sort's edges."""
    X, E = _data(n, seed)
    X = X.astype(np.float32) if f32 else X
    bounds = [0, *sorted({c for c in cuts if c < n}), n]
    pairs = list(zip(bounds[:-1], bounds[1:], strict=True))
    rows = {"X": X, "local_effects": E}
    cut, whole = _cut(rows, pairs, chunk_rows), ArraySource(rows)
    cols = (0, 1, 2)
    lo, hi = X.min(0)[:3].astype(np.float64), X.max(0)[:3].astype(np.float64)
    assume(np.all(hi > lo))

    def both(kernel, merge, empty, arrays=ROWS):  # type: ignore[no-untyped-def]
        return [LOCAL.run(s, kernel, merge, empty, arrays=arrays) for s in (cut, whole)]

    r_cut, r_whole = both(Ranges(cols), merge_extents, Ranges(cols).empty(), ("X",))
    assert r_cut[0] == r_whole[0] == n
    np.testing.assert_array_equal(r_cut[1:], r_whole[1:])
    np.testing.assert_array_equal(r_cut[1:], (lo, hi))
    edges = tuple(uniform_edges(lo[j], hi[j], bins=5 + j) for j in cols)
    on_edges = OnColumns(partial(edge_cells, edges=edges), cols, cols)
    _same_cells(*both(on_edges, Cells.merge, Cells.empty([5, 6, 7])))
    grid = UniformGrid.build(lo, hi, bins=9)
    if grid is not None:
        on_grid = OnColumns(partial(edge_cells, grid=grid), cols, cols)
        _same_cells(*both(on_grid, Cells.merge, Cells.empty([9] * 3)))
    names = ("smooth", "heavy", "ties")
    found = [
        quantile(Passes(s, Columns(names, cols, cols), n, LOCAL), [0, 1, 2], lo, hi, 8)
        for s in (cut, whole)
    ]
    for j in cols:
        z = quantile_edges(X[:, j].astype(np.float64), bins=8)
        np.testing.assert_array_equal(found[0][0][j], z)
        np.testing.assert_array_equal(found[1][0][j], z)
        np.testing.assert_array_equal(found[0][1][j].counts, found[1][1][j].counts)
        np.testing.assert_allclose(found[0][1][j].mean, found[1][1][j].mean, rtol=1e-12)
