"""Discrete and categorical features in ``ale classic``: per-level effects, level order."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest

from ale_cli.core.discrete import mds_1d
from ale_cli.estimators.classic import classic_features
from ale_cli.summary.model import SCHEMA_PATH, read_summary

SCHEMA = json.loads(SCHEMA_PATH.read_text())


def pyale_discrete(df: pd.DataFrame, model: object, feature: str) -> pd.DataFrame:
    from PyALE import ale

    return ale(
        X=df, model=model, feature=[feature], feature_type="discrete", include_CI=False,
        plot=False,
    )  # fmt: skip


def test_binary_feature_equals_pyale_on_a_gradient_boosting_model() -> None:
    """PyALE 1.2 ``aleplot_1D_discrete``: the jump into level k is the mean of the rows at
    k-1 moved up and the rows at k moved down, accumulated from 0 at the first level, then
    minus ``sum_k eff_k n_k / N``: the count-weighted mean of the levels' effects, our
    default centering for per-level effects. So ``effect`` compares with ``eff`` directly."""
    from sklearn.ensemble import GradientBoostingRegressor

    rng = np.random.default_rng(3)
    n = 600
    df = pd.DataFrame(
        {
            "x": rng.normal(size=n),
            "b": rng.integers(0, 2, n).astype(float) * 3 + 1,  # values 1 and 4
            "z": rng.uniform(-1, 1, n),
        }
    )
    y = np.sin(df.x) + 2 * (df.b > 2) * (1 + df.z) + rng.normal(0, 0.1, n)
    est = GradientBoostingRegressor(n_estimators=40, random_state=0).fit(df, y)
    ref = pyale_discrete(df, est, "b")
    feats = classic_features(
        lambda X: est.predict(pd.DataFrame(X, columns=df.columns)),
        df.to_numpy(),
        list(df.columns),
        features=["b"],
        discrete=["b"],
    )
    (feat,) = feats
    assert feat.kind == "discrete" and feat.levels == (1.0, 4.0)
    np.testing.assert_array_equal(feat.counts, ref["size"].to_numpy())
    np.testing.assert_allclose(feat.effect, ref["eff"].to_numpy(), rtol=0, atol=1e-10)
    assert abs(feat.effect[1] - feat.effect[0]) > 1.0


def test_sex_on_the_sample_mlp_equals_pyale(cli, sample_dir: Path, mlp_model: Path, tmp_path):
    from ale_cli.models import load_model
    from ale_cli.models.base import Columns, LoadOptions

    data = sample_dir / "diabetes.csv"
    df = pd.read_csv(data).drop(columns="target")
    out = tmp_path / "c.json"
    result = cli(
        "classic", mlp_model, data, "--exclude", "target", "--discrete", "sex",
        "--features", "sex,bmi", "-o", out, "-q",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    jsonschema.validate(json.loads(out.read_text()), SCHEMA)
    feat = read_summary(out).feature("sex")
    model = load_model(
        mlp_model, options=LoadOptions(), columns=Columns(names=tuple(df.columns)),
        X=df.to_numpy(dtype=float),
    )  # fmt: skip

    class Wrapped:
        def predict(self, frame: pd.DataFrame) -> np.ndarray:
            return model.predict(frame.to_numpy(dtype=float))

    ref = pyale_discrete(df, Wrapped(), "sex")
    assert feat.kind == "discrete" and feat.levels == (1.0, 2.0)
    np.testing.assert_array_equal(feat.counts, ref["size"].to_numpy())
    np.testing.assert_allclose(feat.effect, ref["eff"].to_numpy(), rtol=0, atol=1e-10)
    assert 5.0 < abs(feat.effect[0]) < 20.0  # the issue: classic ALE gives sex about +-10


def test_known_level_effects_are_recovered_within_two_standard_errors() -> None:
    """f = L[c] (1 + z / 2) + x with z ~ N(0, 1) independent of c: every row's jump is
    (L[k] - L[k-1]) (1 + z/2), so the per-level effect is L minus its count-weighted mean,
    up to the sampling error that ``stderr`` measures."""
    rng = np.random.default_rng(8)
    n = 4000
    L = np.array([0.0, 2.0, -1.0, 5.0])
    c = rng.integers(0, 4, n)
    X = np.column_stack([c, rng.normal(size=n), rng.normal(size=n)]).astype(float)

    def f(Z: np.ndarray) -> np.ndarray:
        return L[Z[:, 0].astype(int)] * (1 + Z[:, 2] / 2) + Z[:, 1]

    (feat,) = classic_features(f, X, ["c", "x", "z"], features=["c"], categorical=["c"])
    assert feat.kind == "categorical"
    levels = np.array(feat.levels, dtype=int)
    counts = np.bincount(c, minlength=4)[levels]
    truth = L[levels] - np.dot(counts, L[levels]) / n
    # stderr is accumulated from the first level; the first level's own error enters
    # through the centering: allow 2 SE of the largest accumulated error
    se = np.maximum(feat.stderr, feat.stderr.max())
    assert np.all(np.abs(feat.effect - truth) <= 2 * se), (feat.effect, truth, se)
    assert np.all(feat.stderr[1:] > 0)


def test_level_order_is_the_one_a_feature_it_shapes_implies() -> None:
    """Four levels that shift another feature's distribution to 0, 3, 1 and 2 (and a second
    categorical feature that agrees): ALEPlot's order is a, c, d, b (or its reverse; the
    sign is fixed so that the first level in input order comes first)."""
    rng = np.random.default_rng(1)
    codes = np.repeat(np.arange(4), 500)
    shift = np.array([0.0, 3.0, 1.0, 2.0])
    numeric = shift[codes] + rng.normal(0, 0.7, codes.size)
    other = np.where(rng.uniform(size=codes.size) < shift[codes] / 3, 1, 0)
    X = np.column_stack([codes, numeric, other]).astype(float)
    names, categorical = ["c", "n", "o"], ["c", "o"]
    (feat,) = classic_features(lambda Z: Z[:, 1], X, names, features=["c"], categorical=categorical)
    assert feat.levels == (0.0, 2.0, 3.0, 1.0)


def test_mds_recovers_points_on_a_line() -> None:
    x = np.array([0.3, -2.0, 1.7, 0.0, 5.0])
    coord = mds_1d(np.abs(np.subtract.outer(x, x)))
    np.testing.assert_allclose(coord, x - x.mean(), rtol=1e-10, atol=1e-10)


def test_text_column_of_a_one_hot_pipeline_is_perturbed_as_text(cli, sample_dir, tmp_path):
    """The sample credit model (skops: scaler + OneHotEncoder + logistic regression) on the
    text column 'region': the per-level effects equal ALEPlot's formula computed by hand with
    the pipeline on DataFrames whose 'region' holds the adjacent level's text."""
    import skops.io as sio

    model = sample_dir / "models" / "credit_logreg.skops"
    data = sample_dir / "credit.csv"
    untrusted = sio.get_untrusted_types(file=model)
    out = tmp_path / "c.json"
    result = cli(
        "classic", model, data, "--exclude", "approved", "--output", "proba:1",
        "--features", "region", "-o", out, "-q",
        *(["--trust", ",".join(untrusted)] if untrusted else []),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    jsonschema.validate(json.loads(out.read_text()), SCHEMA)
    feat = read_summary(out).feature("region")
    assert feat.kind == "categorical" and feat.status == "ok"
    df = pd.read_csv(data).drop(columns="approved")
    assert sorted(feat.levels) == sorted(df.region.unique())
    est = sio.load(model, trusted=untrusted)
    levels = list(feat.levels)
    pos = df.region.map({v: i for i, v in enumerate(levels)}).to_numpy()
    y = est.predict_proba(df)[:, 1]
    jumps = []
    for k in range(1, len(levels)):
        lower, upper = df[pos == k - 1].copy(), df[pos == k].copy()
        lower["region"], upper["region"] = levels[k], levels[k - 1]
        up = est.predict_proba(lower)[:, 1] - y[pos == k - 1]
        down = y[pos == k] - est.predict_proba(upper)[:, 1]
        jumps.append(np.concatenate([up, down]).mean())
    eff = np.concatenate([[0.0], np.cumsum(jumps)])
    counts = np.bincount(pos, minlength=len(levels))
    np.testing.assert_array_equal(feat.counts, counts)
    np.testing.assert_allclose(feat.effect, eff - np.dot(counts, eff) / len(df), atol=1e-12)


def test_discrete_auto_and_unknown_names(cli, sample_dir, mlp_model, tmp_path):
    data = sample_dir / "diabetes.csv"
    out = tmp_path / "c.json"
    result = cli(
        "classic", mlp_model, data, "--exclude", "target", "--discrete", "auto",
        "--features", "sex,age", "-o", out, "-q",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = read_summary(out)
    assert summary.feature("sex").kind == "discrete"  # 2 values
    assert summary.feature("age").kind is None  # many values: a curve
    assert summary.params["discrete"] == "auto"
    result = cli(
        "classic", mlp_model, data, "--exclude", "target", "--discrete", "nope", "-o", out,
    )  # fmt: skip
    assert result.exit_code == 2
    assert "--discrete names 'nope', which is not an input column" in result.stderr


@pytest.mark.parametrize("fmt", ["png", "svg"])
def test_plot_draws_levels_as_dots_with_two_se_bars(cli, sample_dir, mlp_model, tmp_path, fmt):
    from ale_cli.plot import feature_figure

    data = sample_dir / "diabetes.csv"
    out = tmp_path / "c.json"
    result = cli(
        "classic", mlp_model, data, "--exclude", "target", "--discrete", "sex",
        "--features", "sex,bmi", "-o", out, "-q",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = read_summary(out)
    feat = summary.feature("sex")
    fig = feature_figure(summary, "sex")
    (dots,) = fig.findobj(lambda a: a.get_gid() == "levels")
    np.testing.assert_allclose(dots.get_xdata(), np.arange(2))
    np.testing.assert_allclose(dots.get_ydata(), feat.effect)
    (bars,) = fig.findobj(lambda a: a.get_gid() == "level_se")
    segs = np.array(bars.get_segments())
    np.testing.assert_allclose(segs[:, 0, 1], feat.effect - 2 * feat.stderr)
    np.testing.assert_allclose(segs[:, 1, 1], feat.effect + 2 * feat.stderr)
    result = cli("plot", out, "-o", tmp_path / "plots", "--format", fmt)
    assert result.exit_code == 0, result.output


def test_export_diff_and_audit_read_per_level_records(cli, sample_dir, mlp_model, tmp_path):
    data = sample_dir / "diabetes.csv"
    out = tmp_path / "c.json"
    result = cli(
        "classic", mlp_model, data, "--exclude", "target", "--discrete", "sex",
        "--features", "sex,bmi", "-o", out, "-q",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    feat = read_summary(out).feature("sex")
    table = tmp_path / "t.csv"
    assert cli("export", out, "-o", table).exit_code == 0
    frame = pd.read_csv(table)
    sex = frame[frame.feature == "sex"]
    np.testing.assert_allclose(sex[sex.kind == "edge"].effect, feat.effect)
    assert sex[sex["kind"] == "bin"]["count"].tolist() == [int(feat.counts.sum())]
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - feature: sex\n    sign: negative\n    monotonic: decreasing\n")
    result = cli("audit", out, "--rules", rules)
    assert result.exit_code == 0, result.output
    assert cli("diff", out, out).exit_code == 0


def test_level_bootstrap_band_of_an_additive_model_is_the_centering_spread() -> None:
    """f = L[c] + x: every row's jump is exact, so replicate b's effect is
    L - sum_k n_bk L_k / N with n_bk its rows per level; the band is the percentiles of
    that, with the rows drawn as the bootstrap draws them (one replicate after another)."""
    from ale_cli.estimators.bands import Bootstrap

    rng = np.random.default_rng(5)
    n = 800
    L = np.array([1.0, -2.0, 4.0])
    c = rng.integers(0, 3, n)
    X = np.column_stack([c, rng.normal(size=n)]).astype(float)

    def f(Z: np.ndarray) -> np.ndarray:
        return L[Z[:, 0].astype(int)] + Z[:, 1]

    boot = Bootstrap(80, 0.9, 12)
    (feat,) = classic_features(f, X, ["c", "x"], features=["c"], discrete=["c"], bootstrap=boot)
    draws = np.random.default_rng(12)
    effects = []
    for _ in range(80):
        nb = np.bincount(c[draws.integers(0, n, n)], minlength=3)
        effects.append(L - np.dot(nb, L) / n)
    lo, hi = np.quantile(np.array(effects), [0.05, 0.95], axis=0)
    np.testing.assert_allclose(feat.ci_low, lo, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(feat.ci_high, hi, rtol=1e-9, atol=1e-12)
    assert feat.statistics is None  # statistics come with the summary (with_statistics)


def test_diff_of_per_level_records_is_the_change_of_each_level() -> None:
    """Two additive models differing at one level by 3: the difference per level is
    3 at that level minus its count-weighted mean; a curve is not compared with levels."""
    from ale_cli.summary.compare import compare_feature

    rng = np.random.default_rng(2)
    n = 600
    c = rng.integers(0, 3, n)
    X = np.column_stack([c, rng.normal(size=n)]).astype(float)
    L = np.array([1.0, -2.0, 4.0])

    def model(levels: np.ndarray):  # type: ignore[no-untyped-def]
        return lambda Z: levels[Z[:, 0].astype(int)] + Z[:, 1]

    kw = {"features": ["c"], "discrete": ["c"]}
    (base,) = classic_features(model(L), X, ["c", "x"], **kw)
    (other,) = classic_features(model(L + [0.0, 0.0, 3.0]), X, ["c", "x"], **kw)
    cmp = compare_feature("c", base, other)
    assert cmp.status == "ok" and cmp.difference is not None
    shift = np.array([0.0, 0.0, 3.0])
    expected = shift - np.dot(np.bincount(c, minlength=3), shift) / n
    np.testing.assert_allclose(cmp.difference.difference, expected, atol=1e-12)
    np.testing.assert_allclose(cmp.difference.max_abs, np.abs(expected).max())
    (curve,) = classic_features(model(L), X, ["c", "x"], features=["c"], bins=2)
    assert compare_feature("c", base, curve).status == "not_estimable"
