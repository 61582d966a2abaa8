"""Partitioned Parquet datasets are read by name: a part lacking an input column is refused
by every reader (naming the part and the column), reordered or extra columns give the
rows of one file, and ``compute`` reads a dataset whole for a scikit-learn model."""

from __future__ import annotations

import pickle
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ale_cli.data.sources import DataSource
from ale_cli.data.stream import open_stream
from ale_cli.data.table import load_table
from ale_cli.errors import InputError
from ale_cli.estimators.classic import ClassicRequest, classic
from ale_cli.estimators.inputs import ModelInputs
from ale_cli.estimators.interact import InteractRequest, interact
from ale_cli.estimators.local_effects import ComputeRequest, compute
from ale_cli.store.npz import read_store

NAMES = ["a", "b", "c", "d"]
MISSING = r"^data file '.*part-1\.parquet' has no column 'd' \(columns: a, b, c, y\)$"


def _frame(n: int = 90, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.normal(size=(n, 4)), columns=NAMES)
    return frame.assign(y=frame.a * frame.b + np.sin(frame.c) + frame.d**2)


def _write_parts(root: Path, parts: list[pd.DataFrame]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for k, part in enumerate(parts):
        part.to_parquet(root / f"part-{k}.parquet", index=False, row_group_size=17)
    return root


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A frame, its parts (the second without ``d``), the same rows in one file, a
    TorchScript model and a scikit-learn tree model (piecewise constant: read whole)."""
    import torch
    from sklearn.ensemble import GradientBoostingRegressor
    from torch import nn

    root = tmp_path_factory.mktemp("parts")
    frame = _frame()
    one = root / "one.parquet"
    frame.to_parquet(one, index=False)
    gap = _write_parts(root / "gap", [frame.iloc[:40], frame.iloc[40:].drop(columns="d")])
    shuffled = _write_parts(
        root / "shuffled",
        [frame.iloc[:40], frame.iloc[40:][["y", "d", "c", "b", "a"]].assign(extra=1.0)],
    )

    class F(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x[:, 0] * x[:, 1] + torch.sin(x[:, 2]) + x[:, 3] ** 2

    torch_model = root / "f.pt"
    torch.jit.script(F()).save(str(torch_model))
    tree = GradientBoostingRegressor(n_estimators=20, max_depth=2, random_state=0)
    tree.fit(frame[NAMES].to_numpy(), frame.y.to_numpy())
    sk_model = root / "tree.pkl"
    sk_model.write_bytes(pickle.dumps(tree))
    return {
        "frame": frame,
        "one": one,
        "gap": gap,
        "shuffled": shuffled,
        "torch": torch_model,
        "sklearn": sk_model,
    }


def _inputs(case: dict[str, Any], data: Path, model: str = "torch") -> ModelInputs:
    return ModelInputs(
        model=case[model], data=data, inputs=tuple(NAMES), trust_pickle=model == "sklearn"
    )


READERS = {
    "stream": lambda c, d, out: list(open_stream(d, inputs=NAMES, chunk_rows=16)),
    "stream-no-inputs": lambda c, d, out: list(open_stream(d, exclude=["y"], chunk_rows=16)),
    "whole-table": lambda c, d, out: load_table(d, inputs=NAMES),
    "compute-streamed": lambda c, d, out: compute(
        ComputeRequest(inputs=_inputs(c, d), out=out / "s.npz", chunk_rows=16)
    ),
    "compute-whole-sklearn": lambda c, d, out: compute(
        ComputeRequest(inputs=_inputs(c, d, "sklearn"), out=out / "s.npz", chunk_rows=16)
    ),
    "classic-streamed": lambda c, d, out: classic(
        ClassicRequest(inputs=_inputs(c, d), chunk_rows=16, bins=4)
    ),
    "classic-whole": lambda c, d, out: classic(
        ClassicRequest(inputs=_inputs(c, d), chunk_rows=None, bins=4)
    ),
    "interact-streamed": lambda c, d, out: interact(
        InteractRequest(inputs=_inputs(c, d), pairs=(("a", "b"),), chunk_rows=16)
    ),
}


@pytest.mark.parametrize("reader", list(READERS))
def test_a_part_lacking_an_input_column_is_refused_by_every_reader(case, reader, tmp_path):
    """Before this, the part's rows took another column's values for 'd' (exit 0)."""
    with pytest.raises(InputError, match=MISSING):
        READERS[reader](case, case["gap"], tmp_path)
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_a_glob_of_the_parts_is_refused_alike(case):
    with pytest.raises(InputError, match=MISSING):
        list(open_stream(case["gap"] / "part-*.parquet", inputs=NAMES, chunk_rows=16))


def test_names_starting_with_an_underscore_or_a_dot_are_skipped(case, tmp_path):
    """As Spark, Hive and pyarrow: a job's ``_temporary/``, ``_metadata``, hidden files are
    not rows (before: 90 rows read as 270). Only names inside the dataset count."""
    frame = case["frame"]
    root = _write_parts(tmp_path / "_runs" / "ds", [frame.iloc[:40], frame.iloc[40:]])
    for junk in ("_temporary/0/part-0.parquet", ".hidden.parquet", "_metadata.parquet"):
        (root / junk).parent.mkdir(parents=True, exist_ok=True)
        frame.iloc[:60].to_parquet(root / junk, index=False)
    (root / "_common_metadata").write_bytes(b"not parquet")
    streamed = np.concatenate(list(open_stream(root, inputs=NAMES, chunk_rows=16)))
    np.testing.assert_array_equal(streamed, frame[NAMES].to_numpy())
    np.testing.assert_array_equal(load_table(root, inputs=NAMES).X, frame[NAMES].to_numpy())


def test_chunks_are_float32_only_when_every_file_is(case, tmp_path):
    """A first file of float32 inputs and a float64 second: before, every row was read as
    float32 (the float64 rows rounded) from the first file's schema alone."""
    frame = case["frame"]
    first = frame.iloc[:40].astype({c: "float32" for c in NAMES})
    root = _write_parts(tmp_path / "mixed", [first, frame.iloc[40:]])
    stream = open_stream(root, inputs=NAMES, chunk_rows=16)
    X = np.concatenate(list(stream))
    assert stream.dtype == np.float64
    want = np.vstack([first[NAMES].to_numpy(np.float64), frame[NAMES].iloc[40:].to_numpy()])
    np.testing.assert_array_equal(X, want)
    # a part read alone (the Dask engine's task) is read as the whole: float64
    source = DataSource.of(stream, inputs=NAMES, exclude=()).split(2)
    read = [c.arrays["X"] for p in source.parts() for c in p.chunks()]
    assert {a.dtype for a in read} == {np.dtype(np.float64)} and len(source.parts()) == 2
    np.testing.assert_array_equal(np.concatenate(read), want)
    alike = _write_parts(tmp_path / "f32", [first, frame.iloc[40:].astype(first.dtypes)])
    assert open_stream(alike, inputs=NAMES, chunk_rows=16).dtype == np.float32


@pytest.mark.parametrize("junk", [b"", b"hello not parquet"], ids=["empty", "text"])
def test_an_unreadable_part_is_named(case, tmp_path, junk):
    """Before, the streamed read named the dataset ('cannot read data file 'ds' ...')."""
    root = _write_parts(tmp_path / "ds", [case["frame"].iloc[:40], case["frame"].iloc[40:]])
    (root / "part-0b.parquet").write_bytes(junk)
    want = rf"^cannot read data file '{re.escape(str(root / 'part-0b.parquet'))}' as PARQUET: "
    with pytest.raises(InputError, match=want):
        open_stream(root, inputs=NAMES, chunk_rows=16)
    with pytest.raises(InputError, match=want):
        load_table(root, inputs=NAMES)


def test_a_glob_of_csv_files_says_a_glob_is_parquet_files(case, tmp_path):
    """Before: 'cannot read data file 'csv/*.csv' as PARQUET: ... magic bytes not found'."""
    for k in range(2):
        case["frame"].to_csv(tmp_path / f"p{k}.csv", index=False)
    glob = tmp_path / "p*.csv"
    want = (
        f"data '{glob}' matches CSV file '{tmp_path / 'p0.csv'}'; a glob is a dataset of "
        "Parquet files: give one CSV file, or a glob of .parquet files"
    )
    for read in (lambda: open_stream(glob, inputs=NAMES), lambda: load_table(glob, inputs=NAMES)):
        with pytest.raises(InputError) as caught:
            read()
        assert str(caught.value) == want


@pytest.mark.parametrize("chunk_rows", [None, 16])
def test_reordered_and_extra_columns_give_the_rows_of_one_file(case, chunk_rows):
    whole = _numbers(classic(ClassicRequest(inputs=_inputs(case, case["one"]), chunk_rows=None)))
    parts = classic(ClassicRequest(inputs=_inputs(case, case["shuffled"]), chunk_rows=chunk_rows))
    for a, b in zip(_numbers(parts), whole, strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)


def _numbers(result: Any) -> list[np.ndarray]:
    return [
        np.asarray(f.effect, dtype=np.float64) for f in result.summary.features if f.status == "ok"
    ]


def test_compute_reads_a_dataset_whole_for_a_scikit_learn_model(case, tmp_path):
    """A piecewise-constant model is computed on the whole table: the dataset's rows are
    those of the one file, and so is the store (to 1e-12)."""
    stores = {}
    for name in ("one", "shuffled"):
        out = tmp_path / f"{name}.npz"
        result = compute(ComputeRequest(inputs=_inputs(case, case[name], "sklearn"), out=out))
        assert result.n_rows == 90 and result.method == "secant"
        stores[name] = read_store(out)
    a, b = stores["shuffled"], stores["one"]
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_allclose(a.local_effects, b.local_effects, rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.prediction, b.prediction, rtol=0, atol=1e-12)
    assert a.meta["data"]["path"] == str(case["shuffled"])


def test_the_command_line_names_the_part_and_the_column(cli, case, tmp_path):
    out = tmp_path / "s.npz"
    result = cli("compute", case["torch"], case["gap"], "--exclude", "y", "-o", out, "-q")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error: data file '{case['gap'] / 'part-1.parquet'}' has no column 'd' "
        "(columns: a, b, c, y)"
    ]
    assert not out.exists()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kept=st.lists(st.sampled_from([*NAMES, "y"]), unique=True, min_size=1, max_size=5),
    extra=st.booleans(),
    split=st.integers(1, 29),
)
def test_a_part_is_read_by_name_or_refused(tmp_path_factory, kept, extra, split):
    """Whatever columns (in whatever order) the second part holds: the inputs read are the
    one file's, or the part is refused naming the first input it lacks."""
    frame = _frame(30, seed=split)
    second = frame.iloc[split:][kept]
    if extra:
        second = second.assign(zz=7.0)
    root = _write_parts(tmp_path_factory.mktemp("h"), [frame.iloc[:split], second])
    lacking = [n for n in NAMES if n not in kept]
    for read in (
        lambda: np.concatenate(list(open_stream(root, inputs=NAMES, chunk_rows=7))),
        lambda: load_table(root, inputs=NAMES).X,
    ):
        if lacking:
            with pytest.raises(InputError, match=f"part-1.parquet' has no column '{lacking[0]}'"):
                read()
        else:
            np.testing.assert_array_equal(read(), frame[NAMES].to_numpy())
