"""The CI gate: drift rules on statistics, ``ale audit --format markdown`` / ``-o``, annotation
paths, ``--quiet``, and statistics on both sides of ``ale diff --json``."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from test_audit import linear_feature
from typer.testing import CliRunner

from ale_cli.audit import audit_files
from ale_cli.audit.curves import statistic_drift
from ale_cli.audit.report import MARKDOWN_MARKER, annotation_path, github_annotations
from ale_cli.audit.rules import parse_rules
from ale_cli.cli import app
from ale_cli.errors import InputError
from ale_cli.summary.model import FeatureSummary, Summary, with_statistics, write_summary

runner = CliRunner()
#: predictions uniform on [-2, 2]: F(median + a) = (a + 2) / 4, so NALED = 25 ALED exactly
#: while every midpoint |m_k| is under 2 (no clipping at 50)
PREDICTION = np.linspace(-2.0, 2.0, 10_001)


def linear(name: str, slope: float) -> FeatureSummary:
    """f = slope (z - 1/2) on [0, 1], 4 equal bins of 10 rows: ALED = slope / 4."""
    return linear_feature(name, slope, stderr=0.01)


def summary(path: Path, slopes: dict[str, float], *, prediction: bool = True) -> Path:
    feats = [linear(n, s) for n, s in slopes.items()]
    feats.append(FeatureSummary(name="cat", status="not_estimable", reason="categorical"))
    s = Summary(estimator="dale", params={}, store={}, n_rows=40, features=tuple(feats))
    write_summary(path, with_statistics(s, PREDICTION if prediction else None))
    return path


def rules(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.fixture
def pair(tmp_path: Path) -> tuple[Path, Path]:
    """Baseline: up slope 2 (ALED 0.5, NALED 12.5), down -1; candidate: up slope 3 (ALED
    0.75, NALED 18.75); down unchanged."""
    base = summary(tmp_path / "base.json", {"up": 2.0, "down": -1.0})
    cand = summary(tmp_path / "cand.json", {"up": 3.0, "down": -1.0})
    return base, cand


@pytest.mark.parametrize(
    ("statistic", "limit", "up_change", "up_verdict"),
    [
        ("naled", 5, 6.25, "fail"),  # 25 x (0.75 - 0.5)
        ("naled", 7, 6.25, "pass"),
        ("aled", 0.2, 0.25, "fail"),
        ("aled", 0.3, 0.25, "pass"),
        ("rank", 0, 0.0, "pass"),  # up stays first
    ],
)
def test_drift_on_a_statistic_measures_its_change(
    pair, tmp_path, statistic, limit, up_change, up_verdict
) -> None:
    base, cand = pair
    r = rules(
        tmp_path / "r.yaml",
        f'rules:\n  - feature: "*"\n    drift: {{statistic: {statistic}, max_abs: {limit}}}\n',
    )
    result = audit_files([cand], r, baseline=base)
    got = {c.feature: c for c in result.checks}
    assert set(got) == {"up", "down", "cat"}
    assert got["up"].verdict == up_verdict
    np.testing.assert_allclose(got["up"].value, up_change, rtol=1e-9, atol=1e-12)
    assert got["up"].details["statistic"] == statistic
    np.testing.assert_allclose(got["down"].value, 0.0, atol=1e-12)
    assert got["down"].verdict == "pass"
    assert got["cat"].verdict == "skip"  # not estimable on both sides


def test_a_named_drift_entry_replaces_the_wildcards_on_its_statistic_only(pair, tmp_path) -> None:
    """up's naled entry replaces the "*" naled one (limit 5, not 100), not the "*" rank one."""
    base, cand = pair
    r = rules(
        tmp_path / "r.yaml",
        'rules:\n  - feature: "*"\n    drift: {statistic: rank, max_abs: 0}\n'
        '  - feature: "*"\n    drift: {statistic: naled, max_abs: 100}\n'
        "  - feature: up\n    drift: {statistic: naled, max_abs: 5}\n",
    )
    checks = audit_files([cand], r, baseline=base).checks
    got = [(c.feature, c.entry, c.verdict) for c in checks if c.feature != "cat"]
    assert got == [("up", 1, "pass"), ("down", 1, "pass"), ("down", 2, "pass"), ("up", 3, "fail")]
    np.testing.assert_allclose(checks[-1].value, 6.25, rtol=1e-9)  # 25 x (0.75 - 0.5)


def test_heterogeneity_share_drift_is_the_change_of_mean_std_over_aled(pair, tmp_path) -> None:
    base, cand = pair
    r = rules(
        tmp_path / "r.yaml",
        "rules:\n  - feature: up\n    drift: {statistic: heterogeneity_share, max_abs: 1}\n",
    )
    (check,) = audit_files([cand], r, baseline=base).checks
    b, c = check.details["baseline"], check.details["current"]
    # the same heterogeneity over a larger ALED: the share falls in the ratio of the ALEDs
    np.testing.assert_allclose(c / b, 0.5 / 0.75, rtol=1e-12)
    np.testing.assert_allclose(check.value, abs(c - b), rtol=1e-12)


def test_rank_drift_counts_places(tmp_path) -> None:
    base = summary(tmp_path / "b.json", {"up": 2.0, "down": -1.0})
    cand = summary(tmp_path / "c.json", {"up": 0.5, "down": -1.0})  # down now first
    r = rules(
        tmp_path / "r.yaml", 'rules:\n  - feature: "*"\n    drift: {statistic: rank, max_abs: 0}\n'
    )
    got = {c.feature: c for c in audit_files([cand], r, baseline=base).checks}
    assert (got["up"].verdict, got["up"].observed) == ("fail", "rank 1 -> 2 (change +1)")
    assert (got["down"].verdict, got["down"].observed) == ("fail", "rank 2 -> 1 (change -1)")


def test_naled_drift_is_skipped_without_a_prediction_distribution(tmp_path) -> None:
    base = summary(tmp_path / "b.json", {"up": 2.0}, prediction=False)
    cand = summary(tmp_path / "c.json", {"up": 3.0})
    r = rules(
        tmp_path / "r.yaml", "rules:\n  - feature: up\n    drift: {statistic: naled, max_abs: 5}\n"
    )
    (check,) = audit_files([cand], r, baseline=base).checks
    assert check.verdict == "skip"
    assert check.observed.startswith("NALED not recorded in the baseline")


def test_a_feature_missing_or_not_estimable_on_one_side_fails(tmp_path) -> None:
    base = summary(tmp_path / "b.json", {"up": 2.0, "gone": 1.0})
    cand_s = Summary(
        estimator="dale", params={}, store={}, n_rows=40,
        features=(linear("up", 2.0), FeatureSummary(name="cat", status="ok", reason=None,
                  **{k: getattr(linear("cat", 1.0), k) for k in ("edges", "counts", "bin_effect",
                  "bin_std", "bin_stderr", "bin_filled", "effect", "std", "stderr")})),
    )  # fmt: skip
    cand = tmp_path / "c.json"
    write_summary(cand, with_statistics(cand_s, PREDICTION))
    r = rules(
        tmp_path / "r.yaml", 'rules:\n  - feature: "*"\n    drift: {statistic: aled, max_abs: 1}\n'
    )
    got = {c.feature: (c.verdict, c.observed) for c in audit_files([cand], r, baseline=base).checks}
    assert got["up"][0] == "pass"
    assert got["gone"] == ("fail", "not in the summary")
    assert got["cat"] == ("fail", "not estimable in the baseline (categorical)")


def test_a_statistic_drift_across_other_edges_is_refused(tmp_path) -> None:
    """The same line on 8 bins against 4: refused, however close the statistics (a
    statistic depends on the bins); another estimator on the same edges is compared."""
    base = summary(tmp_path / "b.json", {"up": 2.0})
    cat = FeatureSummary(name="cat", status="not_estimable", reason="categorical")
    feats = (linear_feature("up", 2.0, k=8, stderr=0.01), cat)
    s = Summary(estimator="rhale", params={}, store={}, n_rows=80, features=feats)
    cand = tmp_path / "c.json"
    write_summary(cand, with_statistics(s, PREDICTION))
    r = rules(
        tmp_path / "r.yaml", 'rules:\n  - feature: "*"\n    drift: {statistic: rank, max_abs: 0}\n'
    )
    result = invoke("audit", cand, "--baseline", base, "--rules", r)
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: rules file '{r}': rule 1, line 2 (drift) on feature '*': the summary '{cand}' "
        f"(rhale) and the baseline '{base}' (dale) have other edges for up (8 and 4 bins): a "
        f"statistic drift needs the baseline's edges (ale rebin --edges {base})\n"
    )
    write_summary(cand, with_statistics(replace(s, features=(linear("up", 2.0), cat)), PREDICTION))
    assert invoke("audit", cand, "--baseline", base, "--rules", r).exit_code == 0


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"statistic": "median"}, "drift.statistic must be one of naled, aled"),
        ({"statistic": "naled"}, "drift on naled needs max_abs"),
        ({"statistic": "naled", "max_abs": 5, "max_z": 2}, "takes max_abs .*, not max_z"),
        ({"statistic": "naled", "max_abs": -1}, "drift.max_abs must be at least 0"),
    ],
)
def test_drift_statistic_errors_name_the_key(value, message) -> None:
    with pytest.raises(InputError, match=message):
        parse_rules({"rules": [{"feature": "*", "drift": value}]}, path=Path("r.yaml"))


def test_statistic_drift_with_infinite_shares() -> None:
    inf = {"heterogeneity_share": None}  # null in JSON: ALED 0, heterogeneity > 0
    ok, _, _, value, _ = statistic_drift("heterogeneity_share", inf, inf, 0.0)
    assert ok and value == 0.0
    ok, _, _, value, _ = statistic_drift(
        "heterogeneity_share", {"heterogeneity_share": 1.0}, inf, 5
    )
    assert not ok and value == float("inf")


# -- the command: markdown, -o, --quiet, annotations -------------------------------------------

GATE = (
    'rules:\n  - feature: "*"\n    drift: {statistic: naled, max_abs: 5}\n'
    "  - feature: down\n    max_aled: 0.1\n    severity: warn\n"
)


def invoke(*args: object):  # type: ignore[no-untyped-def]
    return runner.invoke(app, [str(a) for a in args])


def test_markdown_on_stdout_puts_failures_first_and_folds_the_rest(pair, tmp_path) -> None:
    base, cand = pair
    r = rules(tmp_path / "gate.yaml", GATE)
    res = invoke("audit", cand, "--baseline", base, "--rules", r, "--format", "markdown")
    assert res.exit_code == 3
    md = res.stdout
    assert md.startswith(MARKDOWN_MARKER)
    assert "### ale audit FAILED: 1 failed, 1 warning, 1 passed, 1 skipped (exit 3)" in md
    flagged, folded = md.split("<details>")
    assert (
        "| FAIL | up | drift | NALED 12.5 -&gt; 18.75 (change +6.25) | \\|change\\| &lt;= 5 |"
        in flagged
    )
    assert "| WARN | down | max_aled | ALED 0.25 | &lt;= 0.1 |" in flagged
    assert "| pass | down | drift |" in folded and "| skip | cat | drift |" in folded
    assert folded.rstrip().endswith("</details>")
    assert res.stderr.strip() == "audit: 1 failed, 1 warning, 1 passed, 1 skipped -> exit 3"


def test_markdown_writes_a_feature_name_as_text_not_html(tmp_path) -> None:
    name = "<img src=x onerror=alert(1)>&amp;"
    s = summary(tmp_path / "s.json", {name: 2.0})
    r = rules(tmp_path / "r.yaml", f'rules:\n  - feature: "{name}"\n    max_aled: 0.1\n')
    md = invoke("audit", s, "--rules", r, "--format", "markdown").stdout
    row = "| FAIL | &lt;img src=x onerror=alert(1)&gt;&amp;amp; | max_aled | ALED 0.5 | &lt;= 0.1 |"
    assert row in md.splitlines() and "<img" not in md


def test_markdown_to_a_file_keeps_the_table_and_writes_over_an_empty_file(pair, tmp_path) -> None:
    base, cand = pair
    r = rules(tmp_path / "gate.yaml", GATE)
    page = tmp_path / "step_summary.md"
    page.write_text("")  # as a CI runner creates $GITHUB_STEP_SUMMARY
    res = invoke("audit", cand, "--baseline", base, "--rules", r, "-o", page)
    assert res.exit_code == 3
    assert page.read_text().startswith(MARKDOWN_MARKER)
    assert res.stdout.splitlines()[0].split() == ["FEATURE", "RULE", "OBSERVED", "LIMIT", "VERDICT"]
    again = invoke("audit", base, "--baseline", base, "--rules", r, "-o", page)  # ours: rewritten
    assert again.exit_code == 0 and "### ale audit passed" in page.read_text()
    other = tmp_path / "notes.md"
    other.write_text("# my notes\n")
    refused = invoke("audit", base, "--baseline", base, "--rules", r, "-o", other)
    assert refused.exit_code == 2 and other.read_text() == "# my notes\n"


def test_two_outputs_on_stdout_are_refused(pair, tmp_path) -> None:
    base, cand = pair
    r = rules(tmp_path / "gate.yaml", GATE)
    res = invoke("audit", cand, "--baseline", base, "--rules", r, "-o", "-", "--junit", "-")
    assert res.exit_code == 2
    assert "both write to standard output" in res.stderr
    res = invoke(
        "audit", cand, "--baseline", base, "--rules", r, "--format", "markdown", "--junit", "-"
    )
    assert (
        res.exit_code == 2
        and "--junit - and --format markdown both write to standard output" in res.stderr
    )


def test_two_outputs_on_one_file_are_refused(pair, tmp_path) -> None:
    """Before any work: nothing is written (the path through a symlinked directory too)."""
    base, cand = pair
    r = rules(tmp_path / "gate.yaml", GATE)
    out = tmp_path / "gate.out"
    (tmp_path / "link").symlink_to(tmp_path)
    res = invoke("audit", cand, "--baseline", base, "--rules", r, "--junit", out, "-o", out)
    assert res.exit_code == 2 and not out.exists()
    assert (
        res.stderr == f"error: --junit and --out both name '{out}'; give each output its own file\n"
    )
    again = tmp_path / "link" / "gate.out"
    res = invoke(
        "audit", cand, "--rules", r, "--baseline", base, "--json-report", out, "--junit", again
    )
    assert res.exit_code == 2 and not out.exists()
    assert res.stderr.startswith(f"error: --json-report and --junit both name '{again}';")


def test_quiet_prints_only_the_failed_and_warned_rules(pair, tmp_path) -> None:
    base, cand = pair
    r = rules(tmp_path / "gate.yaml", GATE)
    res = invoke("audit", cand, "--baseline", base, "--rules", r, "--quiet")
    assert res.exit_code == 3
    assert res.stdout.splitlines() == [
        "up: drift fail -- NALED 12.5 -> 18.75 (change +6.25) (limit: |change| <= 5)",
        "down: max_aled warn -- ALED 0.25 (limit: <= 0.1)",
        "audit: 1 failed, 1 warning, 1 passed, 1 skipped -> exit 3",
    ]


def test_annotations_name_the_rules_file_relative_to_the_workspace(
    pair, tmp_path, monkeypatch
) -> None:
    base, cand = pair
    (tmp_path / "configs").mkdir()
    r = rules(tmp_path / "configs" / "gate.yaml", GATE)
    monkeypatch.setenv("GITHUB_WORKSPACE", str(tmp_path))
    result = audit_files([cand], r.resolve(), baseline=base)
    lines = github_annotations(result)
    assert lines[0].startswith("::error file=configs/gate.yaml,line=2,")
    assert lines[1].startswith("::warning file=configs/gate.yaml,line=4,")
    monkeypatch.delenv("GITHUB_WORKSPACE")
    monkeypatch.chdir(tmp_path / "configs")
    assert annotation_path(str(r.resolve())) == "gate.yaml"
    assert annotation_path("/not/inside/r.yaml") == "/not/inside/r.yaml"


def test_diff_json_has_every_statistic_on_both_sides(pair) -> None:
    base, cand = pair
    res = invoke("diff", base, cand, "--json")
    assert res.exit_code == 0
    feats = {f["name"]: f for f in json.loads(res.stdout)["details"]["features"]}
    up = feats["up"]
    for side, slope in (("statistics_a", 2.0), ("statistics_b", 3.0)):
        for key in ("aled", "naled", "aler_min", "aler_max", "naler_min", "naler_max",
                    "heterogeneity_share", "rank"):  # fmt: skip
            assert key in up[side]
        np.testing.assert_allclose(up[side]["aled"], slope / 4, rtol=1e-12)
        np.testing.assert_allclose(up[side]["naled"], 25 * slope / 4, rtol=1e-9)
    assert feats["cat"]["statistics_a"] is None and feats["cat"]["statistics_b"] is None


def test_run_quiet_names_the_failed_rule(tmp_path) -> None:
    from ale_cli.cli.commands.run import _flagged_rules

    report = tmp_path / "audit.json"
    check = {"feature": "bmi", "rule": "drift", "verdict": "fail",
             "observed": "NALED 1 -> 9 (change +8)", "limit": "|change| <= 5"}  # fmt: skip
    report.write_text(
        json.dumps(
            {"summaries": ["run/rebin.json"], "checks": [check, {**check, "verdict": "pass"}]}
        )
    )
    assert _flagged_rules(report) == (
        "audit: bmi: drift fail -- NALED 1 -> 9 (change +8) (limit: |change| <= 5)",
    )


def test_run_quiet_names_the_summary_of_each_failed_rule_when_there_are_several(tmp_path) -> None:
    """Two summaries failing the same rule on the same feature give two lines told apart by
    the summary's file name (in DIR), as 'ale audit' adds a SUMMARY column then."""
    from ale_cli.cli.commands.run import _flagged_rules

    report = tmp_path / "audit.json"
    check = {"feature": "bmi", "rule": "max_naled", "verdict": "fail", "observed": "NALED 12",
             "limit": "<= 10", "summary": "run/rhale.json"}  # fmt: skip
    checks = [check, {**check, "summary": "run/rebin.json", "verdict": "warn"}]
    report.write_text(
        json.dumps({"summaries": ["run/rhale.json", "run/rebin.json"], "checks": checks})
    )
    assert _flagged_rules(report) == (
        "audit: rhale.json: bmi: max_naled fail -- NALED 12 (limit: <= 10)",
        "audit: rebin.json: bmi: max_naled warn -- NALED 12 (limit: <= 10)",
    )
