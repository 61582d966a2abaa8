"""MLflow models (ale_cli.models.mlflow_model): a models:/ URI against a local sqlite
tracking store gives the same results as the same model given as a file (1e-12), through
its native flavour's route; a pyfunc runs with finite differences and says so; the
provenance records the URI and the registry's version; a missing extra is one line."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from ale_cli import api

try:
    import mlflow
except ImportError:  # the base install: only the missing-extra test runs
    mlflow = None

needs_mlflow = pytest.mark.skipif(mlflow is None, reason="the mlflow extra is not installed")


def _frame(n: int) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(3)
    df = pd.DataFrame(
        {"x1": rng.normal(size=n), "x2": rng.uniform(-2, 2, n), "x3": rng.normal(size=n)}
    )
    y = np.sin(2 * df.x1) + df.x2 * df.x1 + 0.5 * df.x3 + rng.normal(0, 0.1, n)
    return df, y.to_numpy()


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """A sqlite tracking store holding a scikit-learn pipeline ('skl', skops) and a
    LightGBM Booster ('lgb'), version 1 each, and the same models saved as files."""
    import lightgbm as lgb
    import skops.io as sio
    from sklearn.neural_network import MLPRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    root = tmp_path_factory.mktemp("mlflow")
    df, y = _frame(6000)  # secants need about 20 rows per fine bin
    df.to_parquet(root / "data.parquet", index=False)
    small = df.iloc[:300]
    pipe = make_pipeline(
        StandardScaler(), MLPRegressor(hidden_layer_sizes=(8,), max_iter=300, random_state=0)
    )
    pipe.fit(small, y[:300])
    booster = lgb.train(
        {"num_leaves": 8, "verbose": -1, "num_threads": 1, "seed": 0},
        lgb.Dataset(df.to_numpy(), label=y),
        num_boost_round=30,
    )
    sio.dump(pipe, root / "pipe.skops")
    trust = sio.get_untrusted_types(file=root / "pipe.skops")
    booster.save_model(str(root / "booster.txt"))
    uri = f"sqlite:///{root / 'mlflow.db'}"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_TRACKING_URI", uri)
        mp.chdir(root)  # the default artifact root ./mlruns
        mlflow.set_tracking_uri(uri)
        with mlflow.start_run() as run:
            mlflow.sklearn.log_model(
                pipe,
                name="skl",
                registered_model_name="skl",
                pip_requirements=[],
                skops_trusted_types=trust,  # MLflow checks its own file on saving
            )
            mlflow.lightgbm.log_model(
                booster, name="lgb", registered_model_name="lgb", pip_requirements=[]
            )
        yield {
            "root": root,
            "run_id": run.info.run_id,
            "trust": tuple(trust),
        }


def _curves(summary) -> dict[str, np.ndarray]:  # type: ignore[no-untyped-def]
    return {f.name: f.effect for f in summary.features if f.status == "ok"}


def _assert_same(a, b) -> None:  # type: ignore[no-untyped-def]
    ca, cb = _curves(a), _curves(b)
    assert sorted(ca) == sorted(cb) and ca
    for name in ca:
        np.testing.assert_allclose(ca[name], cb[name], rtol=0, atol=1e-12, err_msg=name)


@needs_mlflow
@pytest.mark.parametrize(
    ("name", "file", "method"),
    [("skl", "pipe.skops", "finite-differences"), ("lgb", "booster.txt", "secant")],
)
def test_a_registered_model_equals_its_file(registry, name, file, method, tmp_path) -> None:  # type: ignore[no-untyped-def]
    root = registry["root"]
    data = root / "data.parquet"
    opts = {"trust": registry["trust"]} if name == "skl" else {}
    runs = {}
    for label, model in (("uri", f"models:/{name}/1"), ("file", root / file)):
        store = tmp_path / f"{label}.npz"
        done = api.compute(model, data, out=store, **opts)
        assert done.method == method
        runs[label] = (
            api.read_store(store),
            api.rebin(store, bins=10),
            api.rhale(store),
            api.classic(model, data, bins=10, **opts),
        )
    for a, b in zip(runs["uri"][1:], runs["file"][1:], strict=True):
        _assert_same(a, b)
    np.testing.assert_array_equal(runs["uri"][0].local_effects, runs["file"][0].local_effects)
    record = runs["uri"][0].meta["model"]
    assert record["mlflow"] == {
        "uri": f"models:/{name}/1",
        "flavor": "sklearn" if name == "skl" else "lightgbm",
        "run_id": registry["run_id"],
        "name": name,
        "version": "1",
    }
    assert record["format"] == ("skops" if name == "skl" else "lightgbm")
    assert runs["uri"][3].store["model"]["mlflow"]["version"] == "1"


@needs_mlflow
def test_a_run_uri_and_a_model_directory_read_the_same_model(registry, tmp_path) -> None:  # type: ignore[no-untyped-def]
    root = registry["root"]
    df = pd.read_parquet(root / "data.parquet").iloc[:400]
    by_file = api.classic(root / "booster.txt", df, bins=8)
    by_run = api.classic(f"runs:/{registry['run_id']}/lgb", df, bins=8)
    local = mlflow.artifacts.download_artifacts("models:/lgb/1")
    by_dir = api.classic(local, df, bins=8)
    _assert_same(by_run, by_file)
    _assert_same(by_dir, by_file)
    assert by_run.store["model"]["mlflow"]["uri"] == f"runs:/{registry['run_id']}/lgb"
    assert "version" not in by_run.store["model"]["mlflow"]


@needs_mlflow
def test_a_pyfunc_runs_with_finite_differences_and_a_note(tmp_path) -> None:
    df, _ = _frame(300)
    folder = tmp_path / "pyfunc"

    class Linear(mlflow.pyfunc.PythonModel):  # code: saved by value, loaded as a pyfunc
        def predict(self, context, model_input, params=None):  # type: ignore[no-untyped-def]
            return np.asarray(model_input, dtype=np.float64) @ np.array([2.0, -1.0, 0.5])

    mlflow.pyfunc.save_model(str(folder), python_model=Linear(), pip_requirements=[])
    from ale_cli.errors import InputError

    with pytest.raises(InputError, match=r"read through its pyfunc, and loading it runs its code"):
        api.classic(folder, df, bins=5)
    store = tmp_path / "s.npz"
    done = api.compute(folder, df, out=store, trust_pickle=True)
    assert done.method == "finite-differences"
    summary = api.rebin(store, bins=5)
    for name, slope in (("x1", 2.0), ("x2", -1.0), ("x3", 0.5)):
        feat = summary.feature(name)  # a linear model: the curve rises by slope x its span
        np.testing.assert_allclose(
            feat.effect[-1] - feat.effect[0], slope * np.ptp(feat.edges), rtol=1e-6
        )
    notes = api.read_store(store).meta["notes"]
    assert any("is called through its pyfunc, with finite differences" in n for n in notes)


@needs_mlflow
@pytest.mark.parametrize("signature", [False, True])
def test_a_pyfunc_takes_named_columns_and_its_errors_name_its_path(signature, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A pyfunc gets a DataFrame with the data's names, as MLflow serves it: without a
    signature it got an array, and model_input["x1"] failed, the error naming
    '<callable PyFuncModel.predict>'; with one the note said 'columns taken by position'."""
    df, _ = _frame(300)
    df = df[["x3", "x1", "x2"]]  # another order than the model's: matched by name

    class Named(mlflow.pyfunc.PythonModel):
        def predict(self, context, model_input, params=None):  # type: ignore[no-untyped-def]
            return 2.0 * model_input["x1"] - model_input["x2"] + 0.5 * model_input["x3"]

    folder = tmp_path / "named"
    example = {"input_example": df[["x1", "x2", "x3"]].head(5)} if signature else {}
    mlflow.pyfunc.save_model(str(folder), python_model=Named(), pip_requirements=[], **example)
    store = tmp_path / "s.npz"
    api.compute(folder, df, out=store, trust_pickle=True)
    summary = api.rebin(store, bins=5)
    for name, slope in (("x1", 2.0), ("x2", -1.0), ("x3", 0.5)):
        feat = summary.feature(name)
        np.testing.assert_allclose(
            feat.effect[-1] - feat.effect[0], slope * np.ptp(feat.edges), rtol=1e-6
        )
    assert not any("by position" in n for n in api.read_store(store).meta["notes"])
    from ale_cli.errors import ModelFailed

    with pytest.raises(ModelFailed, match=f"^model '{re.escape(str(folder))}' failed on the first"):
        api.compute(folder, df.drop(columns="x2"), out=tmp_path / "t.npz", trust_pickle=True)


def test_a_missing_extra_is_one_line(cli, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    df, _ = _frame(20)
    data = tmp_path / "d.csv"
    df.to_csv(data, index=False)
    monkeypatch.setitem(sys.modules, "mlflow", None)  # import mlflow raises ImportError
    result = cli("classic", "models:/skl/1", data, "-o", tmp_path / "c.json")
    assert result.exit_code == 2
    assert result.stderr == (
        "error: model 'models:/skl/1' is an MLflow URI, which needs the mlflow extra: "
        "pip install 'ale-cli[mlflow]'\n"
    )


@needs_mlflow
def test_an_unknown_registered_model_is_one_line(registry, cli, tmp_path) -> None:  # type: ignore[no-untyped-def]
    data = registry["root"] / "data.parquet"
    result = cli("classic", "models:/nope/1", data, "-o", tmp_path / "c.json")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: cannot read MLflow model 'models:/nope/1': ")
    assert len(result.stderr.splitlines()) == 1


@needs_mlflow
@needs_mlflow
@pytest.mark.parametrize("uri", ["models:/foo/1", "runs:/0123/model"])
def test_a_uri_without_a_tracking_uri_is_one_line_and_leaves_no_file(
    uri, cli, tmp_path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """MLflow's default store is ./mlflow.db: it made that file (950 KB), logged its
    INFO lines and failed on the empty registry; now one line names MLFLOW_TRACKING_URI."""
    df, _ = _frame(20)
    df.to_csv(tmp_path / "d.csv", index=False)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setattr("mlflow.tracking._tracking_service.utils._tracking_uri", None)
    monkeypatch.chdir(tmp_path)
    result = cli("compute", uri, "d.csv", "-o", "s.npz")
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: cannot read MLflow model '{uri}': MLFLOW_TRACKING_URI is not set; a models:/ "
        "or runs:/ URI is read from the tracking store it names (e.g. sqlite:///mlflow.db)\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.csv"]


def test_help_rebin_and_rhale_do_not_import_mlflow(tmp_path) -> None:
    df, _ = _frame(200)
    store = tmp_path / "s.npz"
    api.compute(api.Predictor(lambda X: X @ np.ones(3)), df, out=store)
    code = (
        "import sys; from ale_cli.cli import app\n"
        f"for args in (['--help'], ['rebin', {str(store)!r}, '-o', {str(tmp_path / 'r.json')!r}],"
        f" ['rhale', {str(store)!r}, '-o', {str(tmp_path / 'h.json')!r}]):\n"
        "    try:\n        app(args)\n    except SystemExit:\n        pass\n"
        "print(sorted(m for m in ('mlflow', 'sqlalchemy', 'lightgbm', 'xgboost', 'catboost') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


@needs_mlflow
@pytest.mark.parametrize("fmt", ["pickle", "pt2"])
def test_a_pytorch_flavour_is_read_as_its_torch_file(fmt, mlp_model, sample_dir, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A ScriptModule saved by the pytorch flavour is its TorchScript file; a pt2 one its
    torch.export file: autodiff, the same numbers as the .pt file (float32 rounding)."""
    import torch

    frame = pd.read_csv(sample_dir / "diabetes.csv").iloc[:200]
    module = torch.jit.load(str(mlp_model))
    folder = tmp_path / "torch"
    example = frame.drop(columns="target").to_numpy()[:4]
    if fmt == "pt2":
        module = torch.export.load(str(mlp_model.with_suffix(".pt2"))).module()
    mlflow.pytorch.save_model(
        module, str(folder), serialization_format=fmt, input_example=example, pip_requirements=[]
    )
    by_dir = api.classic(folder, frame, exclude="target", features="bmi,s5", bins=6)
    by_file = api.classic(mlp_model, frame, exclude="target", features="bmi,s5", bins=6)
    for name in ("bmi", "s5"):
        np.testing.assert_allclose(
            by_dir.feature(name).effect, by_file.feature(name).effect, rtol=0, atol=1e-4
        )
    record = by_dir.store["model"]
    assert record["format"] == ("torchscript" if fmt == "pickle" else "torch-export")
    assert record["mlflow"] == {"uri": str(folder), "flavor": "pytorch"}


@needs_mlflow
def test_a_job_file_names_a_registered_model(registry, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import yaml

    job = tmp_path / "job.yaml"
    fields = {"model": "models:/lgb/1", "data": str(registry["root"] / "data.parquet")}
    job.write_text(
        yaml.safe_dump(fields | {"estimators": ["rebin"], "plots": False, "report": False})
    )
    result = api.run(job, out=tmp_path / "run")
    assert result.exit_code == 0
    record = api.read_store(tmp_path / "run" / "store.npz").meta["model"]
    assert record["mlflow"]["uri"] == "models:/lgb/1" and record["mlflow"]["version"] == "1"
    assert result.manifest["inputs"]["model"]["sha256"] == record["sha256"]
