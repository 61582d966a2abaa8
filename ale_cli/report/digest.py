"""What the report says first: the summary it measures on, its verdict and a paragraph in words."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ale_cli.summary.model import Summary


def finest(first_order: Sequence[tuple[str, Summary]]) -> int:
    """The index of the summary with the most bins over its estimable features (the first
    on a tie): drift measured on RHALE's few wide bins would understate a moved curve."""
    bins = [sum(f.n_bins for f in s.features if f.status == "ok") for _, s in first_order]
    return bins.index(max(bins))


def _num(value: Any) -> str:
    return "-" if value is None else f"{float(value):.3g}"


def verdict(audit: dict[str, Any] | None) -> dict[str, str]:
    """The banner: ``kind`` (pass, warn, fail or none) and its ``text``."""
    if audit is None:
        return {"kind": "none", "text": "No audit: no rules were checked on this run."}
    c = audit["counts"]
    failed = [x for x in audit["checks"] if x["verdict"] == "fail"]
    warned = [x for x in audit["checks"] if x["verdict"] == "warn"]
    if failed:
        text = f"Audit failed: {c['fail']} rule(s) failed ({_named(failed, audit)})"
        if warned:
            text += f", {len(warned)} warning(s)"
        return {"kind": "fail", "text": text + f" (exit {audit['exit_code']})."}
    if warned:
        return {
            "kind": "warn",
            "text": f"Audit passed with {len(warned)} warning(s) ({_named(warned, audit)}): "
            f"{c['pass']} passed, {c['skip']} skipped.",
        }
    return {"kind": "pass", "text": f"Audit passed: all {c['pass']} checks passed."}


def _named(checks: list[dict[str, Any]], audit: dict[str, Any]) -> str:
    """The first five ``feature rule`` (and summary file when the audit read several)."""
    several = audit.get("several")
    named = ", ".join(
        f"{x['feature']} {x['rule']}" + (f" ({x.get('summary_file')})" if several else "")
        for x in checks[:5]
    )
    return named + (f" and {len(checks) - 5} more" if len(checks) > 5 else "")


def paragraph(
    *,
    rows: Sequence[dict[str, Any]],
    main_label: str | None,
    n_rows: int,
    moved: Sequence[Any],
    audit: dict[str, Any] | None,
    history_runs: int,
) -> str:
    """The summary in words (plain text; the template escapes it): how many features, the
    top three by ALED, what moved most since the previous run, the audit's counts."""
    if main_label is None:
        return "This report holds no first-order summary."
    estimable = [r for r in rows if r["rank"] is not None]
    parts = [
        f"{len(rows)} features on {n_rows} rows, {len(estimable)} estimable; "
        f"importance from {main_label}."
    ]
    top = estimable[:3]
    if top:
        named = ", ".join(f"{r['name']} (NALED {_num(r['naled'])})" for r in top)
        parts.append(f"The most important by ALED: {named}.")
    if moved:
        m = moved[0]
        parts.append(
            f"Since the previous run, {m.name} moved most: max |difference| "
            f"{_num(m.previous)} at {_num(m.previous_at)} against {m.previous_run}."
        )
    elif history_runs:
        parts.append("No earlier run holds a comparable curve.")
    else:
        parts.append("No earlier run to compare with.")
    if audit is not None:
        c = audit["counts"]
        parts.append(
            f"Audit: {c['fail']} failed, {c['warn']} warning(s), {c['pass']} passed, "
            f"{c['skip']} skipped."
        )
    return " ".join(parts)


def split_checks(audit: dict[str, Any] | None) -> dict[str, list[dict[str, Any]]] | None:
    """The audit's checks as ``flagged`` (failed, then warned) and ``rest`` (passed, skipped)."""
    if audit is None:
        return None
    checks = audit["checks"]
    return {
        "flagged": [c for c in checks if c["verdict"] == "fail"]
        + [c for c in checks if c["verdict"] == "warn"],
        "rest": [c for c in checks if c["verdict"] not in ("fail", "warn")],
    }
