"""Streaming `ale compute`: chunked stores, the same numbers and checks as the whole-table
path, hashing while reading, old stores still read, interrupted runs leave nothing behind."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ale_cli.data.stream import open_stream
from ale_cli.data.table import data_sha256, load_table
from ale_cli.errors import InputError
from ale_cli.estimators.inputs import ModelInputs
from ale_cli.estimators.local_effects import ComputeRequest, compute
from ale_cli.io.files import sha256_file
from ale_cli.store.npz import (
    Store,
    open_store,
    read_meta,
    read_store,
    write_store,
)

REPO = Path(__file__).resolve().parents[1]


def _torchscript(path: Path, dtype: str) -> Path:
    """f(x) = sum_j w_j tanh(x_j) + x_0 x_1 (float64 buffers, or a float32 MLP)."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    if dtype == "float64":

        class F(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.register_buffer("w", torch.linspace(-1.0, 2.0, 4, dtype=torch.float64))

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return (torch.tanh(x) * self.w).sum(1) + x[:, 0] * x[:, 1]

        module: nn.Module = F()
    else:
        module = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1), nn.Flatten(0))
    torch.jit.save(torch.jit.script(module.eval()), str(path))
    return path


@pytest.fixture(scope="module")
def model64(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _torchscript(tmp_path_factory.mktemp("m") / "f64.pt", "float64")


@pytest.fixture(scope="module")
def model32(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _torchscript(tmp_path_factory.mktemp("m") / "f32.pt", "float32")


def _frame(n: int, dtype: str = "float64", seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)).astype(dtype)
    return pd.DataFrame(X, columns=["a", "b", "c", "d"]).assign(y=np.arange(n) % 3)


def _parquet(frame: pd.DataFrame, path: Path, row_group: int = 37) -> Path:
    frame.to_parquet(path, index=False, row_group_size=row_group)
    return path


def _compute(model: Path, data: Path, out: Path, chunk: int, **kw) -> Path:  # type: ignore[no-untyped-def]
    inputs = ModelInputs(model=model, data=data, exclude=("y",), **kw)
    compute(ComputeRequest(inputs=inputs, out=out, chunk_rows=chunk), force=True)
    return out


def test_chunked_store_layout_and_manifest(model32, tmp_path: Path):
    data = _parquet(_frame(250, "float32"), tmp_path / "d.parquet")
    out = _compute(model32, data, tmp_path / "s.npz", chunk=100)
    meta = read_meta(out)
    assert meta["schema_version"] == 3
    assert meta["chunks"]["rows"] == [100, 100, 50]
    assert meta["chunks"]["arrays"] == ["X", "local_effects", "prediction"]
    with np.load(out, allow_pickle=False) as npz:
        assert npz["X.00000"].dtype == np.float32  # float32 source, float32 X
        assert npz["local_effects.00002"].shape == (50, 4)
        # a float32 model's gradients and outputs are float32 numbers: stored as such
        assert npz["local_effects.00000"].dtype == np.float32
        assert npz["prediction.00000"].dtype == np.float32
    X = load_table(data, exclude=("y",)).X
    np.testing.assert_array_equal(meta["chunks"]["x_min"], X.min(axis=0))
    np.testing.assert_array_equal(meta["chunks"]["x_max"], X.max(axis=0))
    store = read_store(out)
    np.testing.assert_array_equal(store.X, X)  # the float32 values exactly, as float64
    assert store.X.dtype == store.local_effects.dtype == np.float64
    from ale_cli.models import Columns, load_model

    model = load_model(
        model32,
        model_format="torchscript",
        options=ModelInputs(model=model32, data=data).load_options(),
        columns=Columns(names=store.input_names),
        X=X,
    )
    effects = model.local_effects(X)  # float64 arrays of float32 numbers
    np.testing.assert_array_equal(store.local_effects, effects.local_effects)
    np.testing.assert_array_equal(store.prediction, effects.prediction)


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(chunk=st.integers(min_value=2, max_value=300))
def test_streamed_store_equals_whole_table_for_any_chunk_size(model64, tmp_path: Path, chunk):
    data = tmp_path / "d.parquet"
    if not data.exists():
        _parquet(_frame(203), data)
    out = _compute(model64, data, tmp_path / f"s{chunk}.npz", chunk=chunk)
    store = read_store(out)
    X = load_table(data, exclude=("y",)).X
    # the known answer: d/dx_j = w_j (1 - tanh^2 x_j) + [x_1, x_0, 0, 0]_j
    w = np.linspace(-1.0, 2.0, 4)
    expected = w * (1 - np.tanh(X) ** 2)
    expected[:, 0] += X[:, 1]
    expected[:, 1] += X[:, 0]
    np.testing.assert_array_equal(store.X, X)
    np.testing.assert_allclose(store.local_effects, expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        store.prediction, (np.tanh(X) * w).sum(1) + X[:, 0] * X[:, 1], rtol=0, atol=1e-12
    )
    rows = [len(c["X"]) for c in open_store(out).chunks()]
    assert sum(rows) == 203 and all(r == chunk for r in rows[:-1])


def test_streamed_and_whole_paths_give_the_same_store(model64, tmp_path: Path, monkeypatch):
    data = tmp_path / "d.csv"
    _frame(120).to_csv(data, index=False)
    streamed = read_store(_compute(model64, data, tmp_path / "a.npz", chunk=31))
    monkeypatch.setattr("ale_cli.estimators.local_effects.streamed_run", lambda *a, **k: None)
    whole = read_store(_compute(model64, data, tmp_path / "b.npz", chunk=31))
    np.testing.assert_array_equal(streamed.X, whole.X)
    np.testing.assert_allclose(streamed.local_effects, whole.local_effects, rtol=0, atol=1e-12)
    for key in ("cache_key", "inputs", "features", "n_rows"):
        assert streamed.meta[key] == whole.meta[key]
    for key in ("sha256", "rows_read", "rows_dropped", "dtypes"):
        assert streamed.meta["data"][key] == whole.meta["data"][key]


@pytest.mark.parametrize("kind", ["csv", "parquet", "dataset"])
def test_data_is_hashed_while_read(model64, tmp_path: Path, kind: str):
    frame = _frame(300)
    if kind == "csv":
        data = tmp_path / "d.csv"
        frame.to_csv(data, index=False)
    elif kind == "parquet":
        data = _parquet(frame, tmp_path / "d.parquet", row_group=50)
    else:
        data = tmp_path / "ds"
        for i in range(3):
            (data / f"part={i}").mkdir(parents=True)
            _parquet(frame.iloc[i * 100 : (i + 1) * 100], data / f"part={i}" / "x.parquet")
    out = _compute(model64, data, tmp_path / "s.npz", chunk=64)
    meta = read_meta(out)
    if kind == "dataset":
        # each relative name and file hash, in name order
        digest = hashlib.sha256()
        for i in range(3):
            f = data / f"part={i}" / "x.parquet"
            digest.update(f"part={i}/x.parquet\0{sha256_file(f)}\n".encode())
        assert meta["data"]["sha256"] == digest.hexdigest() == data_sha256(data)
        np.testing.assert_array_equal(
            read_store(out).X, frame.drop(columns="y").to_numpy(dtype=np.float64)
        )
    else:
        assert meta["data"]["sha256"] == sha256_file(data)
    # a second run is a cache hit (the cache check hashes the files itself)
    inputs = ModelInputs(model=model64, data=data, exclude=("y",))
    assert compute(ComputeRequest(inputs=inputs, out=out, chunk_rows=64)).cache_hit


def _error(fn) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError) as info:
        fn()
    return str(info.value)


def test_nan_rows_give_the_whole_file_message_and_counts(model64, tmp_path: Path):
    frame = _frame(200)
    frame.loc[[3, 150, 151], "b"] = np.nan
    frame.loc[190, "d"] = np.inf
    data = tmp_path / "d.csv"
    frame.to_csv(data, index=False)
    whole = _error(lambda: load_table(data, exclude=("y",)))
    out = tmp_path / "s.npz"
    streamed = _error(lambda: _compute(model64, data, out, chunk=20))
    assert streamed == whole
    assert "4 rows" in streamed and "columns: b, d" in streamed
    assert not out.exists() and list(tmp_path.glob(".s.npz*")) == []
    _compute(model64, data, out, chunk=20, dropna=True)
    meta = read_meta(out)
    table = load_table(data, exclude=("y",), dropna=True)
    assert meta["data"]["rows_dropped"] == table.rows_dropped == 4
    assert meta["data"]["dropped_columns"] == list(table.dropped_columns)
    np.testing.assert_array_equal(read_store(out).X, table.X)


def test_too_few_rows_and_unknown_columns_as_the_whole_file_path(model64, tmp_path: Path):
    frame = _frame(5)
    frame.loc[1:, "a"] = np.nan
    data = tmp_path / "d.csv"
    frame.to_csv(data, index=False)
    whole = _error(lambda: load_table(data, exclude=("y",), dropna=True))
    assert _error(lambda: _compute(model64, data, tmp_path / "s.npz", 2, dropna=True)) == whole
    whole = _error(lambda: load_table(data, exclude=("nope",)))
    assert _error(lambda: list(open_stream(data, exclude=("nope",)))) == whole


def test_csv_chunk_dtypes_combine_as_the_whole_file(tmp_path: Path):
    data = tmp_path / "d.csv"
    data.write_text("a,b\n1,2\n3,4\n5,6.5\n")  # b is int64 in the first chunk, float64 after
    stream = open_stream(data, chunk_rows=2)
    list(stream)
    assert stream.dtypes == load_table(data).dtypes == {"a": "int64", "b": "float64"}


# -- old stores --------------------------------------------------------------------------


def _old_store(path: Path, schema: int) -> Store:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 2))
    E = np.column_stack([np.full(40, 3.0), X[:, 1]])
    meta = {"schema_version": schema, "n_rows": 40, "feature_names": ["p", "q"]}
    if schema == 1:  # no input_names array
        np.savez(
            path,
            X=X,
            local_effects=E,
            prediction=E.sum(1),
            feature_names=np.array(["p", "q"]),
            meta=np.array(__import__("json").dumps(meta)),
        )
    else:
        write_store(
            path,
            Store(X=X, local_effects=E, prediction=E.sum(1), feature_names=("p", "q"), meta=meta),
        )
    return Store(X=X, local_effects=E, prediction=E.sum(1), feature_names=("p", "q"), meta=meta)


@pytest.mark.parametrize("schema", [1, 2])
def test_old_single_array_stores_are_read_whole_and_by_chunks(tmp_path: Path, schema: int):
    path = tmp_path / "old.npz"
    expected = _old_store(path, schema)
    store = read_store(path)
    np.testing.assert_array_equal(store.X, expected.X)
    np.testing.assert_array_equal(store.local_effects, expected.local_effects)
    assert store.input_names == ("p", "q")
    handle = open_store(path)
    assert handle.rows == (40,) and handle.input_names == ("p", "q")
    (chunk,) = list(handle.chunks())
    np.testing.assert_array_equal(chunk["local_effects"], expected.local_effects)


# -- interrupted runs --------------------------------------------------------------------


def _slow_model(path: Path) -> Path:
    """About a second per 500 rows: 40 tanh layers of width 256."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    layers: list[nn.Module] = [nn.Linear(4, 256)]
    for _ in range(40):
        layers += [nn.Tanh(), nn.Linear(256, 256)]
    module = nn.Sequential(*layers, nn.Linear(256, 1), nn.Flatten(0))
    torch.jit.save(torch.jit.script(module.eval()), str(path))
    return path


def test_sigterm_during_a_streaming_compute_leaves_the_old_store(model64, tmp_path: Path):
    slow = _slow_model(tmp_path / "slow.pt")
    data = _parquet(_frame(40_000), tmp_path / "d.parquet", row_group=5_000)
    out = tmp_path / "s.npz"
    _compute(model64, _parquet(_frame(50), tmp_path / "small.parquet"), out, chunk=10)
    before = out.read_bytes()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [
        sys.executable,
        "-m",
        "ale_cli",
        "compute",
        str(slow),
        str(data),
        "--exclude",
        "y",
        "-o",
        str(out),
        "--chunk-rows",
        "500",
        "--force",
        "--quiet",
    ]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    # wait until the temporary store beside the old one is being written
    while not list(tmp_path.glob(".s.npz.*.tmp")) and time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        time.sleep(0.02)
    time.sleep(1.0)  # some chunks are written
    assert proc.poll() is None, "compute ended before it could be interrupted"
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert out.read_bytes() == before
    assert list(tmp_path.glob(".s.npz*")) == []


def test_store_writer_failures_leave_the_older_store(tmp_path: Path):
    from ale_cli.store.npz import StoreWriter

    path = tmp_path / "s.npz"
    path.write_bytes(b"older")
    chunk = {"X": np.zeros((3, 2)), "local_effects": np.ones((3, 2)), "prediction": np.ones(3)}
    with pytest.raises(RuntimeError, match="finish was not called"):
        with StoreWriter(path) as w:
            w.add(chunk)
    with pytest.raises(KeyError, match="boom"):
        with StoreWriter(path) as w:
            w.add(chunk)
            raise KeyError("boom")
    assert path.read_bytes() == b"older"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.npz"]


@pytest.mark.parametrize(
    "kind", ["float32", "float64", "int8", "uint16", "int64", "bool", "float64-nulls"]
)
def test_arrow_values_equal_to_numpy(kind: str):
    """Numeric Arrow columns without nulls are viewed in their buffer (also when sliced,
    with an offset); the values are those of ``to_numpy``."""
    import pyarrow as pa

    from ale_cli.data.table import arrow_values

    rng = np.random.default_rng(1)
    if kind == "bool":
        full = pa.array(rng.random(50) < 0.5)
    elif kind == "float64-nulls":
        full = pa.array([None if i % 7 == 0 else float(i) for i in range(50)])
    else:
        full = pa.array((rng.normal(size=50) * 50).astype(kind))
    for column in (full, full.slice(13, 20)):
        expected = column.to_numpy(zero_copy_only=False)
        np.testing.assert_array_equal(arrow_values(column), expected)


def test_streaming_compute_of_numeric_parquet_does_not_import_pandas(model32, tmp_path: Path):
    data = _parquet(_frame(120, "float32").drop(columns="y"), tmp_path / "d.parquet")
    code = (
        "import sys\nfrom pathlib import Path\n"
        "from ale_cli.estimators.local_effects import ComputeRequest, compute\n"
        "from ale_cli.estimators.inputs import ModelInputs\n"
        f"inputs = ModelInputs(model=Path({str(model32)!r}), data=Path({str(data)!r}))\n"
        f"out = Path({str(tmp_path / 's.npz')!r})\n"
        "compute(ComputeRequest(inputs=inputs, out=out, chunk_rows=50))\n"
        "print('pandas' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"


@pytest.fixture(scope="module")
def grouped(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, pd.DataFrame]:
    """A Parquet file of 12 row groups of 50 rows: a float column with a NaN in row group
    5, an int column with a null in row group 8 only (float64 there, int64 elsewhere)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(3)
    a = rng.normal(size=600)
    a[263] = np.nan
    b = pa.array([None if i == 420 else int(v) for i, v in enumerate(rng.integers(0, 9, 600))])
    table = pa.table({"a": a, "b": b, "c": rng.normal(size=600).astype(np.float32)})
    path = tmp_path_factory.mktemp("rg") / "g.parquet"
    pq.write_table(table, path, row_group_size=50)
    return path, table.to_pandas()


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    start=st.integers(0, 11),
    length=st.integers(1, 12),
    chunk=st.integers(1, 130),
    dropna=st.booleans(),
)
def test_a_row_group_range_reads_as_a_file_of_those_row_groups(
    grouped, tmp_path: Path, start: int, length: int, chunk: int, dropna: bool
):
    import pyarrow.parquet as pq

    path, frame = grouped
    stop = min(start + length, 12)
    rows = frame.iloc[start * 50 : stop * 50]
    alone = tmp_path / f"alone-{start}-{stop}.parquet"  # a file of those row groups only
    pq.write_table(pq.read_table(path).slice(start * 50, len(rows)), alone, row_group_size=50)
    ranged = open_stream(path, chunk_rows=chunk, dropna=dropna, row_groups=(start, stop))
    reference = open_stream(alone, chunk_rows=chunk, dropna=dropna)
    assert ranged.total_rows == len(rows) and ranged.dtype == reference.dtype == np.float64
    kept = rows.dropna().to_numpy(np.float64)
    if not dropna and len(kept) < len(rows):  # NaN in row group 5, a null in row group 8
        message = _error(lambda: list(ranged))
        groups = f"row group {start}" if stop - start == 1 else f"row groups {start}-{stop - 1}"
        n_bad = len(rows) - len(kept)
        cols = ", ".join(c for c in "ab" if rows[c].isna().any())
        assert message == (
            f"data file '{path}' ({groups}) has {n_bad} row{'s' if n_bad > 1 else ''} with "
            f"NaN or infinite values (columns: {cols}); pass dropna to drop them"
        )
        assert _error(lambda: list(reference)) == message.replace(
            f"'{path}' ({groups})", f"'{alone}'"
        )
        return
    chunks = list(ranged)
    assert [len(c) for c in chunks] == [len(c) for c in reference]  # chunks of `chunk` rows
    assert [len(c) for c in chunks][:-1] == [chunk] * (len(chunks) - 1)
    np.testing.assert_array_equal(np.concatenate(chunks), kept)
    assert ranged.dtypes == reference.dtypes  # b: float64 only when row group 8 is read
    assert ranged.dtypes["b"] == ("float64" if start <= 8 < stop else "int64")
    assert ranged.rows_read == len(rows) and ranged.rows_dropped == len(rows) - len(kept)
    assert ranged.sha256 is None and reference.sha256 == sha256_file(alone)  # not hashed


def test_row_groups_are_refused_outside_one_parquet_file(grouped, tmp_path: Path):
    path, frame = grouped
    for bad in ((3, 3), (0, 13), (-1, 2)):
        assert _error(lambda bad=bad: open_stream(path, row_groups=bad)) == (
            "row_groups must be a range start < stop within the 12 row groups of data file "
            f"'{path}', got {bad[0]}, {bad[1]}"
        )
    csv = tmp_path / "g.csv"
    frame.to_csv(csv, index=False)
    assert _error(lambda: open_stream(csv, row_groups=(0, 1))) == (
        f"row_groups selects row groups of one Parquet file, got data '{csv}'"
    )
