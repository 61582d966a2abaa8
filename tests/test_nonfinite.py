"""Models that give NaN, infinity, integers or a constant: every row checked, each case
diagnosed for what it is, and --drop-nonfinite dropping and counting rows, never silently."""

from __future__ import annotations

import json
import pickle
from functools import partial
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from ale_cli.store.npz import read_store

N = 400
BAD = [10, 57, 58, 301]  # rows where column a is exactly 0 or 100


class SqrtAbs(nn.Module):
    """Finite predictions; the gradient of sqrt(|a|) at a = 0 is not finite."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sqrt(torch.abs(x[:, 0])) + 2.0 * x[:, 1]


class LogGap(nn.Module):
    """log(50 - a): NaN predictions where a = 100, finite elsewhere."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(50.0 - x[:, 0]) + x[:, 1]


class Integer(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x[:, 0] > 0).to(torch.int64)


class Constant(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.full((x.shape[0],), 3.0, dtype=x.dtype)


class Wide(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(5, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x)


class Raises(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if bool((x[:, 0] > -1000.0).any()):
            raise ValueError("this model refuses every row")
        return self.lin(x)


def script(module: nn.Module, path: Path) -> Path:
    torch.jit.script(module).save(str(path))
    return path


def data_with(tmp_path: Path, value: float, name: str) -> tuple[Path, np.ndarray]:
    rng = np.random.default_rng(3)
    X = rng.uniform(-2, 2, size=(N, 3))
    X[BAD, 0] = value
    path = tmp_path / name
    lines = ["a,b,c", *(",".join(repr(float(v)) for v in row) for row in X)]
    path.write_text("\n".join(lines) + "\n")
    return path, X


@pytest.fixture()
def zeros(tmp_path: Path) -> tuple[Path, np.ndarray]:
    return data_with(tmp_path, 0.0, "zeros.csv")


@pytest.fixture()
def hundreds(tmp_path: Path) -> tuple[Path, np.ndarray]:
    return data_with(tmp_path, 100.0, "hundreds.csv")


ROWS = "4 rows (rows 10, 57, 58, 301)"


def one_line(result) -> str:  # type: ignore[no-untyped-def]
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def test_nan_gradients_on_four_rows_exit_1_naming_them(cli, tmp_path: Path, zeros):
    data, _ = zeros
    model = script(SqrtAbs(), tmp_path / "m.pt")
    out = tmp_path / "s.npz"
    result = cli("compute", model, data, "-o", out, "-q")
    assert result.exit_code == 1
    assert one_line(result) == (
        f"error: model '{model}' gave NaN or infinite local effects on {ROWS}; pass "
        "--drop-nonfinite to leave those rows out, or fix the model there"
    )
    assert not out.exists()


def test_nan_predictions_on_the_first_rows_are_not_called_randomness(cli, tmp_path: Path):
    data, _ = data_with(tmp_path, 100.0, "d.csv")
    text = data.read_text().splitlines()
    first_bad = text[1 + BAD[0]]
    data.write_text("\n".join([text[0], first_bad, *text[1:]]) + "\n")  # a bad row first
    model = script(LogGap(), tmp_path / "m.pt")
    result = cli("compute", model, data, "-o", tmp_path / "s.npz", "-q")
    assert result.exit_code == 1
    line = one_line(result)
    assert "gave NaN or infinite predictions on 5 rows (rows 0, 11, 58, 59, 302)" in line
    assert "dropout" not in line and "deterministic" not in line


def test_drop_nonfinite_counts_the_rows_in_the_result_and_the_store(cli, tmp_path: Path, zeros):
    data, X = zeros
    model = script(SqrtAbs(), tmp_path / "m.pt")
    out = tmp_path / "s.npz"
    result = cli("compute", model, data, "-o", out, "--drop-nonfinite", "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["counts"]["rows"] == N - 4
    assert report["counts"]["rows_nonfinite"] == 4
    note = (
        f"dropped 4 rows where model '{model}' gave NaN or infinite values (rows 10, 57, 58, 301)"
    )
    assert note in report["notes"]
    store = read_store(out)
    keep = np.setdiff1d(np.arange(N), BAD)
    np.testing.assert_array_equal(store.X, X[keep])
    assert store.meta["data"]["rows_nonfinite"] == 4
    assert store.meta["n_rows"] == N - 4
    # the kept rows' effects are the analytic gradient: sign(a) / (2 sqrt|a|), and 2
    a = X[keep, 0]
    np.testing.assert_allclose(store.local_effects[:, 0], np.sign(a) / (2 * np.sqrt(np.abs(a))))
    np.testing.assert_allclose(store.local_effects[:, 1], 2.0)
    summary = tmp_path / "r.json"
    rebin = cli("rebin", out, "-o", summary, "-q")
    assert rebin.exit_code == 0, rebin.stderr
    data_part = json.loads(summary.read_text())["store"]["data"]
    assert data_part["rows_nonfinite"] == 4


def test_nan_predictions_exit_1_in_compute_and_classic(cli, tmp_path: Path, hundreds):
    data, _ = hundreds
    model = script(LogGap(), tmp_path / "m.pt")
    for argv in (
        ("compute", model, data, "-o", tmp_path / "s.npz", "-q"),
        ("classic", model, data, "-o", tmp_path / "c.json", "-q"),
        ("interact", model, data, "--pair", "a,b", "-o", tmp_path / "i.json", "-q"),
    ):
        result = cli(*argv)
        assert result.exit_code == 1, (argv[0], result.stderr)
        assert f"gave NaN or infinite predictions on {ROWS}" in one_line(result)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hundreds.csv", "m.pt"]


@pytest.mark.parametrize("engine", ["local", "dask"])
def test_a_refusal_counts_the_rows_of_every_chunk_and_part(
    cli, tmp_path: Path, hundreds, engine, request
):
    """The bad rows are in chunks 0, 1 and 6 of 50 rows (local) or in both files of a
    dataset (Dask parts): the refusal names all four whatever the first failing chunk."""
    data, X = hundreds
    model = script(LogGap(), tmp_path / "m.pt")
    if engine == "local":
        where = [data, "--chunk-rows", "50"]
    else:
        import pandas as pd

        (tmp_path / "ds").mkdir()
        for i, rows in enumerate((slice(0, 200), slice(200, N))):
            frame = pd.DataFrame(X[rows], columns=["a", "b", "c"])
            frame.to_parquet(tmp_path / "ds" / f"part-{i}.parquet")
        where = [
            tmp_path / "ds",
            "--engine",
            "dask",
            "--scheduler",
            request.getfixturevalue("cluster"),
        ]
    for argv in (
        ("compute", model, where[0], "-o", tmp_path / "s.npz", "-q"),
        ("classic", model, where[0], "-o", tmp_path / "c.json", "-q"),
        ("interact", model, where[0], "--pair", "a,b", "-o", tmp_path / "i.json", "-q"),
    ):
        result = cli(*argv, *where[1:])
        assert result.exit_code == 1, (argv[0], result.stderr)
        assert f"gave NaN or infinite predictions on {ROWS}" in one_line(result)
    assert not any(p.name.startswith(("s.", "c.", "i.")) for p in tmp_path.iterdir())


def test_classic_drops_the_rows_and_counts_them(cli, tmp_path: Path, hundreds):
    data, X = hundreds
    model = script(LogGap(), tmp_path / "m.pt")
    out = tmp_path / "c.json"
    result = cli("classic", model, data, "-o", out, "--drop-nonfinite", "--features", "b")
    assert result.exit_code == 0, result.stderr
    assert "dropped 4 rows where model" in result.stderr
    summary = json.loads(out.read_text())
    assert summary["n_rows"] == N - 4
    assert summary["store"]["data"]["rows_nonfinite"] == 4
    (feature,) = summary["features"]
    assert sum(feature["counts"]) == N - 4
    # the model is a + ... + b in b: the classic ALE slope in b is 1
    edges, effect = np.array(feature["edges"]), np.array(feature["effect"])
    np.testing.assert_allclose(np.diff(effect) / np.diff(edges), 1.0, rtol=1e-9)


def test_integer_output_is_named_as_such(cli, tmp_path: Path, zeros):
    data, _ = zeros
    model = script(Integer(), tmp_path / "m.pt")
    result = cli("compute", model, data, "-o", tmp_path / "s.npz", "-q")
    assert result.exit_code == 2
    line = one_line(result)
    assert f"model '{model}' returns integer values (int64)" in line
    assert "no gradient" in line and "--output proba:CLASS" in line and "'ale classic'" in line
    assert "does not accept" not in line and "failed" not in line
    # classic ALE needs no gradient: it explains the same model
    classic = cli("classic", model, data, "-o", tmp_path / "c.json", "-q", "--bins", "4")
    assert classic.exit_code == 0, classic.stderr


def test_constant_model_has_zero_effects(cli, tmp_path: Path, zeros):
    data, _ = zeros
    model = script(Constant(), tmp_path / "m.pt")
    out = tmp_path / "s.npz"
    result = cli("compute", model, data, "-o", out, "-q")
    assert result.exit_code == 0, result.stderr
    store = read_store(out)
    np.testing.assert_array_equal(store.local_effects, 0.0)
    np.testing.assert_array_equal(store.prediction, 3.0)
    summary = tmp_path / "r.json"
    assert cli("rebin", out, "-o", summary, "-q").exit_code == 0
    for feature in json.loads(summary.read_text())["features"]:
        assert feature["status"] == "ok"
        np.testing.assert_array_equal(feature["effect"], 0.0)


@pytest.mark.parametrize(
    ("module", "code", "message"),
    [
        (Wide, 2, "does not accept rows of 3 features"),
        (Raises, 1, "failed on the first rows of the data: this model refuses every row"),
    ],
    ids=["wrong-width", "raises"],
)
def test_width_and_failure_are_told_apart(cli, tmp_path: Path, zeros, module, code, message):
    data, _ = zeros
    model = script(module(), tmp_path / "m.pt")
    result = cli("compute", model, data, "-o", tmp_path / "s.npz", "-q")
    assert result.exit_code == code
    line = one_line(result)
    assert message in line
    if module is Wide:
        assert line.endswith(
            "its first layer takes 5 features; select the model's inputs with --inputs or --exclude"
        )
    else:
        assert "does not accept" not in line and "features" not in line


def test_dropout_left_on_is_named_from_the_graph(cli, tmp_path: Path, zeros):
    class Drop(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.drop = nn.Dropout(0.5)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.drop(x).sum(dim=1)

    data, _ = zeros
    traced = torch.jit.trace(Drop().train(), torch.ones(4, 3), check_trace=False)
    traced.save(str(tmp_path / "m.pt"))
    result = cli("compute", tmp_path / "m.pt", data, "-o", tmp_path / "s.npz", "-q")
    assert result.exit_code == 2
    assert "its graph calls aten::dropout" in one_line(result)


# -- scikit-learn: plain estimators whose output is NaN, integers or constant -----------------


def pickled(estimator, path: Path) -> Path:  # type: ignore[no-untyped-def]
    path.write_bytes(pickle.dumps(estimator))
    return path


def test_sklearn_nan_predictions_exit_1_or_dropped(cli, tmp_path: Path, hundreds):
    from sklearn.compose import TransformedTargetRegressor
    from sklearn.linear_model import LinearRegression

    data, X = hundreds
    y = 60.0 - X[:, 0] + X[:, 1]
    est = TransformedTargetRegressor(
        LinearRegression(), func=np.positive, inverse_func=np.log, check_inverse=False
    )
    est.fit(X, y)
    est.regressor_.intercept_ -= 10.0  # log(50 - a + b): NaN at a = 100
    model = pickled(est, tmp_path / "m.pkl")
    out = tmp_path / "s.npz"
    result = cli("compute", model, data, "-o", out, "-q", "--trust-pickle")
    assert result.exit_code == 1
    assert f"gave NaN or infinite predictions on {ROWS}" in one_line(result)
    dropped = cli("compute", model, data, "-o", out, "-q", "--trust-pickle", "--drop-nonfinite")
    assert dropped.exit_code == 0, dropped.stderr
    assert read_store(out).meta["data"]["rows_nonfinite"] == 4


def test_sklearn_integer_and_constant_outputs(cli, tmp_path: Path, zeros):
    from sklearn.compose import TransformedTargetRegressor
    from sklearn.dummy import DummyRegressor
    from sklearn.linear_model import LinearRegression

    data, X = zeros
    integer = TransformedTargetRegressor(
        LinearRegression(),
        func=np.negative,
        inverse_func=partial(np.asarray, dtype=np.int64),
        check_inverse=False,
    ).fit(X, X[:, 0] * 10)
    model = pickled(integer, tmp_path / "int.pkl")
    # by finite differences (a step given) an integer output has no local effects
    args = ("-o", tmp_path / "s.npz", "-q", "--trust-pickle")
    result = cli("compute", model, data, *args, "--step", "0.01")
    assert result.exit_code == 2
    assert f"model '{model}' returns integer values (int64)" in one_line(result)
    # by default its steps are found (no small step moves it): secants, as for a tree
    result = cli("compute", model, data, *args)
    assert result.exit_code == 0, result.stderr
    step = read_store(tmp_path / "s.npz").meta["method_details"]["step"]
    assert (step["rule"], step["zero_share"]) == ("zero share on a sample", 1.0)

    constant = pickled(DummyRegressor().fit(X, X[:, 0]), tmp_path / "const.pkl")
    out = tmp_path / "c.npz"
    result = cli("compute", constant, data, "-o", out, "-q", "--trust-pickle")
    assert result.exit_code == 0, result.stderr
    np.testing.assert_array_equal(read_store(out).local_effects, 0.0)


class LogGapLevels(nn.Module):
    """log(50 - a) + 3 c: NaN predictions where a = 100; a jump of 3 per level of c."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(50.0 - x[:, 0]) + 3.0 * x[:, 2]


def test_classic_drops_the_rows_from_a_feature_estimated_per_level(cli, tmp_path: Path):
    rng = np.random.default_rng(5)
    X = np.column_stack([rng.uniform(-2, 2, N), rng.uniform(-2, 2, N), rng.integers(0, 3, N)])
    X[BAD, 0] = 100.0
    data = tmp_path / "levels.csv"
    np.savetxt(data, X, delimiter=",", header="a,b,c", comments="")
    model = script(LogGapLevels(), tmp_path / "m.pt")
    argv = ("classic", model, data, "--features", "c", "--discrete", "c", "-q")
    refused = cli(*argv, "-o", tmp_path / "r.json")
    assert refused.exit_code == 1 and f"NaN or infinite predictions on {ROWS}" in refused.stderr
    out = tmp_path / "c.json"
    result = cli(*argv, "-o", out, "--drop-nonfinite")
    assert result.exit_code == 0, result.stderr
    (feature,) = json.loads(out.read_text())["features"]
    kept = np.delete(X[:, 2], BAD)
    np.testing.assert_array_equal(feature["counts"], np.bincount(kept.astype(int), minlength=3))
    np.testing.assert_allclose(np.diff(feature["effect"]), 3.0, rtol=1e-9)
