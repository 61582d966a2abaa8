"""``ale regional``: known answers of the regional-effects papers, a per-level splitter,
depth 2, chunk invariance, the summary contract and the command line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_streaming_estimators import chunked_store

from ale_cli.core.regional import (
    THRESHOLD,
    Condition,
    Splitter,
    node_index,
    sampled,
    split_cells,
    split_scores,
)
from ale_cli.errors import InputError
from ale_cli.estimators.regional import RegionalRequest, regional
from ale_cli.io.jsonio import dumps
from ale_cli.store.npz import Store
from ale_cli.summary.model import read_summary
from ale_cli.summary.regional import RegionalFeature, RegionalSummary, read_regional

NAMES = ("x1", "x2", "x3")


def paper_rows(n: int = 20000, seed: int = 0, noise: float = 0.2) -> tuple[np.ndarray, np.ndarray]:
    """``y = 3 x1 1[x3 > 0] - 3 x1 1[x3 <= 0] + x3``, x ~ U(-1, 1)^3: the derivatives, with
    Gaussian noise of std ``noise`` on each (a model's local effects are never exact)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, 3))
    E = np.column_stack([np.where(X[:, 2] > 0, 3.0, -3.0), np.zeros(n), np.ones(n)])
    return X, E + rng.normal(scale=noise, size=E.shape)


def memory(X: np.ndarray, E: np.ndarray, names=NAMES, **meta) -> Store:  # type: ignore[no-untyped-def]
    meta = {"schema_version": 3, "n_rows": len(X), **meta}
    return Store(X=X, local_effects=E, prediction=E.sum(1), feature_names=tuple(names), meta=meta)


def slope(node) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """A leaf's mean slope over its range and the slope's standard error."""
    r = node.record
    span = r.edges[-1] - r.edges[0]
    return (r.effect[-1] - r.effect[0]) / span, r.stderr[-1] / span


@pytest.fixture(scope="module")
def paper_data() -> tuple[np.ndarray, RegionalSummary]:
    X, E = paper_rows(n=100_000, noise=0.1)
    return X, regional(RegionalRequest(memory(X, E), max_depth=1)).summary


@pytest.fixture(scope="module")
def paper(paper_data: tuple[np.ndarray, RegionalSummary]) -> RegionalSummary:
    return paper_data[1]


def test_x1_is_split_on_x3_at_zero_with_slopes_plus_and_minus_three(paper_data):  # type: ignore[no-untyped-def]
    X, paper = paper_data
    x1 = paper.feature("x1")
    assert x1.status == "split"
    root = x1.nodes[0]
    assert root.split is not None and root.split.input == "x3"
    t = root.split.value
    assert abs(t) <= 0.1  # one candidate step: the 20-quantiles of U(-1, 1)
    assert root.split.drop > 0.9 and x1.drop == root.split.drop
    assert [leaf.label for leaf in x1.leaves] == [f"x3 <= {t:.4g}", f"x3 > {t:.4g}"]
    for leaf, inside, sign in ((x1.leaves[0], X[:, 2] <= t, -1), (x1.leaves[1], X[:, 2] > t, 1)):
        assert leaf.rows == inside.sum()
        # the rows between t and 0 have the other slope: expected 3 (1 - 2 p) on its side
        p = np.mean((X[inside, 2] > 0) != (sign > 0))
        b, se = slope(leaf)
        assert 0 < se < 0.01
        assert abs(b - sign * 3.0 * (1 - 2 * p)) <= 2 * se


def test_x3_and_x2_get_no_split_and_say_so(paper: RegionalSummary):
    for name in ("x2", "x3"):
        f = paper.feature(name)
        assert f.status == "no_split" and len(f.nodes) == 1
        assert "no split" in (f.note or "")
        assert f.drop == 0.0


def test_root_heterogeneity_is_rhales_std_on_its_grid(paper_data):  # type: ignore[no-untyped-def]
    """H of all rows = sqrt(sum_k dz_k^2 s_k^2) over the 50 uniform cells of the RHALE grid."""
    X, paper = paper_data
    _, E = paper_rows(n=100_000, noise=0.1)
    for j, f in enumerate(paper.regions):
        z = np.linspace(X[:, j].min(), X[:, j].max(), 51)
        k = np.clip(np.searchsorted(z, X[:, j], side="left") - 1, 0, 49)
        var = np.array([np.var(E[k == i, j], ddof=1) for i in range(50)])
        np.testing.assert_allclose(
            f.heterogeneity, np.sqrt(np.sum(np.diff(z) ** 2 * var)), rtol=1e-9
        )


def test_depth_two_splits_the_second_region_again():
    rng = np.random.default_rng(3)
    n = 20000
    X = rng.uniform(-1, 1, (n, 3))
    for j in (1, 2):  # symmetric columns: the median threshold separates the signs exactly
        half = rng.uniform(0, 1, n // 2)
        X[:, j] = rng.permutation(np.concatenate([half, -half]))
    e1 = np.where(X[:, 2] <= 0, -3.0, np.where(X[:, 1] > 0, 5.0, 1.0))
    E = np.column_stack([e1, np.zeros(n), np.ones(n)]) + rng.normal(scale=0.1, size=(n, 3))
    x1 = regional(RegionalRequest(memory(X, E), features=("x1",))).summary.feature("x1")
    root = x1.nodes[0]
    assert root.split is not None and root.split.input == "x3"
    below, above = (x1.nodes[i] for i in root.split.children)
    assert below.split is None and above.split is not None and above.split.input == "x2"
    assert above.split.value < 0 and not ((X[:, 1] > above.split.value) & (X[:, 1] < 0)).any()
    assert {len(leaf.conditions) for leaf in x1.leaves} == {1, 2}
    slopes = sorted(slope(leaf)[0] for leaf in x1.leaves)
    np.testing.assert_allclose(slopes, [-3.0, 1.0, 5.0], atol=0.1)
    assert x1.drop > 0.9


def test_max_depth_one_stops_after_one_split():
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, (5000, 3))
    e1 = np.where(X[:, 2] <= 0, -3.0, np.where(X[:, 1] > 0, 5.0, 1.0))
    E = np.column_stack([e1, np.zeros(5000), np.ones(5000)])
    x1 = regional(RegionalRequest(memory(X, E), max_depth=1)).summary.feature("x1")
    assert len(x1.splits) == 1 and len(x1.leaves) == 2


def test_a_per_level_input_is_split_one_level_against_the_rest():
    """group in {0, 1, 2} held per level; x1's effect is 2 in group 1, -1 elsewhere: no
    threshold isolates level 1, one level against the rest does."""
    rng = np.random.default_rng(5)
    n = 9000
    X = np.column_stack([rng.uniform(-1, 1, n), rng.integers(0, 3, n).astype(float)])
    E = np.column_stack([np.where(X[:, 1] == 1, 2.0, -1.0), np.zeros(n)])
    E += rng.normal(scale=0.1, size=E.shape)
    store = memory(X, E, names=("x1", "group"), categorical_features=["group"])
    out = regional(RegionalRequest(store)).summary
    x1 = out.feature("x1")
    split = x1.nodes[0].split
    assert split is not None and split.kind == "level" and split.value == 1.0
    assert [c.text for c in split.conditions] == ["group == 1", "group != 1"]
    assert split.drop > 0.9
    assert out.feature("group").status == "not_estimable"


def test_min_rows_and_min_drop_forbid_splits():
    X, E = paper_rows(n=4000)
    store = memory(X, E)
    for search_rows in (None, 1000):  # the splits chosen on all rows, or on a sample
        asked = RegionalRequest(store, features=("x1",), min_drop=0.99, search_rows=search_rows)
        none = regional(asked).summary
        assert none.feature("x1").status == "no_split"
        assert (
            none.feature("x1").note
            == "no split lowers the heterogeneity by at least min_drop; one region"
        )
    tiny = regional(RegionalRequest(store, features=("x1",), min_rows=2100)).summary
    assert tiny.feature("x1").status == "no_split"  # no split leaves 2100 rows on each side
    assert (
        tiny.feature("x1").note
        == "no candidate split leaves min_rows rows on both sides; one region"
    )
    one = regional(RegionalRequest(store, features=("x1",), candidates=1)).summary
    assert one.feature("x1").status == "no_split"  # no threshold at c / 1, c = 1..0
    assert one.feature("x1").note == (
        "no candidate split on another input (thresholds need candidates of at least 2); one region"
    )


def test_finite_difference_noise_is_not_split_and_a_real_interaction_is(tmp_path: Path):
    """A linear model's finite differences vary only by rounding (H ~ 1e-11): no split; the
    effect of a of a * (b > 0) is 0 or 1 by the sign of b: split there."""
    import pandas as pd
    from sklearn.linear_model import LinearRegression

    from ale_cli import api

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(500, 3)), columns=["a", "b", "c"])
    linear = LinearRegression().fit(frame, 3 * frame.a - 2 * frame.b + 0.5 * frame.c)
    assert api.compute(linear, frame, out=tmp_path / "l.npz").method == "finite-differences"
    flat = regional(RegionalRequest(tmp_path / "l.npz")).summary
    for r in flat.regions:
        assert r.status == "no_split" and r.drop == 0.0
        assert 0 < r.heterogeneity < 1e-9
        assert r.note.startswith("the heterogeneity is below the rounding noise of the local")

    def gated(X: np.ndarray) -> np.ndarray:
        return X[:, 0] * (X[:, 1] > 0)

    assert api.compute(gated, frame, out=tmp_path / "g.npz").method == "finite-differences"
    split = regional(RegionalRequest(tmp_path / "g.npz", features=("a",))).summary.regions[0]
    assert split.status == "split" and split.nodes[0].split.input == "b"
    assert abs(split.nodes[0].split.value) < 0.2 and split.drop > 0.9


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_rounding_floor_is_of_the_models_dtype_and_step(dtype: str):
    """x1's effects 1 +- 1e-5 by the sign of x3: below float32's rounding at a step of 0.01
    (8 eps max|f| / h = 9.5e-5 per effect), far above float64's."""
    rng = np.random.default_rng(4)
    X = rng.uniform(-1, 1, (2000, 3))
    E = np.column_stack([1 + 1e-5 * np.sign(X[:, 2]), np.zeros(2000), np.zeros(2000)])
    details = {"dtype": dtype, "step": {"absolute": [0.01, 0.01, 0.01]}}
    x1 = regional(RegionalRequest(memory(X, E, method_details=details), features=("x1",)))
    got = x1.summary.regions[0]
    if dtype == "float64":
        assert got.status == "split" and got.nodes[0].split.input == "x3"
        return
    span = X[:, 0].max() - X[:, 0].min()
    floor = 8 * 2.0**-23 * np.abs(E.sum(1)).max() / 0.01 * span / 50 * np.sqrt(50)
    assert got.status == "no_split"
    assert got.note == (
        f"the heterogeneity is below the rounding noise of the local effects ({floor:.2g}); "
        "one region"
    )


def test_fixed_bins_give_leaf_records_on_those_bins():
    X, E = paper_rows(n=4000)
    out = regional(RegionalRequest(memory(X, E), features=("x1",), bins=8)).summary
    for leaf in out.feature("x1").leaves:
        assert leaf.record.n_bins == 8
        assert leaf.record.counts.sum() == leaf.rows


@given(
    cuts=st.lists(st.integers(1, 1199), max_size=6),
    seed=st.integers(0, 3),
)
@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_chunks_do_not_change_the_result(tmp_path: Path, cuts: list[int], seed: int):
    X, E = paper_rows(n=1200, seed=seed)
    path = chunked_store(tmp_path / f"s{seed}-{len(cuts)}-{sum(cuts)}.npz", X, E, cuts, NAMES)
    for rows in ("all", 600):  # every row, and a search sample (chosen by row index)
        whole = regional(RegionalRequest(memory(X, E), search_rows=rows)).summary
        same_regions(whole, regional(RegionalRequest(path, search_rows=rows)).summary, 1e-9)


def same_regions(a: RegionalSummary, b: RegionalSummary, tol: float) -> None:
    """The same regions (labels, rows), heterogeneities and leaf curves, to ``tol``."""
    for x, y in zip(a.regions, b.regions, strict=True):
        assert [(n.label, n.rows) for n in x.nodes] == [(n.label, n.rows) for n in y.nodes]
        np.testing.assert_allclose(
            [n.heterogeneity for n in x.nodes],
            [n.heterogeneity for n in y.nodes],
            rtol=tol,
            atol=tol,
        )
        for nx, ny in zip(x.leaves, y.leaves, strict=True):
            np.testing.assert_allclose(nx.record.effect, ny.record.effect, rtol=tol, atol=1e-12)


def test_split_scores_equal_a_direct_computation():
    """The scores from merged cells against masks and np.var on the rows."""
    rng = np.random.default_rng(2)
    n = 500
    x, e = rng.uniform(size=n), rng.normal(size=n)
    bins = rng.integers(0, 3, n)
    s = Splitter("a", 0, THRESHOLD, np.array([0.3, 0.6]))
    off = s.buckets(x)[None, :].astype(np.intp) * 3
    cells = split_cells(np.zeros(n, int), off, bins, e - 0.5, shape=(1, 1, 3, 3))  # any shift
    dz = np.array([0.5, 1.0, 2.0])
    scores = split_scores(
        cells, shape=(1, 3, 3), dz=dz, kinds=(THRESHOLD,), n_candidates=(2,), min_rows=1
    )

    def h(mask: np.ndarray) -> float:
        v = [np.var(e[mask & (bins == k)], ddof=1) for k in range(3)]
        return float(np.sqrt(np.sum(dz**2 * np.array(v))))

    every = np.ones(n, bool)
    np.testing.assert_allclose(scores.before, h(every), rtol=1e-12)
    for c, t in enumerate(s.values):
        left = x <= t
        want = (left.sum() * h(left) + (~left).sum() * h(~left)) / n
        np.testing.assert_allclose(scores.after[0, c], want, rtol=1e-12)
    assert np.isinf(scores.after[0, 2])  # no third threshold


def test_summary_round_trips_and_reads_as_a_summary(paper: RegionalSummary, tmp_path: Path):
    from ale_cli.summary.regional import write_regional

    path = tmp_path / "regional.json"
    write_regional(path, paper)
    back = read_regional(path)
    assert dumps(back.to_dict(timestamp=False)) == dumps(paper.to_dict(timestamp=False))
    assert read_summary(path).estimator == "regional"  # plots and audits read the global records
    assert isinstance(back.regions[0], RegionalFeature)


def test_a_damaged_leaf_record_is_named(paper: RegionalSummary, tmp_path: Path):
    from ale_cli.summary.regional import write_regional

    path = tmp_path / "regional.json"
    write_regional(path, paper)
    data = json.loads(path.read_text())
    data["regions"][0]["nodes"][1]["record"]["effect"].append(1.0)
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"feature 'x1', region 1, field 'effect'"):
        read_regional(path)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_depth": 0}, "max_depth must be a whole number of at least 1, got 0"),
        ({"min_drop": 1.5}, "min_drop must be a number from 0 to below 1, got 1.5"),
        ({"min_rows": 1}, "min_rows must be a whole number of at least 2, got 1"),
        ({"candidates": 0}, "candidates must be a whole number of at least 1, got 0"),
        ({"search_rows": "most"}, "search_rows must be a number of rows or 'all', got 'most'"),
        ({"search_rows": 1}, "search_rows must be a whole number of at least 2, got 1"),
    ],
)
def test_bad_options_are_named(options: dict, message: str):
    X, E = paper_rows(n=100)
    with pytest.raises(InputError, match=message):
        RegionalRequest(memory(X, E), **options)


def test_cli_writes_a_regional_summary(cli, tmp_path: Path):  # type: ignore[no-untyped-def]
    X, E = paper_rows(n=4000)
    store = chunked_store(tmp_path / "s.npz", X, E, [1000], NAMES)
    out = tmp_path / "regional.json"
    result = cli("regional", store, "--features", "x1,x3", "-o", out)
    assert result.exit_code == 0, result.stderr
    assert "regional: 2 features (1 split)" in result.stdout
    got = read_regional(out)
    assert got.feature("x1").nodes[0].split.input == "x3"
    result = cli("regional", store, "--min-drop", "2", "-o", tmp_path / "r2.json")
    assert result.exit_code == 2 and "--min-drop" in result.stderr
    assert not (tmp_path / "r2.json").exists()
    result = cli("regional", store, "--search-rows", "most", "-o", tmp_path / "r3.json")
    assert result.exit_code == 2 and "--search-rows must be a number of rows" in result.stderr
    result = cli("regional", store, "--search-rows", "1000", "-o", tmp_path / "r4.json")
    searched = read_regional(tmp_path / "r4.json").summary.params["searched_rows"]
    assert 800 < searched < 1200
    assert f"splits chosen on a sample of {searched:,} of 4,000 rows" in result.stdout


def test_min_drop_help_gives_the_range_the_check_takes(cli, tmp_path: Path):  # type: ignore[no-untyped-def]
    help_text = " ".join(cli("regional", "--help").stdout.split())
    assert "by this share (from 0 to below 1). [default: 0.1; x>=0.0]" in help_text
    X, E = paper_rows(n=400)
    store = chunked_store(tmp_path / "s.npz", X, E, [400], NAMES)
    for value in ("1", "1.5"):
        result = cli("regional", store, "--min-drop", value, "-o", tmp_path / "r.json")
        assert result.exit_code == 2
        assert f"--min-drop must be a number from 0 to below 1, got {float(value)}" in result.stderr
    assert not (tmp_path / "r.json").exists()


def test_the_default_search_takes_every_row_of_a_store_no_larger_than_the_sample():
    from ale_cli.estimators.regional import SEARCH_ROWS

    X, E = paper_rows(n=3000)
    default = regional(RegionalRequest(memory(X, E), max_depth=2)).summary
    every = regional(RegionalRequest(memory(X, E), max_depth=2, search_rows="all")).summary
    assert default.summary.params["search_rows"] == SEARCH_ROWS >= 3000
    assert every.summary.params["search_rows"] is None
    assert default.summary.params["searched_rows"] == every.summary.params["searched_rows"] == 3000
    a, b = (json.loads(dumps(s.to_dict(timestamp=False))) for s in (default, every))
    assert a.pop("params") != b.pop("params")
    assert a == b  # the same regions and records


def test_export_has_a_region_column_with_each_leaf(paper: RegionalSummary, tmp_path: Path):
    from ale_cli.summary.export import export_table
    from ale_cli.summary.regional import write_regional

    path = tmp_path / "regional.json"
    write_regional(path, paper)
    frame = export_table(path).frame
    assert list(frame.columns[:4]) == ["estimator", "feature", "kind", "region"]
    x1 = paper.feature("x1")
    got = frame[(frame["feature"] == "x1") & (frame["kind"] == "edge")]
    assert list(dict.fromkeys(got["region"])) == ["all rows", *(n.label for n in x1.leaves)]
    for leaf in x1.leaves:
        rows = got[got["region"] == leaf.label]
        np.testing.assert_allclose(rows["effect"].to_numpy(), leaf.record.effect)
    bins = frame[(frame["kind"] == "bin") & (frame["region"] != "all rows")]
    assert int(bins["count"].sum()) == sum(n.rows for n in x1.leaves)  # only x1 split


def test_diff_says_whether_the_regions_are_the_same(cli, tmp_path: Path):  # type: ignore[no-untyped-def]
    from ale_cli.summary.regional import write_regional

    X, E = paper_rows(n=4000)
    one = regional(RegionalRequest(memory(X, E), max_depth=1)).summary
    X2 = X.copy()
    X2[:, [1, 2]] = X[:, [2, 1]]  # x1's effect now follows x2
    E2 = E.copy()
    two = regional(RegionalRequest(memory(X2, E2), max_depth=1)).summary
    for name, s in (("a", one), ("a2", one), ("b", two)):
        write_regional(tmp_path / f"{name}.json", s)
    same = cli("diff", tmp_path / "a.json", tmp_path / "a2.json")
    assert same.exit_code == 0, same.stderr
    t = one.feature("x1").nodes[0].split.value
    assert (
        f"x1: same regions (x3 <= {t:.4g} | x3 > {t:.4g}); leaf curves differ by at most 0"
        in same.stdout
    )
    other = cli("diff", tmp_path / "a.json", tmp_path / "b.json")
    assert other.exit_code == 0, other.stderr
    assert "x1: different regions: A x3 <= " in other.stdout
    assert "; B x2 <= " in other.stdout


def test_the_regional_figure_draws_each_region_with_its_share(paper: RegionalSummary):
    from ale_cli.plot.regional import regional_figure

    fig = regional_figure(paper, "x1")
    lines = {a.get_gid(): a for a in fig.findobj() if a.get_gid()}
    record = paper.summary.feature("x1")
    np.testing.assert_allclose(lines["global"].get_ydata(), record.effect)
    x1 = paper.feature("x1")
    legend = [t.get_text() for t in lines["legend"].get_texts()]
    assert legend[0] == "all rows (global)"
    for leaf in x1.leaves:
        line = lines[f"region_{leaf.id}"]
        np.testing.assert_allclose(line.get_xdata(), leaf.record.edges)
        np.testing.assert_allclose(line.get_ydata(), leaf.record.effect)
        assert f"{leaf.label} ({leaf.rows / paper.summary.n_rows:.0%} of rows)" in legend


def test_ale_plot_of_a_regional_summary_draws_the_regions_of_the_split_features(
    cli, paper, tmp_path: Path
):  # type: ignore[no-untyped-def]
    """x1 is split, x2 and x3 are not: one figure, no first-order figure (those are the
    global curves, an ``ale rhale`` summary's)."""
    from ale_cli.summary.regional import write_regional

    path = tmp_path / "regional.json"
    write_regional(path, paper)
    result = cli("plot", path, "-o", tmp_path / "figs")
    assert result.exit_code == 0, result.stderr
    names = sorted(p.name for p in (tmp_path / "figs").iterdir())
    assert names == [".ale-plots.json", "x1__regions.png"]
    result = cli("plot", path, "-o", tmp_path / "x3", "--features", "x3")
    assert result.exit_code == 0, result.stderr
    assert [p.name for p in (tmp_path / "x3").iterdir()] == [".ale-plots.json"]


def test_audit_gates_on_the_regional_drop_and_on_every_region(cli, paper, tmp_path: Path):  # type: ignore[no-untyped-def]
    from ale_cli.summary.regional import write_regional

    path = tmp_path / "regional.json"
    write_regional(path, paper)
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        "rules:\n"
        "  - feature: x1\n    max_regional_drop: 0.3\n"
        "  - feature: x3\n    max_regional_drop: 0.3\n"
        "  - feature: x1\n    sign: positive\n    per_region: true\n"
        "  - feature: x3\n    sign: positive\n    per_region: true\n"
    )
    result = cli("audit", path, "--rules", rules, "--json")
    assert result.exit_code == 3, result.stderr
    report = json.loads(result.stdout)["details"]["report"]
    import jsonschema

    from ale_cli.audit.report import SCHEMA_PATH as AUDIT_SCHEMA

    jsonschema.validate(report, json.loads(Path(AUDIT_SCHEMA).read_text()))
    checks = {(c["feature"], c["rule"]): c for c in report["checks"]}
    assert checks[("x1", "max_regional_drop")]["verdict"] == "fail"
    np.testing.assert_allclose(
        checks[("x1", "max_regional_drop")]["value"], paper.feature("x1").drop
    )
    assert checks[("x3", "max_regional_drop")]["verdict"] == "pass"
    x1_sign = checks[("x1", "sign")]
    assert x1_sign["verdict"] == "fail" and "1 of 2 regions fail: x3 <= " in x1_sign["observed"]
    assert checks[("x3", "sign")]["verdict"] == "pass"


def test_every_curve_rule_takes_per_region(cli, paper, tmp_path: Path):  # type: ignore[no-untyped-def]
    """x1 rises with slope 3 where x3 > 0 and falls with slope 3 elsewhere: either
    direction of monotonic fails in one region of two; range beside them checks the
    global curve (per_region is for monotonic and sign only)."""
    from ale_cli.summary.regional import write_regional

    path = tmp_path / "regional.json"
    write_regional(path, paper)
    rules = tmp_path / "rules.yaml"
    rules.write_text(
        "rules:\n"
        "  - feature: x1\n    monotonic: increasing\n    range: [null, 100]\n"
        "    per_region: true\n"
        "  - feature: x1\n    monotonic: {direction: decreasing, tolerance: 0.5}\n"
        "    per_region: true\n"
    )
    result = cli("audit", path, "--rules", rules, "--json")
    assert result.exit_code == 3, result.stderr
    checks = json.loads(result.stdout)["details"]["report"]["checks"]
    assert [(c["rule"], c["verdict"]) for c in checks] == [
        ("monotonic", "fail"),
        ("range", "pass"),
        ("monotonic", "fail"),
    ]
    for check in (checks[0], checks[2]):
        regions = check["details"]["regions"]
        assert [r["ok"] for r in regions].count(False) == 1 and len(regions) == 2
        assert check["observed"].startswith("1 of 2 regions fail: x3 ")


def test_per_region_needs_a_curve_rule(tmp_path: Path):
    from ale_cli.audit.rules import read_rules

    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - feature: x1\n    max_aled: 1\n    per_region: true\n")
    with pytest.raises(InputError, match="per_region applies to monotonic and sign"):
        read_rules(rules)


def test_the_report_has_a_regional_section(paper, tmp_path: Path):  # type: ignore[no-untyped-def]
    from html import escape

    from ale_cli.report import build_report
    from ale_cli.summary.regional import write_regional

    path = tmp_path / "regional.json"
    write_regional(path, paper)
    html = build_report([path], timestamp=False).html
    section = html[html.index('<section id="regional">') :]
    x1 = paper.feature("x1")
    assert "no split worth keeping for x2, x3" in section
    for leaf in x1.leaves:
        assert escape(f"{leaf.label} ({leaf.share:.0%} of rows)") in section
    assert section.count("<svg") == 1  # one split feature, one figure


def test_the_report_takes_the_regions_figure_the_plot_step_drew(paper, tmp_path: Path):  # type: ignore[no-untyped-def]
    import base64

    from ale_cli.plot.render import plot_files
    from ale_cli.report import build_report
    from ale_cli.summary.regional import write_regional

    path = tmp_path / "regional.json"
    write_regional(path, paper)
    plots = tmp_path / "plots"
    plot_files(path, plots, formats=("png",))
    html = build_report([path], timestamp=False, figures={path: plots}).html
    section = html[html.index('<section id="regional">') :]
    assert "<svg" not in section  # not drawn again
    drawn = base64.b64encode((plots / "x1__regions.png").read_bytes()).decode()
    assert f'alt="regional x1" src="data:image/png;base64,{drawn}"' in section
    (plots / "x1__regions.png").write_bytes(b"changed after the plot step")
    html = build_report([path], timestamp=False, figures={path: plots}).html
    assert html[html.index('<section id="regional">') :].count("<svg") == 1  # drawn


def test_a_search_sample_finds_the_split_and_records_every_row(tmp_path: Path):
    X, E = paper_rows(n=20000, noise=0.1)
    whole = regional(RegionalRequest(memory(X, E), features=("x1",), max_depth=1)).summary
    path = chunked_store(tmp_path / "s.npz", X, E, [3333, 7000, 12345], NAMES)
    sample = regional(
        RegionalRequest(path, features=("x1",), max_depth=1, search_rows=4000)
    ).summary
    a, b = whole.feature("x1"), sample.feature("x1")
    assert b.nodes[0].split is not None and b.nodes[0].split.input == "x3"
    assert abs(b.nodes[0].split.value - a.nodes[0].split.value) <= 0.1
    t = b.nodes[0].split.value
    assert b.nodes[0].split.rows == ((X[:, 2] <= t).sum(), (X[:, 2] > t).sum())
    assert [n.rows for n in b.leaves] == [leaf.record.counts.sum() for leaf in b.leaves]
    assert sample.summary.params["searched_rows"] == sampled(0, 20000, 4000 / 20000).sum()
    # the global record is every row's (from the leaves' cells), as without a sample
    got, want = sample.summary.feature("x1"), whole.summary.feature("x1")
    np.testing.assert_array_equal(got.counts, want.counts)
    np.testing.assert_allclose(got.effect, want.effect, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got.std, want.std, rtol=1e-12, atol=1e-12)
    # the sample is chosen by row index: the same numbers from the store in memory
    again = regional(
        RegionalRequest(memory(X, E), features=("x1",), max_depth=1, search_rows=4000)
    ).summary
    np.testing.assert_allclose(
        [n.heterogeneity for n in again.feature("x1").nodes],
        [n.heterogeneity for n in b.nodes],
        rtol=1e-9,
    )


def test_a_store_that_fits_in_memory_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Every pass (ranges, quantiles, grid, each depth) runs on the chunks held in memory:
    each chunk's local effects are read from the file once."""
    from ale_cli.store.reader import StoreFile

    X, E = paper_rows(n=3000)
    path = chunked_store(tmp_path / "s.npz", X, E, [1000, 2000], NAMES)
    read: list[int] = []
    original = StoreFile.read_chunks

    def counted(self, indices, arrays=("X", "local_effects")):  # type: ignore[no-untyped-def]
        for chunk in original(self, indices, arrays):
            if "local_effects" in arrays:
                read.append(chunk.offset)
            yield chunk

    monkeypatch.setattr(StoreFile, "read_chunks", counted)
    out = regional(RegionalRequest(path, max_depth=2)).summary
    assert out.feature("x1").status == "split"
    assert sorted(read) == [0, 1000, 2000]


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31), st.integers(1, 4))
def test_each_row_falls_in_the_region_whose_conditions_it_meets(seed: int, depth: int):
    """The regions of a random tree (numeric thresholds and levels), found from the table of
    split bits, against each region's conditions evaluated one by one."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.normal(size=300), rng.integers(0, 3, 300)])
    regions: list[tuple[Condition, ...]] = [()]
    for _ in range(depth):  # every leaf split again, on one of the two inputs
        grown = []
        for conditions in regions:
            if rng.random() < 0.5:
                t = float(rng.normal())
                sides = (Condition("a", 0, "<=", t, ""), Condition("a", 0, ">", t, ""))
            else:
                v = float(rng.integers(0, 3))
                sides = (Condition("b", 1, "==", v, ""), Condition("b", 1, "!=", v, ""))
            grown += [(*conditions, side) for side in sides]
        regions = grown
    keep = sorted(rng.choice(len(regions), size=max(1, len(regions) // 2), replace=False))
    open_ = tuple(regions[i] for i in keep)  # some regions closed: their rows in none
    want = np.full(len(X), -1)
    for i, conditions in enumerate(open_):
        want[np.all([c.holds(X) for c in conditions] or [np.ones(len(X), bool)], axis=0)] = i
    np.testing.assert_array_equal(node_index(X, open_), want)
