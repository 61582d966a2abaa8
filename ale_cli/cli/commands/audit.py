"""``ale audit`` (rules on summaries, exit codes for CI) and ``ale diff`` (two summaries compared).

Neither needs the model: numpy and PyYAML only (``ale diff -o`` imports
matplotlib to draw).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ale_cli.audit import audit_files
from ale_cli.audit.report import (
    aligned,
    github_annotations,
    junit_xml,
    markdown,
    report_dict,
    text_table,
    totals,
)
from ale_cli.checks import check_choice, names_tuple
from ale_cli.cli.command import Outcome, Run, command, counted, is_stdio, write_out
from ale_cli.cli.options import FeaturesOption, unshown
from ale_cli.errors import InputError
from ale_cli.io.jsonio import dumps
from ale_cli.plot.diff import render_diff
from ale_cli.summary.build import utc_now
from ale_cli.summary.compare import compare_summaries
from ale_cli.summary.model import read_summary
from ale_cli.summary.regional import REGIONAL, regional_diff_lines

if TYPE_CHECKING:
    from ale_cli.audit import AuditResult
    from ale_cli.summary.compare import FeatureComparison


def _stdout_output(run: Run, outputs: dict[str, Path | None], output_format: str) -> str | None:
    """The one option whose data goes to standard output (``-``, or ``--format markdown``
    without ``-o``), or None; refused for two, or with --json."""
    if run.json and output_format != "text":
        raise InputError(
            "--json prints one JSON object on stdout; leave out {param}", param="output_format"
        )
    given = [name for name, path in outputs.items() if is_stdio(path)]
    if output_format == "markdown" and outputs["out"] is None:
        given.append("output_format")
    if len(given) > 1:
        a, b = (
            f"{{param:{n}}} markdown" if n == "output_format" else f"{{param:{n}}} -"
            for n in given[:2]
        )
        raise InputError(
            f"{a} and {b} both write to standard output; give one a path", param=given[0]
        )
    if given and given[0] != "output_format":
        run.claim_stdout("-", given[0])
    return given[0] if given else None


@command(
    epilog="Exit codes: 0 all error-severity rules passed (warnings allowed); 3 at least one "
    "error-severity rule failed; 2 bad input (a summary, the rules file, an option); 1 a "
    "failure while running.\n\n"
    "Renamed: --report FILE is now --json-report FILE (it writes JSON; 'ale report' writes "
    "the HTML page); the old spelling still works in this release.\n\n"
    "With --quiet the table lists only the failed and warned rules.\n\n"
    "Example: ale audit out/diabetes-mlp-rhale.json out/diabetes-mlp-interact.json "
    "--rules configs/audit-diabetes-mlp.yaml --junit out/audit.xml "
    '-o "$GITHUB_STEP_SUMMARY"',
    outputs={"json_report": "audit-json", "junit": "junit", "out": "audit-markdown"},
    inputs=("summaries", "rules", "baseline"),
    aliases={"--report": "json_report"},  # the old spelling, hidden, for one release
)
def audit(
    run: Run,
    summaries: Annotated[
        list[Path], typer.Argument(help="Summary JSON files (rebin, rhale, classic, interact).")
    ],
    rules: Annotated[
        Path,
        typer.Option("--rules", help="YAML rules file: a list of entries under 'rules:'."),
    ],
    baseline: Annotated[
        Path | None,
        unshown("--baseline", help="Summary of the previous release, for the drift rule."),
    ] = None,
    json_report: Annotated[
        Path | None,
        unshown(
            "--json-report",
            help="Also write the JSON report to this file ('-': standard output; the table "
            "then goes to stderr), for 'ale report --audit'.",
        ),
    ] = None,
    junit: Annotated[
        Path | None,
        unshown(
            "--junit",
            help="Write JUnit XML (one test case per feature x rule) for GitLab/Jenkins "
            "('-': standard output; the table then goes to stderr).",
        ),
    ] = None,
    output_format: Annotated[
        str,
        typer.Option(
            "--format",
            help="text: the table; github: the table and ::error/::warning annotation lines; "
            "markdown: a summary for a CI job page or a merge-request comment (failed rules "
            "first, passed ones folded) instead of the table.",
        ),
    ] = "text",
    out: Annotated[
        Path | None,
        unshown(
            "--out",
            "-o",
            help="Write the markdown summary to this file ('-': standard output; the table "
            'then goes to stderr), e.g. -o "$GITHUB_STEP_SUMMARY".',
        ),
    ] = None,
) -> Outcome:
    """Check summaries against rules (monotonic, sign, range, max_aled, min_aled,
    max_heterogeneity_share, rank_at_most, max_interaction, drift, not_estimable).

    Prints a table (feature, rule, observed, limit, verdict) and exits 0 when
    every error-severity rule passed, 3 when one failed.
    """
    check_choice(output_format, ("text", "github", "markdown"), "output_format")
    files = {"json_report": json_report, "junit": junit, "out": out}
    to_stdout = _stdout_output(run, files, output_format)
    result = audit_files(summaries, rules, baseline=baseline)
    data = report_dict(result, created=utc_now())
    outputs = _write_outputs(run, files, result, data)
    lines = text_table(result).splitlines()[:-1]
    if run.quiet:  # only the failed and warned rows
        lines = [c.message for c in result.checks if c.verdict in ("fail", "warn")]
    lines += github_annotations(result) if output_format == "github" else []
    if to_stdout == "output_format":
        typer.echo(markdown(result), nl=False)
        lines = []
    counts = {**{k: int(v) for k, v in result.counts.items()}, "checks": len(result.checks)}
    return Outcome(
        message=totals(result),
        outputs=outputs,
        counts=counts,
        lines=tuple(lines),
        details={"report": data},
        exit_code=result.exit_code,
        data_on_stdout=to_stdout is not None,
        lines_to_stderr=to_stdout is not None,
    )


def _write_outputs(
    run: Run, files: dict[str, Path | None], result: AuditResult, data: dict[str, Any]
) -> tuple[str, ...]:
    """Write the asked outputs (the JSON report, JUnit XML, the markdown summary)."""
    payloads = {
        "json_report": lambda: dumps(data),
        "junit": lambda: junit_xml(result),
        "out": lambda: markdown(result),
    }
    for name, path in files.items():
        if path is not None:
            write_out(run, path, payloads[name](), name)
    return tuple(str(path) for path in files.values() if path is not None)


def _diff_rows(comparisons: list[FeatureComparison]) -> list[tuple[str, ...]]:
    def num(v: float) -> str:
        return "inf" if v == float("inf") else f"{v:.4g}"

    rows: list[tuple[str, ...]] = []
    for c in comparisons:
        rank = "-"
        if c.rank_base is not None or c.rank_other is not None:
            a = "-" if c.rank_base is None else str(c.rank_base)
            b = "-" if c.rank_other is None else str(c.rank_other)
            rank = f"{a} -> {b}" if a != b else a
        d = c.difference
        if d is None:
            rows.append((c.name, "-", "-", "-", "-", rank, str(c.reason)))
            continue
        values = (d.max_abs, d.max_abs_at, d.max_z, d.max_z_at)
        rows.append((c.name, *map(num, values), rank, "rank changed" if c.rank_changed else "ok"))
    return rows


def diff_dict(comparisons: list[FeatureComparison], a: str, b: str) -> dict[str, Any]:
    """The JSON of ``ale diff --json``."""
    features = []
    for c in comparisons:
        item: dict[str, Any] = {"name": c.name, "status": c.status}
        if c.reason is not None:
            item["reason"] = c.reason
        if c.difference is not None:
            d = c.difference
            keys = ("max_abs", "max_abs_at", "max_z", "max_z_at", "n_outside", "grid", "difference")
            item |= {k: getattr(d, k) for k in (*keys, "z")}
        item |= {
            "aled_a": c.aled_base,
            "aled_b": c.aled_other,
            "rank_a": c.rank_base,
            "rank_b": c.rank_other,
            "rank_changed": c.rank_changed,
            "statistics_a": c.statistics_base,
            "statistics_b": c.statistics_other,
        }
        features.append(item)
    return {"a": a, "b": b, "grid": "a", "features": features}


@command(
    epilog="Renamed: --formats is now --format; the old spelling still works in this "
    "release.\n\n"
    "Example: ale diff out/release-1.json out/release-2.json -o out/plots/diff",
    outputs={"out": "figures"},
    inputs=("a", "b"),
    aliases={"--formats": "formats"},  # the old spelling, hidden, for one release
)
def diff(
    a: Annotated[Path, typer.Argument(help="First summary (its edges are the common grid).")],
    b: Annotated[Path, typer.Argument(help="Second summary.")],
    out: Annotated[
        Path | None,
        unshown(
            "--out",
            "-o",
            help="Directory for one overlay figure per feature and an overview (replaced "
            "as a whole; it must be new, empty or a figure directory ale wrote).",
        ),
    ] = None,
    features: FeaturesOption = None,
    formats: Annotated[
        str, typer.Option("--format", help="Figure formats with -o: png, svg or png,svg.")
    ] = "png",
) -> Outcome:
    """Compare two first-order summaries (not interact) feature by feature on A's
    edges: the largest absolute difference of the centered curves, the largest
    difference in standard errors, and the features whose ALED rank changed."""

    fmts = names_tuple(formats, "formats") or ("png",)
    for fmt in fmts:
        if fmt not in ("png", "svg"):
            raise InputError(f"{{param}} must be png and/or svg, got '{fmt}'", param="formats")
    sa, sb = read_summary(a), read_summary(b)
    for path, s in ((a, sa), (b, sb)):
        if not s.features:  # an interact summary: pairs only
            raise InputError(
                f"summary '{path}' has no first-order curves (an interact summary?); ale diff "
                "compares the first-order curves of two summaries (rebin, rhale, classic, regional)"
            )
    names = names_tuple(features, "features")
    known = {f.name for f in (*sa.features, *sb.features)}
    for name in names or ():
        if name not in known:
            raise InputError(f"neither summary has feature '{name}'")
    comparisons = compare_summaries(
        sa, sb, features=names, base_label=f"'{a}'", other_label=f"'{b}'"
    )
    written: list[Path] = []
    if out is not None:
        written = render_diff(sa, sb, comparisons, out, labels=(str(a), str(b)), formats=fmts)
    headers = ("FEATURE", "MAX |DIFF|", "AT", "MAX Z", "AT", "RANK A->B", "STATUS")
    lines = aligned(headers, _diff_rows(comparisons))
    if sa.estimator == sb.estimator == REGIONAL:  # their regions compared
        lines += regional_diff_lines(a, b)
    changed = [c.name for c in comparisons if c.rank_changed]
    tail = f"; rank changed: {', '.join(changed)}" if changed else ""
    where = f"; {len(written)} figure files -> '{out}'" if out is not None else ""
    return Outcome(
        message=f"diff: {counted(len(comparisons), 'feature')} on the edges of '{a}'{tail}{where}",
        outputs=tuple(str(p) for p in written),
        counts={"features": len(comparisons), "rank_changed": len(changed), "files": len(written)},
        lines=tuple(lines),
        details=diff_dict(comparisons, str(a), str(b)),
    )
