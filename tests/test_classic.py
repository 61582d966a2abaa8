"""``ale classic``: Apley-Zhu first-order ALE from the model at the bin limits.

Known answers (an additive model's components, a linear model's slopes), the
reference implementation PyALE on its own bin edges, the DALE estimate for a
linear model, the rows that are (not) evaluated, every model format, and the
exact error messages.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest

from ale_cli.errors import InputError, ModelFailed
from ale_cli.estimators.classic import ClassicRequest, classic, classic_features
from ale_cli.estimators.inputs import ModelInputs
from ale_cli.summary.model import SCHEMA_PATH, read_summary
from ale_cli.summary.statistics import statistics_params

SCHEMA = json.loads(SCHEMA_PATH.read_text())


def additive(X: np.ndarray) -> np.ndarray:
    """f = sin(2 a) + b^2 + 0 c: classic ALE recovers each component exactly."""
    return np.sin(2 * X[:, 0]) + X[:, 1] ** 2 + 0.0 * X[:, 2]


def uniform_rows(n: int = 300, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.5, 1.5, size=(n, 3))
    X[:, 2] = np.round(X[:, 2] * 2)  # 7 values: many ties at the quantile edges
    return X


class Counting:
    """A model ``f`` that records how many rows it was asked for, call by call."""

    def __init__(self, f):  # type: ignore[no-untyped-def]
        self.f = f
        self.calls: list[int] = []

    def __call__(self, X: np.ndarray) -> np.ndarray:
        self.calls.append(len(X))
        return self.f(X)


# -- the estimator on arrays -------------------------------------------------------------


@pytest.mark.parametrize("binning", ["quantile", "uniform"])
def test_additive_model_components_are_recovered_exactly(binning):
    X = uniform_rows()
    feats = classic_features(additive, X, ["a", "b", "c"], bins=8, binning=binning, center="start")
    truth = [lambda z: np.sin(2 * z), lambda z: z**2, lambda z: 0.0 * z]
    for feat, g in zip(feats, truth, strict=True):
        assert feat.status == "ok"
        z = feat.edges
        np.testing.assert_allclose(feat.effect, g(z) - g(z[0]), rtol=0, atol=1e-12)
        # every row of a bin has the same difference: no heterogeneity
        filled = feat.counts > 1
        np.testing.assert_allclose(feat.bin_std[filled], 0.0, rtol=0, atol=1e-12)
    if binning == "quantile":  # ties: 7 distinct values give at most 6 bins, edges among them
        assert feats[2].n_bins <= 6 and set(feats[2].edges) <= set(np.unique(X[:, 2]))


def test_two_evaluations_per_row_and_feature_and_progress():
    X = uniform_rows(n=101)
    f = Counting(additive)
    told: list[tuple[int, int]] = []

    def progress(total):  # type: ignore[no-untyped-def]
        return lambda n: told.append((total, n))

    classic_features(f, X, ["a", "b", "c"], bins=5, eval_rows=40, progress=progress)
    assert sum(f.calls) == 2 * 3 * 101
    assert max(f.calls) <= 40  # stacked chunks of 20 rows x 2 moves
    assert {total for total, _ in told} == {3 * 101}
    assert sum(n for _, n in told) == 3 * 101


def test_chunking_does_not_change_the_result():
    X = uniform_rows(n=97)
    one = classic_features(additive, X, ["a", "b", "c"], bins=6)
    many = classic_features(additive, X, ["a", "b", "c"], bins=6, eval_rows=8)
    for a, b in zip(one, many, strict=True):
        np.testing.assert_array_equal(a.effect, b.effect)
        np.testing.assert_array_equal(a.bin_std, b.bin_std)


def test_rows_outside_given_edges_are_counted_and_not_evaluated():
    X = uniform_rows(n=200)
    edges = {"a": np.array([-1.0, 0.0, 1.0]), "b": np.array([-2.0, 0.0, 2.0])}
    f = Counting(additive)
    feats = classic_features(f, X, ["a", "b", "c"], edges=edges)
    outside = int(np.count_nonzero(np.abs(X[:, 0]) > 1.0))
    assert outside > 0
    a, b, c = feats
    assert a.n_outside == outside and b.n_outside == 0
    assert c.status == "not_estimable"
    assert c.reason == "no edges for this feature in the edges file"
    assert sum(f.calls) == 2 * (200 - outside) + 2 * 200  # nothing for c, nor outside rows
    assert int(a.counts.sum()) == 200 - outside


def test_constant_features_are_not_estimable_and_categorical_ones_go_per_level():
    X = uniform_rows(n=50)
    X[:, 1] = 3.0
    f = Counting(additive)
    feats = classic_features(f, X, ["a", "b", "c"], categorical=["c"], bins=4)
    assert [(x.status, x.reason, x.kind) for x in feats] == [
        ("ok", None, None),
        ("not_estimable", "single distinct value", None),
        ("ok", None, "categorical"),  # per level (tests/test_discrete.py)
    ]
    # a: 2 per row; c: the rows as they are, those not at the last level (in the estimated
    # order) moved up, those not at the first moved down
    c, levels = X[:, 2], feats[2].levels
    up, down = int(np.sum(c != levels[-1])), int(np.sum(c != levels[0]))
    assert sorted(f.calls) == sorted([2 * 50, 50, up, down])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"binning": "kmeans"}, "binning must be one of uniform, quantile, got 'kmeans'"),
        ({"bins": 0}, "bins must be a whole number of at least 1, got 0"),
        ({"center": "median"}, "center must be one of mean, start, none, got 'median'"),
    ],
)
def test_bad_options_fail_before_the_model_runs(options, message):
    f = Counting(additive)
    with pytest.raises(InputError, match=f"^{re.escape(message)}$"):
        classic_features(f, uniform_rows(n=20), ["a", "b", "c"], **options)
    assert f.calls == []


def test_features_chooses_and_orders_the_estimated_features():
    X = uniform_rows(n=60)
    feats = classic_features(additive, X, ["a", "b", "c"], features=["c", "a"], bins=4)
    assert [x.name for x in feats] == ["c", "a"]
    alone = classic_features(additive, X, ["a", "b", "c"], bins=4)
    np.testing.assert_array_equal(feats[1].effect, alone[0].effect)


# -- against PyALE -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gbr_case(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, pd.DataFrame, object]:
    """A GradientBoostingRegressor fitted on a DataFrame, saved with skops; data as Parquet
    (exact float64 round trip)."""
    import skops.io as sio
    from sklearn.ensemble import GradientBoostingRegressor

    rng = np.random.default_rng(7)
    n = 400
    df = pd.DataFrame(
        {
            "x1": rng.normal(size=n),
            "x2": rng.uniform(-2, 2, size=n),
            "age": 20.0 + 3 * rng.integers(0, 15, size=n),  # 15 values: many ties
            "x4": rng.exponential(size=n),
        }
    )
    y = (
        np.sin(2 * df.x1)
        + df.x2 * df.x1
        + 0.05 * (df.age - 45) ** 2 / 10
        + np.log1p(df.x4)
        + rng.normal(0, 0.1, n)
    )
    est = GradientBoostingRegressor(n_estimators=60, max_depth=3, random_state=0).fit(df, y)
    folder = tmp_path_factory.mktemp("pyale")
    model, data = folder / "gbr.skops", folder / "data.parquet"
    sio.dump(est, model)
    df.to_parquet(data, index=False)
    return model, data, df, est


def trust_args(model: Path) -> list[str]:
    import skops.io as sio

    untrusted = sio.get_untrusted_types(file=model)
    return ["--trust", ",".join(untrusted)] if untrusted else []


@pytest.mark.parametrize("grid_size", [8, 20])
def test_equals_pyale_on_its_own_edges(cli, tmp_path, gbr_case, grid_size):
    """Our effect at every edge equals PyALE's ``eff`` to 1e-10, with no alignment.

    PyALE 1.2 (``_src/ALE_1D.py``, ``aleplot_1D_continuous``): edges are the
    unique values of ``[min] + quantile_ied(x, linspace(0, 1, K+1))``; rows are
    binned with ``pd.cut(..., include_lowest=True)``, i.e. ``(z_{k-1}, z_k]``
    with z_0 in the first bin, our convention; the bin effect is the mean of
    ``f(z_k) - f(z_{k-1})``, accumulated with ``eff(z_0) = 0``; it then
    subtracts ``sum_k n_k (eff(z_{k-1}) + eff(z_k)) / 2 / N`` (its "moving
    average of size 2" weighted by the bin sizes), which is our default
    centering (count-weighted trapezoid mean). So the centered curves compare
    directly. Its bins are taken from its result's index and passed with
    --edges; the counts must match too. ``age`` is integer-valued (ties).
    """
    from PyALE import ale

    model, data, df, est = gbr_case
    names = ["x1", "x2", "age"]
    ref = {}
    for name in names:
        res = ale(
            X=df, model=est, feature=[name], grid_size=grid_size, include_CI=False, plot=False
        )
        ref[name] = res
    edges = tmp_path / "pyale_edges.json"
    edges.write_text(json.dumps({name: ref[name].index.tolist() for name in names}))
    out = tmp_path / "classic.json"
    result = cli(
        "classic", model, data, "--edges", edges, "--features", ",".join(names),
        "-o", out, *trust_args(model),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = read_summary(out)
    assert summary.estimator == "ale"
    for name in names:
        feat, res = summary.feature(name), ref[name]
        np.testing.assert_array_equal(feat.edges, res.index.to_numpy(dtype=float))
        np.testing.assert_array_equal(feat.counts, res["size"].to_numpy()[1:])
        np.testing.assert_allclose(feat.effect, res["eff"].to_numpy(), rtol=0, atol=1e-10)
        assert feat.n_outside == 0
    if grid_size == 20:  # 15 distinct values: the ties merged some quantiles
        assert summary.feature("age").n_bins < grid_size
    jsonschema.validate(json.loads(out.read_text()), SCHEMA)


# -- against DALE: a linear model ------------------------------------------------------------


@pytest.fixture(scope="module")
def linear_case(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, np.ndarray]:
    import skops.io as sio
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(3)
    n = 300
    df = pd.DataFrame(
        {
            "a": rng.normal(size=n),
            "b": rng.uniform(-2, 3, size=n),
            "c": np.round(rng.normal(5, 2, size=n)),
        }
    )
    y = 1.5 * df.a - 2 * df.b + 0.3 * df.c + rng.normal(0, 0.1, n)
    est = LinearRegression().fit(df, y)
    folder = tmp_path_factory.mktemp("linear")
    model, data = folder / "linear.skops", folder / "data.parquet"
    sio.dump(est, model)
    df.to_parquet(data, index=False)
    return model, data, est.coef_


def test_linear_model_classic_equals_dale_and_the_coefficients(cli, tmp_path, linear_case):
    """For f = w.x + b both estimators give w_s (z_k - z_0) before centering, so the curves
    agree to rounding. DALE's local effects come from `ale compute`'s central differences,
    which are exact for a linear model at any step; --step 1 (one std) keeps their
    rounding error (~eps |f| / step) far below 1e-12, where the default 1e-5 std step
    leaves ~1e-11."""
    model, data, coef = linear_case
    store, dale, out = tmp_path / "s.npz", tmp_path / "dale.json", tmp_path / "classic.json"
    assert cli("compute", model, data, "--step", "1", "-o", store, "-q").exit_code == 0
    assert cli("rebin", store, "--bins", "12", "--binning", "quantile", "-o", dale).exit_code == 0
    result = cli("classic", model, data, "--edges", dale, "-o", out, "-q")
    assert result.exit_code == 0, result.output
    ours, theirs = read_summary(out), read_summary(dale)
    for name, w in zip(["a", "b", "c"], coef, strict=True):
        c, d = ours.feature(name), theirs.feature(name)
        np.testing.assert_array_equal(c.counts, d.counts)
        np.testing.assert_allclose(c.effect, d.effect, rtol=0, atol=1e-12)
        np.testing.assert_allclose(c.bin_effect, w, rtol=1e-12)
        np.testing.assert_allclose(c.effect - c.effect[0], w * (c.edges - c.edges[0]), atol=1e-12)
        np.testing.assert_allclose(c.std, 0.0, atol=1e-12)


# -- the command -------------------------------------------------------------------------


def test_defaults_are_recorded_and_reruns_are_byte_identical(cli, tmp_path, mlp_model, sample_dir):
    data = sample_dir / "diabetes.csv"
    out1, out2 = tmp_path / "one.json", tmp_path / "two.json"
    for out in (out1, out2):
        result = cli("classic", mlp_model, data, "--exclude", "target", "--no-timestamp", "-o", out)
        assert result.exit_code == 0, result.output
    assert out1.read_bytes() == out2.read_bytes()
    summary = read_summary(out1)
    assert summary.params == {
        "bins": 20,
        "binning": "quantile",
        "center": "mean",
        "features": None,
        "edges": None,
        **statistics_params("ale-cli"),  # ale's own definitions, said with their note
    }
    assert summary.store["model"]["format"] == "torchscript" and summary.store["path"] is None
    line = result.stdout.strip()
    # sex, binary, is estimated per level by default: its 2 levels
    assert line.startswith("classic: 10 features (10 ok), bins age=20 sex=2 bmi=20")
    assert line.endswith(f"-> '{out2}'")
    jsonschema.validate(json.loads(out1.read_text()), SCHEMA)


def test_every_model_format(cli, tmp_path, sample_dir):
    """TorchScript and its ONNX twin agree; the ONNX tree ensemble (onnxruntime, no
    gradients) and a skops classifier pipeline with a text column run too."""
    data = sample_dir / "diabetes.csv"
    models = sample_dir / "models"
    runs = {
        "pt": [models / "diabetes_mlp.pt", data, "--exclude", "target"],
        "onnx": [models / "diabetes_mlp.onnx", data, "--exclude", "target"],
        "gbr": [models / "diabetes_gbr.onnx", data, "--exclude", "target"],
        "credit": [
            models / "credit_logreg.skops", sample_dir / "credit.csv",
            "--exclude", "approved", "--output", "proba:1",
        ],
    }  # fmt: skip
    summaries = {}
    for key, args in runs.items():
        out = tmp_path / f"{key}.json"
        result = cli("classic", *args, "--bins", "5", "-o", out, "-q")
        assert result.exit_code == 0, result.output
        summaries[key] = read_summary(out)
    for a, b in zip(summaries["pt"].features, summaries["onnx"].features, strict=True):
        scale = max(np.ptp(a.effect), 1.0)
        np.testing.assert_allclose(a.effect, b.effect, rtol=0, atol=1e-4 * scale)
    assert all(f.status == "ok" for f in summaries["gbr"].features)
    credit = summaries["credit"]
    text = [f for f in credit.features if f.kind is not None]
    assert [(f.name, f.kind, f.status) for f in text] == [("region", "categorical", "ok")]


def test_rows_outside_the_edges_are_reported(cli, tmp_path, linear_case):
    model, data, _ = linear_case
    edges = tmp_path / "edges.json"
    edges.write_text(json.dumps({"a": [-1.0, 0.0, 1.0]}))
    out = tmp_path / "o.json"
    result = cli("classic", model, data, "--edges", edges, "--features", "a", "-o", out, "-q")
    assert result.exit_code == 0, result.output
    n_outside = read_summary(out).feature("a").n_outside
    x = pd.read_parquet(data)["a"].to_numpy()
    assert n_outside == int(np.count_nonzero(np.abs(x) > 1.0)) > 0
    assert f"note: a: {n_outside} rows outside the given edges left out" in result.stderr


@pytest.mark.parametrize("chunk_rows", [None, 64])
def test_a_model_failing_while_running_is_a_run_error(monkeypatch, linear_case, chunk_rows):
    """The estimator raises once it has been loaded and checked: one ModelFailed line
    (whole table, and read chunk by chunk)."""
    from sklearn.linear_model import LinearRegression

    import ale_cli.estimators.model_rows as module  # where classic opens the model, the data

    model, data, _ = linear_case
    real_predict = LinearRegression.predict
    real_open, real_streamed = module.open_inputs, module.open_streamed
    loaded: list[bool] = []

    def predict(self, X):  # type: ignore[no-untyped-def]
        if loaded:
            raise ValueError("out of memory\nmore detail")
        return real_predict(self, X)

    def open_inputs(inputs):  # type: ignore[no-untyped-def]
        opened = real_open(inputs)
        loaded.append(True)
        return opened

    def open_streamed(inputs, **kwargs):  # type: ignore[no-untyped-def]
        opened = real_streamed(inputs, **kwargs)
        loaded.append(True)
        return opened

    monkeypatch.setattr(LinearRegression, "predict", predict)
    monkeypatch.setattr(module, "open_inputs", open_inputs)
    monkeypatch.setattr(module, "open_streamed", open_streamed)
    request = ClassicRequest(inputs=ModelInputs(model=model, data=data), chunk_rows=chunk_rows)
    with pytest.raises(ModelFailed, match=f"^model '{model}' failed: out of memory$"):
        classic(request)
    assert loaded


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--edges", "{edges}", "--bins", "5"],
            "error: --edges takes the bins from '{edges}'; leave out --bins and --binning",
        ),
        (
            ["--edges", "{edges}", "--binning", "uniform"],
            "error: --edges takes the bins from '{edges}'; leave out --bins and --binning",
        ),
        (
            ["--binning", "kmeans"],
            "error: --binning must be one of uniform, quantile, got 'kmeans'",
        ),
        (["--center", "median"], "error: --center must be one of mean, start, none, got 'median'"),
        (
            ["--features", "a,zz"],
            "error: --features: 'zz' is not one of the model's inputs in data file '{data}' "
            "(a, b, c)",
        ),
        (["--features", "a,a"], "error: --features names 'a' more than once"),
        (["--features", "a,"], "error: --features expects comma-separated names, got 'a,'"),
        (
            ["--edges", "{edges}", "--features", "a,b"],
            "error: edges file '{edges}' has no edges for feature 'b'",
        ),
        (
            ["--edges", "{foreign}"],
            "error: edges file '{foreign}' has edges for 'zz', which the data '{data}' does "
            "not have; choose the features to explain with --features",
        ),
        (["--edges", "{missing}"], "error: edges file '{missing}' does not exist"),
    ],
)
def test_bad_options_are_one_line_errors(cli, tmp_path, linear_case, args, message):
    model, data, _ = linear_case
    paths = {
        "edges": tmp_path / "edges.json",
        "foreign": tmp_path / "foreign.json",
        "missing": tmp_path / "missing.json",
        "data": data,
    }
    paths["edges"].write_text(json.dumps({"a": [-1.0, 0.0, 1.0]}))
    paths["foreign"].write_text(json.dumps({"a": [-1.0, 1.0], "zz": [0.0, 1.0]}))
    args = [a.format(**paths) for a in args]
    result = cli("classic", model, data, *args, "-o", tmp_path / "o.json")
    assert result.exit_code == 2
    assert result.stderr == message.format(**paths) + "\n"
    assert not (tmp_path / "o.json").exists()


def test_missing_files_and_bad_bins(cli, tmp_path, linear_case):
    model, data, _ = linear_case
    result = cli("classic", tmp_path / "no.skops", data, "-o", tmp_path / "o.json")
    assert (result.exit_code, result.stderr) == (
        2,
        f"error: model file '{tmp_path / 'no.skops'}' does not exist\n",
    )
    result = cli("classic", model, tmp_path / "no.csv", "-o", tmp_path / "o.json")
    assert (result.exit_code, result.stderr) == (
        2,
        f"error: data file '{tmp_path / 'no.csv'}' does not exist\n",
    )
    result = cli("classic", model, data, "--bins", "0", "-o", tmp_path / "o.json")
    assert result.exit_code == 2 and "--bins" in result.stderr


def test_config_section(cli, tmp_path, linear_case):
    model, data, _ = linear_case
    out = tmp_path / "o.json"
    config = tmp_path / "run.yaml"
    config.write_text(
        f"classic:\n  model: {model}\n  data: {data}\n  bins: 4\n  binning: uniform\n"
        f"  features: [b]\n  out: {out}\n"
    )
    result = cli("classic", "--config", config, "-q")
    assert result.exit_code == 0, result.output
    summary = read_summary(out)
    assert summary.params["binning"] == "uniform" and summary.feature("b").n_bins == 4
