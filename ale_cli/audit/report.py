"""What ``ale audit`` writes: a text table, a JSON report, JUnit XML, GitHub annotations.

- :func:`text_table`: columns FEATURE, RULE, OBSERVED, LIMIT, VERDICT (and
  SUMMARY when several summaries were audited), then one line of totals; plain
  ASCII, no colour, so it reads the same in any CI log.
- :func:`report_dict`: the JSON report, described by
  ``ale_cli/schema/audit.schema.json`` (:data:`SCHEMA_PATH`).
- :func:`junit_xml`: after the XML declaration the comment
  ``<!-- generator: ale VERSION: ale audit, JUnit report -->`` (how the output guard
  knows the file is ours), then one ``<testsuite>`` per audited summary, one ``<testcase>``
  per check (name ``"<feature>: <rule>"``): a failed error-severity rule is a
  ``<failure>`` whose message gives the observed value and the limit; a failed
  warn-severity rule passes and says so in ``<system-out>``; a skipped check
  is ``<skipped>``. The elements and attributes are those of the JUnit schema
  Jenkins and GitLab read (``tests/data/junit.xsd``).
- :func:`github_annotations`: ``::error``/``::warning`` workflow commands for
  the failed rules, pointing at the rule's line in the rules file (its path
  relative to ``$GITHUB_WORKSPACE``, else to the current directory, when it is
  inside: GitHub places an annotation only on a path relative to the repository).
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ale_cli import __version__
from ale_cli.audit.evaluate import AuditResult, Check
from ale_cli.outputs.guard import JUNIT_MARKER

SCHEMA_VERSION = 1
SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schema" / "audit.schema.json"
_HEADERS = ("FEATURE", "RULE", "OBSERVED", "LIMIT", "VERDICT")


def totals(result: AuditResult) -> str:
    """``audit: 2 failed, 1 warning, 12 passed, 0 skipped -> exit 3``."""
    c = result.counts
    warn = f"{c['warn']} warning{'s' if c['warn'] != 1 else ''}"
    return (
        f"audit: {c['fail']} failed, {warn}, {c['pass']} passed, {c['skip']} skipped "
        f"-> exit {result.exit_code}"
    )


def text_table(result: AuditResult) -> str:
    """The checks as an aligned text table followed by the totals line."""
    several = len(set(result.summaries)) > 1
    headers = (*_HEADERS, "SUMMARY") if several else _HEADERS
    rows = [
        (
            c.feature,
            c.rule,
            c.observed,
            c.limit,
            c.verdict.upper(),
            *((c.summary,) if several else ()),
        )
        for c in result.checks
    ]
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]
    lines = [
        "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip()
        for row in [headers, *rows]
    ]
    if not rows:
        lines.append("(no checks: no rule applies to these summaries)")
    lines.append(totals(result))
    return "\n".join(lines) + "\n"


def _check_dict(c: Check) -> dict[str, Any]:
    return {
        "feature": c.feature,
        "rule": c.rule,
        "severity": c.severity,
        "verdict": c.verdict,
        "observed": c.observed,
        "limit": c.limit,
        "value": c.value,
        "details": c.details,
        "summary": c.summary,
        "entry": c.entry,
        "line": c.line,
    }


def report_dict(result: AuditResult, *, created: str | None = None) -> dict[str, Any]:
    """The JSON report (see ``ale_cli/schema/audit.schema.json``)."""
    out: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "ale", "version": __version__},
    }
    if created is not None:
        out["created"] = created
    out |= {
        "rules": result.rules,
        "summaries": list(result.summaries),
        "baseline": result.baseline,
        "passed": result.passed,
        "exit_code": result.exit_code,
        "counts": result.counts,
        "checks": [_check_dict(c) for c in result.checks],
    }
    return out


def _classname(label: str) -> str:
    stem = Path(label).name.removesuffix(".json")
    return "ale.audit." + "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in stem)


def junit_xml(result: AuditResult) -> bytes:
    """JUnit XML for the checks (UTF-8, with an XML declaration)."""
    root = ET.Element("testsuites", name="ale audit")
    c_all = result.counts
    root.set("tests", str(len(result.checks)))
    root.set("failures", str(c_all["fail"]))
    root.set("errors", "0")
    root.set("time", "0")
    labels = list(dict.fromkeys([*result.summaries, *(c.summary for c in result.checks)]))
    for label in labels:
        checks = [c for c in result.checks if c.summary == label]
        suite = ET.SubElement(root, "testsuite", name=f"ale audit {label}")
        suite.set("tests", str(len(checks)))
        suite.set("failures", str(sum(c.verdict == "fail" for c in checks)))
        suite.set("errors", "0")
        suite.set("skipped", str(sum(c.verdict == "skip" for c in checks)))
        suite.set("time", "0")
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="rules", value=result.rules)
        if result.baseline is not None:
            ET.SubElement(props, "property", name="baseline", value=result.baseline)
        for c in checks:
            case = ET.SubElement(
                suite, "testcase", name=f"{c.feature}: {c.rule}", classname=_classname(label)
            )
            case.set("time", "0")
            text = f"observed: {c.observed}\nlimit: {c.limit}\nseverity: {c.severity}"
            if c.verdict == "fail":
                failure = ET.SubElement(
                    case,
                    "failure",
                    message=f"observed {c.observed}; limit {c.limit}",
                    type=c.rule,
                )
                failure.text = text
            elif c.verdict == "skip":
                ET.SubElement(case, "skipped", message=c.observed)
            elif c.verdict == "warn":
                out = ET.SubElement(case, "system-out")
                out.text = f"warning (severity warn, not failing): {text}"
    ET.indent(root)
    text = bytes(ET.tostring(root, encoding="utf-8", xml_declaration=True))
    declaration, _, body = text.partition(b"\n")
    mark = f"{JUNIT_MARKER} {__version__}: ale audit, JUnit report -->\n".encode()
    return declaration + b"\n" + mark + body + b"\n"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation_path(path: str, env: Mapping[str, str] | None = None) -> str:
    """``path`` relative to ``$GITHUB_WORKSPACE`` (else the current directory) when it is
    inside it, else as given.

    >>> annotation_path("/ws/configs/r.yaml", {"GITHUB_WORKSPACE": "/ws"})
    'configs/r.yaml'
    >>> annotation_path("/elsewhere/r.yaml", {"GITHUB_WORKSPACE": "/ws"})
    '/elsewhere/r.yaml'
    """
    env = os.environ if env is None else env
    base = Path(env.get("GITHUB_WORKSPACE") or os.getcwd())
    try:
        resolved = Path(os.path.abspath(path))
        return resolved.relative_to(Path(os.path.abspath(base))).as_posix()
    except ValueError:
        return path


def github_annotations(result: AuditResult) -> list[str]:
    """``::error``/``::warning`` lines for the failed checks (the GitHub Actions syntax).

    >>> from ale_cli.audit.evaluate import AuditResult, Check
    >>> c = Check(feature="bmi", rule="monotonic", severity="error", verdict="fail",
    ...           observed="dip of 0.5 from 1 to 2 (z 4)", limit="increasing", summary="s.json",
    ...           line=3)
    >>> github_annotations(AuditResult(checks=(c,), summaries=("s.json",), rules="r.yaml"))
    ['::error file=r.yaml,line=3,title=ale audit%3A bmi monotonic::bmi: monotonic fail -- dip of 0.5 from 1 to 2 (z 4) (limit: increasing)']
    """  # noqa: E501
    lines = []
    for c in result.checks:
        if c.verdict not in ("fail", "warn"):
            continue
        kind = "error" if c.verdict == "fail" else "warning"
        props = [f"file={_escape_property(annotation_path(result.rules))}"]
        if c.line is not None:
            props.append(f"line={c.line}")
        props.append(f"title={_escape_property(f'ale audit: {c.feature} {c.rule}')}")
        lines.append(f"::{kind} {','.join(props)}::{_escape_data(c.message)}")
    return lines
