"""``ale audit``: rules on TorchScript models with known effects, reports, exit codes, errors."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import numpy as np
import pytest
import xsd_subset
from typer.testing import CliRunner

from ale_cli.audit import audit_files
from ale_cli.audit.curves import monotonic_dip
from ale_cli.audit.report import SCHEMA_PATH, junit_xml
from ale_cli.audit.rules import parse_rules
from ale_cli.cli import app
from ale_cli.errors import InputError
from ale_cli.estimators.inputs import ModelInputs
from ale_cli.summary.model import FeatureSummary, InteractionSummary, Summary, write_summary

runner = CliRunner()
JUNIT_XSD = Path(__file__).parent / "data" / "junit.xsd"
REPORT_SCHEMA = json.loads(SCHEMA_PATH.read_text())
N = 2000
DIP = (4.0, 6.0)


def run(*args: object) -> tuple[int, str, str]:
    """``ale audit ARGS...``: exit code, stdout, stderr."""
    result = runner.invoke(app, ["audit", *(str(a) for a in args)])
    return result.exit_code, result.stdout, result.stderr


def rules_file(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# -- models with known effects, through compute + rebin ----------------------------------------


def dip_model(dip_slope: float, sigma: float):  # type: ignore[no-untyped-def]
    """f = g(x0) + sigma x0 x1: g rises with slope 1 except on [4, 6] where its slope is
    -dip_slope (a dip of 2 dip_slope); sigma x1 makes the rows' effects of x0 differ."""
    import torch
    from torch import nn

    class Dip(nn.Module):
        def __init__(self, slope: float, sigma: float) -> None:
            super().__init__()
            self.slope = slope
            self.sigma = sigma

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x0, x1 = x[:, 0], x[:, 1]
            g = x0 - (1.0 + self.slope) * torch.clamp(x0 - 4.0, min=0.0, max=2.0)
            return g + self.sigma * x0 * x1

    return torch.jit.script(Dip(dip_slope, sigma))


def tilt_model(delta: float):  # type: ignore[no-untyped-def]
    """f = sin(x0) + delta x0 + 0.5 x1^2 + 0.2 x0 x2 (x2 gives x0 a heterogeneous effect)."""
    import torch
    from torch import nn

    class Tilt(nn.Module):
        def __init__(self, delta: float) -> None:
            super().__init__()
            self.delta = delta

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x0, x1, x2 = x[:, 0], x[:, 1], x[:, 2]
            return torch.sin(x0) + self.delta * x0 + 0.5 * x1 * x1 + 0.2 * x0 * x2

    return torch.jit.script(Tilt(delta))


def summary_of_model(
    tmp: Path, name: str, module, X: np.ndarray, *, bins: int = 10, edges: Path | None = None
) -> Path:  # type: ignore[no-untyped-def]
    """Save the model, compute its store on X and write the rebin summary (with statistics)."""
    import pandas as pd
    import torch

    from ale_cli.estimators.dale import RebinRequest, rebin
    from ale_cli.estimators.local_effects import ComputeRequest, compute
    from ale_cli.store.npz import read_store
    from ale_cli.summary.model import with_statistics

    model, data, store = tmp / f"{name}.pt", tmp / f"{name}.csv", tmp / f"{name}.npz"
    torch.jit.save(module, str(model))
    pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])]).to_csv(data, index=False)
    compute(ComputeRequest(inputs=ModelInputs(model=model, data=data), out=store))
    request = RebinRequest(store=store, bins=None if edges else bins, edges=edges)
    summary = with_statistics(rebin(request).summary, read_store(store).prediction)
    out = tmp / f"{name}.json"
    write_summary(out, summary)
    return out


def dip_data(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x0 = np.concatenate([[0.0, 10.0], rng.uniform(0, 10, N - 2)])  # edges 0, 1, ..., 10
    return np.column_stack([x0, rng.normal(size=N)])


@pytest.fixture(scope="module")
def dip_summaries(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("dips")
    X = dip_data(0)
    return {
        "rising": summary_of_model(tmp, "rising", dip_model(-1.0, 0.5), X),  # slope 1 throughout
        "dip": summary_of_model(tmp, "dip", dip_model(0.5, 0.5), X),  # a dip of 1.0 on [4, 6]
        "small": summary_of_model(tmp, "small", dip_model(0.02, 3.0), X),  # 0.04, SE ~0.3
    }


MONOTONIC = "rules:\n  - feature: x0\n    monotonic: increasing\n"


def test_monotonic_passes_a_rising_effect_and_fails_a_dip_with_its_position_and_size(
    dip_summaries: dict[str, Path], tmp_path: Path
) -> None:
    rules = rules_file(tmp_path / "r.yaml", MONOTONIC)
    rising = audit_files([dip_summaries["rising"]], rules)
    assert [c.verdict for c in rising.checks] == ["pass"] and rising.exit_code == 0

    code, out, err = run(
        dip_summaries["dip"], "--rules", rules, "--json-report", tmp_path / "a.json"
    )
    assert code == 3, err
    check = json.loads((tmp_path / "a.json").read_text())["checks"][0]
    assert (check["feature"], check["rule"], check["verdict"]) == ("x0", "monotonic", "fail")
    d = check["details"]
    assert (d["start"], d["end"]) == DIP
    # the dip is 2 x 0.5 = 1.0; its estimate is within a few standard errors of it
    assert abs(d["drop"] - 1.0) < 4 * d["se"] and d["se"] < 0.1
    assert d["z"] > 10
    assert "x0       monotonic  dip of " in out and "from 4 to 6" in out and "FAIL" in out


def test_a_dip_smaller_than_its_standard_error_passes_with_the_default_z(
    dip_summaries: dict[str, Path], tmp_path: Path
) -> None:
    small = dip_summaries["small"]
    result = audit_files([small], rules_file(tmp_path / "r.yaml", MONOTONIC))
    (check,) = result.checks
    assert check.verdict == "pass", check.observed
    assert check.details["drop"] < 2 * check.details["se"]
    # the same curve fails when any dip counts (tolerance 0)
    strict = rules_file(
        tmp_path / "t.yaml",
        "rules:\n  - feature: x0\n    monotonic: {direction: increasing, tolerance: 0}\n",
    )
    assert audit_files([small], strict).checks[0].verdict == "fail"


def test_monotonic_dip_against_an_exhaustive_search() -> None:
    rng = np.random.default_rng(3)
    for _ in range(30):
        k = int(rng.integers(2, 12))
        effect = np.cumsum(rng.normal(0.3, 1.0, k + 1))
        stderr = np.sqrt(np.cumsum(np.concatenate([[0.0], rng.uniform(0, 0.5, k)])))
        edges = np.arange(k + 1.0)
        got = monotonic_dip(
            edges=edges, effect=effect, stderr=stderr, direction="increasing", z=2.0, tolerance=None
        )
        pairs = [(a, b) for a in range(k + 1) for b in range(a + 1, k + 1)]
        violating = [
            (effect[a] - effect[b], a, b)
            for a, b in pairs
            if effect[a] - effect[b] > 2.0 * np.sqrt(stderr[b] ** 2 - stderr[a] ** 2)
        ]
        assert got["violated"] == bool(violating)
        if violating:
            drop, a, b = max(violating)
            assert (got["drop"], got["start"], got["end"]) == (drop, edges[a], edges[b])
        # decreasing is increasing of the negated curve
        neg = monotonic_dip(
            edges=edges,
            effect=-effect,
            stderr=stderr,
            direction="decreasing",
            z=2.0,
            tolerance=None,
        )
        assert neg == got


# -- drift ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def drift_summaries(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("drift")
    rng = np.random.default_rng(10)
    X = rng.uniform(-3, 3, size=(N, 3))
    X2 = np.random.default_rng(11).uniform(-3, 3, size=(N, 3))  # same distribution
    base = summary_of_model(tmp, "base", tilt_model(0.0), X)
    return {
        "base": base,
        "tilted": summary_of_model(tmp, "tilted", tilt_model(0.3), X),
        "resampled": summary_of_model(tmp, "resampled", tilt_model(0.0), X2, edges=base),
        "resampled_own_edges": summary_of_model(tmp, "resampled2", tilt_model(0.0), X2),
    }


DRIFT = 'rules:\n  - feature: "*"\n    drift: {max_abs: 0.2, max_z: 4}\n'


def test_drift_flags_a_known_shift_and_passes_a_resampled_rerun(
    drift_summaries: dict[str, Path], tmp_path: Path
) -> None:
    from ale_cli.summary.model import read_summary

    rules = rules_file(tmp_path / "drift.yaml", DRIFT)
    base = drift_summaries["base"]
    tilted = audit_files([drift_summaries["tilted"]], rules, baseline=base)
    verdicts = {c.feature: c.verdict for c in tilted.checks}
    assert verdicts == {"x0": "fail", "x1": "pass", "x2": "pass"}
    # the tilt delta x0 is, on the baseline's grid and centered with its counts,
    # delta (z - c): its largest |value| is known from the baseline's edges and counts
    b = read_summary(base).feature("x0")
    c = np.sum(b.counts * (b.edges[:-1] + b.edges[1:]) / 2) / b.counts.sum()
    x0 = next(ch for ch in tilted.checks if ch.feature == "x0")
    np.testing.assert_allclose(x0.details["max_abs"], 0.3 * np.max(np.abs(b.edges - c)), rtol=1e-6)

    for name in ("resampled", "resampled_own_edges"):
        again = audit_files([drift_summaries[name]], rules, baseline=base)
        assert [ch.verdict for ch in again.checks] == ["pass"] * 3, [
            ch.observed for ch in again.checks
        ]


def test_drift_reports_a_feature_missing_on_either_side(
    drift_summaries: dict[str, Path], tmp_path: Path
) -> None:
    from dataclasses import replace

    from ale_cli.summary.model import read_summary

    s = read_summary(drift_summaries["base"])
    fewer = replace(s, features=s.features[:2])
    path = tmp_path / "fewer.json"
    write_summary(path, fewer)
    rules = rules_file(tmp_path / "d.yaml", DRIFT)
    result = audit_files([path], rules, baseline=drift_summaries["base"])
    x2 = next(c for c in result.checks if c.feature == "x2")
    assert (x2.verdict, x2.observed) == ("fail", "not in the summary")
    back = audit_files([drift_summaries["base"]], rules, baseline=path)
    x2 = next(c for c in back.checks if c.feature == "x2")
    assert (x2.verdict, x2.observed) == ("fail", "not in the baseline")


# -- every rule on a hand-made summary ----------------------------------------------------------


def linear_feature(name: str, slope: float, *, k: int = 4, stderr: float = 0.0) -> FeatureSummary:
    edges = np.linspace(0.0, 1.0, k + 1)
    effect = slope * (edges - 0.5)
    return FeatureSummary(
        name=name,
        edges=edges,
        counts=np.full(k, 10),
        bin_effect=np.full(k, slope),
        bin_std=np.full(k, 0.1),
        bin_stderr=np.full(k, 0.1 / np.sqrt(10)),
        bin_filled=np.zeros(k, dtype=bool),
        effect=effect,
        std=np.linspace(0, 0.1, k + 1),
        stderr=np.linspace(0, stderr, k + 1),
    )


def hand_summary() -> Summary:
    return Summary(
        estimator="dale",
        params={},
        store={},
        n_rows=40,
        features=(
            linear_feature("up", 2.0),
            linear_feature("down", -1.0),
            linear_feature("flat", 0.0),
            FeatureSummary(name="cat", status="not_estimable", reason="categorical feature"),
        ),
    )


def test_each_rule_gives_its_verdict(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    write_summary(path, hand_summary())
    rules = rules_file(
        tmp_path / "all.yaml",
        """rules:
  - feature: up
    monotonic: increasing
    sign: positive
    range: [-1, 1]
    min_aled: 0.4
    rank_at_most: 1
  - feature: down
    monotonic: {direction: increasing, tolerance: 0.5}
    sign: positive
    max_aled: 0.1
    severity: warn
  - feature: "*"
    max_heterogeneity_share: 1.0
  - feature: flat
    max_heterogeneity_share: 1.0e+9
  - feature: "*"
    not_estimable: fail
  - feature: cat
    not_estimable: warn
""",
    )
    result = audit_files([path], rules)
    got = {(c.feature, c.rule): c.verdict for c in result.checks}
    assert got == {
        ("up", "monotonic"): "pass",
        ("up", "sign"): "pass",
        ("up", "range"): "pass",  # 2 (z - 0.5) on [0, 1] spans [-1, 1]
        ("up", "min_aled"): "pass",  # ALED of 2 (z - 0.5): 2 x mean |z - 0.5| = 0.5
        ("up", "rank_at_most"): "pass",
        ("down", "monotonic"): "warn",  # falls by 1.0 > tolerance 0.5; severity warn
        ("down", "sign"): "warn",
        ("down", "max_aled"): "warn",  # 0.25 > 0.1
        ("up", "max_heterogeneity_share"): "pass",  # mean STD 0.05 / ALED 0.5 = 0.1
        ("down", "max_heterogeneity_share"): "pass",  # 0.05 / 0.25
        ("flat", "max_heterogeneity_share"): "fail",  # ALED 0, STD > 0: infinite share
        ("cat", "max_heterogeneity_share"): "skip",
        ("up", "not_estimable"): "pass",
        ("down", "not_estimable"): "pass",
        ("flat", "not_estimable"): "pass",
        ("cat", "not_estimable"): "warn",  # the named entry replaces the "*" one
    }
    aled = {c.feature: c.value for c in result.checks if c.rule in ("min_aled", "max_aled")}
    np.testing.assert_allclose([aled["up"], aled["down"]], [0.5, 0.25], rtol=1e-12)
    assert result.exit_code == 3  # flat's share failed with severity error


def _one_cell_pair() -> InteractionSummary:
    """A pair of inputs on one cell whose centered effect reaches 2 (at its far corner)."""
    return InteractionSummary(
        features=("a", "b"),
        estimator="dale",
        edges_a=np.array([0.0, 1.0]),
        edges_b=np.array([0.0, 1.0]),
        counts=np.array([[10]]),
        cell_effect=np.array([[1.0]]),
        cell_std=np.array([[0.0]]),
        filled=np.array([[False]]),
        effect=np.array([[0.0, 0.5], [-0.5, 2.0]]),
    )


def test_max_interaction_on_an_interact_summary(tmp_path: Path) -> None:
    inter = Summary(
        estimator="dale",
        params={},
        store={},
        n_rows=10,
        features=(),
        interactions=(_one_cell_pair(),),
        prediction={"n": 101, "mean": 50.0, "quantiles": np.arange(101.0)},
    )
    path = tmp_path / "i.json"
    write_summary(path, inter)
    rules = rules_file(
        tmp_path / "i.yaml",
        "rules:\n  - feature: a\n    max_interaction: {max_abs: 3, max_share: 0.01}\n",
    )
    (check,) = audit_files([path], rules).checks
    assert check.verdict == "fail"
    np.testing.assert_allclose(check.details["max_abs"], 2.0)
    np.testing.assert_allclose(check.details["share"], 2.0 / 98.0)  # q99 - q1 = 98


@pytest.mark.parametrize(
    ("limits", "verdict", "observed", "limit"),
    [
        (
            "{max_share: 0.01}",
            "skip",
            "share not available: no prediction distribution",
            "share <= 0.01",
        ),
        (
            "{max_abs: 1, max_share: 0.01}",
            "fail",
            "max |effect| 2; share not available",
            "max |effect| <= 1; share <= 0.01",
        ),
        ("{max_abs: 3}", "pass", "max |effect| 2", "max |effect| <= 3"),
    ],
)
def test_max_interaction_without_a_prediction_distribution(
    tmp_path: Path, limits: str, verdict: str, observed: str, limit: str
) -> None:
    path = tmp_path / "i.json"
    write_summary(path, Summary("dale", {}, {}, 10, (), interactions=(_one_cell_pair(),)))
    text = f"rules:\n  - feature: b\n    max_interaction: {limits}\n"
    (check,) = audit_files([path], rules_file(tmp_path / "i.yaml", text)).checks
    assert (check.verdict, check.observed, check.limit) == (verdict, observed, limit)


# -- reports -------------------------------------------------------------------------------------


def test_json_report_validates_and_junit_validates_against_the_xsd(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    write_summary(path, hand_summary())
    rules = rules_file(
        tmp_path / "r.yaml",
        'rules:\n  - feature: "*"\n    monotonic: increasing\n    max_aled: 0.3\n'
        "  - feature: down\n    sign: positive\n    severity: warn\n",
    )
    code, out, err = run(path, "--rules", rules, "--json", "--junit", tmp_path / "j.xml")
    assert code == 3, err
    report = json.loads(out)["details"]["report"]  # the --json result object holds the report
    jsonschema.validate(report, REPORT_SCHEMA)
    assert report["counts"] == {"pass": 4, "fail": 2, "warn": 1, "skip": 2}
    assert report["exit_code"] == 3 and report["passed"] is False

    root = ET.parse(tmp_path / "j.xml").getroot()
    xsd_subset.validate(root, xsd_subset.load(JUNIT_XSD))
    cases = root.findall("testsuite/testcase")
    assert len(cases) == len(report["checks"])
    failed = {c.get("name"): c.find("failure") for c in cases if c.find("failure") is not None}
    assert set(failed) == {"down: monotonic", "up: max_aled"}
    up = failed["up: max_aled"]
    assert "ALED 0.5" in up.get("message") and "<= 0.3" in up.get("message")
    assert len(root.findall("testsuite/testcase/skipped")) == 2
    assert root.get("failures") == "2"


def test_junit_names_two_entries_of_one_rule_on_a_feature_by_their_entry(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    write_summary(path, hand_summary())
    rules = rules_file(
        tmp_path / "r.yaml",
        "rules:\n  - feature: up\n    monotonic: increasing\n    max_aled: 1\n"
        "  - feature: up\n    monotonic: {direction: decreasing, tolerance: 10}\n",
    )
    root = ET.fromstring(junit_xml(audit_files([path], rules)))
    names = [c.get("name") for c in root.findall("testsuite/testcase")]
    assert names == ["up: monotonic (rule 1)", "up: max_aled", "up: monotonic (rule 2)"]


def test_the_junit_check_rejects_what_the_schema_forbids() -> None:
    schema = xsd_subset.load(JUNIT_XSD)
    bad = [
        "<testsuites><testsuite tests='1'/></testsuites>",  # no name
        "<testsuites><testsuite name='a' tests='x'/></testsuites>",  # tests not an int
        "<testsuites><testsuite name='a' tests='1'><testcase/></testsuite></testsuites>",
        "<testsuites><testsuite name='a' tests='1'><testcase name='c'><failure><b/></failure>"
        "</testcase></testsuite></testsuites>",
        "<testsuites><testsuite name='a' tests='1'><testcase name='c'/><properties/>"
        "</testsuite></testsuites>",  # properties after testcase
    ]
    for text in bad:
        with pytest.raises(xsd_subset.Invalid):
            xsd_subset.validate(ET.fromstring(text), schema)


def test_junit_validates_with_xmlschema_when_installed(tmp_path: Path) -> None:
    xmlschema = pytest.importorskip("xmlschema")
    path = tmp_path / "s.json"
    write_summary(path, hand_summary())
    rules = rules_file(tmp_path / "r.yaml", 'rules:\n  - feature: "*"\n    max_aled: 0.3\n')
    xml = junit_xml(audit_files([path], rules))
    xmlschema.XMLSchema(str(JUNIT_XSD)).validate(xml.decode())


def test_github_annotations_and_table(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    write_summary(path, hand_summary())
    rules = rules_file(
        tmp_path / "r.yaml",
        "rules:\n  - feature: up\n    max_aled: 0.3\n  - feature: down\n    max_aled: 0.1\n"
        "    severity: warn\n",
    )
    code, out, _ = run(path, "--rules", rules, "--format", "github")
    assert code == 3
    lines = out.splitlines()
    assert lines[0].split() == ["FEATURE", "RULE", "OBSERVED", "LIMIT", "VERDICT"]
    # the annotations follow the table; the verdict line comes last
    assert lines[-1] == "audit: 1 failed, 1 warning, 0 passed, 0 skipped -> exit 3"
    assert lines[-3].startswith(f"::error file={rules},line=2,title=ale audit%3A up max_aled::")
    assert lines[-2].startswith(f"::warning file={rules},line=4,")


# -- exit codes and errors ---------------------------------------------------------------------


def test_exit_codes_through_the_cli(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    write_summary(path, hand_summary())
    ok = rules_file(tmp_path / "ok.yaml", "rules:\n  - feature: up\n    max_aled: 1\n")
    bad = rules_file(tmp_path / "bad.yaml", "rules:\n  - feature: up\n    max_aled: 0.1\n")
    warn = rules_file(
        tmp_path / "warn.yaml", "rules:\n  - feature: up\n    max_aled: 0.1\n    severity: warn\n"
    )
    assert run(path, "--rules", ok)[0] == 0
    assert run(path, "--rules", warn)[0] == 0
    assert run(path, "--rules", bad)[0] == 3
    typo = rules_file(tmp_path / "typo.yaml", "rules:\n  - feature: up\n    max_aledd: 1\n")
    assert run(path, "--rules", typo)[0] == 2
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, _, err = run(path, "--rules", ok, "--junit", blocker / "j.xml")  # parent is a file
    assert code == 2 and err.startswith("error: cannot write")  # a bad output path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "rules:\n  - feature: bmi\n    monotone: increasing\n",
            "rule 1, line 2 (feature 'bmi'): unknown rule 'monotone' (rules: monotonic, ",
        ),
        (
            "rules:\n  - feature: up\n    max_aled: high\n",
            "rule 1, line 2 (feature 'up'): max_aled must be a number, got 'high'",
        ),
        (
            "rules:\n  - feature: up\n    monotonic: upwards\n",
            "rule 1, line 2 (feature 'up'): monotonic must be one of increasing, decreasing, "
            "got 'upwards'",
        ),
        (
            "rules:\n  - feature: up\n    rank_at_most: 1.5\n",
            "rule 1, line 2 (feature 'up'): rank_at_most must be an integer of at least 1",
        ),
        (
            "rules:\n  - feature: up\n    max_aled: 1\n  - feature: bmi\n    sign: positive\n",
            "rule 2, line 4 (sign) on feature 'bmi': no summary has feature 'bmi' "
            "(features: up, down, flat, cat)",
        ),
        (
            "rules:\n  - feature: up\n    drift: {max_abs: 1}\n",
            "rule 1, line 2 (drift) on feature 'up' needs a baseline summary (--baseline)",
        ),
        (
            "rules:\n  - feature: up\n    severity: fatal\n    max_aled: 1\n",
            "rule 1, line 2 (feature 'up'): severity must be one of error, warn, got 'fatal'",
        ),
        ("rules: [\n", "is not valid YAML at line 2"),
        (
            "rules:\n  - feature: up\n    max_aled: 1e3\n",
            "max_aled must be a number, got '1e3' (YAML reads an exponent without a sign as "
            "text: write 1.0e+9, not 1.0e9)",
        ),
        ("- feature: up\n", "must be a mapping with a list under 'rules:'"),
    ],
)
def test_bad_rules_are_one_line_input_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "s.json"
    write_summary(path, hand_summary())
    rules = rules_file(tmp_path / "r.yaml", text)
    code, out, err = run(path, "--rules", rules)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err, err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--format", "html"),
            "error: --format must be one of text, github, markdown, got 'html'\n",
        ),
        (
            ("--json", "--format", "github"),
            "error: --json prints one JSON object on stdout; leave out --format\n",
        ),
    ],
)
def test_bad_options_are_input_errors(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    path = tmp_path / "s.json"
    write_summary(path, hand_summary())
    rules = rules_file(tmp_path / "r.yaml", "rules:\n  - feature: up\n    max_aled: 1\n")
    code, out, err = run(path, "--rules", rules, *args)
    assert (code, out, err) == (2, "", message)


def test_rules_parse_without_a_file() -> None:
    rules = parse_rules({"rules": [{"feature": "*", "drift": {"max_z": 3}}]}, path=Path("x"))
    assert rules.rules[0].params == {"max_abs": None, "max_z": 3.0, "statistic": None}
    with pytest.raises(InputError, match="drift needs max_abs and/or max_z"):
        parse_rules({"rules": [{"feature": "*", "drift": {}}]}, path=Path("x"))


def test_audit_imports_no_torch_onnxruntime_or_matplotlib(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    write_summary(path, hand_summary())
    rules = rules_file(tmp_path / "r.yaml", 'rules:\n  - feature: "*"\n    max_aled: 1\n')
    code = (
        "import sys\n"
        "from ale_cli.cli import app\n"
        f"rc = app(['audit', {str(path)!r}, '--rules', {str(rules)!r}, '--json'],"
        " standalone_mode=False)\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('torch', 'onnxruntime', 'matplotlib', 'pandas'))\n"
        "print('EXIT', rc, 'HEAVY', heavy)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parent.parent,
    )
    assert done.stdout.splitlines()[-1] == "EXIT 0 HEAVY []", done.stdout + done.stderr


# -- the example rule files --------------------------------------------------------------------

CONFIGS = Path(__file__).resolve().parent.parent / "configs"


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("audit-*.yaml")), ids=lambda p: p.name)
def test_example_rule_files_are_valid(path: Path) -> None:
    from ale_cli.audit import read_rules

    assert read_rules(path).rules


def test_example_rules_pass_on_the_sample_mlp(sample_dir: Path, tmp_path: Path) -> None:
    from ale_cli.estimators.dale import RebinRequest, RhaleRequest, rebin, rhale
    from ale_cli.estimators.interact import InteractRequest, interact
    from ale_cli.estimators.local_effects import ComputeRequest, compute

    store = tmp_path / "mlp.npz"
    inputs = ModelInputs(
        model=sample_dir / "models" / "diabetes_mlp.pt",
        data=sample_dir / "diabetes.csv",
        exclude=("target",),
    )
    compute(ComputeRequest(inputs=inputs, out=store))
    pairs_json = tmp_path / "i.json"
    write_summary(
        pairs_json, interact(InteractRequest(inputs=inputs, pairs=(("s1", "s2"),))).summary
    )
    rhale_json, dale_json, again_json = (tmp_path / n for n in ("r.json", "d.json", "a.json"))
    write_summary(rhale_json, rhale(RhaleRequest(store=store)).summary)
    write_summary(dale_json, rebin(RebinRequest(store=store, bins=20, binning="quantile")).summary)
    write_summary(again_json, rebin(RebinRequest(store=store, edges=dale_json)).summary)
    rules = CONFIGS / "audit-diabetes-mlp.yaml"
    code, out, err = run(rhale_json, dale_json, pairs_json, "--rules", rules)
    assert code == 0, out + err
    assert "audit: 0 failed," in out
    code, out, err = run(
        again_json, "--baseline", dale_json, "--rules", CONFIGS / "audit-drift.yaml"
    )
    assert code == 0, out + err


def test_recorded_and_computed_statistics_give_the_same_verdicts(tmp_path: Path) -> None:
    from ale_cli.summary.model import with_statistics

    plain, recorded = tmp_path / "plain.json", tmp_path / "recorded.json"
    write_summary(plain, hand_summary())
    write_summary(recorded, with_statistics(hand_summary(), np.linspace(0, 1, 50)))
    rules = rules_file(
        tmp_path / "r.yaml",
        'rules:\n  - feature: "*"\n    max_aled: 0.3\n    rank_at_most: 2\n'
        "    max_heterogeneity_share: 0.15\n",
    )
    a, b = audit_files([plain], rules), audit_files([recorded], rules)
    assert [(c.feature, c.rule, c.verdict, c.value) for c in a.checks] == [
        (c.feature, c.rule, c.verdict, c.value) for c in b.checks
    ]
