"""Which data column is which model input: a columns file next to the model (or a
scikit-learn estimator's feature_names_in_) realigns data by name; without one the
columns are taken by position and a note says in which order."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from ale_cli.store.npz import read_store

N = 120


class Smooth(nn.Module):
    """f = a + 2 b^2 + 3 c: every column has its own gradient."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[:, 0] + 2.0 * x[:, 1] ** 2 + 3.0 * x[:, 2]


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, Path]:
    rng = np.random.default_rng(5)
    cols = {"a": rng.normal(size=N), "b": rng.normal(size=N), "c": rng.normal(size=N)}
    cols["y"] = cols["a"] + cols["b"]

    def write(name: str, order: list[str]) -> Path:
        path = tmp_path / name
        rows = zip(*(cols[c] for c in order), strict=True)
        path.write_text(
            "\n".join([",".join(order), *(",".join(repr(float(v)) for v in r) for r in rows)])
            + "\n"
        )
        return path

    model = tmp_path / "m.pt"
    torch.jit.script(Smooth()).save(str(model))
    return {
        "model": model,
        "ordered": write("ordered.csv", ["a", "b", "c", "y"]),
        "shuffled": write("shuffled.csv", ["c", "y", "a", "b"]),
    }


def sidecar(model: Path, columns: list[str]) -> Path:
    path = model.with_suffix(".columns.json")
    path.write_text(json.dumps({"columns": columns}))
    return path


def compute(cli, model: Path, data: Path, out: Path, *extra: str) -> dict:  # type: ignore[no-untyped-def]
    result = cli("compute", model, data, "--exclude", "y", "-o", out, "--json", *extra)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_columns_file_realigns_shuffled_data_by_name(cli, files, tmp_path: Path):
    sidecar(files["model"], ["a", "b", "c"])
    ordered = compute(cli, files["model"], files["ordered"], tmp_path / "o.npz")
    shuffled = compute(cli, files["model"], files["shuffled"], tmp_path / "s.npz")
    assert not any("columns" in n for n in ordered["notes"])  # already in the model's order
    assert (
        "columns realigned by name to the order of columns file "
        f"'{files['model'].with_suffix('.columns.json')}': a, b, c"
    ) in shuffled["notes"]
    one, two = read_store(tmp_path / "o.npz"), read_store(tmp_path / "s.npz")
    assert one.input_names == two.input_names == ("a", "b", "c")
    np.testing.assert_array_equal(one.X, two.X)
    np.testing.assert_array_equal(one.local_effects, two.local_effects)
    # the known gradient: 1, 4 b, 3 under the right names
    np.testing.assert_allclose(two.local_effects[:, 0], 1.0)
    np.testing.assert_allclose(two.local_effects[:, 1], 4.0 * two.X[:, 1])
    np.testing.assert_allclose(two.local_effects[:, 2], 3.0)


def test_without_a_columns_file_the_note_names_the_positional_order(cli, files, tmp_path):
    report = compute(cli, files["model"], files["shuffled"], tmp_path / "s.npz")
    assert "columns taken by position: c, a, b" in report["notes"]
    store = read_store(tmp_path / "s.npz")
    assert store.input_names == ("c", "a", "b")
    np.testing.assert_allclose(store.local_effects[:, 0], 1.0)  # c in the model's slot a


def test_a_column_the_model_takes_must_be_in_the_data(cli, files, tmp_path: Path):
    path = sidecar(files["model"], ["a", "b", "age"])
    result = cli("compute", files["model"], files["ordered"], "-o", tmp_path / "s.npz")
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: data file '{files['ordered']}' has no column 'age' (columns: a, b, c, y), "
        f"which columns file '{path}' lists as a model input\n"
    )


def test_a_columns_file_of_the_wrong_width_is_bad_input(cli, files, tmp_path: Path):
    path = sidecar(files["model"], ["a", "b"])  # the model takes 3 columns
    result = cli("compute", files["model"], files["ordered"], "-o", tmp_path / "s.npz")
    assert result.exit_code == 2
    assert result.stderr.startswith(
        f"error: model '{files['model']}' does not accept rows of 2 features ("
    )
    assert result.stderr.endswith(
        f"); it runs on rows of 3 features; list the model's inputs in columns file '{path}'\n"
    )
    assert not (tmp_path / "s.npz").exists()


class Raises(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise RuntimeError("no rows please")


def test_a_failing_model_with_a_columns_file_names_it(cli, files, tmp_path: Path):
    model = tmp_path / "r.pt"
    torch.jit.script(Raises()).save(str(model))
    path = sidecar(model, ["a", "b", "c"])
    result = cli("compute", model, files["ordered"], "-o", tmp_path / "s.npz")
    assert result.exit_code == 1  # it fails at every width: the model's failure
    assert result.stderr.endswith(
        f"if it takes other columns, list them in columns file '{path}'\n"
    )


def test_changing_the_columns_file_is_not_a_cache_hit(cli, files, tmp_path: Path):
    out = tmp_path / "s.npz"
    sidecar(files["model"], ["a", "b", "c"])
    compute(cli, files["model"], files["ordered"], out)
    sidecar(files["model"], ["c", "b", "a"])
    again = compute(cli, files["model"], files["ordered"], out)
    assert again["cache_hit"] is False
    assert read_store(out).input_names == ("c", "b", "a")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not valid JSON"),
        ('{"columns": "a,b,c"}', 'must hold {"columns": [...]}'),
        ('{"columns": ["a", "a", "b"]}', "lists column 'a' twice"),
        ('["a", "b", "c"]', 'must hold {"columns": [...]}'),
    ],
)
def test_a_broken_columns_file_is_one_line(cli, files, tmp_path: Path, content, message):
    files["model"].with_suffix(".columns.json").write_text(content)
    result = cli("compute", files["model"], files["ordered"], "-o", tmp_path / "s.npz")
    assert result.exit_code == 2
    assert len(result.stderr.splitlines()) == 1 and message in result.stderr


def test_inputs_and_exclude_must_agree_with_the_columns_file(cli, files, tmp_path: Path):
    path = sidecar(files["model"], ["a", "b", "c"])
    out = tmp_path / "s.npz"
    result = cli("compute", files["model"], files["ordered"], "--inputs", "b,a,c", "-o", out)
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: --inputs lists b, a, c, but columns file '{path}' says the model takes "
        "a, b, c; leave out --inputs\n"
    )
    result = cli("compute", files["model"], files["ordered"], "--exclude", "b", "-o", out)
    assert result.exit_code == 2
    assert "--exclude names 'b', which columns file" in result.stderr


def test_duplicate_headers_are_refused_even_with_a_columns_file(cli, files, tmp_path: Path):
    sidecar(files["model"], ["a", "b", "c"])
    data = tmp_path / "dup.csv"
    data.write_text("a,b,a,c\n1,2,3,4\n5,6,7,8\n")
    result = cli("compute", files["model"], data, "-o", tmp_path / "s.npz")
    assert result.exit_code == 2
    assert "two columns named 'a'" in result.stderr


def test_sklearn_feature_names_in_realign_by_name(cli, files, tmp_path: Path):
    import pandas as pd
    from sklearn.linear_model import LinearRegression

    frame = pd.read_csv(files["ordered"])
    est = LinearRegression().fit(frame[["a", "b", "c"]], 1.5 * frame.a - 2 * frame.b + frame.c)
    model = tmp_path / "lin.pkl"
    model.write_bytes(pickle.dumps(est))
    report = compute(cli, model, files["shuffled"], tmp_path / "s.npz", "--trust-pickle")
    assert (
        "columns realigned by name to the order of the model's feature_names_in_: a, b, c"
        in report["notes"]
    )
    store = read_store(tmp_path / "s.npz")
    slopes = dict(zip(store.feature_names, store.local_effects.mean(axis=0), strict=True))
    np.testing.assert_allclose([slopes["a"], slopes["b"], slopes["c"]], [1.5, -2.0, 1.0])


def per_column_onnx(path: Path, names: list[str], weights: list[float]) -> Path:
    """y = sum_j w_j name_j^2, one float64 input of shape (N, 1) per name."""
    import onnx
    from onnx import TensorProto, helper

    inputs = [helper.make_tensor_value_info(n, TensorProto.DOUBLE, ["N", 1]) for n in names]
    w = helper.make_tensor("w", TensorProto.DOUBLE, [len(names), 1], weights)
    nodes = [
        helper.make_node("Concat", names, ["x"], axis=1),
        helper.make_node("Mul", ["x", "x"], ["x2"]),
        helper.make_node("MatMul", ["x2", "w"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "per_column",
        inputs,
        [helper.make_tensor_value_info("y", TensorProto.DOUBLE, ["N", 1])],
        initializer=[w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def test_onnx_with_one_input_per_column_realigns_by_input_name(cli, files, tmp_path: Path):
    model = per_column_onnx(tmp_path / "cols.onnx", ["a", "b", "c"], [1.0, -2.0, 0.5])
    ordered = compute(cli, model, files["ordered"], tmp_path / "o.npz")
    shuffled = compute(cli, model, files["shuffled"], tmp_path / "s.npz")
    assert (
        f"columns realigned by name to the order of the input names of ONNX model '{model}': "
        "a, b, c"
    ) in shuffled["notes"]
    assert not any("columns" in n for n in ordered["notes"])
    one, two = read_store(tmp_path / "o.npz"), read_store(tmp_path / "s.npz")
    assert one.input_names == two.input_names == ("a", "b", "c")
    np.testing.assert_array_equal(one.X, two.X)
    np.testing.assert_allclose(one.local_effects, two.local_effects, rtol=1e-12)
    # d/dx_j of w_j x_j^2 is 2 w_j x_j (central differences are exact for a quadratic)
    expected = 2 * np.array([1.0, -2.0, 0.5]) * two.X
    np.testing.assert_allclose(two.local_effects, expected, rtol=1e-6, atol=1e-8)
    missing = per_column_onnx(tmp_path / "more.onnx", ["a", "b", "d"], [1.0, 1.0, 1.0])
    result = cli("compute", missing, files["ordered"], "-o", tmp_path / "m.npz")
    assert result.exit_code == 2
    assert "has no column 'd'" in result.stderr and "input names of ONNX model" in result.stderr
