"""``ale audit``: rules (:mod:`.rules`), their evaluation (:mod:`.evaluate`), reports
(:mod:`.report`); numpy and PyYAML only. Exit codes: 0 passed (warnings allowed), 3 an
error-severity rule failed, 2 bad input, 1 a failure while running.
"""

from ale_cli.audit.evaluate import AuditResult, audit_files, evaluate
from ale_cli.audit.rules import read_rules

__all__ = ["AuditResult", "audit_files", "evaluate", "read_rules"]
