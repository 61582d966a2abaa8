"""Bootstrap bands (``--bootstrap B --ci C --seed S``) on rebin, rhale and classic."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from typer.testing import CliRunner

from ale_cli.cli import app
from ale_cli.core.binning import assign, quantile_edges
from ale_cli.core.binstats import CellStats
from ale_cli.core.bootstrap import percentile_band, replicate_effects
from ale_cli.core.effect import effect_from_cells
from ale_cli.errors import InputError
from ale_cli.estimators.bands import Bootstrap, replicate_cells, with_bands
from ale_cli.estimators.classic import classic_features
from ale_cli.estimators.dale import RebinRequest, RhaleRequest, rebin, rebin_features, rhale
from ale_cli.store.npz import Store, write_store
from ale_cli.summary.model import SCHEMA_PATH, read_summary, summary_json

runner = CliRunner()
SCHEMA = json.loads(SCHEMA_PATH.read_text())


def noisy_linear(seed: int, n: int = 2000, slope: float = 2.0) -> tuple[np.ndarray, np.ndarray]:
    """x ~ U(0, 1), local effects slope + N(0, 1): the true ALE on [0, 1] is slope (z - 1/2)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.0, 1.0, (n, 1))
    return x, slope + rng.normal(0.0, 1.0, (n, 1))


def store_of(X: np.ndarray, E: np.ndarray, names: tuple[str, ...]) -> Store:
    meta = {"schema_version": 1, "feature_names": list(names), "n_rows": len(X)}
    return Store(X=X, local_effects=E, prediction=E.sum(1), feature_names=names, meta=meta)


def test_bands_cover_the_true_curve_at_about_95_percent_of_edges() -> None:
    """100 data sets of 2000 rows, 10 fixed uniform bins on [0, 1], B = 200.

    The true curve is 2 (z - 1/2) (mean centering with the population's equal
    bin shares). Over the 100 x 11 (data set, edge) pairs the coverage must be
    within 0.05 of 0.95: the pairs of one data set are correlated, so the
    coverage behaves at worst like 100 independent trials (SE <= 0.022); 0.05
    is about 2.3 of those SE, plus the percentile method's own small-sample
    error (about 1 %).
    """
    edges = {"x": np.linspace(0.0, 1.0, 11)}
    truth = 2.0 * (edges["x"] - 0.5)
    covered = []
    for seed in range(100):
        X, E = noisy_linear(seed)
        (f,) = rebin_features(X, E, ["x"], edges=edges, bootstrap=Bootstrap(200, 0.95, seed))
        assert f.ci_low is not None and f.ci_high is not None
        covered.append((f.ci_low <= truth) & (truth <= f.ci_high))
    rate = float(np.mean(covered))
    assert abs(rate - 0.95) <= 0.05, rate


def test_replicates_equal_the_estimator_on_the_resampled_rows() -> None:
    """The sparse per-replicate cell statistics give, replicate by replicate, the effect the
    one-pass estimator gives on the rows drawn (same generator, same order of draws)."""
    rng = np.random.default_rng(4)
    n = 700
    X = np.column_stack([rng.normal(size=n), rng.exponential(size=n)])
    E = np.column_stack([np.sin(X[:, 0]), X[:, 1] ** 2]) + rng.normal(0, 0.3, (n, 2))
    edges = [quantile_edges(X[:, j], bins=7) for j in range(2)]
    index = np.column_stack([assign(X[:, j], edges[j]).index for j in range(2)])
    cells = replicate_cells(
        index, E, [e.size - 1 for e in edges], replicates=30, rng=np.random.default_rng(9)
    )
    draws = np.random.default_rng(9)
    for b in range(30):
        rows = draws.integers(0, n, n)
        for j in range(2):
            one = CellStats.from_values(index[rows, j], E[rows, j], n_cells=edges[j].size - 1)
            ref = effect_from_cells(edges[j], one, center="mean").effect
            got = replicate_effects(
                edges[j],
                type(cells[j])(counts=cells[j].counts[b : b + 1], sums=cells[j].sums[b : b + 1]),
            )[0]
            np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12)


def test_classic_bands_come_from_the_differences_without_a_model_call() -> None:
    """classic's bands equal rebin's on the same edges with the slopes D_i / dz as local
    effects, and the model is called only for the differences (2 evaluations per row)."""
    rng = np.random.default_rng(2)
    n = 1500
    X = rng.uniform(-1, 1, (n, 2))
    calls = []

    def f(Z: np.ndarray) -> np.ndarray:
        calls.append(len(Z))
        return Z[:, 0] ** 3 + 0.5 * Z[:, 1] + Z[:, 0] * Z[:, 1]

    boot = Bootstrap(50, 0.9, 11)
    got = classic_features(f, X, ["a", "b"], bins=8, bootstrap=boot)
    assert sum(calls) == 2 * 2 * n
    plain = classic_features(f, X, ["a", "b"], bins=8)
    slopes, index = {}, {}
    for j, (g, p) in enumerate(zip(got, plain, strict=True)):
        np.testing.assert_array_equal(g.effect, p.effect)
        a = assign(X[:, j], g.edges).index
        lo, hi = g.edges[a], g.edges[a + 1]
        up, down = X.copy(), X.copy()
        up[:, j], down[:, j] = hi, lo
        slopes[g.name] = (f(up) - f(down)) / (hi - lo)
        index[g.name] = a
    ref = with_bands(plain, index, slopes, boot, center="mean")
    for g, r in zip(got, ref, strict=True):
        np.testing.assert_allclose(g.ci_low, r.ci_low, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(g.ci_high, r.ci_high, rtol=1e-9, atol=1e-12)
        assert np.all(g.ci_low <= g.ci_high)


def test_a_seed_makes_the_summary_byte_identical(tmp_path: Path) -> None:
    X, E = noisy_linear(0)
    path = tmp_path / "s.npz"
    write_store(path, store_of(X, E, ("x",)))
    texts = []
    for seed in (5, 5, 6):
        out = tmp_path / f"o{len(texts)}.json"
        result = runner.invoke(
            app,
            [
                "rhale",
                str(path),
                "--bootstrap",
                "40",
                "--seed",
                str(seed),
                "--no-timestamp",
                "-o",
                str(out),
            ],
        )
        assert result.exit_code == 0, result.output
        texts.append(out.read_bytes())
        jsonschema.validate(json.loads(texts[-1]), SCHEMA)
    assert texts[0] == texts[1]
    assert texts[0] != texts[2]
    summary = read_summary(tmp_path / "o0.json")
    assert summary.params["bootstrap"] == 40 and summary.params["seed"] == 5
    stats = summary.feature("x").statistics
    assert stats is not None and stats["aled_ci_low"] <= stats["aled"] <= stats["aled_ci_high"]


@pytest.mark.parametrize("estimator", ["rebin", "rhale"])
def test_no_bootstrap_leaves_the_summary_unchanged(estimator: str) -> None:
    X, E = noisy_linear(1)
    store = store_of(X, E, ("x",))
    run, req = (rebin, RebinRequest) if estimator == "rebin" else (rhale, RhaleRequest)
    plain = summary_json(run(req(store=store)).summary, timestamp=False)
    zero = summary_json(run(req(store=store, bootstrap=Bootstrap(0))).summary, timestamp=False)
    assert plain == zero
    assert "ci_low" not in plain and "bootstrap" not in plain


def test_linear_local_effects_without_noise_have_bands_from_the_centering_only() -> None:
    """Equal local effects: every replicate has the same slope; with centering 'start' the
    band is the curve itself."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(500, 1))
    E = np.full((500, 1), 1.5)
    (f,) = rebin_features(X, E, ["x"], bins=6, center="start", bootstrap=Bootstrap(30, seed=1))
    np.testing.assert_allclose(f.ci_low, f.effect, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(f.ci_high, f.effect, rtol=1e-12, atol=1e-12)


def test_percentile_band_levels() -> None:
    values = np.arange(1001.0)[:, None]
    lo, hi = percentile_band(values, ci=0.8)
    np.testing.assert_allclose([lo[0], hi[0]], [100.0, 900.0])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"replicates": 1},
            "bootstrap must be 0 (no bands) or a whole number of at least 2, got 1",
        ),
        ({"replicates": 10, "ci": 1.5}, "ci must be a number between 0 and 1, got 1.5"),
        ({"replicates": 10, "seed": -1}, "seed must be a whole number >= 0, got -1"),
    ],
)
def test_option_errors_name_the_parameter(kwargs: dict, message: str) -> None:
    with pytest.raises(InputError) as err:
        Bootstrap(**kwargs)
    assert str(err.value) == message


def test_cli_errors_name_the_flag(tmp_path: Path) -> None:
    X, E = noisy_linear(0, n=100)
    path = tmp_path / "s.npz"
    write_store(path, store_of(X, E, ("x",)))
    result = runner.invoke(app, ["rebin", str(path), "--bootstrap", "1", "-o", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "--bootstrap must be 0 (no bands) or a whole number of at least 2, got 1" in (
        result.stderr
    )
    result = runner.invoke(
        app, ["rebin", str(path), "--bootstrap", "5", "--ci", "0", "-o", str(tmp_path / "o")]
    )
    assert result.exit_code == 2 and "--ci must be a number between 0 and 1, got 0" in result.stderr


def test_plot_draws_the_band_with_a_legend_entry() -> None:
    from ale_cli.plot import feature_figure
    from ale_cli.summary.model import Summary

    X, E = noisy_linear(2)
    summary = rebin(
        RebinRequest(store=store_of(X, E, ("x",)), bins=5, bootstrap=Bootstrap(60, 0.9, 0))
    ).summary
    assert isinstance(summary, Summary)
    fig = feature_figure(summary, "x")
    feat = summary.feature("x")
    for side, values in (("high", feat.ci_high), ("low", feat.ci_low)):
        (line,) = fig.findobj(lambda a, s=side: a.get_gid() == f"ci_{s}")
        np.testing.assert_allclose(line.get_xdata(), feat.edges)
        np.testing.assert_allclose(line.get_ydata(), values)
    (legend,) = fig.findobj(lambda a: a.get_gid() == "legend")
    texts = [t.get_text() for t in legend.get_texts()]
    assert "bootstrap 90 % band (B = 60)" in texts


def test_python_api_takes_the_bootstrap_options() -> None:
    from ale_cli import api

    X, E = noisy_linear(4, n=300)
    store = store_of(X, E, ("x",))
    a = api.rebin(store, bins=4, bootstrap=20, ci=0.8, seed=2)
    b = api.rhale(store, bootstrap=20, ci=0.8, seed=2)
    for summary in (a, b):
        feat = summary.feature("x")
        assert feat.ci_low is not None and feat.ci_high is not None
        assert np.all(feat.ci_low <= feat.ci_high)
        assert summary.params["bootstrap"] == 20 and summary.params["ci"] == 0.8
    with pytest.raises(InputError, match="^bootstrap must be 0"):
        api.rebin(store, bootstrap=1)
