"""``ale audit``: rules on summaries (:mod:`.rules`), their evaluation (:mod:`.evaluate`)
and the reports (:mod:`.report`). numpy and PyYAML only: no model, no torch, no matplotlib.

Exit codes of ``ale audit``: 0 every error-severity rule passed (warnings
allowed), 3 at least one error-severity rule failed
(:data:`~ale_cli.audit.evaluate.EXIT_RULES_FAILED`), 2 bad input (a summary or
the rules file), 1 a failure while running.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ale_cli.audit.evaluate import EXIT_PASSED, EXIT_RULES_FAILED, AuditResult, Check, evaluate
from ale_cli.audit.rules import RuleSet, read_rules
from ale_cli.summary.model import read_summary
from ale_cli.summary.regional import REGIONAL, read_regional

__all__ = [
    "EXIT_PASSED",
    "EXIT_RULES_FAILED",
    "AuditResult",
    "Check",
    "RuleSet",
    "audit_files",
    "evaluate",
    "read_rules",
]


def audit_files(
    summaries: Sequence[str | Path], rules: str | Path, *, baseline: str | Path | None = None
) -> AuditResult:
    """Read the rules (first: a bad rules file is reported before any summary is read),
    the summaries and the baseline, and evaluate."""

    rule_set = read_rules(rules)
    loaded = [(str(p), read_summary(p)) for p in summaries]
    regions = {
        label: read_regional(label) for label, s in loaded if s.estimator == REGIONAL
    }  # ale regional: the regions the per-region rules read
    base = (str(baseline), read_summary(baseline)) if baseline is not None else None
    return evaluate(loaded, rule_set, baseline=base, regions=regions)
