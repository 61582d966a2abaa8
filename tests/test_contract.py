"""The CLI contract of every command: --json, --version, -h, standard input and output.

Every command runs once with --json on small inputs made here (a linear
TorchScript model and its data, the store and summaries made from them); its
stdout must be exactly one JSON object that validates against
``ale_cli/schema/result.schema.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest

from ale_cli import __version__
from ale_cli.summary.model import read_summary

SCHEMA = json.loads(
    (Path(__file__).resolve().parent.parent / "ale_cli/schema/result.schema.json").read_text()
)
COEF = np.array([2.0, -1.0, 0.5])


@pytest.fixture(scope="module")
def linear(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A TorchScript model f(x) = x @ COEF + 0.1 a b and a 300-row CSV with a target column."""
    import torch

    class Linear(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("w", torch.tensor(COEF.tolist(), dtype=torch.float64))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x @ self.w + 0.1 * x[:, 0] * x[:, 1]

    root = tmp_path_factory.mktemp("linear")
    model = root / "lin.pt"
    torch.jit.save(torch.jit.script(Linear()), str(model))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame["target"] = X @ COEF
    data = root / "lin.csv"
    frame.to_csv(data, index=False)
    return model, data


def json_of(result) -> dict:  # type: ignore[no-untyped-def]
    """The one JSON object on stdout, validated against the result schema."""
    assert result.exit_code == 0, result.output
    value = json.loads(result.stdout)
    jsonschema.validate(value, SCHEMA)
    return value


def test_every_command_prints_one_schema_valid_json_object(cli, linear, tmp_path):
    model, data = linear
    store, rhale, dale = tmp_path / "s.npz", tmp_path / "r.json", tmp_path / "d.json"
    base = (model, data, "--exclude", "target")
    results = {
        "compute": cli("compute", *base, "--pairs", "a,b", "-o", store, "--json"),
        "compute-again": cli("compute", *base, "--pairs", "a,b", "-o", store, "--json"),
        "info": cli("info", store, "--json"),
        "rhale": cli("rhale", store, "-o", rhale, "--json"),
        "rebin": cli("rebin", store, "--bins", 5, "-o", dale, "--json"),
        "regional": cli("regional", store, "-o", tmp_path / "g.json", "--json"),
        "classic": cli("classic", *base, "--edges", dale, "-o", tmp_path / "c.json", "--json"),
        "interact": cli(
            "interact",
            *base,
            "--pair",
            "a,b",
            "--store",
            store,
            "-o",
            tmp_path / "i.json",
            "--json",
        ),
        "plot": cli("plot", rhale, "-o", tmp_path / "plots", "--jobs", 1, "--json"),
        "export": cli("export", rhale, "-o", tmp_path / "t.csv", "--json"),
        "diff": cli("diff", dale, rhale, "--json"),
    }
    rules = tmp_path / "rules.yaml"
    rules.write_text('rules:\n  - feature: "*"\n    max_aled: 100\n')
    results["audit"] = cli("audit", rhale, "--rules", rules, "--json")
    results["report"] = cli("report", rhale, "--store", store, "-o", tmp_path / "r.html", "--json")
    job = tmp_path / "job.yaml"
    job.write_text(
        f"model: {model}\ndata: {data}\nexclude: [target]\nestimators: [rhale]\n"
        f"audit: {{rules: {rules}}}\nplots: false\nreport: false\n"
    )
    results["run"] = cli("run", job, "-o", tmp_path / "run", "--json")
    values = {name: json_of(r) for name, r in results.items()}
    assert values["compute"]["cache_hit"] is False and values["compute"]["outputs"] == [str(store)]
    assert values["compute-again"]["cache_hit"] is True
    assert values["compute"]["counts"] == {
        "rows": 300,
        "features": 3,
        "rows_dropped": 0,
        "rows_nonfinite": 0,
    }
    assert values["info"]["details"]["meta"]["inputs"] == ["a", "b", "c"]
    assert values["rhale"]["counts"]["features"] == 3
    assert values["plot"]["counts"]["features"] == 3
    assert values["report"]["counts"]["features"] == 3 and values["report"]["outputs"]
    assert values["run"]["details"]["manifest"]["audit"]["passed"] is True
    # every command names itself; the commands shown in the table are all here
    from typer.main import get_command

    from ale_cli.cli import app

    names = {v["command"] for v in values.values()}
    assert names == set(get_command(app).commands)  # type: ignore[attr-defined]


def test_features_mean_the_same_in_every_command(cli, linear, tmp_path):
    """--features c,a: the store explains those two, in that order, and so does every
    estimator and the figures; the model still gets all three inputs."""
    model, data = linear
    store = tmp_path / "s.npz"
    base = (model, data, "--exclude", "target", "--features", "c,a")
    assert cli("compute", *base, "-o", store).exit_code == 0
    from ale_cli.store.npz import read_store

    s = read_store(store)
    assert s.feature_names == ("c", "a") and s.input_names == ("a", "b", "c")
    assert s.local_effects.shape == (300, 2)
    np.testing.assert_allclose(s.local_effects[:, 0], COEF[2], rtol=1e-12)
    np.testing.assert_allclose(s.local_effects[:, 1], COEF[0] + 0.1 * s.X[:, 1], rtol=1e-12)
    for args in (("rhale", store), ("rebin", store)):
        out = tmp_path / f"{args[0]}.json"
        assert cli(*args, "-o", out).exit_code == 0
        assert [f.name for f in read_summary(out).features] == ["c", "a"]
    classic = tmp_path / "classic.json"
    assert cli("classic", *base, "-o", classic).exit_code == 0
    feats = read_summary(classic).features
    assert [f.name for f in feats] == ["c", "a"]
    # c enters linearly: its classic ALE slope is its coefficient
    c = feats[0]
    np.testing.assert_allclose(np.diff(c.effect) / np.diff(c.edges), COEF[2], rtol=1e-9)
    plots = cli("plot", classic, "-o", tmp_path / "plots", "--jobs", 1, "--features", "a")
    assert plots.exit_code == 0, plots.output
    assert [Path(p).stem for p in plots.stdout.split()] == ["a", "overview"]


def test_version_on_the_app_and_every_command(cli):
    from typer.main import get_command

    from ale_cli.cli import app

    assert cli("--version").stdout == f"ale {__version__}\n"
    for name in get_command(app).commands:  # type: ignore[attr-defined]
        result = cli(name, "--version")
        assert (result.exit_code, result.stdout) == (0, f"ale {__version__}\n"), name
        assert cli(name, "-h").stdout == cli(name, "--help").stdout


def test_summary_to_stdout_and_from_stdin(cli, linear, tmp_path):
    model, data = linear
    store = tmp_path / "s.npz"
    assert cli("compute", model, data, "--exclude", "target", "-o", store).exit_code == 0
    streamed = cli("rhale", store, "-o", "-", "--no-timestamp")
    assert streamed.exit_code == 0
    written = tmp_path / "r.json"
    assert cli("rhale", store, "-o", written, "--no-timestamp").exit_code == 0
    assert streamed.stdout == written.read_text()  # the summary alone on stdout
    assert "-> standard output" in streamed.stderr
    # edges from standard input
    from typer.testing import CliRunner

    from ale_cli.cli import app

    piped = CliRunner().invoke(
        app,
        ["rebin", str(store), "--edges", "-", "-o", str(tmp_path / "e.json")],
        input=written.read_text(),
    )
    assert piped.exit_code == 0, piped.output
    np.testing.assert_array_equal(
        read_summary(tmp_path / "e.json").feature("a").edges,
        read_summary(written).feature("a").edges,
    )
    table = CliRunner().invoke(app, ["export", "-", "-o", "-"], input=written.read_text())
    assert table.exit_code == 0 and table.stdout.startswith("estimator,feature,kind")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["rhale", "-", "-o", "x.json"],
            "error: STORE - (standard input/output) cannot be used for a store; give a path",
        ),
        (
            ["info", "-"],
            "error: STORE - (standard input/output) cannot be used for a store; give a path",
        ),
        (
            ["plot", "{summary}", "-o", "-"],
            "error: --out - (standard output) cannot be used for a figure directory; give a path",
        ),
        (
            ["rhale", "{store}", "-o", "-", "--json"],
            "error: --out - writes to standard output, "
            "which --json needs for its result; write to a file or leave out --json",
        ),
    ],
)
def test_stdio_where_it_cannot_work_is_one_line(cli, linear, tmp_path, args, message):
    model, data = linear
    store = tmp_path / "s.npz"
    assert cli("compute", model, data, "--exclude", "target", "-o", store).exit_code == 0
    summary = tmp_path / "r.json"
    assert cli("rhale", store, "-o", summary).exit_code == 0
    result = cli(*[a.format(store=store, summary=summary) for a in args])
    assert result.exit_code == 2
    assert result.stderr == message + "\n"
    assert result.stdout == ""


def test_library_errors_name_parameters_and_the_cli_names_flags(cli, linear, tmp_path):
    from ale_cli import api
    from ale_cli.errors import InputError

    model, data = linear
    store = tmp_path / "s.npz"
    assert cli("compute", model, data, "--exclude", "target", "-o", store).exit_code == 0
    with pytest.raises(InputError, match=r"^max_bins must be a whole number of at least 1, got 0$"):
        api.rhale(store, max_bins=0)
    with pytest.raises(InputError, match=r"^method must be one of auto, autodiff, finite-"):
        api.compute(model, data, out=tmp_path / "x.npz", method="fast")
    result = cli("compute", model, data, "-o", tmp_path / "x.npz", "--method", "fast")
    assert result.stderr.startswith("error: --method must be one of auto, autodiff, finite-")
    result = cli("rebin", store, "--binning", "kmeans", "-o", tmp_path / "x.json")
    assert result.stderr == "error: --binning must be one of uniform, quantile, got 'kmeans'\n"


def test_no_colour_codes_in_any_output(cli, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    for args in (["--help"], ["rhale", "--help"], ["rhale", "nope.npz", "-o", "x.json"]):
        result = cli(*args)
        assert "\x1b[" not in result.stdout + result.stderr


def test_compute_features_perturb_only_those_columns_of_a_tree_model(
    cli, sample_dir, tmp_path, monkeypatch
):
    """`ale compute MODEL DATA --exclude target --features bmi,bp` on the sample
    HistGradientBoosting (skops): the model sees every input, but the secants
    move only bmi and bp -- counted at the estimator -- and the store feeds rebin, rhale
    and plot."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    from ale_cli.store.npz import read_store

    seen: list[np.ndarray] = []
    real = HistGradientBoostingRegressor.predict

    def counting(self, X):  # type: ignore[no-untyped-def]
        seen.append(np.asarray(X, dtype=np.float64).copy())
        return real(self, X)

    monkeypatch.setattr(HistGradientBoostingRegressor, "predict", counting)
    data = sample_dir / "diabetes.csv"
    frame = pd.read_csv(data)
    inputs = [c for c in frame.columns if c != "target"]
    store = tmp_path / "hgb.npz"
    result = cli(
        "compute",
        sample_dir / "models/diabetes_hgb.skops",
        data,
        "--exclude",
        "target",
        "--features",
        "bmi,bp",
        "--trust",
        "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",
        "-o",
        store,
    )
    assert result.exit_code == 0, result.output
    rows = np.vstack(seen)
    assert rows.shape[1] == len(inputs) == 10
    # every evaluated row is a data row with at most bmi or bp moved (never both, never others)
    X = frame[inputs].to_numpy(dtype=np.float64)
    moved = rows[:, None, :] != X[None, :, :]  # (rows, data rows, columns)
    best = moved.sum(axis=2).argmin(axis=1)
    changed = moved[np.arange(len(rows)), best]
    assert changed.sum(axis=1).max() == 1
    assert set(np.flatnonzero(changed.any(axis=0))) == {inputs.index("bmi"), inputs.index("bp")}
    # secants (a piecewise-constant model): each moved value is a limit of the row's fine
    # bin (a row on a fine edge is "moved" to its own value there, so it looks unchanged)
    s = read_store(store)
    offsets = s.extra["fine_offsets"]
    for k, name in enumerate(("bmi", "bp")):
        j = inputs.index(name)
        fine = s.extra["fine_edges"][offsets[k] : offsets[k + 1]]
        values = rows[changed[:, j], j]
        assert values.size > len(X) and np.isin(values, fine).all()
    assert s.feature_names == ("bmi", "bp") and s.input_names == tuple(inputs)
    for command in ("rebin", "rhale"):
        out = tmp_path / f"{command}.json"
        assert cli(command, store, "-o", out).exit_code == 0
        assert [f.name for f in read_summary(out).features] == ["bmi", "bp"]
    plots = cli("plot", tmp_path / "rhale.json", "--store", store, "-o", tmp_path / "p", "-j", 1)
    assert plots.exit_code == 0, plots.output
