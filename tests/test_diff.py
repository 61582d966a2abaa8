"""``ale diff`` and the common-grid comparison it shares with the drift rule."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ale_cli.audit import audit_files
from ale_cli.cli import app
from ale_cli.summary.compare import compare_summaries, records_difference
from ale_cli.summary.model import FeatureSummary, Summary, read_summary, write_summary

runner = CliRunner()


def linear(name: str, slope: float, edges: np.ndarray, *, se: float = 0.0) -> FeatureSummary:
    """f = slope (z - c), centered with equal counts; stderr rising linearly to ``se``."""
    k = edges.size - 1
    mids = (edges[:-1] + edges[1:]) / 2
    effect = slope * (edges - mids.mean())
    return FeatureSummary(
        name=name,
        edges=edges,
        counts=np.full(k, 10),
        bin_effect=np.full(k, slope),
        bin_std=np.full(k, 0.1),
        bin_stderr=np.full(k, 0.03),
        bin_filled=np.zeros(k, dtype=bool),
        effect=effect,
        std=np.zeros(k + 1),
        stderr=np.linspace(0.0, se, k + 1),
    )


def summary(*features: FeatureSummary) -> Summary:
    return Summary(estimator="dale", params={}, store={}, n_rows=0, features=features)


EDGES = np.linspace(0.0, 4.0, 9)


def test_a_change_of_slope_is_slope_difference_times_distance_to_the_centering_point():
    a = summary(linear("x", 2.0, EDGES, se=0.1), linear("y", 1.0, EDGES))
    b = summary(linear("x", 2.5, EDGES, se=0.1), linear("y", 3.0, EDGES))
    x, y = compare_summaries(a, b)
    c = ((EDGES[:-1] + EDGES[1:]) / 2).mean()
    np.testing.assert_allclose(x.difference.difference, 0.5 * (EDGES - c), atol=1e-12)
    np.testing.assert_allclose(x.difference.max_abs, 0.5 * 2.0, rtol=1e-12)
    # z: the change of the difference from z_0 over sqrt(SE_a^2 + SE_b^2)
    np.testing.assert_allclose(x.difference.max_z, 0.5 * 4.0 / np.sqrt(2 * 0.1**2), rtol=1e-12)
    assert (x.rank_base, x.rank_other, y.rank_base, y.rank_other) == (1, 2, 2, 1)
    assert x.rank_changed and y.rank_changed


def test_same_curve_on_other_edges_or_shifted_by_a_constant_has_no_difference():
    base = linear("x", 1.5, EDGES)
    fine = linear("x", 1.5, np.linspace(-1.0, 4.0, 31))
    shifted = replace(fine, effect=fine.effect + 7.0)
    for other in (fine, shifted):
        d = records_difference(base, other)
        assert d is not None
        np.testing.assert_allclose(d.difference, 0.0, atol=1e-12)
        assert d.max_z == 0.0 and d.n_outside == 0


def test_grid_points_outside_the_other_curve_are_left_out_and_counted():
    narrow = linear("x", 1.0, np.linspace(1.0, 3.0, 5))
    (c,) = compare_summaries(summary(linear("x", 1.0, EDGES)), summary(narrow))
    assert c.difference.n_outside == 4
    np.testing.assert_array_equal(c.difference.grid, EDGES[2:7])
    disjoint = linear("x", 1.0, np.array([5.0, 6.0]))
    (c,) = compare_summaries(summary(linear("x", 1.0, EDGES)), summary(disjoint))
    assert c.status == "no_overlap" and c.difference is None


def test_drift_rule_reports_what_diff_computes(tmp_path: Path):
    a = summary(linear("x", 2.0, EDGES, se=0.1))
    b = summary(linear("x", 2.5, np.linspace(0.5, 4.0, 6), se=0.2))
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    write_summary(pa, a)
    write_summary(pb, b)
    rules = tmp_path / "r.yaml"
    rules.write_text('rules:\n  - feature: "*"\n    drift: {max_abs: 10}\n')
    (check,) = audit_files([pb], rules, baseline=pa).checks
    (comp,) = compare_summaries(read_summary(pa), read_summary(pb))
    d = comp.difference
    assert check.details == {
        "max_abs": d.max_abs,
        "max_abs_at": d.max_abs_at,
        "max_z": d.max_z,
        "max_z_at": d.max_z_at,
        "n_outside": 1,
    }


@pytest.fixture()
def two(tmp_path: Path) -> tuple[Path, Path]:
    a = summary(
        linear("x", 2.0, EDGES, se=0.1),
        linear("y", 1.0, EDGES),
        FeatureSummary(name="c", status="not_estimable", reason="categorical feature"),
    )
    b = summary(
        linear("x", 2.5, EDGES, se=0.1),
        linear("y", 3.0, EDGES),
        FeatureSummary(name="c", status="not_estimable", reason="single distinct value"),
        linear("z", 1.0, EDGES),
    )
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    write_summary(pa, a)
    write_summary(pb, b)
    return pa, pb


def test_diff_cli_table_and_json(two: tuple[Path, Path]):
    a, b = two
    result = runner.invoke(app, ["diff", str(a), str(b)])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split()[:3] == ["FEATURE", "MAX", "|DIFF|"]
    assert lines[1].split()[:2] == ["x", "1"] and lines[1].endswith("rank changed")
    assert "not in the '" in lines[4] and lines[4].startswith("z ")
    assert lines[-1] == f"diff: 4 features on the edges of '{a}'; rank changed: x, y"

    result = runner.invoke(app, ["diff", str(a), str(b), "--json", "--features", "x,c"])
    data = json.loads(result.stdout)["details"]
    assert [f["name"] for f in data["features"]] == ["x", "c"]
    x, c = data["features"]
    assert (x["status"], x["rank_a"], x["rank_b"], x["rank_changed"]) == ("ok", 1, 2, True)
    np.testing.assert_allclose(x["max_abs"], 1.0, rtol=1e-12)
    assert c["status"] == "not_estimable"
    assert "(categorical feature)" in c["reason"] and "(single distinct value)" in c["reason"]


def test_diff_refuses_an_interact_summary(two: tuple[Path, Path], tmp_path: Path):
    """Pairs only, no first-order curve to compare: refused, whichever side it is on."""
    from test_audit import _one_cell_pair

    a, _ = two
    pairs = tmp_path / "pairs.json"
    write_summary(pairs, replace(summary(), interactions=(_one_cell_pair(),)))
    for args in ((pairs, pairs), (a, pairs), (pairs, a)):
        result = runner.invoke(app, ["diff", *map(str, args)])
        assert result.exit_code == 2
        assert result.stderr == (
            f"error: summary '{pairs}' has no first-order curves (an interact summary?); ale "
            "diff compares the first-order curves of two summaries (rebin, rhale, classic, "
            "regional)\n"
        )


def test_diff_of_one_feature_says_feature(two: tuple[Path, Path]):
    a, b = two
    result = runner.invoke(app, ["diff", str(a), str(b), "--features", "y"])
    assert result.exit_code == 0, result.stderr
    last = f"diff: 1 feature on the edges of '{a}'; rank changed: y"  # as among all four
    assert result.stdout.splitlines()[-1] == last


def test_diff_figures_plot_both_curves_on_the_same_axes(two: tuple[Path, Path], tmp_path: Path):
    from ale_cli.plot.diff import diff_figure

    a, b = two
    out = tmp_path / "plots"
    result = runner.invoke(app, ["diff", str(a), str(b), "-o", str(out), "--format", "png,svg"])
    assert result.exit_code == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [".ale-plots.json"]
        + [f"{n}.{e}" for n in ("overview", "x", "y", "c", "z") for e in ("png", "svg")]
    )
    sa, sb = read_summary(a), read_summary(b)
    shifted = replace(sb.feature("x"), effect=sb.feature("x").effect + 3.0)
    sb = replace(sb, features=(shifted, *sb.features[1:]))
    (comp,) = compare_summaries(sa, sb, features=["x"])
    fig = diff_figure(sa.feature("x"), sb.feature("x"), comp)
    lines = {line.get_gid(): line for line in fig.axes[0].get_lines()}
    np.testing.assert_allclose(lines["a_effect"].get_ydata(), sa.feature("x").effect)
    # B is drawn on A's centering: minus the offset of the comparison (here the +3 shift)
    np.testing.assert_allclose(comp.difference.offset, 3.0, rtol=1e-12)
    np.testing.assert_allclose(
        lines["b_effect"].get_ydata() - lines["a_effect"].get_ydata(),
        comp.difference.difference,
        atol=1e-12,
    )
    bands = {c.get_gid() for c in fig.axes[0].collections}
    assert {"a_band", "b_band"} <= bands


def test_diff_without_figures_imports_no_matplotlib_or_torch(two: tuple[Path, Path]):
    a, b = two
    code = (
        "import sys\nfrom ale_cli.cli import app\n"
        f"rc = app(['diff', {str(a)!r}, {str(b)!r}], standalone_mode=False)\n"
        "print(sorted(m for m in ('torch', 'onnxruntime', 'matplotlib', 'pandas') "
        "if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1] == "[]"
