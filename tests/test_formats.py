"""Format detection, safety refusals and one-line errors of `ale compute` for every
model format (exact text and exit code), and what the store records.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ale_cli.cli import app
from ale_cli.models import sniff_format
from ale_cli.store.npz import read_meta, read_store

HGB_TRUST = "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor"


def run(*args: object) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["compute", *map(str, args)])
    return result.exit_code, result.stderr


@pytest.fixture(scope="module")
def models(sample_dir: Path) -> Path:
    return sample_dir / "models"


@pytest.fixture(scope="module")
def diabetes(sample_dir: Path) -> Path:
    return sample_dir / "diabetes.csv"


def test_sniffed_formats(models: Path, tmp_path: Path) -> None:
    import joblib

    joblib.dump({"a": 1}, tmp_path / "x.pkl")
    assert sniff_format(models / "diabetes_mlp.pt") == "torchscript"
    assert sniff_format(models / "diabetes_mlp.onnx") == "onnx"
    assert sniff_format(models / "diabetes_gbr.onnx") == "onnx"
    assert sniff_format(models / "diabetes_hgb.skops") == "skops"
    assert sniff_format(tmp_path / "x.pkl") == "pickle"


def test_file_whose_content_is_another_format(models: Path, diabetes: Path, tmp_path: Path) -> None:
    fake = tmp_path / "model.pt"
    shutil.copy(models / "diabetes_mlp.onnx", fake)
    assert run(fake, diabetes, "--exclude", "target") == (
        2,
        f"error: model file '{fake}' is not a TorchScript archive (torch.jit.save): its "
        "content looks like an ONNX model; rename it or pass --model-format onnx\n",
    )
    code, _ = run(
        fake,
        diabetes,
        "--exclude",
        "target",
        "--model-format",
        "onnx",
        "-o",
        tmp_path / "s.npz",
        "-q",
    )
    assert code == 0


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "m.onnx",
            "is not an ONNX model: Error parsing message with type 'onnx.ModelProto': "
            "Wire format was corrupt",
        ),
        ("m.skops", "is not a skops file: File is not a zip file"),
    ],
)
def test_file_that_is_not_a_model(tmp_path: Path, diabetes: Path, name: str, message: str) -> None:
    path = tmp_path / name
    path.write_text("age,bmi\n1,2\n")
    assert run(path, diabetes) == (2, f"error: model file '{path}' {message}\n")


def test_pickle_needs_trust(tmp_path: Path, diabetes: Path) -> None:
    import joblib

    path = tmp_path / "model.pkl"
    joblib.dump({"not": "an estimator"}, path)
    assert run(path, diabetes, "--exclude", "target") == (
        2,
        f"error: model file '{path}' is a pickle, and loading a pickle runs code stored in "
        "it; pass --trust-pickle if you trust its source (or save the model with skops)\n",
    )
    assert run(path, diabetes, "--exclude", "target", "--trust-pickle") == (
        2,
        f"error: model file '{path}' holds a dict, not a fitted scikit-learn estimator "
        "(it has no predict method)\n",
    )


def test_skops_with_untrusted_types(models: Path, diabetes: Path) -> None:
    path = models / "diabetes_hgb.skops"
    assert run(path, diabetes, "--exclude", "target") == (
        2,
        f"error: skops file '{path}' holds types that are not trusted by default: {HGB_TRUST}; "
        f"check them and pass --trust {HGB_TRUST} to load it\n",
    )


def test_classifier_without_output(models: Path, sample_dir: Path) -> None:
    path = models / "credit_logreg.skops"
    assert run(path, sample_dir / "credit.csv", "--exclude", "approved") == (
        2,
        f"error: model '{path}' is a classifier (Pipeline); choose the output to explain "
        "with --output: proba:CLASS (classes: 0, 1) or decision[:INDEX]\n",
    )


def test_output_that_does_not_exist(models: Path, sample_dir: Path, diabetes: Path) -> None:
    credit = models / "credit_logreg.skops"
    assert run(
        credit, sample_dir / "credit.csv", "--exclude", "approved", "--output", "proba:7"
    ) == (
        2,
        f"error: --output proba:7: model '{credit}' has no class '7' (classes: 0, 1; or an "
        "index 0..1)\n",
    )
    assert run(credit, sample_dir / "credit.csv", "--exclude", "approved", "--output", "logit") == (
        2,
        f"error: --output 'logit' is not an output of model '{credit}' (Pipeline); choose "
        "proba:CLASS (classes: 0, 1) or decision[:INDEX]\n",
    )
    mlp = models / "diabetes_mlp.onnx"
    assert run(mlp, diabetes, "--exclude", "target", "--output", "score") == (
        2,
        f"error: --output 'score': ONNX model '{mlp}' has no such output (outputs: y: "
        "tensor(double) ['n']); use NAME, NAME:INDEX or INDEX\n",
    )


def test_input_width_differs_from_selected_features(models: Path, diabetes: Path) -> None:
    mlp = models / "diabetes_mlp.onnx"
    code, err = run(mlp, diabetes, "--inputs", "age,bmi,bp")
    assert (code, err) == (
        2,
        f"error: ONNX model '{mlp}' input 'x' has shape ['n', 10], but 3 features are "
        "selected (age, bmi, bp); select the model's inputs with --inputs or --exclude\n",
    )
    hgb = models / "diabetes_hgb.skops"
    assert run(hgb, diabetes, "--trust", HGB_TRUST) == (
        2,
        f"error: model '{hgb}' was fitted on columns age, sex, bmi, bp, s1, s2, s3, s4, s5, "
        "s6; the selected features add target; select the model's inputs with --inputs "
        "or --exclude\n",
    )


def test_sklearn_array_model_width(tmp_path: Path, diabetes: Path) -> None:
    import joblib
    from sklearn.linear_model import LinearRegression

    path = tmp_path / "lin.joblib"
    joblib.dump(LinearRegression().fit(np.ones((3, 2)) * [[1], [2], [3]], [1, 2, 3]), path)
    assert run(path, diabetes, "--inputs", "age,bmi,bp", "--trust-pickle") == (
        2,
        f"error: model '{path}' takes 2 features but 3 are selected (age, bmi, bp); select "
        "the model's inputs with --inputs or --exclude\n",
    )


def test_text_column_is_an_error_for_tensor_models(models: Path, sample_dir: Path) -> None:
    mlp = models / "diabetes_mlp.onnx"
    code, err = run(mlp, sample_dir / "credit.csv", "--exclude", "approved")
    assert code == 2
    assert err == (
        f"error: column 'region' in data file '{sample_dir / 'credit.csv'}' is not numeric "
        "(example value: 'south'); leave it out with --exclude or list the model's inputs "
        "with --inputs\n"
    )


def test_bad_method_and_step(models: Path, diabetes: Path) -> None:
    mlp = models / "diabetes_mlp.onnx"
    assert run(mlp, diabetes, "--method", "magic") == (
        2,
        "error: --method must be one of auto, autodiff, finite-differences, got 'magic'\n",
    )
    assert run(mlp, diabetes, "--step", "0") == (
        2,
        "error: --step must be a positive finite fraction of each feature's std, got 0\n",
    )
    pt = models / "diabetes_mlp.pt"
    assert run(pt, diabetes, "--exclude", "target", "--method", "finite-differences") == (
        2,
        "error: --method finite-differences applies to ONNX and scikit-learn models; "
        f"TorchScript model '{pt}' is differentiated exactly (autodiff)\n",
    )
    assert run(pt, diabetes, "--exclude", "target", "--step", "0.1") == (
        2,
        "error: --step applies to ONNX and scikit-learn models; "
        f"TorchScript model '{pt}' is differentiated exactly (autodiff)\n",
    )


def test_store_records_method_output_step_and_cache_key(
    models: Path, diabetes: Path, tmp_path: Path
) -> None:
    out = tmp_path / "hgb.npz"
    hgb = models / "diabetes_hgb.skops"
    args = (hgb, diabetes, "--exclude", "target", "--trust", HGB_TRUST, "-o", out)
    assert run(*args)[0] == 0
    meta = read_meta(out)
    # a piecewise-constant model: secants across a fine grid (tests/test_secant.py)
    assert meta["method"] == "secant"
    assert meta["method_details"]["inner_method"] == "finite-differences"
    assert meta["secant"]["k_fine"] == 240
    assert meta["model"]["format"] == "skops"
    assert meta["output"]["name"] == "predict"
    assert meta["method_details"]["step"]["rule"] == "piecewise-constant model type"
    assert meta["options"]["trust"] == [HGB_TRUST]
    assert meta["categorical_features"] == []
    result = CliRunner().invoke(app, ["compute", *map(str, args)])
    assert result.stdout.startswith("cache hit")
    # the step changes the result, so it keys the cache; --trust does not
    result = CliRunner().invoke(app, ["compute", *map(str, args), "--step", "0.1"])
    assert "recomputed" in result.stderr and "the options changed" in result.stderr
    assert read_meta(out)["method_details"]["step"]["rule"] == "user"
    assert read_meta(out)["method"] == "finite-differences"  # the user's step is kept
    result = CliRunner().invoke(app, ["compute", *map(str, args), "--categorical", "sex"])
    store = read_store(out)
    assert store.meta["categorical_features"] == ["sex"]
    np.testing.assert_array_equal(store.local_effects[:, 1], 0.0)


def test_onnx_fallback_is_said(models: Path, diabetes: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        [
            "compute",
            str(models / "diabetes_gbr.onnx"),
            str(diabetes),
            "--exclude",
            "target",
            "-o",
            str(tmp_path / "gbr.npz"),
        ],
    )
    assert result.exit_code == 0
    assert result.stderr.splitlines()[0] == (
        "note: finite differences through onnxruntime: the graph cannot be run in torch: "
        "op TreeEnsembleRegressor (domain ai.onnx.ml) has no torch translation"
    )
    assert "secant" in result.stdout  # a tree ensemble: secants across a fine grid
