"""``ale rebin`` / ``ale rhale``: known answers, properties, the summary contract, CLI errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ale_cli.cli import app
from ale_cli.estimators.dale import rebin_features
from ale_cli.store.npz import Store, write_store
from ale_cli.summary.model import SCHEMA_PATH, Summary, read_summary, summary_json, write_summary
from ale_cli.summary.statistics import statistics_params

runner = CliRunner()
SCHEMA = json.loads(SCHEMA_PATH.read_text())


def validated(path: Path) -> Summary:
    """Read a summary the test wrote, after checking it against the JSON Schema."""
    jsonschema.validate(json.loads(path.read_text()), SCHEMA)
    return read_summary(path)


def make_store(path: Path, X: np.ndarray, E: np.ndarray, names: list[str], **meta: object) -> Path:
    meta = {"schema_version": 1, "feature_names": names, "n_rows": len(X), **meta}
    write_store(
        path,
        Store(X=X, local_effects=E, prediction=E.sum(1), feature_names=tuple(names), meta=meta),
    )
    return path


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def bin_counts(x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Counts by the definition (z_{k-1}, z_k], z_0 in the first bin."""
    counts = [((x > a) & (x <= b)).sum() for a, b in zip(edges[:-1], edges[1:], strict=True)]
    counts[0] += (x == edges[0]).sum()
    return np.array(counts)


@pytest.fixture(scope="module")
def linear_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray, np.ndarray]:
    """y = b . x: local effects are the coefficients; plus a constant and a zero-effect feature."""
    rng = np.random.default_rng(7)
    n = 2000
    X = np.column_stack([rng.uniform(-2, 3, n), rng.normal(5, 2, n), rng.exponential(1, n)])
    b = np.array([1.5, -0.25, 0.0])
    X = np.column_stack([X, np.full(n, 4.0)])
    E = np.tile(np.append(b, 0.7), (n, 1))
    path = make_store(tmp_path_factory.mktemp("lin") / "lin.npz", X, E, ["a", "b", "z", "const"])
    return path, X, b


# -- known answers ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("rebin", "--bins", "13"),
        ("rebin", "--bins", "10", "--binning", "quantile"),
        ("rhale",),
        ("rhale", "--grid", "quantile", "--max-bins", "30"),
    ],
)
def test_linear_model_effect_is_coefficient_times_centered_z(
    linear_store: tuple[Path, np.ndarray, np.ndarray], tmp_path: Path, args: tuple[str, ...]
) -> None:
    store, X, b = linear_store
    out = tmp_path / "s.json"
    code, stdout, stderr = run(*args, store, "-o", out)
    assert code == 0, stderr
    summary = validated(out)
    for j, name in enumerate(["a", "b", "z"]):
        f = summary.feature(name)
        assert f.status == "ok"
        z = f.edges
        counts = bin_counts(X[:, j], z)
        np.testing.assert_array_equal(f.counts, counts)
        center = np.sum(counts * (z[:-1] + z[1:]) / 2) / counts.sum()
        np.testing.assert_allclose(f.effect, b[j] * (z - center), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(f.bin_effect, b[j], rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(f.std, 0.0, atol=1e-12)
        np.testing.assert_allclose(f.stderr, 0.0, atol=1e-12)
    const = summary.feature("const")
    assert (const.status, const.reason) == ("not_estimable", "single distinct value")
    assert "const: not estimable (single distinct value)" in stderr


def test_additive_model_components_recovered_up_to_centering(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    n = 40_000
    X = rng.uniform(-1.5, 1.5, size=(n, 2))
    # f = sin(2 x1) + x2^2: local effects 2 cos(2 x1) and 2 x2
    E = np.column_stack([2 * np.cos(2 * X[:, 0]), 2 * X[:, 1]])
    feats = rebin_features(X, E, ["s", "q"], bins=40, center="start")
    for f, g in zip(feats, [lambda z: np.sin(2 * z), lambda z: z**2], strict=True):
        np.testing.assert_allclose(f.effect, g(f.edges) - g(f.edges[0]), atol=5e-3)
    # the same curves with mean centering differ only by a constant
    centered = rebin_features(X, E, ["s", "q"], bins=40)
    for a, c in zip(feats, centered, strict=True):
        np.testing.assert_allclose(a.effect - c.effect, c.center_offset, rtol=1e-12, atol=1e-12)


def test_rhale_paper_example(sample_dir: Path, tmp_path: Path) -> None:
    """y = 0.2 x1 - 5 x2 + 10 x2 1{x3>0}, N = 1000, through its TorchScript model."""
    from ale_cli.estimators.inputs import ModelInputs
    from ale_cli.estimators.local_effects import ComputeRequest, compute

    store = tmp_path / "rhale.npz"
    compute(
        ComputeRequest(
            inputs=ModelInputs(
                model=sample_dir / "models" / "rhale_synthetic.pt",
                data=sample_dir / "rhale_synthetic.csv",
                exclude=("y",),
            ),
            out=store,
        )
    )
    out = tmp_path / "rhale.json"
    code, stdout, stderr = run("rhale", store, "-o", out)
    assert code == 0, stderr
    assert stdout.startswith("rhale: 3 features (3 ok), bins x1=")
    summary = validated(out)
    assert summary.n_rows == 1000
    assert summary.params["min_points"] == 50 and summary.params["max_bins"] == 50
    assert summary.params["alpha"] == 0.2
    x1, x2, x3 = (summary.feature(n) for n in ("x1", "x2", "x3"))
    # x1: a straight line of slope 0.2, no heterogeneity
    np.testing.assert_allclose(np.diff(x1.effect) / np.diff(x1.edges), 0.2, rtol=1e-6)
    np.testing.assert_allclose(x1.std, 0.0, atol=1e-12)
    # x2: mean effect near zero everywhere, bin std near 5 in every bin
    assert np.all(np.abs(x2.effect) <= 0.5)
    assert np.all(np.abs(x2.bin_std - 5.0) <= 0.5)
    assert np.all(x2.counts >= 50)
    # x3: no effect, no heterogeneity
    np.testing.assert_allclose(x3.effect, 0.0, atol=1e-12)
    np.testing.assert_allclose(x3.std, 0.0, atol=1e-12)


# -- properties ------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(5, 300),
    st.integers(1, 25),
    st.sampled_from(["uniform", "quantile"]),
    st.integers(0, 2**31),
)
def test_rebin_counts_sum_to_n_and_json_round_trip_is_exact(
    n: int, bins: int, binning: str, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.normal(size=n), rng.integers(0, 4, n), rng.uniform(size=n)])
    E = rng.normal(size=(n, 3)) * 1e3
    feats = rebin_features(X, E, ["a", "b", "c"], bins=bins, binning=binning)
    summary = Summary(
        estimator="dale", params={"bins": bins}, store={}, n_rows=n, features=tuple(feats)
    )
    for f in feats:
        if f.status == "ok":
            assert f.counts.sum() == n
            assert f.n_bins <= bins
    text = summary_json(summary)
    jsonschema.validate(json.loads(text), SCHEMA)
    again = Summary.from_dict(json.loads(text))
    assert summary_json(again) == text
    for a, b in zip(feats, again.features, strict=True):
        np.testing.assert_array_equal(a.effect, b.effect)  # NaN-aware, bit-exact
        np.testing.assert_array_equal(a.bin_std, b.bin_std)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(0.1, 3.0), min_size=1, max_size=6),
    st.lists(st.floats(0.05, 0.95), min_size=0, max_size=6),
    st.integers(0, 2**31),
)
def test_shared_edges_give_the_same_effect_for_piecewise_constant_effects(
    widths: list[float], splits: list[float], seed: int
) -> None:
    """Binning B refines binning A; effects constant per A-bin; center none: equal at A's edges."""
    rng = np.random.default_rng(seed)
    a = np.concatenate([[0.0], np.cumsum(widths)])
    extra = [
        a[i] + s * (a[i + 1] - a[i])
        for i, s in zip(rng.integers(0, len(widths), len(splits)), splits, strict=True)
    ]
    b = np.unique(np.concatenate([a, extra]))
    assume(np.all(np.diff(b) > 1e-6))
    # data in every bin of B, and on its edges
    x = np.concatenate([b, rng.uniform(a[0], a[-1], 400)])
    assume(np.all(bin_counts(x, b) > 0))
    slopes = rng.normal(size=len(widths)) * 10
    a_bin = np.clip(np.searchsorted(a[1:-1], x, side="left"), 0, len(widths) - 1)
    E = slopes[a_bin][:, None]
    X = x[:, None]
    fa = rebin_features(X, E, ["x"], edges={"x": a}, center="none")[0]
    fb = rebin_features(X, E, ["x"], edges={"x": b}, center="none")[0]
    assert not fa.bin_filled.any() and not fb.bin_filled.any()
    at = np.searchsorted(b, a)
    np.testing.assert_array_equal(b[at], a)
    np.testing.assert_allclose(fb.effect[at], fa.effect, rtol=1e-12, atol=1e-12)


# -- the summary file and the command line ---------------------------------------------------


def test_no_timestamp_gives_byte_identical_files_and_store_provenance(
    linear_store: tuple[Path, np.ndarray, np.ndarray], tmp_path: Path
) -> None:
    store, _, _ = linear_store
    outs = [tmp_path / "1.json", tmp_path / "2.json"]
    for out in outs:
        assert run("rhale", store, "--no-timestamp", "-o", out)[0] == 0
    assert outs[0].read_bytes() == outs[1].read_bytes()
    data = json.loads(outs[0].read_text())
    assert "created" not in data
    assert list(data) == [
        "schema_version",
        "tool",
        "estimator",
        "params",
        "store",
        "n_rows",
        "prediction",
        "features",
    ]
    assert data["estimator"] == "rhale"
    assert data["store"]["path"] == str(store)
    assert len(data["store"]["sha256"]) == 64
    assert set(data["params"]) >= {"max_bins", "min_points", "alpha", "grid", "center"}
    assert run("rebin", store, "-o", outs[0])[0] == 0
    stamped = json.loads(outs[0].read_text())
    assert "created" in stamped and stamped["estimator"] == "dale"
    assert stamped["params"] == {
        "bins": 20,
        "binning": "uniform",
        "center": "mean",
        "features": None,
        "edges": None,
        **statistics_params("ale-cli"),  # ale's own definitions, said with their note
    }


def test_edges_from_a_previous_summary_and_rows_outside(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    X = rng.uniform(0, 1, size=(500, 2))
    first = make_store(tmp_path / "a.npz", X, np.ones_like(X), ["u", "v"])
    assert run("rhale", first, "--min-points", "20", "-o", tmp_path / "a.json")[0] == 0
    previous = validated(tmp_path / "a.json")
    # a second store whose data go beyond the first one's range
    X2 = np.vstack([X, [[1.5, 0.5], [-0.5, 0.5], [2.0, 0.5]]])
    second = make_store(tmp_path / "b.npz", X2, 2 * np.ones_like(X2), ["u", "v"])
    code, stdout, stderr = run(
        "rebin", second, "--edges", tmp_path / "a.json", "-o", tmp_path / "b.json"
    )
    assert code == 0, stderr
    summary = validated(tmp_path / "b.json")
    u = summary.feature("u")
    np.testing.assert_array_equal(u.edges, previous.feature("u").edges)
    assert u.n_outside == 3 and u.counts.sum() == 500
    assert "u: 3 rows outside the given edges left out" in stderr
    assert summary.params["edges"]["kind"] == "summary"
    assert summary.params["binning"] == "edges"
    # a plain mapping, and a feature it lacks is reported, not dropped
    mapping = tmp_path / "m.json"
    mapping.write_text(json.dumps({"u": [0.0, 0.5, 1.0]}))
    assert run("rebin", second, "--edges", mapping, "-o", tmp_path / "c.json")[0] == 0
    c = validated(tmp_path / "c.json")
    assert c.feature("u").n_bins == 2
    assert c.feature("v").status == "not_estimable"
    assert c.feature("v").reason == "no edges for this feature in the edges file"


def test_categorical_features_are_not_estimable(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    X = np.column_stack([rng.normal(size=100), rng.integers(0, 3, 100)])
    store = make_store(
        tmp_path / "c.npz", X, np.ones_like(X), ["num", "cat"], categorical_features=["cat"]
    )
    code, stdout, _ = run("rebin", store, "-o", tmp_path / "c.json")
    assert code == 0
    assert "(1 ok)" in stdout and "cat=-" in stdout
    cat = validated(tmp_path / "c.json").feature("cat")
    assert (cat.status, cat.reason) == ("not_estimable", "categorical feature (held fixed)")


def test_rhale_falls_back_to_one_bin_and_says_so(tmp_path: Path) -> None:
    X = np.linspace(0, 1, 30)[:, None]
    store = make_store(tmp_path / "f.npz", X, X.copy(), ["x"])
    code, _, stderr = run("rhale", store, "--min-points", "40", "-o", tmp_path / "f.json")
    assert code == 0
    f = validated(tmp_path / "f.json").feature("x")
    assert f.n_bins == 1 and f.note is not None
    assert "x: no partition has at least 40 rows (min_points) in every bin" in stderr


def test_config_file_supplies_options(
    linear_store: tuple[Path, np.ndarray, np.ndarray], tmp_path: Path
) -> None:
    store, _, _ = linear_store
    config = tmp_path / "c.yaml"
    config.write_text(f"rhale:\n  max-bins: 10\n  alpha: 0.5\n  out: {tmp_path / 'cfg.json'}\n")
    code, _, stderr = run("rhale", store, "--config", config)
    assert code == 0, stderr
    params = validated(tmp_path / "cfg.json").params
    assert (params["max_bins"], params["alpha"]) == (10, 0.5)


@pytest.mark.parametrize(
    ("content", "extra", "message"),
    [
        (
            '{"a": [0, 1, 1]}',
            [],
            "feature 'a': edges must be strictly increasing (edge 2 = 1.0 follows 1.0)",
        ),
        ('{"a": [0, "x"]}', [], "feature 'a': expected finite numbers, got 'x'"),
        ('{"a": [0]}', [], "feature 'a': expected a list of at least 2 numbers"),
        ("[1, 2]", [], "must hold a summary or a mapping of feature names to edge lists"),
        ("{", [], "is not valid JSON"),
        ('{"a": [-1, 0, 1], "a": [0, 1]}', [], "refused: key 'a' appears twice in the same"),
        ('{"a": [0, 1]}', ["--bins", "5"], "leave out --bins and --binning"),
        ('{"a": [0, 1]}', ["--features", "b"], "has no edges for feature 'b'"),
        ('{"q": [0, 1]}', [], "has edges for 'q', which the store"),
    ],
)
def test_edges_errors(
    linear_store: tuple[Path, np.ndarray, np.ndarray],
    tmp_path: Path,
    content: str,
    extra: list[str],
    message: str,
) -> None:
    store, _, _ = linear_store
    edges = tmp_path / "e.json"
    edges.write_text(content)
    code, _, stderr = run("rebin", store, "--edges", edges, *extra, "-o", tmp_path / "o.json")
    assert code == 2
    assert stderr.startswith(f"error: edges file '{edges}'") or stderr.startswith("error: --edges")
    assert message in stderr
    assert len(stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o.json").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["rebin", "{store}", "--center", "median"],
            "error: --center must be one of mean, start, none, got 'median'",
        ),
        (
            ["rebin", "{store}", "--binning", "kmeans"],
            "error: --binning must be one of uniform, quantile, got 'kmeans'",
        ),
        (
            ["rhale", "{store}", "--grid", "log"],
            "error: --grid must be one of uniform, quantile, got 'log'",
        ),
        (
            ["rhale", "{store}", "--features", "a,nope"],
            "error: store has no feature 'nope' (features: a, b, z, const)",
        ),
        (
            ["rhale", "{store}", "--features", "a,a"],
            "error: --features names 'a' more than once",
        ),
        (
            ["rhale", "missing.npz"],
            "error: store 'missing.npz' does not exist; create it with 'ale compute'",
        ),
    ],
)
def test_option_errors(
    linear_store: tuple[Path, np.ndarray, np.ndarray], tmp_path: Path, args: list[str], message: str
) -> None:
    store, _, _ = linear_store
    code, _, stderr = run(*[a.format(store=store) for a in args], "-o", tmp_path / "o.json")
    assert code == 2
    assert stderr.strip() == message


def test_every_estimator_option_is_validated_by_typer(
    linear_store: tuple[Path, np.ndarray, np.ndarray], tmp_path: Path
) -> None:
    store, _, _ = linear_store
    for args in (["--min-points", "1"], ["--alpha", "1.5"], ["--max-bins", "0"]):
        code, _, stderr = run("rhale", store, *args, "-o", tmp_path / "o.json")
        assert code == 2 and args[0] in stderr
    code, _, stderr = run("rebin", store, "--bins", "0", "-o", tmp_path / "o.json")
    assert code == 2 and "--bins" in stderr


def test_commands_do_not_import_torch_pandas_or_matplotlib(
    linear_store: tuple[Path, np.ndarray, np.ndarray], tmp_path: Path
) -> None:
    store, _, _ = linear_store
    code = f"""
import sys
from typer.testing import CliRunner
from ale_cli.cli import app
for cmd in (["rhale"], ["rebin", "--bins", "5"]):
    r = CliRunner().invoke(app, [*cmd, {str(store)!r}, "-o", {str(tmp_path / "x.json")!r}])
    assert r.exit_code == 0, r.output
heavy = ("torch", "pandas", "matplotlib", "onnxruntime", "sklearn")
heavy = sorted(m for m in heavy if m in sys.modules)
print(",".join(heavy) or "none")
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "none"


def test_help_has_examples() -> None:
    for command in ("rebin", "rhale"):
        code, stdout, _ = run(command, "--help")
        assert code == 0 and "Example: ale " + command in stdout


def test_write_summary_then_read_is_exact(
    linear_store: tuple[Path, np.ndarray, np.ndarray], tmp_path: Path
) -> None:
    store, _, _ = linear_store
    out = tmp_path / "r.json"
    assert run("rebin", store, "--binning", "quantile", "-o", out)[0] == 0
    summary = validated(out)
    again = tmp_path / "again.json"
    write_summary(again, summary)
    assert again.read_bytes() == out.read_bytes()
