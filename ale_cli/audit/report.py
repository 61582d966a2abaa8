"""What ``ale audit`` writes: a text table, a JSON report, JUnit XML, GitHub annotations, a
markdown summary (each described in ``docs/audit.md``, "Outputs"). The JUnit XML and the
markdown start with the ``<!-- generator: ale ...`` comment the output guard knows.
"""

from __future__ import annotations

import html
import os
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ale_cli import __version__
from ale_cli.audit.evaluate import AuditResult, Check
from ale_cli.outputs.guard import JUNIT_MARKER

SCHEMA_VERSION = 1
SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schema" / "audit.schema.json"
_HEADERS = ("FEATURE", "RULE", "OBSERVED", "LIMIT", "VERDICT")
#: the first line of a markdown summary (the output guard recognises it)
MARKDOWN_MARKER = "<!-- generator: ale"
_VERDICT_WORD = {"fail": "FAIL", "warn": "WARN", "pass": "pass", "skip": "skip"}


def _counted(result: AuditResult) -> str:
    """``2 failed, 1 warning, 12 passed, 0 skipped``."""
    c = result.counts
    warn = f"{c['warn']} warning{'s' if c['warn'] != 1 else ''}"
    return f"{c['fail']} failed, {warn}, {c['pass']} passed, {c['skip']} skipped"


def totals(result: AuditResult) -> str:
    """``audit: 2 failed, 1 warning, 12 passed, 0 skipped -> exit 3``."""
    return f"audit: {_counted(result)} -> exit {result.exit_code}"


def aligned(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """The header and the rows as lines of left-aligned columns two spaces apart."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    return [
        "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip()
        for row in [headers, *rows]
    ]


def text_table(result: AuditResult) -> str:
    """The checks as an aligned text table followed by the totals line."""
    several = len(set(result.summaries)) > 1
    headers = (*_HEADERS, "SUMMARY") if several else _HEADERS
    rows = [
        (c.feature, c.rule, c.observed, c.limit, c.verdict.upper(), c.summary)[: len(headers)]
        for c in result.checks
    ]
    lines = aligned(headers, rows)
    if not rows:
        lines.append("(no checks: no rule applies to these summaries)")
    lines.append(totals(result))
    return "\n".join(lines) + "\n"


def report_dict(result: AuditResult, *, created: str | None = None) -> dict[str, Any]:
    """The JSON report (see ``ale_cli/schema/audit.schema.json``)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "ale", "version": __version__},
        **({} if created is None else {"created": created}),
        "rules": result.rules,
        "summaries": list(result.summaries),
        "baseline": result.baseline,
        "passed": result.passed,
        "exit_code": result.exit_code,
        "counts": result.counts,
        "checks": [vars(c) for c in result.checks],
    }


def junit_xml(result: AuditResult) -> bytes:
    """JUnit XML for the checks (UTF-8, with an XML declaration)."""
    fails = str(result.counts["fail"])
    root = ET.Element("testsuites", name="ale audit", tests=str(len(result.checks)), failures=fails)
    root.attrib |= {"errors": "0", "time": "0"}
    labels = list(dict.fromkeys([*result.summaries, *(c.summary for c in result.checks)]))
    for label in labels:
        checks = [c for c in result.checks if c.summary == label]
        n = {v: str(sum(c.verdict == v for c in checks)) for v in ("fail", "skip")}
        suite = ET.SubElement(
            root, "testsuite", name=f"ale audit {label}", tests=str(len(checks)), failures=n["fail"]
        )
        suite.attrib |= {"errors": "0", "skipped": n["skip"], "time": "0"}
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="rules", value=result.rules)
        if result.baseline is not None:
            ET.SubElement(props, "property", name="baseline", value=result.baseline)
        stem = Path(label).name.removesuffix(".json")
        classname = "ale.audit." + "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in stem)
        names = [f"{c.feature}: {c.rule}" for c in checks]
        for c, name in zip(checks, names, strict=True):
            if names.count(name) > 1:  # two entries with this rule on this feature
                name += f" (rule {c.entry})"
            case = ET.SubElement(suite, "testcase", name=name, classname=classname, time="0")
            text = f"observed: {c.observed}\nlimit: {c.limit}\nseverity: {c.severity}"
            if c.verdict == "fail":
                message = f"observed {c.observed}; limit {c.limit}"
                ET.SubElement(case, "failure", message=message, type=c.rule).text = text
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


def _one_line(text: str) -> str:
    """``|`` (and ``\\``) escaped, line breaks as spaces: for a table or a code span."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def cell(text: str) -> str:
    """Text safe in a markdown table cell: ``|`` escaped, ``<``, ``>`` and ``&`` as
    entities (GitHub renders HTML in markdown), line breaks as spaces.

    >>> cell("<b>a|b\\nc")
    '&lt;b&gt;a\\\\|b c'
    """
    return _one_line(html.escape(text, quote=False))


def _table(checks: list[Check], several: bool) -> list[str]:
    head = ["Verdict", "Feature", "Rule", "Observed", "Limit", *(["Summary"] if several else [])]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in checks:
        row = [_VERDICT_WORD[c.verdict], c.feature, c.rule, c.observed, c.limit]
        row += [c.summary] if several else []
        lines.append("| " + " | ".join(cell(v) for v in row) + " |")
    return lines


def markdown(result: AuditResult) -> str:
    """The markdown summary of ``result``, for a CI job summary (``$GITHUB_STEP_SUMMARY``)
    or a merge-request comment; its first line, invisible when rendered, the marker."""
    c = result.counts
    verdict = "passed" if result.passed else "FAILED"
    lines = [
        f"{MARKDOWN_MARKER} {__version__}: ale audit, markdown summary -->",
        f"### ale audit {verdict}: {_counted(result)} (exit {result.exit_code})",
        "",
    ]
    about = f"Rules `{_one_line(result.rules)}` on " + ", ".join(
        f"`{_one_line(s)}`" for s in dict.fromkeys(result.summaries)
    )  # code spans: HTML is not read there
    if result.baseline is not None:
        about += f", baseline `{_one_line(result.baseline)}`"
    lines += [about + ".", ""]
    several = len(set(result.summaries)) > 1
    flagged = [x for x in result.checks if x.verdict in ("fail", "warn")]
    rest = [x for x in result.checks if x.verdict not in ("fail", "warn")]
    if flagged:
        lines += [*_table(flagged, several), ""]
    elif result.checks:
        lines += ["Every rule passed.", ""]
    else:
        lines += ["No check: no rule applies to these summaries.", ""]
    if rest:
        lines += [
            f"<details><summary>{c['pass']} passed, {c['skip']} skipped</summary>",
            "",
            *_table(rest, several),
            "",
            "</details>",
            "",
        ]
    return "\n".join(lines)
