"""``ale classic`` and ``ale interact`` on a data file read chunk by chunk: the same
summaries as the whole-table path to 1e-12 whatever the chunk size (hypothesis), the
non-finite screen with the whole table's row numbers, the fallbacks and their notes,
and the prediction distribution kept on disk."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch import nn

from ale_cli.data.sources import DataSource
from ale_cli.errors import ModelFailed
from ale_cli.estimators.bands import Bootstrap
from ale_cli.estimators.classic import ClassicRequest, classic
from ale_cli.estimators.inputs import ModelInputs
from ale_cli.estimators.interact import InteractRequest, interact
from ale_cli.summary.model import summary_json

N = 240


class Smooth(nn.Module):
    """float64 (no parameters): f = sin(a) b + c^2 + 0.3 a c + exp(b / 2) d (d constant)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b, c, d = x[:, 0], x[:, 1], x[:, 2], x[:, 3]
        return torch.sin(a) * b + c**2 + 0.3 * a * c + torch.exp(b / 2) * d


class LogGap(nn.Module):
    """log(50 - a) + a b: NaN where a >= 50 (at the rows and at bin limits above 50)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(50.0 - x[:, 0]) + x[:, 0] * x[:, 1]


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A smooth float64 model on a CSV: normal, heavy-tailed, tied and constant columns."""
    root = tmp_path_factory.mktemp("streamed")
    rng = np.random.default_rng(5)
    X = np.column_stack(
        [
            rng.normal(size=N),
            rng.standard_t(2, size=N),
            np.round(rng.uniform(-2, 2, size=N) * 2) / 2,  # 9 values: ties at the edges
            np.full(N, 1.5),
        ]
    )
    data = root / "d.csv"
    pd.DataFrame(X, columns=["a", "b", "c", "d"]).to_csv(data, index=False)
    model = root / "m.pt"
    torch.jit.save(torch.jit.script(Smooth()), str(model))
    edges = root / "edges.json"
    edges.write_text(
        json.dumps({"a": [-1.0, -0.2, 0.0, 0.7, 1.5], "b": [-2, 0, 1, 2.5], "c": [-1, 0, 1]})
    )
    return {"X": X, "data": data, "model": model, "edges": edges, "whole": {}}


@contextmanager
def passes() -> Iterator[Any]:
    """Counts the passes over a data file (each opens it)."""
    with mock.patch.object(DataSource, "open", autospec=True, side_effect=DataSource.open) as a:
        yield a


def _numbers(result: Any) -> dict[str, Any]:
    return json.loads(summary_json(result.summary, timestamp=False))


def assert_same(a: Any, b: Any, path: str = "") -> None:
    """Equal structure and text; numbers to 1e-12 (integers and edges exactly)."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), path
        for k in a:
            assert_same(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list) and a and all(isinstance(v, float | int | None) for v in a):
        assert isinstance(b, list) and len(a) == len(b), path
        x = np.array([np.nan if v is None else v for v in a], dtype=float)
        y = np.array([np.nan if v is None else v for v in b], dtype=float)
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12, err_msg=path)
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), path
        for i, (u, v) in enumerate(zip(a, b, strict=True)):
            assert_same(u, v, f"{path}[{i}]")
    elif isinstance(a, float) and isinstance(b, float):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=path)
    else:
        assert a == b, path


CLASSIC = [
    {},
    {"binning": "uniform", "bins": 7},
    {"bins": 30, "center": "start"},
    {"edges": "edges", "features": ("a", "b", "c")},
]
INTERACT = [
    {"estimator": "ale"},
    {"estimator": "dale", "binning": "uniform", "bins": 4},
    {"estimator": "ale", "pairs": (("a", "d"), ("c", "b")), "bins": 6},
    {"estimator": "dale", "edges": "edges", "pairs": (("a", "b"), ("b", "c"))},
]


INTERACT_OR_CLASSIC = {"classic": CLASSIC, "interact": INTERACT}


def _classic(case: dict[str, Any], which: int, chunk_rows: int | None) -> Any:
    options = dict(CLASSIC[which])
    features = options.pop("features", None)
    if options.get("edges") == "edges":
        options["edges"] = case["edges"]
    inputs = ModelInputs(model=case["model"], data=case["data"], features=features)
    return classic(ClassicRequest(inputs=inputs, chunk_rows=chunk_rows, **options))


def _interact(case: dict[str, Any], which: int, chunk_rows: int | None) -> Any:
    options = dict(INTERACT[which])
    options.setdefault("pairs", (("a", "b"), ("b", "c"), ("a", "c")))
    if options.get("edges") == "edges":
        options["edges"] = case["edges"]
    inputs = ModelInputs(model=case["model"], data=case["data"])
    return interact(InteractRequest(inputs=inputs, chunk_rows=chunk_rows, **options))


def _whole(case: dict[str, Any], key: tuple[str, int]) -> Any:
    if key not in case["whole"]:
        run = _classic if key[0] == "classic" else _interact
        case["whole"][key] = run(case, key[1], None)
    return case["whole"][key]


@settings(
    max_examples=16, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    kind=st.sampled_from(["classic", "interact"]),
    which=st.integers(0, 3),
    chunk_rows=st.one_of(st.integers(2, 40), st.integers(41, N + 10)),
)
def test_streamed_equals_the_whole_table_for_any_chunk_size(case, kind, which, chunk_rows):
    whole = _whole(case, (kind, which))
    run = _classic if kind == "classic" else _interact
    with passes() as spy:
        streamed = run(case, which, chunk_rows)
    quantiles = (
        "binning" not in INTERACT_OR_CLASSIC[kind][which]
        and "edges" not in (INTERACT_OR_CLASSIC[kind][which])
    )
    assert spy.call_count >= (4 if quantiles else 2)  # a scan, [2 for the edges], the model
    assert_same(_numbers(streamed), _numbers(whole))
    assert streamed.notes == whole.notes


def test_the_streamed_summary_is_the_known_answer(case):
    """Not only equal to the whole table: f is additive in c apart from 0.3 a c, so the
    classic ALE slope of c between edges is (c_k + c_{k-1}) + 0.3 E[a | bin]."""
    result = _classic(case, 0, 17)
    c = result.summary.features[2]
    X = case["X"]
    z = np.array(c.edges)
    index = np.clip(np.searchsorted(z[1:-1], X[:, 2], side="left"), 0, len(z) - 2)
    mean_a = np.array([X[index == k, 0].mean() for k in range(len(z) - 1)])
    slope = np.diff(c.effect) / np.diff(z)
    np.testing.assert_allclose(slope, z[1:] + z[:-1] + 0.3 * mean_a, rtol=1e-9)
    assert result.summary.features[3].status == "not_estimable"
    assert result.summary.n_rows == N


@pytest.fixture(scope="module")
def gap(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("gap")
    rng = np.random.default_rng(3)
    X = rng.uniform(-2, 2, size=(400, 2))
    X[[57, 58, 301, 333], 0] = 100.0
    data = root / "g.csv"
    pd.DataFrame(X, columns=["a", "b"]).to_csv(data, index=False)
    model = root / "m.pt"
    torch.jit.save(torch.jit.script(LogGap()), str(model))
    return {"data": data, "model": model}


@pytest.mark.parametrize("chunk_rows", [None, 50, 1000])
def test_nonfinite_rows_are_named_by_their_row_in_the_whole_table(gap, chunk_rows):
    inputs = ModelInputs(model=gap["model"], data=gap["data"], features=("b",))
    with pytest.raises(ModelFailed) as info:
        classic(ClassicRequest(inputs=inputs, chunk_rows=chunk_rows))
    # chunk by chunk, the chunks after the first holding such rows still count theirs
    assert "gave NaN or infinite predictions on 4 rows (rows 57, 58, 301, 333)" in str(info.value)


@pytest.mark.parametrize("kind", ["classic", "interact"])
@pytest.mark.parametrize("chunk_rows", [None, 7, 64])
def test_drop_nonfinite_counts_the_kept_rows(gap, kind, chunk_rows):
    inputs = ModelInputs(model=gap["model"], data=gap["data"], drop_nonfinite=True)
    result = _rerun(kind, inputs, chunk_rows)
    summary = result.summary
    dropped = summary.store["data"]["rows_nonfinite"]
    note = next(n for n in result.notes if n.startswith("dropped"))
    assert f"dropped {dropped} rows where model" in note
    if kind == "classic":  # b explained: only the 4 rows with a = 100 give NaN
        assert dropped == 4 and note.endswith("(rows 57, 58, 301, 333)")
        counts = sum(summary.features[0].counts)
    else:  # a's last cells have their corner at a = 100: their rows give NaN too
        assert dropped > 4
        counts = int(np.sum(summary.interactions[0].counts))
    assert summary.n_rows == 400 - dropped == counts
    assert summary.prediction["n"] == summary.n_rows
    if chunk_rows is not None:
        whole = _rerun(kind, inputs, None)
        assert_same(_numbers(result), _numbers(whole))
        assert result.notes == whole.notes


def _rerun(kind: str, inputs: ModelInputs, chunk_rows: int | None) -> Any:
    if kind == "classic":
        inputs = replace(inputs, features=("b",))
        return classic(ClassicRequest(inputs=inputs, chunk_rows=chunk_rows, bins=5))
    request = InteractRequest(
        inputs=inputs, pairs=(("a", "b"),), chunk_rows=chunk_rows, estimator="ale", bins=4
    )
    return interact(request)


def test_bootstrap_bands_and_per_level_features_stream(case):
    """Bootstrap bands resample the rows' differences kept by the pass, the levels of
    discrete and categorical features and their order come from passes: the file is read
    chunk by chunk, the summaries those of the whole table."""
    inputs = ModelInputs(model=case["model"], data=case["data"], features=("a", "c"))
    request = ClassicRequest(inputs=inputs, bootstrap=Bootstrap(20, 0.9, 1), chunk_rows=16)
    with passes() as spy:
        boot = classic(request)
    assert spy.call_count >= 4  # the scan, two for the quantile edges, the model
    assert not any(n.startswith("read the whole table") for n in boot.notes)
    whole = classic(replace(request, chunk_rows=None))
    assert_same(_numbers(boot), _numbers(whole))
    assert _numbers(boot)["features"][0]["ci_low"] is not None
    for discrete in [("c",), "auto"]:
        request = ClassicRequest(inputs=inputs, discrete=discrete, bootstrap=Bootstrap(9, 0.9, 2))
        streamed = classic(replace(request, chunk_rows=16))
        assert not any(n.startswith("read the whole table") for n in streamed.notes)
        numbers = _numbers(streamed)
        assert numbers["features"][1]["kind"] == "discrete"
        assert_same(numbers, _numbers(classic(replace(request, chunk_rows=None))))
    cats = ClassicRequest(inputs=replace(inputs, categorical=("c",)), chunk_rows=16)
    streamed = classic(cats)
    assert not any(n.startswith("read the whole table") for n in streamed.notes)
    numbers = _numbers(streamed)
    assert numbers["features"][1]["kind"] == "categorical"
    assert_same(numbers, _numbers(classic(replace(cats, chunk_rows=None))))


def test_a_columns_file_reads_the_whole_table_and_says_so(case, tmp_path: Path):
    model = tmp_path / "m.pt"
    model.write_bytes(case["model"].read_bytes())
    (tmp_path / "m.columns.json").write_text(json.dumps({"columns": ["a", "b", "c", "d"]}))
    inputs = ModelInputs(model=model, data=case["data"], features=("a",))
    result = classic(ClassicRequest(inputs=inputs, chunk_rows=16))
    assert result.notes[0].startswith("read the whole table: columns file ")
    assert result.notes[0].endswith("matches the data's columns by name")


def test_cli_chunk_rows_and_interact_drop_nonfinite_counts_kept_rows(cli, gap, tmp_path: Path):
    """Through the CLI: --chunk-rows changes nothing in the summary, and ale interact
    --drop-nonfinite reports the kept rows in n_rows (it used to count every row)."""
    model, data = gap["model"], gap["data"]
    outs = []
    for rows in ("5", "65536"):
        out = tmp_path / f"i{rows}.json"
        args = ("interact", model, data, "--pair", "a,b", "--estimator", "ale", "--bins", "4")
        result = cli(*args, "--drop-nonfinite", "--chunk-rows", rows, "-o", out, "-q")
        assert result.exit_code == 0, result.stderr
        outs.append(json.loads(out.read_text()))
    assert_same(
        {k: v for k, v in outs[0].items() if k != "created"},
        {k: v for k, v in outs[1].items() if k != "created"},
    )
    dropped = outs[0]["store"]["data"]["rows_nonfinite"]
    assert dropped > 4 and outs[0]["n_rows"] == 400 - dropped
    assert int(np.sum(outs[0]["interactions"][0]["counts"])) == 400 - dropped
    bad = cli("classic", model, data, "--chunk-rows", "1", "-o", tmp_path / "c.json", "-q")
    assert bad.exit_code == 2 and "--chunk-rows" in bad.stderr


@pytest.fixture(scope="module")
def sklearn_case(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A scikit-learn pipeline fitted on a DataFrame (matched by column name), with a text
    column in a second data file."""
    import pickle

    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, PolynomialFeatures

    root = tmp_path_factory.mktemp("sk")
    rng = np.random.default_rng(11)
    frame = pd.DataFrame(rng.normal(size=(150, 3)), columns=["u", "v", "w"])
    y = frame.u * frame.v + frame.w**2
    numeric = make_pipeline(PolynomialFeatures(2), LinearRegression()).fit(frame, y)
    text = frame.assign(g=rng.choice(["x", "y", "z"], size=150))
    encode = ColumnTransformer(
        [("g", OneHotEncoder(), ["g"])], remainder="passthrough", verbose_feature_names_out=False
    )
    with_text = make_pipeline(encode, LinearRegression()).fit(text, y + (text.g == "y"))
    paths = {"numeric": root / "numeric.pkl", "text": root / "text.pkl"}
    for key, est in (("numeric", numeric), ("text", with_text)):
        paths[key].write_bytes(pickle.dumps(est))
    frame.to_csv(root / "numeric.csv", index=False)
    text.to_csv(root / "text.csv", index=False)
    parts = root / "parts"
    for k, start in enumerate(range(0, 150, 40)):
        (parts / f"part={k}").mkdir(parents=True)
        frame.iloc[start : start + 40].to_parquet(parts / f"part={k}" / "data.parquet")
    return {"root": root, **paths, "parts": parts}


def test_scikit_learn_pipelines_stream_and_so_do_their_text_columns(sklearn_case):
    root = sklearn_case["root"]
    numeric = ModelInputs(
        model=sklearn_case["numeric"], data=root / "numeric.csv", trust_pickle=True
    )
    whole = classic(ClassicRequest(inputs=numeric, chunk_rows=None, bins=6))
    with passes() as spy:
        streamed = classic(ClassicRequest(inputs=numeric, chunk_rows=9, bins=6))
    # ranges, the binary columns' levels, two for the quantile edges, the model
    assert spy.call_count == 5
    with passes() as spy:
        classic(ClassicRequest(inputs=numeric, chunk_rows=9, bins=6, discrete="none"))
    assert spy.call_count == 4  # no binary columns to look for
    assert_same(_numbers(streamed), _numbers(whole))
    assert streamed.notes == whole.notes
    text = ModelInputs(model=sklearn_case["text"], data=root / "text.csv", trust_pickle=True)
    result = classic(ClassicRequest(inputs=replace(text, features=("u",)), chunk_rows=9))
    assert not any(note.startswith("read the whole table") for note in result.notes)
    assert result.summary.features[0].status == "ok"


def test_a_directory_of_parquet_files_is_read_part_by_part(sklearn_case):
    """The streamed reader takes a partitioned dataset, with the numbers of the same rows
    in one file (the whole-table reader too: tests/test_partitions.py)."""
    parts = ModelInputs(
        model=sklearn_case["numeric"], data=sklearn_case["parts"], trust_pickle=True
    )
    one = ModelInputs(
        model=sklearn_case["numeric"], data=sklearn_case["root"] / "numeric.csv", trust_pickle=True
    )
    for run in (
        lambda i: classic(ClassicRequest(inputs=i, chunk_rows=16, bins=5)),
        lambda i: interact(InteractRequest(inputs=i, pairs=(("u", "v"),), chunk_rows=16)),
    ):
        a, b = _numbers(run(parts)), _numbers(run(one))
        assert a["store"]["data"].pop("path") == str(sklearn_case["parts"])
        assert a["store"]["data"].pop("sha256") != b["store"]["data"].pop("sha256")
        b["store"]["data"].pop("path")
        assert_same(a, b)


@pytest.mark.parametrize("chunk_rows", [6, 50])
def test_rows_dropped_for_nan_data_renumber_the_rows_as_the_whole_table(gap, tmp_path, chunk_rows):
    """With dropna, the row numbers in messages and notes are those of the table left
    (as the whole-table path gives them), chunk by chunk too."""
    frame = pd.read_csv(gap["data"])
    frame.loc[[3, 20, 56], "b"] = np.nan  # before the rows with a = 100
    data = tmp_path / "nan.csv"
    frame.to_csv(data, index=False)
    inputs = ModelInputs(
        model=gap["model"], data=data, dropna=True, drop_nonfinite=True, features=("b",)
    )
    streamed = classic(ClassicRequest(inputs=inputs, chunk_rows=chunk_rows, bins=5))
    whole = classic(ClassicRequest(inputs=inputs, chunk_rows=None, bins=5))
    assert_same(_numbers(streamed), _numbers(whole))
    assert streamed.notes == whole.notes
    assert streamed.notes[0] == "dropped 3 rows with NaN or infinite values (dropna)"
    assert any(n.endswith("(rows 54, 55, 298, 330)") for n in streamed.notes)
    assert streamed.summary.n_rows == 400 - 3 - 4
