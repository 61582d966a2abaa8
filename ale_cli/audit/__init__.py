"""``ale audit``: rules (:mod:`.rules`), their evaluation (:mod:`.evaluate`), reports
(:mod:`.report`); numpy and PyYAML only. Exit codes: 0 passed (warnings allowed), 3 an
error-severity rule failed, 2 bad input, 1 a failure while running.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ale_cli.audit.evaluate import AuditResult, evaluate
from ale_cli.audit.rules import read_rules
from ale_cli.summary.model import read_summary
from ale_cli.summary.regional import REGIONAL, read_regional

__all__ = ["AuditResult", "audit_files", "evaluate", "read_rules"]


def audit_files(
    summaries: Sequence[str | Path], rules: str | Path, *, baseline: str | Path | None = None
) -> AuditResult:
    """Read the rules (first, so a bad rules file is reported first), the summaries and
    the baseline, and evaluate."""
    rule_set = read_rules(rules)
    loaded = [(str(p), read_summary(p)) for p in summaries]
    regions = {
        label: read_regional(label) for label, s in loaded if s.estimator == REGIONAL
    }  # ale regional: the regions the per-region rules read
    base = (str(baseline), read_summary(baseline)) if baseline is not None else None
    return evaluate(loaded, rule_set, baseline=base, regions=regions)
