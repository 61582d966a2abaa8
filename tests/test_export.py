"""``ale export``: the long table against the summary's arrays, formats, stdin/stdout, errors."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ale_cli.cli import app
from ale_cli.core.second_order import pair_cells, second_order_from_cells
from ale_cli.errors import InputError
from ale_cli.outputs.tables import table_format
from ale_cli.store.npz import Store, write_store
from ale_cli.summary.export import summary_frame
from ale_cli.summary.model import InteractionSummary, Summary, read_summary, write_summary


def make_store(path: Path, X: np.ndarray, E: np.ndarray, names: list[str]) -> Path:
    meta = {"schema_version": 1, "feature_names": names, "n_rows": len(X)}
    write_store(
        path,
        Store(X=X, local_effects=E, prediction=E.sum(1), feature_names=tuple(names), meta=meta),
    )
    return path


def bin_counts(x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Counts by the definition (z_{k-1}, z_k], z_0 in the first bin."""
    counts = [((x > a) & (x <= b)).sum() for a, b in zip(edges[:-1], edges[1:], strict=True)]
    counts[0] += (x == edges[0]).sum()
    return np.array(counts)


@pytest.fixture(scope="module")
def rebinned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    """A DALE summary on fixed edges that leave rows of 'a' outside, plus a constant feature."""
    root = tmp_path_factory.mktemp("export")
    rng = np.random.default_rng(3)
    n = 800
    X = np.column_stack([rng.uniform(-1, 2, n), rng.normal(0, 1, n), np.full(n, 4.0)])
    E = np.column_stack([np.cos(X[:, 0]), 2 * X[:, 1] + rng.normal(0, 0.3, n), np.zeros(n)])
    store = make_store(root / "s.npz", X, E, ["a", "b", "const"])
    edges = root / "edges.json"
    edges.write_text(json.dumps({"a": [-0.5, 0.0, 0.7, 1.5], "b": [-4.0, -1.0, 0.0, 0.5, 4.0]}))
    out = root / "s.json"
    result = CliRunner().invoke(
        app,
        ["rebin", str(store), "--edges", str(edges), "-o", str(out)],
    )
    assert result.exit_code == 0, result.stderr
    return out, X


def kind(frame: pd.DataFrame, name: str, feature: str) -> pd.DataFrame:
    return frame[(frame["kind"] == name) & (frame["feature"] == feature)]


def floats(column: pd.Series) -> np.ndarray:
    return column.to_numpy(dtype=np.float64, na_value=np.nan)


# -- the table equals the summary ---------------------------------------------------------


def test_edge_and_bin_rows_are_the_summary_arrays(cli, rebinned, tmp_path):
    path, X = rebinned
    out = tmp_path / "effects.csv"
    result = cli("export", path, "-o", out)
    assert result.exit_code == 0, result.stderr
    summary = read_summary(path)
    table = pd.read_csv(out)
    assert set(table["estimator"]) == {"dale"}
    for j, name in enumerate(["a", "b"]):
        f = summary.feature(name)
        edges = kind(table, "edge", name)
        np.testing.assert_array_equal(edges["index"], np.arange(len(f.edges)))
        np.testing.assert_array_equal(edges["x"], f.edges)
        np.testing.assert_array_equal(edges["effect"], f.effect)
        np.testing.assert_array_equal(edges["std"], f.std)
        np.testing.assert_array_equal(edges["stderr"], f.stderr)
        np.testing.assert_allclose(edges["lower"], f.effect - 2 * f.stderr, rtol=1e-15)
        np.testing.assert_allclose(edges["upper"], f.effect + 2 * f.stderr, rtol=1e-15)
        assert edges[["left", "right", "count", "bin_effect"]].isna().all().all()

        bins = kind(table, "bin", name)
        np.testing.assert_array_equal(bins["index"], np.arange(f.n_bins))
        np.testing.assert_array_equal(bins["left"], f.edges[:-1])
        np.testing.assert_array_equal(bins["right"], f.edges[1:])
        np.testing.assert_array_equal(bins["bin_effect"], f.bin_effect)
        np.testing.assert_array_equal(bins["bin_std"], f.bin_std)
        np.testing.assert_array_equal(bins["bin_stderr"], f.bin_stderr)
        np.testing.assert_array_equal(bins["filled"], f.bin_filled)
        assert bins[["x", "effect", "std", "lower"]].isna().all().all()
        # counts from the data, by the bin definition, and the rows outside the edges
        inside = (X[:, j] >= f.edges[0]) & (X[:, j] <= f.edges[-1])
        np.testing.assert_array_equal(bins["count"], bin_counts(X[inside, j], f.edges))
        assert bins["count"].sum() == summary.n_rows - f.n_outside
    assert summary.feature("a").n_outside > 0


def test_not_estimable_features_have_no_rows_and_are_reported(cli, rebinned, tmp_path):
    path, _ = rebinned
    result = cli("export", path, "-o", tmp_path / "e.csv")
    assert result.exit_code == 0, result.stderr
    table = pd.read_csv(tmp_path / "e.csv")
    assert set(table["feature"]) == {"a", "b"}
    # 'a': 4 edges + 3 bins, 'b': 5 edges + 4 bins, each + 8 effect-size statistics
    assert result.stderr.strip().splitlines()[-1] == (
        f"export: 32 rows (a=15, b=17); 1 not estimable, left out (const) "
        f"-> '{tmp_path / 'e.csv'}' (csv)"
    )
    assert result.stdout == ""


def test_a_summary_with_nothing_estimable_gives_the_header_and_says_so(cli, rebinned, tmp_path):
    path, _ = rebinned
    data = json.loads(path.read_text())
    for feat in data["features"]:
        feat |= {"status": "not_estimable", "reason": "test", "n_bins": 0}
        feat |= {k: [] for k in ("edges", "counts", "bin_effect", "bin_std", "bin_stderr")}
        feat |= {k: [] for k in ("bin_filled", "effect", "std", "stderr")}
    (tmp_path / "none.json").write_text(json.dumps(data))
    result = cli("export", tmp_path / "none.json", "-o", tmp_path / "none.csv")
    assert result.exit_code == 0, result.stderr
    assert "export: 0 rows; 3 not estimable, left out (a, b, const)" in result.stderr
    table = pd.read_csv(tmp_path / "none.csv")
    assert len(table) == 0 and list(table.columns[:5]) == [
        "estimator",
        "feature",
        "kind",
        "index",
        "x",
    ]


def test_csv_and_parquet_give_the_same_frame(cli, rebinned, tmp_path):
    path, _ = rebinned
    for name in ("e.csv", "e.parquet", "e.pq"):
        assert cli("export", path, "-o", tmp_path / name).exit_code == 0
    assert cli("export", path, "-o", tmp_path / "t.dat", "--format", "parquet").exit_code == 0
    expected = summary_frame(read_summary(path))
    parquet = pd.read_parquet(tmp_path / "e.parquet")
    pd.testing.assert_frame_equal(parquet, expected)  # dtypes too: Int64, boolean
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "e.pq"), expected)
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "t.dat"), expected)
    csv = pd.read_csv(tmp_path / "e.csv")
    assert list(csv.columns) == list(expected.columns)
    for col in expected.columns:
        if col in ("estimator", "feature", "kind", "statistic"):
            assert csv[col].tolist() == expected[col].tolist(), col
        elif col == "filled":  # True/False, empty where the row is not a bin
            missing = expected[col].isna().to_numpy()
            np.testing.assert_array_equal(csv[col].isna(), missing)
            assert csv[col][~missing].tolist() == expected[col][~missing].tolist()
        else:  # floats read back exactly, empty entries as NaN
            np.testing.assert_array_equal(floats(csv[col]), floats(expected[col]), err_msg=col)
    # no temporary files left beside the outputs
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "e.csv",
        "e.parquet",
        "e.pq",
        "t.dat",
    ]


def test_stdout_and_stdin(rebinned, tmp_path):
    path, _ = rebinned
    runner = CliRunner()
    to_stdout = runner.invoke(app, ["export", str(path), "-o", "-"])
    assert to_stdout.exit_code == 0, to_stdout.stderr
    table = pd.read_csv(io.StringIO(to_stdout.stdout))
    assert to_stdout.stderr.strip().endswith("-> stdout (csv)")
    from_stdin = runner.invoke(
        app, ["export", "-", "-o", str(tmp_path / "e.csv")], input=path.read_text()
    )
    assert from_stdin.exit_code == 0, from_stdin.stderr
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "e.csv"), table)
    expected = summary_frame(read_summary(path))
    np.testing.assert_array_equal(floats(table["effect"]), floats(expected["effect"]))


# -- interactions and statistics ------------------------------------------------------------


def interaction_summary(path: Path) -> Summary:
    rng = np.random.default_rng(4)
    xa, xb = rng.uniform(0, 1, 300), rng.uniform(0, 2, 300)
    ea, eb = np.array([0.0, 0.3, 1.0]), np.array([0.0, 0.5, 1.0, 2.0])
    ia = np.clip(np.searchsorted(ea, xa) - 1, 0, 1)
    ib = np.clip(np.searchsorted(eb, xb) - 1, 0, 2)
    ia[xa > 0.9] = 1
    keep = ~((ia == 0) & (ib == 2))  # one empty cell, filled
    cells = pair_cells(ia[keep], ib[keep], (xa * xb)[keep], shape=(ea.size - 1, eb.size - 1))
    res = second_order_from_cells(cells, edges_a=ea, edges_b=eb, route="dale")
    pair = InteractionSummary(
        features=("u", "v"),
        estimator="dale",
        edges_a=ea,
        edges_b=eb,
        counts=res.counts,
        cell_effect=res.cell_effect,
        cell_std=res.cell_std,
        filled=res.filled,
        effect=res.effect,
        center_offset=res.center_offset,
    )
    lost = InteractionSummary(
        features=("u", "k"), estimator="dale", status="not_estimable", reason="constant"
    )
    summary = Summary(
        estimator="dale",
        params={},
        store={},
        n_rows=300,
        features=(),
        interactions=(pair, lost),
    )
    write_summary(path, summary)
    return summary


def test_interaction_cells_and_corners(cli, tmp_path):
    summary = interaction_summary(tmp_path / "i.json")
    pair = summary.interactions[0]
    result = cli("export", tmp_path / "i.json", "-o", tmp_path / "i.parquet")
    assert result.exit_code == 0, result.stderr
    assert "1 not estimable, left out (u,k)" in result.stderr
    table = pd.read_parquet(tmp_path / "i.parquet")
    assert set(table["kind"]) == {"cell", "corner"} and set(table["feature"]) == {"u,v"}
    cells = kind(table, "cell", "u,v")
    ka, kb = pair.shape
    k, m = np.divmod(np.arange(ka * kb), kb)
    np.testing.assert_array_equal(cells["index_a"], k)
    np.testing.assert_array_equal(cells["index_b"], m)
    np.testing.assert_array_equal(cells["x_a_left"], pair.edges_a[k])
    np.testing.assert_array_equal(cells["x_a_right"], pair.edges_a[k + 1])
    np.testing.assert_array_equal(cells["x_b_left"], pair.edges_b[m])
    np.testing.assert_array_equal(cells["x_b_right"], pair.edges_b[m + 1])
    np.testing.assert_array_equal(cells["count"], pair.counts.ravel())
    np.testing.assert_array_equal(cells["cell_effect"], pair.cell_effect.ravel())
    np.testing.assert_array_equal(floats(cells["cell_std"]), pair.cell_std.ravel())
    np.testing.assert_array_equal(cells["filled"], pair.filled.ravel())
    assert pair.filled.sum() == 1 and cells["count"].sum() == pair.counts.sum()
    corners = kind(table, "corner", "u,v")
    k, m = np.divmod(np.arange((ka + 1) * (kb + 1)), kb + 1)
    np.testing.assert_array_equal(corners["x_a"], pair.edges_a[k])
    np.testing.assert_array_equal(corners["x_b"], pair.edges_b[m])
    np.testing.assert_array_equal(corners["effect"], pair.effect.ravel())


def test_statistics_of_a_feature_become_stat_rows(rebinned, tmp_path):
    path, _ = rebinned
    data = json.loads(path.read_text())
    data["features"][0]["statistics"] = {"aled": 0.25, "rank": 2, "naled": None}
    table = summary_frame(Summary.from_dict(data))
    stats = kind(table, "stat", "a")
    assert stats["statistic"].tolist() == ["aled", "rank", "naled"]
    np.testing.assert_array_equal(floats(stats["value"]), [0.25, 2.0, np.nan])
    # the other rows are those of the summary without statistics
    for feature in data["features"]:
        feature.pop("statistics", None)
    plain = summary_frame(Summary.from_dict(data))
    assert "stat" not in set(plain["kind"])
    rest = table[table["kind"] != "stat"].drop(columns=["statistic", "value"])
    pd.testing.assert_frame_equal(rest.reset_index(drop=True), plain)


# -- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("-o", "{tmp}/e.txt"),
            "cannot tell the table format of '{tmp}/e.txt' from its extension "
            "(.csv, .parquet, .pq); give --format csv or parquet",
        ),
        (
            ("-o", "-", "--format", "parquet"),
            "--out '-' (standard output) takes CSV only; write parquet to a file",
        ),
        (("-o", "{tmp}/e.csv", "@missing"), "summary '{tmp}/missing.json' does not exist"),
        (("-o", "{tmp}/e.csv", "@notjson"), "summary '{tmp}/bad.json' is not valid JSON: "),
        (
            ("-o", "{tmp}/e.csv", "@notsummary"),
            "'{tmp}/other.json' is not an ale summary (no 'estimator'/'features')",
        ),
    ],
)
def test_errors_are_one_line_with_exit_code_2(cli, rebinned, tmp_path, args, message):
    path, _ = rebinned
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "other.json").write_text('{"a": 1}')
    sources = {"@missing": "missing.json", "@notjson": "bad.json", "@notsummary": "other.json"}
    source = str(path)
    argv = []
    for a in args:
        if a in sources:
            source = str(tmp_path / sources[a])
        else:
            argv.append(a.replace("{tmp}", str(tmp_path)))
    result = cli("export", source, *argv)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: " + message.replace("{tmp}", str(tmp_path)))
    assert not (tmp_path / "e.csv").exists()


def test_library_errors_name_the_parameter():
    with pytest.raises(InputError, match=r"^cannot tell .* give fmt csv or parquet$"):
        table_format("effects.txt")
    with pytest.raises(InputError, match=r"^fmt must be csv or parquet, got 'xlsx'$"):
        table_format("effects.csv", "xlsx")
    with pytest.raises(InputError, match=r"^out '-' \(standard output\) takes CSV only"):
        table_format("-", "parquet")


def test_help_ends_with_an_example(cli):
    result = cli("export", "--help")
    assert result.exit_code == 0
    assert result.stdout.rstrip().split("\n\n")[-1].strip().startswith("Example: ale export ")
    assert "effect -/+ 2 stderr" in result.stdout


def test_module_examples_run():
    import doctest

    import ale_cli.summary.export

    result = doctest.testmod(ale_cli.summary.export)
    assert result.attempted > 0 and result.failed == 0
