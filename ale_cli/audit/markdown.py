"""The audit as markdown, for a CI job summary (``$GITHUB_STEP_SUMMARY``) or a merge-request
comment: ``ale audit --format markdown`` (standard output) or ``-o FILE`` (described in
``docs/audit.md``). The first line is the comment ``<!-- generator: ale VERSION: ale audit,
markdown summary -->``, invisible when rendered: how the output guard knows the file is ours.
"""

from __future__ import annotations

from ale_cli import __version__
from ale_cli.audit.evaluate import AuditResult, Check

#: the first line of a markdown summary (the output guard recognises it)
MARKDOWN_MARKER = "<!-- generator: ale"
_VERDICT_WORD = {"fail": "FAIL", "warn": "WARN", "pass": "pass", "skip": "skip"}


def cell(text: str) -> str:
    """Text safe in a markdown table cell: ``|`` escaped, line breaks as spaces.

    >>> cell("a|b\\nc")
    'a\\\\|b c'
    """
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def _table(checks: list[Check], several: bool) -> list[str]:
    head = ["Verdict", "Feature", "Rule", "Observed", "Limit", *(["Summary"] if several else [])]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in checks:
        row = [_VERDICT_WORD[c.verdict], c.feature, c.rule, c.observed, c.limit]
        row += [c.summary] if several else []
        lines.append("| " + " | ".join(cell(v) for v in row) + " |")
    return lines


def markdown(result: AuditResult) -> str:
    """The markdown summary of ``result`` (see the module docstring)."""
    c = result.counts
    verdict = "passed" if result.passed else "FAILED"
    warn = f"{c['warn']} warning{'s' if c['warn'] != 1 else ''}"
    lines = [
        f"{MARKDOWN_MARKER} {__version__}: ale audit, markdown summary -->",
        f"### ale audit {verdict}: {c['fail']} failed, {warn}, {c['pass']} passed, "
        f"{c['skip']} skipped (exit {result.exit_code})",
        "",
    ]
    about = f"Rules `{cell(result.rules)}` on " + ", ".join(
        f"`{cell(s)}`" for s in dict.fromkeys(result.summaries)
    )
    if result.baseline is not None:
        about += f", baseline `{cell(result.baseline)}`"
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
