"""Drift of a feature's statistic against the baseline: ``drift: {statistic: naled, max_abs: 5}``.

The statistic is the one the summary records (:mod:`ale_cli.summary.statistics`;
computed from the curve for older summaries): ``naled`` (percentile points of the
prediction distribution), ``aled`` (output units), ``heterogeneity_share`` or
``rank`` (1 = the largest ALED). The rule passes when
``|current - baseline| <= max_abs``. A statistic that is infinite on one side only
(a heterogeneity share over an ALED of 0) is an infinite change; infinite on both
sides, no change.
"""

from __future__ import annotations

import math
from typing import Any

from ale_cli.audit.curves import Outcome, fmt

#: how the table names each statistic
LABELS = {
    "naled": "NALED",
    "aled": "ALED",
    "heterogeneity_share": "heterogeneity share",
    "rank": "rank",
}


def statistic_value(stats: dict[str, Any], statistic: str) -> float | None:
    """The recorded ``statistic`` of one feature; None when it is not recorded (NALED
    without a prediction distribution). A ``null`` heterogeneity share is infinite."""
    if statistic == "heterogeneity_share" and statistic in stats and stats[statistic] is None:
        return math.inf
    value = stats.get(statistic)
    return None if value is None else float(value)


def change(base: float, current: float) -> float:
    """``current - base``, with an infinite value on both sides counted as no change.

    >>> change(12.5, 18.0), change(math.inf, math.inf), change(1.0, math.inf)
    (5.5, 0.0, inf)
    """
    if math.isinf(base) and math.isinf(current) and (base > 0) == (current > 0):
        return 0.0
    return current - base


def statistic_drift(
    statistic: str, base: dict[str, Any], current: dict[str, Any], max_abs: float
) -> Outcome | str:
    """The outcome of the rule on one feature's statistics (baseline, current), or why it
    cannot be evaluated (a statistic not recorded on one side).

    >>> ok, observed, limit, value, details = statistic_drift(
    ...     "naled", {"naled": 10.0}, {"naled": 16.5}, 5.0)
    >>> ok, observed, limit, value
    (False, 'NALED 10 -> 16.5 (change +6.5)', '|change| <= 5', 6.5)
    """
    label = LABELS[statistic]
    b, c = statistic_value(base, statistic), statistic_value(current, statistic)
    if b is None or c is None:
        side = "baseline" if b is None else "summary"
        return f"{label} not recorded in the {side} (it needs the prediction distribution)"
    d = change(b, c)
    shown = (lambda v: str(int(v))) if statistic == "rank" else fmt
    sign = "+" if d >= 0 else ""
    observed = f"{label} {shown(b)} -> {shown(c)} (change {sign}{shown(d)})"
    details = {"statistic": statistic, "baseline": b, "current": c, "change": d}
    return abs(d) <= max_abs, observed, f"|change| <= {fmt(max_abs)}", abs(d), details
