"""ONNX models: the torch translation (autodiff) and the onnxruntime finite-difference path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ale_cli.errors import ModelError
from ale_cli.models import Columns, LoadOptions, load_model

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

DIABETES_FEATURES = ("age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6")


def diabetes_X(sample_dir: Path) -> np.ndarray:
    from ale_cli.data.table import load_table

    return load_table(sample_dir / "diabetes.csv", exclude=["target"]).X


def load(path: Path, X: np.ndarray, **options):  # type: ignore[no-untyped-def]
    """Load and check the model on X."""
    names = tuple(f"x{j}" for j in range(X.shape[1]))
    return load_model(path, options=LoadOptions(**options), columns=Columns(names=names), X=X)


def effects(path: Path, X: np.ndarray, **options):  # type: ignore[no-untyped-def]
    model = load(path, X, **options)
    return model, model.local_effects(X)


def column_scaled_error(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """max_i |a_ij - b_ij| / max_i |b_ij| per column."""
    return np.max(np.abs(a - b), axis=0) / np.max(np.abs(b), axis=0)


# -- the sample MLP and its TorchScript twin -------------------------------------------------


@pytest.fixture(scope="module")
def twin(sample_dir: Path):  # type: ignore[no-untyped-def]
    X = diabetes_X(sample_dir)
    _, reference = effects(sample_dir / "models" / "diabetes_mlp.pt", X)
    return X, reference


def test_onnx_mlp_torch_path_matches_torchscript(sample_dir: Path, twin) -> None:  # type: ignore[no-untyped-def]
    X, reference = twin
    model, got = effects(sample_dir / "models" / "diabetes_mlp.onnx", X)
    assert model.method == "autodiff"
    assert model.describe()["translation"]["check"]["rows"] == 256  # CHECK_ROWS of 442
    np.testing.assert_allclose(got.prediction, reference.prediction, rtol=1e-6)
    assert column_scaled_error(got.local_effects, reference.local_effects).max() <= 1e-6


def test_onnx_mlp_finite_differences_match_torchscript(sample_dir: Path, twin) -> None:  # type: ignore[no-untyped-def]
    X, reference = twin
    model, got = effects(
        sample_dir / "models" / "diabetes_mlp.onnx", X, method="finite-differences"
    )
    details = model.describe()
    assert model.method == "finite-differences"
    # the sample MLP (and so its ONNX twin) is float64: the smooth float64 step, 1e-5 std
    assert details["step"]["rel_step"] == 1e-5 and details["step"]["rule"] == "smooth default"
    assert details["fallback_reason"] == "finite differences asked (method finite-differences)"
    np.testing.assert_allclose(got.prediction, reference.prediction, rtol=1e-5)
    assert column_scaled_error(got.local_effects, reference.local_effects).max() <= 1e-3


# -- hand-built graphs covering the translated ops -----------------------------------------


def make_model(nodes, inputs, outputs, inits=(), opset=13, path=None):  # type: ignore[no-untyped-def]
    graph = helper.make_graph(list(nodes), "g", list(inputs), list(outputs), list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    if path is not None:
        onnx.save(model, str(path))
    return model


def const(name: str, value, dtype=np.float64):  # type: ignore[no-untyped-def]
    return numpy_helper.from_array(np.asarray(value, dtype=dtype), name)


def kitchen_sink(path: Path, elem=TensorProto.DOUBLE, batch="n") -> Path:  # type: ignore[no-untyped-def]
    """Every translated op of opset 13 in one graph: y (N, 2) and p (N, 12)."""
    dt = np.float64 if elem == TensorProto.DOUBLE else np.float32
    rng = np.random.default_rng(1)
    N = helper.make_node
    nodes = [
        N("MatMul", ["x", "W1"], ["h1"]),
        N("Gemm", ["x", "W2", "b2"], ["g"], alpha=0.5, beta=2.0, transB=1),
        N("Add", ["h1", "g"], ["a"]),
        N("Sub", ["a", "c1"], ["b"]),
        N("Mul", ["b", "c2"], ["c"]),
        N("Div", ["c", "c3"], ["d"]),
        N("Neg", ["d"], ["e"]),
        N("Relu", ["e"], ["r"]),
        *(  # onnxruntime has float32 kernels only for these four
            [
                N("LeakyRelu", ["e"], ["lr"], alpha=0.1),
                N("Elu", ["e"], ["el"], alpha=0.7),
                N("Selu", ["e"], ["se"]),
                N("Softplus", ["e"], ["sp"]),
            ]
            if elem == TensorProto.FLOAT
            else [N("Relu", ["e"], [name]) for name in ("lr", "el", "se", "sp")]
        ),
        N("Sigmoid", ["e"], ["sg"]),
        N("Tanh", ["e"], ["th"]),
        N("Sum", ["r", "lr", "el", "se", "sg", "th", "sp"], ["s"]),
        N("Clip", ["s", "lo", "hi"], ["cl"]),
        N("Exp", ["cl"], ["ex"]),
        N("Abs", ["s"], ["ab"]),
        N("Add", ["ab", "one"], ["ab1"]),
        N("Sqrt", ["ab1"], ["sq"]),
        N("Log", ["ab1"], ["lg"]),
        N("Pow", ["sq", "two"], ["pw"]),
        N("Max", ["ex", "lg"], ["mx"]),
        N("Min", ["sq", "pw", "ex"], ["mn"]),
        N("Concat", ["mx", "mn"], ["cc"], axis=1),
        N("Constant", [], ["shape3"], value=const("v", [0, 3, 4], np.int64)),
        N("Reshape", ["cc", "shape3"], ["rs"]),
        N("Transpose", ["rs"], ["tr"], perm=[0, 2, 1]),
        N("Flatten", ["tr"], ["fl"]),
        N("Unsqueeze", ["fl", "ax1"], ["us"]),
        N("Squeeze", ["us", "ax1"], ["sqz"]),
        N("Gather", ["sqz", "idx"], ["ga"], axis=1),
        N("Slice", ["ga", "st", "en", "ax1", "stp"], ["sl"]),
        N("BatchNormalization", ["sl", "bn_s", "bn_b", "bn_m", "bn_v"], ["bn"], epsilon=1e-3),
        N("Dropout", ["bn"], ["dr"]),
        N("Identity", ["dr"], ["id"]),
        N("Cast", ["id"], ["y0"], to=elem),
        # a dynamic reshape: Shape -> Gather -> Unsqueeze -> Concat -> Reshape
        N("Shape", ["x"], ["xs"]),
        N("Gather", ["xs", "zero"], ["n0"], axis=0),
        N("Unsqueeze", ["n0", "ax0"], ["n1"]),
        N("Concat", ["n1", "minus1"], ["yshape"], axis=0),
        N("Reshape", ["y0", "yshape"], ["y"]),
        N("Softmax", ["fl"], ["sm"], axis=1),
        N("LogSoftmax", ["fl"], ["lsm"], axis=-1),
        N("Add", ["sm", "lsm"], ["p"]),
    ]
    inits = [
        const("W1", rng.normal(size=(4, 6)), dt),
        const("W2", rng.normal(size=(6, 4)), dt),
        const("b2", rng.normal(size=6), dt),
        const("c1", rng.normal(size=6), dt),
        const("c2", rng.uniform(0.5, 1.5, size=6), dt),
        const("c3", rng.uniform(1.0, 2.0, size=6), dt),
        const("lo", -3.0, dt),
        const("hi", 2.5, dt),
        const("one", 1.0, dt),
        const("two", 2.0, dt),
        const("ax0", [0], np.int64),
        const("ax1", [1], np.int64),
        const("idx", [0, 2, 5, 7, -1], np.int64),
        const("st", [1], np.int64),
        const("en", [5], np.int64),
        const("stp", [2], np.int64),
        const("bn_s", [1.5, 0.5], dt),
        const("bn_b", [0.1, -0.2], dt),
        const("bn_m", [0.3, 0.4], dt),
        const("bn_v", [2.0, 0.5], dt),
        const("zero", 0, np.int64),
        const("minus1", [-1], np.int64),
    ]
    make_model(
        nodes,
        [helper.make_tensor_value_info("x", elem, [batch, 4])],
        [
            helper.make_tensor_value_info("y", elem, [batch, 2]),
            helper.make_tensor_value_info("p", elem, [batch, 12]),
        ],
        inits,
        opset=13,
        path=path,
    )
    return path


def ort_central_differences(path, X, output, column, h, dtype=np.float64):  # type: ignore[no-untyped-def]
    import onnxruntime as ort

    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    grads = np.empty_like(X)
    for j in range(X.shape[1]):
        up, down = X.astype(dtype), X.astype(dtype)
        up[:, j] += h
        down[:, j] -= h
        f_up = sess.run([output], {"x": up})[0][:, column].astype(np.float64)
        f_down = sess.run([output], {"x": down})[0][:, column].astype(np.float64)
        grads[:, j] = (f_up - f_down) / (up[:, j].astype(float) - down[:, j].astype(float))
    return grads


@pytest.mark.parametrize(("output", "column"), [("y", 1), ("p", 4)])
def test_translated_ops_match_onnxruntime_and_its_derivatives(
    tmp_path: Path, output: str, column: int
) -> None:
    path = kitchen_sink(tmp_path / "ops.onnx")
    X = np.random.default_rng(0).normal(size=(50, 4))
    model, got = effects(path, X, output=f"{output}:{column}")
    assert model.method == "autodiff"
    assert model.describe()["translation"]["check"]["max_abs_diff"] <= 1e-12
    expected = ort_central_differences(path, X, output, column, h=1e-6)
    np.testing.assert_allclose(got.local_effects, expected, rtol=1e-5, atol=1e-7)


def test_fixed_batch_dimension_is_padded(tmp_path: Path) -> None:
    X = np.random.default_rng(2).normal(size=(21, 4))
    dynamic_model, dynamic = effects(kitchen_sink(tmp_path / "dyn.onnx"), X, output="y:0")
    fixed_path = kitchen_sink(tmp_path / "fixed.onnx", batch=8)
    model, fixed = effects(fixed_path, X, output="y:0")
    assert model.describe()["batch"] == 8
    np.testing.assert_allclose(fixed.local_effects, dynamic.local_effects, rtol=1e-12)
    pairs = [(0, 1), (2, 3)]
    mixed = model.mixed_derivatives(X, pairs)
    assert mixed.shape == (2, 21)
    np.testing.assert_allclose(mixed, dynamic_model.mixed_derivatives(X, pairs), rtol=1e-12)
    _, fixed_fd = effects(fixed_path, X, output="y:0", method="finite-differences")
    assert fixed_fd.local_effects.shape == (21, 4)
    np.testing.assert_allclose(fixed_fd.prediction, dynamic.prediction, rtol=1e-12)


@pytest.mark.parametrize(("output", "column"), [("y", 0), ("y", 1)])
def test_float32_graph_with_every_activation(tmp_path: Path, output: str, column: int) -> None:
    path = kitchen_sink(tmp_path / "f32.onnx", elem=TensorProto.FLOAT)
    X = np.random.default_rng(3).normal(size=(40, 4))
    auto, exact = effects(path, X, output=f"{output}:{column}")
    assert auto.method == "autodiff" and auto.describe()["dtype"] == "float32"
    assert "LeakyRelu" in auto.describe()["ops"]
    reference = ort_central_differences(path, X, output, column, h=1e-2, dtype=np.float32)
    model, got = effects(path, X, output=f"{output}:{column}", method="finite-differences")
    assert model.describe()["step"]["rel_step"] == 1e-2
    # a float32 finite difference is off where its step straddles a kink (Relu, Clip, Max...)
    for approx in (reference, got.local_effects):
        error = np.abs(approx - exact.local_effects) / np.abs(exact.local_effects).max(axis=0)
        assert np.mean(error > 1e-2) < 0.05


def opset10_graph(path: Path) -> Path:
    """Attribute forms of older opsets: Unsqueeze/Squeeze axes, Clip min/max, 2-D Softmax."""
    N = helper.make_node
    nodes = [
        N("Unsqueeze", ["x"], ["u"], axes=[1]),
        N("Softmax", ["u"], ["s"], axis=1),
        N("Squeeze", ["s"], ["q"], axes=[1]),
        N("Clip", ["q"], ["y"], min=0.05, max=0.9),
    ]
    make_model(  # float32: onnxruntime has no float64 Clip-6 kernel
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])],
        opset=10,
        path=path,
    )
    return path


def test_opset10_attribute_forms(tmp_path: Path) -> None:
    path = opset10_graph(tmp_path / "old.onnx")
    X = np.random.default_rng(4).normal(size=(30, 3))
    model, got = effects(path, X, output="2")
    assert model.method == "autodiff"
    z = np.exp(X - X.max(axis=1, keepdims=True))
    p = z / z.sum(axis=1, keepdims=True)
    inside = (p[:, 2] > 0.05) & (p[:, 2] < 0.9)
    # d softmax_2 / d x_j = p_2 (1{j=2} - p_j), zero where the clip is active
    expected = p[:, [2]] * (np.eye(3)[2] - p) * inside[:, None]
    np.testing.assert_allclose(got.local_effects, expected, rtol=1e-5, atol=1e-7)


def test_disagreeing_translation_falls_back(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import ale_cli.models.onnx_torch as onnx_torch

    monkeypatch.setattr(onnx_torch, "_gemm", lambda x, a, o: [x[0] @ x[1].T * 1.01])
    path = kitchen_sink(tmp_path / "ops.onnx")
    X = np.random.default_rng(5).normal(size=(20, 4))
    model, got = effects(path, X, output="y:0")
    assert model.method == "finite-differences"
    assert "disagrees with onnxruntime" in model.describe()["fallback_reason"]
    with pytest.raises(ModelError, match="^method autodiff: ONNX model .* disagrees"):
        effects(path, X, output="y:0", method="autodiff")


def test_unsupported_op_falls_back_with_reason(tmp_path: Path) -> None:
    N = helper.make_node
    path = tmp_path / "erf.onnx"
    make_model(  # float32: onnxruntime has no float64 Erf kernel
        [N("Erf", ["x"], ["e"]), N("ReduceSum", ["e"], ["y"], axes=[1], keepdims=1)],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 1])],
        opset=11,
        path=path,
    )
    X = np.random.default_rng(6).normal(size=(30, 2))
    model, got = effects(path, X)
    assert model.describe()["fallback_reason"] == (
        "the graph cannot be run in torch: op Erf has no torch translation"
    )
    expected = 2 / np.sqrt(np.pi) * np.exp(-(X**2))  # d erf(x) / dx
    assert column_scaled_error(got.local_effects, expected).max() <= 1e-3


def test_multiple_outputs_need_a_choice(tmp_path: Path) -> None:
    path = kitchen_sink(tmp_path / "ops.onnx")
    X = np.random.default_rng(8).normal(size=(10, 4))
    with pytest.raises(ModelError, match=r"has 2 outputs \(y: tensor\(double\)"):
        load(path, X)
    # "1" picks the second output, p, whose 12 columns need an INDEX: said when loading
    with pytest.raises(ModelError, match=r"output 'p' has 12 columns; choose one with output p:"):
        load(path, X, output="1")
    model = load(path, X, output="p:3")
    assert model.graph.out_name == "p" and model.graph.column == 3


# -- skl2onnx graphs: ai.onnx.ml ops go through onnxruntime --------------------------------


def test_sample_gradient_boosting_onnx_uses_large_step(sample_dir: Path) -> None:
    X = diabetes_X(sample_dir)
    model, got = effects(sample_dir / "models" / "diabetes_gbr.onnx", X)
    details = model.describe()
    assert model.method == "finite-differences"
    assert "TreeEnsembleRegressor" in details["fallback_reason"]
    assert details["step"] == {
        "rel_step": 0.05,
        "rule": "piecewise-constant model type",
        "zero_share": None,
        "absolute": (0.05 * X.std(axis=0)).tolist(),
    }
    # a small step sees the trees' flat pieces almost everywhere; the large one sees slopes
    _, small = effects(sample_dir / "models" / "diabetes_gbr.onnx", X, step=1e-4)
    bmi = DIABETES_FEATURES.index("bmi")
    assert np.mean(small.local_effects[:, bmi] == 0) > 0.9
    assert np.mean(got.local_effects[:, bmi] == 0) < 0.6


def test_skl2onnx_classifier(tmp_path: Path) -> None:
    skl2onnx = pytest.importorskip("skl2onnx")
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(7)
    X = rng.normal(size=(200, 3))
    clf = LogisticRegression().fit(X, X @ [1.0, -2.0, 0.5] > 0)
    zipmap = tmp_path / "zipmap.onnx"
    zipmap.write_bytes(skl2onnx.to_onnx(clf, X[:1].astype(np.float32)).SerializeToString())
    with pytest.raises(ModelError, match=r"has a ZipMap output \('output_probability'\)"):
        load(zipmap, X)
    plain = tmp_path / "plain.onnx"
    proto = skl2onnx.to_onnx(clf, X[:1].astype(np.float32), options={id(clf): {"zipmap": False}})
    plain.write_bytes(proto.SerializeToString())
    with pytest.raises(ModelError, match="choose one with output .* output proba:1"):
        load(plain, X)
    with pytest.raises(ModelError, match="output 'label' .* is tensor\\(int64\\)"):
        load(plain, X, output="label")
    model, got = effects(plain, X, output="proba:1")
    assert (model.graph.out_name, model.graph.column) == ("probabilities", 1)
    p = clf.predict_proba(X)[:, 1]
    expected = (p * (1 - p))[:, None] * clf.coef_[0]
    assert column_scaled_error(got.local_effects, expected).max() <= 1e-3
