"""scikit-learn models: known answers for linear models, the large step for
tree ensembles, classifiers' outputs, pipelines on DataFrames with categorical columns."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ale_cli.data.table import load_table
from ale_cli.errors import ModelError
from ale_cli.estimators.inputs import ModelInputs
from ale_cli.estimators.local_effects import ComputeRequest, compute
from ale_cli.models import Columns, LoadOptions, scikit
from ale_cli.models.base import LoadRequest
from ale_cli.models.scikit import SklearnModel
from ale_cli.store.npz import read_store

HGB_TRUST = ("sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",)


def sklearn_effects(estimator, X, names=None, **options):  # type: ignore[no-untyped-def]
    names = names or tuple(f"x{j}" for j in range(X.shape[1]))
    model = SklearnModel.of(
        estimator,
        LoadRequest(
            Path("m.skops"), "skops", LoadOptions(**options), Columns(names=tuple(names)), X
        ),
    )
    return model, model.local_effects(X)


@pytest.fixture(scope="module")
def linear_data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 4)) * [1.0, 10.0, 0.01, 1000.0] + [0.0, 50.0, 0.0, 1e4]
    y = X @ [1.5, -0.2, 30.0, 0.001] + rng.normal(0, 0.1, 500)
    return X, y


@pytest.mark.parametrize("name", ["LinearRegression", "Ridge"])
def test_linear_models_local_effects_are_the_coefficients(linear_data, name) -> None:  # type: ignore[no-untyped-def]
    import sklearn.linear_model as lm

    X, y = linear_data
    est = getattr(lm, name)().fit(X, y)
    model, got = sklearn_effects(est, X)
    assert model.describe()["step"]["rule"] == "smooth default"
    np.testing.assert_allclose(got.local_effects, np.broadcast_to(est.coef_, X.shape), rtol=1e-8)
    np.testing.assert_allclose(got.prediction, est.predict(X), rtol=1e-12)


def test_logistic_regression_proba_is_p_one_minus_p_times_w(linear_data) -> None:  # type: ignore[no-untyped-def]
    from sklearn.linear_model import LogisticRegression

    X, y = linear_data
    Z = (X - X.mean(0)) / X.std(0)
    clf = LogisticRegression().fit(Z, y > np.median(y))
    _, got = sklearn_effects(clf, Z, output="proba:1")
    p = clf.predict_proba(Z)[:, 1]
    expected = (p * (1 - p))[:, None] * clf.coef_[0]
    # 1e-6 relative; where p saturates (p (1 - p) ~ 1e-6) float64 rounding of p near 1
    # leaves ~1e-11 absolute, so the floor is 1e-6 of the column's largest effect
    np.testing.assert_allclose(
        got.local_effects, expected, rtol=1e-6, atol=1e-6 * np.abs(expected).max()
    )
    _, by_label = sklearn_effects(clf, Z, output="proba:True")
    np.testing.assert_array_equal(by_label.local_effects, got.local_effects)
    _, decision = sklearn_effects(clf, Z, output="decision")
    np.testing.assert_allclose(
        decision.local_effects, np.broadcast_to(clf.coef_[0], Z.shape), rtol=1e-7
    )


def test_constant_feature_has_zero_effect() -> None:
    from sklearn.linear_model import LinearRegression

    rng = np.random.default_rng(1)
    X = np.column_stack([rng.normal(size=100), np.full(100, 3.0)])
    est = LinearRegression().fit(X, 2 * X[:, 0])
    _, got = sklearn_effects(est, X)
    np.testing.assert_allclose(got.local_effects[:, 1], 0.0, atol=1e-9)


# -- piecewise-constant models ------------------------------------------------------------


def center(curve: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Count-weighted trapezoid centering (DESIGN.md), applied to the true curve."""
    return curve - np.sum(counts * (curve[:-1] + curve[1:]) / 2) / counts.sum()


def test_hist_gradient_boosting_gets_the_large_step_and_recovers_the_effects(
    tmp_path: Path, cli
) -> None:
    import pandas as pd
    import skops.io as sio
    from sklearn.ensemble import HistGradientBoostingRegressor

    from ale_cli.summary.model import read_summary

    rng = np.random.default_rng(2)
    X = rng.uniform(-2, 2, size=(10_000, 3))
    y = X[:, 0] + X[:, 1] ** 2 + rng.normal(0, 0.1, len(X))
    est = HistGradientBoostingRegressor(random_state=0).fit(X, y)
    model, got = sklearn_effects(est, X)
    assert model.describe()["step"]["rel_step"] == 0.05
    assert model.describe()["step"]["rule"] == "piecewise-constant model type"
    zero_share = np.mean(got.local_effects[:, :2] == 0, axis=0)
    assert np.all(zero_share < 0.05), zero_share

    # the whole pipeline: compute -> rebin --bins 20 --binning quantile
    sio.dump(est, tmp_path / "hgb.skops")
    pd.DataFrame(X, columns=["x1", "x2", "x3"]).to_csv(tmp_path / "d.csv", index=False)
    trust = [t for t in sio.get_untrusted_types(file=tmp_path / "hgb.skops")]
    trust_args = [a for t in trust for a in ("--trust", t)]
    store, summary = tmp_path / "s.npz", tmp_path / "dale.json"
    result = cli("compute", tmp_path / "hgb.skops", tmp_path / "d.csv", "-o", store, *trust_args)
    assert result.exit_code == 0, result.output
    result = cli("rebin", store, "--bins", "20", "--binning", "quantile", "-o", summary)
    assert result.exit_code == 0, result.output
    for name, truth in (("x1", lambda v: v), ("x2", lambda v: v**2)):
        feat = read_summary(summary).feature(name)
        expected = center(truth(feat.edges), feat.counts)
        rmse = float(np.sqrt(np.mean((feat.effect - expected) ** 2)))
        assert rmse < 0.1, (name, rmse)


def test_piecewise_constant_detected_from_zero_share() -> None:
    """A model type not on the list still gets the large step when a sample shows
    mostly exactly-zero small-step derivatives (here binned inputs to a linear model)."""
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import KBinsDiscretizer

    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, size=(400, 2))
    binned = KBinsDiscretizer(n_bins=8, encode="onehot-dense", strategy="uniform")
    est = make_pipeline(binned, LinearRegression()).fit(X, X[:, 0] - X[:, 1])
    model, _ = sklearn_effects(est, X)
    step = model.describe()["step"]
    assert step["rule"] == "zero share on a sample" and step["rel_step"] == 0.05
    assert step["zero_share"] == 1.0
    user, _ = sklearn_effects(est, X, step=0.2)
    assert user.describe()["step"]["rule"] == "user"
    np.testing.assert_allclose(user.describe()["step"]["absolute"], 0.2 * X.std(0))


@pytest.mark.parametrize("name", ["ada", "bagging", "voting", "ada_linear"])
def test_tree_ensembles_are_piecewise_constant_and_agree_with_classic(name, tmp_path: Path) -> None:
    """AdaBoost, Bagging and Voting of trees (forests) are piecewise-constant types
    (secants): on y = 2a - 3b + 0.5c their rebinned slopes have classic's signs and the
    curves test_secant's gaps to it (small steps gave every local effect 0, or rare huge
    ones). AdaBoost of linear models is smooth: the small step."""
    import sklearn.ensemble as ens
    from sklearn.linear_model import LinearRegression

    from ale_cli import api

    rng = np.random.default_rng(4)
    frame = pd.DataFrame(rng.uniform(0, 1, size=(6000, 3)), columns=["a", "b", "c"])
    frame["c"] = rng.normal(size=6000)
    y = frame.to_numpy() @ [2.0, -3.0, 0.5]
    forest = {"n_estimators": 10, "max_depth": 6, "random_state": 0}
    est = {
        "ada": ens.AdaBoostRegressor(n_estimators=20, random_state=0),
        "bagging": ens.BaggingRegressor(n_estimators=5, random_state=0),
        "voting": ens.VotingRegressor(
            [("e", ens.ExtraTreesRegressor(**forest)), ("f", ens.RandomForestRegressor(**forest))]
        ),
        "ada_linear": ens.AdaBoostRegressor(LinearRegression(), n_estimators=3, random_state=0),
    }[name].fit(frame.to_numpy(), y)
    done = api.compute(est, frame, out=tmp_path / "s.npz")
    rule = api.read_store(tmp_path / "s.npz").meta["method_details"]["step"]["rule"]
    linear = name == "ada_linear"
    assert (done.method, rule) == (
        ("finite-differences", "smooth default")
        if linear
        else ("secant", "piecewise-constant model type")
    )
    rebinned, classic = (
        api.rebin(tmp_path / "s.npz", bins=5, binning="quantile"),
        api.classic(est, frame, bins=5, binning="quantile"),
    )
    for feat in "abc":
        got, want = rebinned.feature(feat), classic.feature(feat)
        np.testing.assert_array_equal(got.edges, want.edges)
        slope = np.diff(got.effect) / np.diff(got.edges)
        expected = np.diff(want.effect) / np.diff(want.edges)
        assert np.all(np.sign(slope) == np.sign(expected)), (feat, slope, expected)
        gap = np.abs(got.effect - want.effect) / np.ptp(want.effect)
        assert np.median(gap) <= 0.05 and gap.max() <= 0.15, (feat, gap)  # test_secant's bounds


# -- pipelines on DataFrames, categorical columns -----------------------------------------


def test_sample_pipeline_with_text_column_through_compute(sample_dir: Path, tmp_path: Path) -> None:
    import skops.io as sio

    out = tmp_path / "credit.npz"
    request = ComputeRequest(
        inputs=ModelInputs(
            model=sample_dir / "models" / "credit_logreg.skops",
            data=sample_dir / "credit.csv",
            exclude=("approved",),
            output="proba:1",
        ),
        out=out,
    )
    compute(request)
    store = read_store(out)
    assert store.meta["categorical_features"] == ["region"]
    levels = store.meta["categorical_levels"]["region"]
    assert levels == ["east", "north", "south", "west"]
    frame = pd.read_csv(sample_dir / "credit.csv")
    np.testing.assert_array_equal(np.array(levels)[store.X[:, 3].astype(int)], frame["region"])
    np.testing.assert_array_equal(store.local_effects[:, 3], 0.0)
    pipe = sio.load(sample_dir / "models" / "credit_logreg.skops")
    inputs = frame[["age", "income", "debt_ratio", "region"]]
    p = pipe.predict_proba(inputs)[:, 1]
    np.testing.assert_allclose(store.prediction, p, rtol=1e-12)
    # logit is linear in the scaled numeric columns: d p / d x_j = p (1 - p) w_j / scale_j
    scaler = pipe.named_steps["prep"].named_transformers_["num"]
    w = pipe.named_steps["clf"].coef_[0][:3] / scaler.scale_
    expected = (p * (1 - p))[:, None] * w
    np.testing.assert_allclose(store.local_effects[:, :3], expected, rtol=1e-5, atol=1e-12)
    assert store.meta["method_details"]["dataframe_input"] is True


def test_declared_integer_categorical_is_held_fixed(tmp_path: Path) -> None:
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"x": rng.normal(size=300), "grade": rng.integers(1, 4, 300)})
    y = 2 * frame["x"] + frame["grade"].map({1: 0.0, 2: 5.0, 3: -1.0})
    prep = ColumnTransformer([("cat", OneHotEncoder(), ["grade"])], remainder="passthrough")
    est = make_pipeline(prep, LinearRegression()).fit(frame, y)
    data = tmp_path / "grades.csv"
    frame.assign(y=y).to_csv(data, index=False)
    table = load_table(data, exclude=["y"], categorical=["grade"], encode_text=True)
    columns = Columns(names=table.feature_names, fixed=table.categorical, dtypes=table.dtypes)
    model = SklearnModel.of(
        est, LoadRequest(Path("m.pkl"), "pickle", LoadOptions(), columns, table.X)
    )
    got = model.local_effects(table.X)
    np.testing.assert_allclose(got.local_effects[:, 0], 2.0, rtol=1e-7)
    np.testing.assert_array_equal(got.local_effects[:, 1], 0.0)
    np.testing.assert_allclose(got.prediction, est.predict(frame), rtol=1e-12)


def test_hgb_skops_needs_trust_and_records_it(sample_dir: Path, tmp_path: Path) -> None:
    path = sample_dir / "models" / "diabetes_hgb.skops"
    table = load_table(sample_dir / "diabetes.csv", exclude=["target"])
    columns = Columns(names=table.feature_names)
    with pytest.raises(ModelError, match="pass trust sklearn.ensemble._hist_gradient") as info:
        scikit.load(LoadRequest(path, "skops", LoadOptions(), columns, table.X))
    assert info.value.param == "trust"
    model = scikit.load(LoadRequest(path, "skops", LoadOptions(trust=HGB_TRUST), columns, table.X))
    assert model.describe()["trusted_types"] == list(HGB_TRUST)


def test_pickle_loads_with_trust(tmp_path: Path) -> None:
    import joblib
    from sklearn.linear_model import LinearRegression

    X = np.random.default_rng(5).normal(size=(50, 2))
    path = tmp_path / "lin.pkl"
    joblib.dump(LinearRegression().fit(X, X @ [3.0, -1.0]), path)
    with pytest.raises(ModelError, match="pass trust_pickle if you trust its source"):
        scikit.load(LoadRequest(path, "pickle", LoadOptions(), Columns(names=("a", "b")), X))
    model = scikit.load(
        LoadRequest(path, "pickle", LoadOptions(trust_pickle=True), Columns(names=("a", "b")), X)
    )
    np.testing.assert_allclose(model.local_effects(X).local_effects, [[3.0, -1.0]] * 50, rtol=1e-8)
