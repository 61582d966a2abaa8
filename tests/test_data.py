"""Data loading: formats, column selection, and the exact one-line errors (exit 2)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ale_cli.data.table import load_table
from ale_cli.errors import InputError


@pytest.fixture()
def frame() -> pd.DataFrame:
    return pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [4, 5, 6], "y": [0.1, 0.2, 0.3]})


def test_csv_and_parquet_give_the_same_float64_matrix(tmp_path: Path, frame: pd.DataFrame):
    frame.to_csv(tmp_path / "d.csv", index=False)
    frame.to_parquet(tmp_path / "d.parquet", index=False)
    csv = load_table(tmp_path / "d.csv", exclude=["y"])
    pq = load_table(tmp_path / "d.parquet", exclude=["y"])
    assert csv.X.dtype == np.float64 and csv.feature_names == ("a", "b")
    np.testing.assert_array_equal(csv.X, [[1, 4], [2, 5], [3, 6]])
    np.testing.assert_array_equal(pq.X, csv.X)
    assert (csv.format, pq.format) == ("csv", "parquet")


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz"])
def test_a_compressed_csv_reads_whole_and_streamed_alike(tmp_path: Path, frame, suffix: str):
    from ale_cli.data.stream import open_stream

    path = tmp_path / f"d.csv{suffix}"
    frame.to_csv(path, index=False)  # pandas compresses by the suffix
    whole = load_table(path, exclude=["y"])
    stream = open_stream(path, exclude=["y"], chunk_rows=2)
    np.testing.assert_array_equal(np.concatenate(list(stream)), whole.X)
    assert whole.format == stream.format == "csv"
    np.testing.assert_array_equal(whole.X, [[1, 4], [2, 5], [3, 6]])


def test_features_select_and_order_columns(tmp_path: Path, frame: pd.DataFrame):
    frame.to_csv(tmp_path / "d.csv", index=False)
    table = load_table(tmp_path / "d.csv", inputs=["y", "a"])
    assert table.feature_names == ("y", "a")
    np.testing.assert_array_equal(table.X[:, 1], [1, 2, 3])


def test_format_option_overrides_the_extension(tmp_path: Path, frame: pd.DataFrame):
    frame.to_csv(tmp_path / "d.data", index=False)
    assert load_table(tmp_path / "d.data", fmt="csv").X.shape == (3, 3)
    with pytest.raises(InputError, match="cannot tell the format of data file"):
        load_table(tmp_path / "d.data")


def test_dropna_drops_and_counts(tmp_path: Path):
    pd.DataFrame({"a": [1.0, np.nan, 3.0, 4.0], "b": [1.0, 2.0, np.inf, 4.0]}).to_csv(
        tmp_path / "d.csv", index=False
    )
    table = load_table(tmp_path / "d.csv", dropna=True)
    assert (table.rows_read, table.rows_dropped, len(table.X)) == (4, 2, 2)
    assert table.dropped_columns == ("a", "b")
    np.testing.assert_array_equal(table.X, [[1, 1], [4, 4]])


# -- every bad input gives its one line and exit code 2 through `ale compute` --------------


def _write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


BAD_INPUTS = [
    ("missing.csv", None, [], "error: data file '{p}' does not exist"),
    ("garbage.parquet", b"\x00\x01 not parquet", [], None),
    (
        "d.csv",
        "a,b\n1,2\n3,4\n",
        ["--features", "a,zz"],
        "error: --features: 'zz' is not one of the model's inputs in data file '{p}' (a, b)",
    ),
    (
        "d.csv",
        "a,b\n1,x\n3,4\n",
        [],
        "error: column 'b' in data file '{p}' is not numeric (example value: 'x'); "
        "leave it out with --exclude or list the model's inputs with --inputs",
    ),
    (
        "d.csv",
        "a,b\n1,nan\n3,inf\n5,6\n",
        [],
        "error: data file '{p}' has 2 rows with NaN or infinite values (columns: b); "
        "pass --dropna to drop them",
    ),
    ("d.csv", "a,b\n", [], "error: data file '{p}' has no rows"),
    ("d.csv", "", [], "error: data file '{p}' is empty"),
    ("d.csv", "a,b\n1,2\n", [], "error: data file '{p}' has 1 row; at least 2 are needed"),
    (
        "d.csv",
        "a,b\n1,2\nnan,3\n",
        ["--dropna"],
        "error: data file '{p}' has 1 row left after dropping 1 with NaN or infinite values; "
        "at least 2 are needed",
    ),
    (
        "d.csv",
        "a,b\n1,2\n3,4\n",
        ["--exclude", "a,b"],
        "error: no input columns left in data file '{p}' after --exclude",
    ),
    (
        "d.xyz",
        "a,b\n1,2\n3,4\n",
        [],
        "error: cannot tell the format of data file '{p}' from its extension; "
        "pass --data-format csv or --data-format parquet",
    ),
]


@pytest.mark.parametrize(("name", "content", "args", "expected"), BAD_INPUTS)
def test_bad_input_is_one_line_and_exit_2(
    cli, tmp_path, rhale_model, name, content, args, expected
):
    path = tmp_path / name
    if content is not None:
        _write(path, content)
    result = cli("compute", rhale_model, path, "-o", tmp_path / "s.npz", *args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    if expected is None:  # the reader's own reason follows the fixed prefix
        assert lines[0].startswith(f"error: cannot read data file '{path}' as PARQUET: ")
    else:
        assert lines[0] == expected.format(p=path)
    assert not (tmp_path / "s.npz").exists()


def test_dropna_through_the_cli_says_how_many(cli, tmp_path, rhale_model):
    data = _write(tmp_path / "d.csv", "x1,x2,x3\n0.1,0.2,0.3\nnan,0.1,0.1\n0.5,0.4,-0.3\n")
    result = cli("compute", rhale_model, data, "-o", tmp_path / "s.npz", "--dropna")
    assert result.exit_code == 0, result.output
    assert "dropped 1 rows with NaN or infinite values (--dropna)" in result.stderr
    assert "2 rows x 3 features" in result.stdout


def test_an_arrow_batch_becomes_the_matrix_of_its_values_in_blocks() -> None:
    import pyarrow as pa

    from ale_cli.data.table import batch_matrix

    rng = np.random.default_rng(3)
    n = 10_001  # more than two blocks of rows, the last one short
    a, b = rng.normal(size=n).astype(np.float32), rng.normal(size=n).astype(np.float32)
    nulls = np.zeros(n, dtype=bool)
    nulls[[0, 5000, n - 1]] = True
    batch = pa.record_batch(
        {"b": pa.array(b, mask=nulls), "a": a, "i": np.arange(n, dtype=np.int64)}
    )
    X, dtypes = batch_matrix(batch, ["a", "b"], Path("t.parquet"), np.float32)
    assert X.dtype == np.float32 and X.flags.c_contiguous  # float32 read as float32
    np.testing.assert_array_equal(X[:, 0], a)
    np.testing.assert_array_equal(X[~nulls, 1], b[~nulls])
    assert np.isnan(X[nulls, 1]).all() and dtypes == {"a": "float32", "b": "float32"}
    Y, _ = batch_matrix(batch, ["i", "a"], Path("t.parquet"), np.float32)
    assert Y.dtype == np.float64  # an int64 column: not float32 as read
    np.testing.assert_array_equal(Y, np.column_stack([np.arange(n), a]))


@pytest.mark.parametrize(
    ("values", "kind"),
    [
        (pd.date_range("2020-01-01", periods=4, freq="D", unit="us"), "datetime64[us]"),
        (pd.date_range("2020-01-01", periods=4, tz="UTC", unit="us"), "datetime64[us, UTC]"),
        (pd.to_timedelta([1, 2, 3, 4], unit="s").as_unit("us"), "timedelta64[us]"),
    ],
    ids=["timestamp", "timestamp-tz", "duration"],
)
def test_a_parquet_time_column_is_not_numeric_as_in_a_csv(tmp_path: Path, values, kind):
    """Before, a timestamp or duration was read as a count of micro- or nanoseconds."""
    from ale_cli.data.stream import open_stream

    frame = pd.DataFrame({"a": values, "b": [1.0, 2.0, 3.0, 4.0]})
    frame.to_parquet(tmp_path / "t.parquet", index=False)
    frame.to_csv(tmp_path / "t.csv", index=False)
    want = rf"^column 'a' in data file '.*t\.parquet' is not numeric \(a {re.escape(kind)} column"
    with pytest.raises(InputError, match=want):
        load_table(tmp_path / "t.parquet")
    with pytest.raises(InputError, match=want):
        list(open_stream(tmp_path / "t.parquet", chunk_rows=2))
    with pytest.raises(InputError, match=r"^column 'a' in data file '.*t\.csv' is not numeric"):
        load_table(tmp_path / "t.csv")
