"""The curve rules of ``ale audit``: what each measures on a first-order curve (every rule
and its formula: ``docs/audit.md``). A dip within 1e-9 of max |f| counts as none; for
``drift`` on a statistic, infinite on one side only (a heterogeneity share over an ALED
of 0) is an infinite change, on both no change.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ale_cli.summary.compare import ROUNDING
from ale_cli.summary.model import FeatureSummary

#: what a rule function returns: passed, observed text, limit text, main value, details
Outcome = tuple[bool, str, str, float, dict[str, Any]]


def fmt(value: float) -> str:
    if np.isnan(value):
        return "n/a"
    if np.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.4g}"


def monotonic_dip(
    *,
    edges: np.ndarray,
    effect: np.ndarray,
    stderr: np.ndarray,
    direction: str,
    z: float | None,
    tolerance: float | None,
) -> dict[str, Any]:
    """The worst step against ``direction`` between two edges (largest violating dip,
    else largest dip): ``violated``, ``drop`` >= 0, ``start``/``end`` (None: no dip), ``z``, ``se``.

    >>> d = monotonic_dip(edges=np.array([0.0, 1.0, 2.0, 3.0]),
    ...                   effect=np.array([0.0, 2.0, 1.0, 3.0]),
    ...                   stderr=np.array([0.0, 0.1, 0.2, 0.3]),
    ...                   direction="increasing", z=2.0, tolerance=None)
    >>> d["violated"], d["drop"], d["start"], d["end"]
    (True, 1.0, 1.0, 2.0)
    """
    g = effect if direction == "increasing" else -effect
    var = np.nan_to_num(stderr.astype(np.float64) ** 2)
    drops = g[:, None] - g[None, :]  # drops[a, b] = g(z_a) - g(z_b)
    pair_var = np.maximum(var[None, :] - var[:, None], 0.0)
    upper = np.triu(np.ones(drops.shape, dtype=bool), k=1)
    tiny = ROUNDING * max(float(np.nanmax(np.abs(effect))), np.finfo(np.float64).tiny)
    drops = np.where(upper & (drops > tiny), drops, 0.0)
    se = np.sqrt(pair_var)
    with np.errstate(divide="ignore", invalid="ignore"):
        zs = np.where(drops > 0, np.where(se > 0, drops / np.where(se > 0, se, 1.0), np.inf), 0.0)
    threshold = z * se if tolerance is None else np.full(se.shape, tolerance)
    violations = drops > np.maximum(threshold, 0.0)
    pool = np.where(violations, drops, -1.0) if violations.any() else drops
    a, b = np.unravel_index(int(np.argmax(pool)), pool.shape)
    drop = float(drops[a, b])
    return {
        "violated": bool(violations.any()),
        "drop": drop,
        "start": float(edges[a]) if drop > 0 else None,
        "end": float(edges[b]) if drop > 0 else None,
        "z": float(zs[a, b]),
        "se": float(se[a, b]),
    }


def _monotonic(feat: FeatureSummary, p: dict[str, Any]) -> Outcome:
    d = monotonic_dip(edges=feat.edges, effect=feat.effect, stderr=feat.stderr, **p)
    word = "dip" if p["direction"] == "increasing" else "rise"
    if d["start"] is None:
        observed = f"no {word}"
    else:
        where = f"from {fmt(d['start'])} to {fmt(d['end'])}"
        lead = f"{word} of" if d["violated"] else f"largest {word}"
        observed = f"{lead} {fmt(d['drop'])} {where} (z {fmt(d['z'])})"
    if p["tolerance"] is None:
        limit = f"{p['direction']}, {word}s within {fmt(p['z'])} SE"
    else:
        limit = f"{p['direction']}, {word}s <= {fmt(p['tolerance'])}"
    return not d["violated"], observed, limit, d["drop"], d


def _sign(feat: FeatureSummary, p: dict[str, Any]) -> Outcome:
    n = feat.bin_counts.astype(np.float64)
    slope = float(np.dot(n, feat.bin_effect) / n.sum())
    var = float(np.dot(n, np.nan_to_num(feat.bin_std) ** 2)) / n.sum() ** 2
    z = slope / np.sqrt(var) if var > 0 else (np.inf if slope else 0.0) * np.sign(slope)
    tiny = ROUNDING * max(float(np.abs(feat.bin_effect).max()), np.finfo(np.float64).tiny)
    ok = slope > tiny if p["sign"] == "positive" else slope < -tiny
    observed = f"mean slope {fmt(slope)} (z {fmt(float(z))})"
    return ok, observed, p["sign"], slope, {"slope": slope, "z": float(z)}


def _range(feat: FeatureSummary, p: dict[str, Any]) -> Outcome:
    lo, hi = float(np.nanmin(feat.effect)), float(np.nanmax(feat.effect))
    ok = (p["lo"] is None or lo >= p["lo"]) and (p["hi"] is None or hi <= p["hi"])
    lo_text = "-inf" if p["lo"] is None else fmt(p["lo"])
    limit = f"[{lo_text}, {'inf' if p['hi'] is None else fmt(p['hi'])}]"
    return ok, f"[{fmt(lo)}, {fmt(hi)}]", limit, hi, {"min": lo, "max": hi}


def statistic(name: str, stats: dict[str, Any], p: dict[str, Any]) -> Outcome:
    key = {
        "max_aled": "aled",
        "min_aled": "aled",
        "rank_at_most": "rank",
        "max_heterogeneity_share": "heterogeneity_share",
    }[name]
    value = float(stats[key])
    if name == "min_aled":
        ok, limit = value >= p["limit"], f">= {fmt(p['limit'])}"
    else:
        ok, limit = value <= p["limit"], f"<= {fmt(p['limit'])}"
    label = {"aled": "ALED", "rank": "rank", "heterogeneity_share": "share"}[key]
    shown = str(int(value)) if key == "rank" else fmt(value)
    return ok, f"{label} {shown}", limit, value, {key: value}


FIRST_ORDER = {"monotonic": _monotonic, "sign": _sign, "range": _range}

#: how the table names each statistic
LABELS = {"naled": "NALED", "aled": "ALED", "heterogeneity_share": "heterogeneity share"}


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
    label = LABELS.get(statistic, statistic)
    values = []
    for stats in (base, current):  # a null heterogeneity share (over an ALED of 0) is inf
        value = stats.get(statistic)
        infinite = value is None and statistic == "heterogeneity_share" and statistic in stats
        values.append(math.inf if infinite else None if value is None else float(value))
    b, c = values
    if b is None or c is None:
        side = "baseline" if b is None else "summary"
        return f"{label} not recorded in the {side} (it needs the prediction distribution)"
    d = change(b, c)
    shown = (lambda v: str(int(v))) if statistic == "rank" else fmt
    sign = "+" if d >= 0 else ""
    observed = f"{label} {shown(b)} -> {shown(c)} (change {sign}{shown(d)})"
    details = {"statistic": statistic, "baseline": b, "current": c, "change": d}
    return abs(d) <= max_abs, observed, f"|change| <= {fmt(max_abs)}", abs(d), details
