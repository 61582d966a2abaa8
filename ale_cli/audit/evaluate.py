"""Evaluate a rule set on summaries: one :class:`Check` per rule x feature (x summary).

Verdicts: ``pass``; ``fail`` (an error-severity rule failed: ``ale audit`` exits
with :data:`EXIT_RULES_FAILED`); ``warn`` (a warn-severity rule failed);
``skip`` (the rule cannot be evaluated: the feature is not estimable -- the
``not_estimable`` rule decides about that -- or a quantity the rule needs is
not recorded).

How each rule reads a first-order curve (``effect`` f at the K+1 edges,
``stderr`` SE, ``counts`` n_k, as written by the estimator):

- ``monotonic``: a *dip* (for ``decreasing``: a rise) is a decrease
  ``f(z_a) - f(z_b)``, a < b, of the curve between two edges. Its standard
  error is ``sqrt(SE(z_b)^2 - SE(z_a)^2)`` (the bins' estimates are
  independent). A dip is a violation when it exceeds ``z`` of its standard
  errors (default 2), or, with ``tolerance``, that many output units. The
  report gives the largest violating dip (else the largest dip) with its
  position, size and z. Dips within rounding (1e-9 of the largest |f|) are 0.
- ``sign``: the count-weighted mean bin effect ``sum_k n_k mu_k / N`` (the
  average slope) must be > 0 (``positive``) or < 0 (``negative``).
- ``range``: every ``f(z_k)`` in ``[lo, hi]``.
- ``max_aled``, ``min_aled``, ``max_heterogeneity_share``, ``rank_at_most``:
  the feature's ``statistics`` (:mod:`ale_cli.core.statistics`), computed
  from the curve when the summary does not record them.
- ``max_interaction``: over the pairs of interact summaries that involve the
  feature: the largest ``|effect|`` of the doubly-centered surface, and its
  share of the prediction spread (the 1st to 99th percentile range of the
  predictions the summary records; the share is skipped without one).
- ``drift``: :func:`ale_cli.summary.compare.compare_feature` against the baseline
  (``max_abs``: centered difference in output units; ``max_z``: in standard
  errors). A feature missing on one side, not estimable on one side, or
  without a common bin fails.
- ``not_estimable``: ``fail``/``warn`` when the feature is not estimable.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ale_cli.audit.rules import WILDCARD, Rule, RuleSet
from ale_cli.errors import InputError
from ale_cli.summary.compare import ROUNDING, compare_feature, summary_statistics
from ale_cli.summary.model import FeatureSummary, InteractionSummary, Summary

EXIT_PASSED = 0
EXIT_RULES_FAILED = 3
VERDICTS = ("pass", "fail", "warn", "skip")


@dataclass(frozen=True)
class Check:
    """One rule on one feature of one summary.

    ``observed``/``limit`` are the table's text; ``value`` the main observed
    number (None when there is none), ``details`` the numbers behind the text.
    """

    feature: str
    rule: str
    severity: str
    verdict: str
    observed: str
    limit: str
    summary: str
    value: float | None = None
    details: dict[str, Any] = field(default_factory=dict)
    entry: int = 0
    line: int | None = None

    @property
    def message(self) -> str:
        """One line: what was checked, what was seen, against what."""
        return (
            f"{self.feature}: {self.rule} {self.verdict} -- {self.observed} (limit: {self.limit})"
        )


@dataclass(frozen=True)
class AuditResult:
    """Every check of one audit, in rule order (then feature order)."""

    checks: tuple[Check, ...]
    summaries: tuple[str, ...]
    rules: str
    baseline: str | None = None

    @property
    def counts(self) -> dict[str, int]:
        return {v: sum(c.verdict == v for c in self.checks) for v in VERDICTS}

    @property
    def passed(self) -> bool:
        """No error-severity rule failed (warnings and skips allowed)."""
        return not any(c.verdict == "fail" for c in self.checks)

    @property
    def exit_code(self) -> int:
        return EXIT_PASSED if self.passed else EXIT_RULES_FAILED


#: what a rule function returns: passed, observed text, limit text, main value, details
_Outcome = tuple[bool, str, str, float, dict[str, Any]]


def _fmt(value: float) -> str:
    if np.isnan(value):
        return "n/a"
    if np.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.4g}"


def _verdict(ok: bool, severity: str) -> str:
    return "pass" if ok else ("fail" if severity == "error" else "warn")


def _estimable(feat: FeatureSummary) -> bool:
    return feat.status == "ok" and feat.n_bins > 0


# -- first-order rules ----------------------------------------------------------------------


def monotonic_dip(
    *,
    edges: np.ndarray,
    effect: np.ndarray,
    stderr: np.ndarray,
    direction: str,
    z: float | None,
    tolerance: float | None,
) -> dict[str, Any]:
    """The worst step against ``direction`` between two edges; see the module docstring.

    Returns ``violated``, ``drop`` (>= 0), ``start``/``end`` (x of the two edges,
    None when there is no dip), ``z`` and ``se`` of the drop.

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


def _monotonic(feat: FeatureSummary, p: dict[str, Any]) -> _Outcome:
    d = monotonic_dip(
        edges=feat.edges,
        effect=feat.effect,
        stderr=feat.stderr,
        direction=p["direction"],
        z=p["z"],
        tolerance=p["tolerance"],
    )
    word = "dip" if p["direction"] == "increasing" else "rise"
    if d["start"] is None:
        observed = f"no {word}"
    else:
        where = f"from {_fmt(d['start'])} to {_fmt(d['end'])}"
        lead = f"{word} of" if d["violated"] else f"largest {word}"
        observed = f"{lead} {_fmt(d['drop'])} {where} (z {_fmt(d['z'])})"
    if p["tolerance"] is None:
        limit = f"{p['direction']}, {word}s within {_fmt(p['z'])} SE"
    else:
        limit = f"{p['direction']}, {word}s <= {_fmt(p['tolerance'])}"
    return not d["violated"], observed, limit, d["drop"], d


def _sign(feat: FeatureSummary, p: dict[str, Any]) -> _Outcome:
    # per-level records: the "bins" are the jumps between adjacent levels, n_{k-1} + n_k rows
    counts = feat.counts if feat.kind is None else feat.counts[:-1] + feat.counts[1:]
    n = counts.astype(np.float64)
    slope = float(np.dot(n, feat.bin_effect) / n.sum())
    var = float(np.dot(n, np.nan_to_num(feat.bin_std) ** 2)) / n.sum() ** 2
    z = slope / np.sqrt(var) if var > 0 else (np.inf if slope else 0.0) * np.sign(slope)
    tiny = ROUNDING * max(float(np.abs(feat.bin_effect).max()), np.finfo(np.float64).tiny)
    ok = slope > tiny if p["sign"] == "positive" else slope < -tiny
    observed = f"mean slope {_fmt(slope)} (z {_fmt(float(z))})"
    return ok, observed, p["sign"], slope, {"slope": slope, "z": float(z)}


def _range(feat: FeatureSummary, p: dict[str, Any]) -> _Outcome:
    lo, hi = float(np.nanmin(feat.effect)), float(np.nanmax(feat.effect))
    ok = (p["lo"] is None or lo >= p["lo"]) and (p["hi"] is None or hi <= p["hi"])
    bounds = [
        ("-inf" if p["lo"] is None else _fmt(p["lo"])),
        ("inf" if p["hi"] is None else _fmt(p["hi"])),
    ]
    return (
        ok,
        f"[{_fmt(lo)}, {_fmt(hi)}]",
        f"[{bounds[0]}, {bounds[1]}]",
        hi,
        {"min": lo, "max": hi},
    )


def _statistic(name: str, stats: dict[str, Any], p: dict[str, Any]) -> _Outcome:
    key = {
        "max_aled": "aled",
        "min_aled": "aled",
        "rank_at_most": "rank",
        "max_heterogeneity_share": "heterogeneity_share",
    }[name]
    value = float(stats[key])
    if name == "min_aled":
        ok, limit = value >= p["limit"], f">= {_fmt(p['limit'])}"
    else:
        ok, limit = value <= p["limit"], f"<= {_fmt(p['limit'])}"
    label = {"aled": "ALED", "rank": "rank", "heterogeneity_share": "share"}[key]
    shown = str(int(value)) if key == "rank" else _fmt(value)
    return ok, f"{label} {shown}", limit, value, {key: value}


_FIRST_ORDER = {"monotonic": _monotonic, "sign": _sign, "range": _range}
_STATISTICS = ("max_aled", "min_aled", "max_heterogeneity_share", "rank_at_most")


# -- the evaluation ---------------------------------------------------------------------------


@dataclass
class _Context:
    summaries: Sequence[tuple[str, Summary]]
    baseline: tuple[str, Summary] | None
    explicit: set[tuple[str, str]]
    stats: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)

    def statistics(self, label: str, summary: Summary) -> dict[str, dict[str, Any]]:
        if label not in self.stats:
            self.stats[label] = summary_statistics(summary)
        return self.stats[label]

    def applies(self, rule: Rule, name: str) -> bool:
        if rule.feature == WILDCARD:
            return (rule.name, name) not in self.explicit
        return rule.feature == name


def _check(rule: Rule, label: str, feature: str, **kw: Any) -> Check:
    return Check(
        feature=feature,
        rule=rule.name,
        severity=rule.severity,
        summary=label,
        entry=rule.entry,
        line=rule.line,
        **kw,
    )


def _first_order_checks(rule: Rule, ctx: _Context) -> list[Check]:
    out = []
    for label, summary in ctx.summaries:
        for feat in summary.features:
            if not ctx.applies(rule, feat.name):
                continue
            if rule.name == "not_estimable":
                action = rule.params["action"]
                if action == "ignore":
                    continue
                severity = "error" if action == "fail" else "warn"
                ok = _estimable(feat)
                observed = "estimable" if ok else f"not estimable ({feat.reason})"
                out.append(
                    Check(
                        feature=feat.name,
                        rule=rule.name,
                        severity=severity,
                        summary=label,
                        verdict=_verdict(ok, severity),
                        observed=observed,
                        limit="estimable",
                        entry=rule.entry,
                        line=rule.line,
                    )
                )
                continue
            if not _estimable(feat):
                out.append(
                    _check(
                        rule,
                        label,
                        feat.name,
                        verdict="skip",
                        observed=f"not estimable ({feat.reason})",
                        limit="-",
                    )
                )
                continue
            if rule.name in _STATISTICS:
                stats = ctx.statistics(label, summary)[feat.name]
                ok, observed, limit, value, details = _statistic(rule.name, stats, rule.params)
            else:
                ok, observed, limit, value, details = _FIRST_ORDER[rule.name](feat, rule.params)
            out.append(
                _check(
                    rule,
                    label,
                    feat.name,
                    verdict=_verdict(ok, rule.severity),
                    observed=observed,
                    limit=limit,
                    value=value,
                    details=details,
                )
            )
    return out


def _spread(summary: Summary, others: Sequence[tuple[str, Summary]]) -> float | None:
    """The 1st-99th percentile range of the predictions (this summary's, or one of the
    same store's)."""
    sha = summary.store.get("sha256")
    for s in (summary, *(s for _, s in others if sha and s.store.get("sha256") == sha)):
        if s.prediction is not None:
            q = np.asarray(s.prediction["quantiles"], dtype=np.float64)
            return float(q[99] - q[1])
    return None


def _interaction_check(
    rule: Rule, label: str, item: InteractionSummary, spread: float | None
) -> Check:
    if item.status != "ok" or item.effect.size == 0:
        return _check(
            rule,
            label,
            item.name,
            verdict="skip",
            observed=f"not estimable ({item.reason})",
            limit="-",
        )
    max_abs = float(np.nanmax(np.abs(item.effect)))
    share = max_abs / spread if spread else None
    limits, ok, notes = [], True, []
    if rule.params["max_abs"] is not None:
        limits.append(f"max |effect| <= {_fmt(rule.params['max_abs'])}")
        ok &= max_abs <= rule.params["max_abs"]
    if rule.params["max_share"] is not None:
        limits.append(f"share <= {_fmt(rule.params['max_share'])}")
        if share is None:
            if rule.params["max_abs"] is None:
                return _check(
                    rule,
                    label,
                    item.name,
                    verdict="skip",
                    observed="share not available: no prediction distribution",
                    limit="; ".join(limits),
                )
            notes.append("share not available")
        else:
            ok &= share <= rule.params["max_share"]
    observed = f"max |effect| {_fmt(max_abs)}"
    if share is not None:
        observed += f", share {_fmt(share)} of the 1-99% prediction range"
    observed = "; ".join([observed, *notes])
    return _check(
        rule,
        label,
        item.name,
        verdict=_verdict(bool(ok), rule.severity),
        observed=observed,
        limit="; ".join(limits),
        value=max_abs,
        details={"max_abs": max_abs, "share": share},
    )


def _interaction_checks(rule: Rule, ctx: _Context) -> list[Check]:
    out = []
    for label, summary in ctx.summaries:
        spread = _spread(summary, ctx.summaries)
        for item in summary.interactions:
            if any(ctx.applies(rule, n) for n in item.features):
                out.append(_interaction_check(rule, label, item, spread))
    return out


def _drift_checks(rule: Rule, ctx: _Context) -> list[Check]:
    if ctx.baseline is None:  # pragma: no cover - evaluate() checks this first
        raise RuntimeError("drift rule without a baseline")
    _, base = ctx.baseline
    base_feats = {f.name: f for f in base.features}
    p = rule.params
    limits = [
        f"max |diff| <= {_fmt(p['max_abs'])}" if p["max_abs"] is not None else None,
        f"max z <= {_fmt(p['max_z'])}" if p["max_z"] is not None else None,
    ]
    limit = "; ".join(x for x in limits if x)
    out = []
    for label, summary in ctx.summaries:
        if not summary.features:
            continue
        cur = {f.name: f for f in summary.features}
        names = [n for n in dict.fromkeys([*cur, *base_feats]) if ctx.applies(rule, n)]
        for name in names:
            b, c = base_feats.get(name), cur.get(name)
            if b is not None and c is not None and not _estimable(b) and not _estimable(c):
                out.append(
                    _check(
                        rule,
                        label,
                        name,
                        verdict="skip",
                        limit=limit,
                        observed="not estimable in both",
                    )
                )
                continue
            comp = compare_feature(name, b, c, base_label="baseline", other_label="summary")
            if comp.difference is None:
                out.append(
                    _check(
                        rule,
                        label,
                        name,
                        verdict=_verdict(False, rule.severity),
                        observed=str(comp.reason),
                        limit=limit,
                        details={"status": comp.status},
                    )
                )
                continue
            d = comp.difference
            ok = (p["max_abs"] is None or d.max_abs <= p["max_abs"]) and (
                p["max_z"] is None or d.max_z <= p["max_z"]
            )
            observed = (
                f"max |diff| {_fmt(d.max_abs)} at {_fmt(d.max_abs_at)}; "
                f"max z {_fmt(d.max_z)} at {_fmt(d.max_z_at)}"
            )
            if d.n_outside:
                observed += f"; {d.n_outside} baseline edges outside"
            value = d.max_abs if p["max_abs"] is not None else d.max_z
            details = {
                "max_abs": d.max_abs,
                "max_abs_at": d.max_abs_at,
                "max_z": d.max_z,
                "max_z_at": d.max_z_at,
                "n_outside": d.n_outside,
            }
            out.append(
                _check(
                    rule,
                    label,
                    name,
                    verdict=_verdict(ok, rule.severity),
                    observed=observed,
                    limit=limit,
                    value=value,
                    details=details,
                )
            )
    return out


def _check_features(rules: RuleSet, ctx: _Context) -> None:
    first = list(dict.fromkeys(f.name for _, s in ctx.summaries for f in s.features))
    paired = list(
        dict.fromkeys(n for _, s in ctx.summaries for i in s.interactions for n in i.features)
    )
    base = [f.name for f in ctx.baseline[1].features] if ctx.baseline else []
    for rule in rules.rules:
        if rule.name == "drift" and ctx.baseline is None:
            raise InputError(
                f"rules file '{rules.path}': {rule.where} needs a baseline summary ({{param}})",
                param="baseline",
            )
        if rule.feature == WILDCARD:
            continue
        if rule.name == "max_interaction":
            known, what = paired, "no interaction summary has a pair with"
        elif rule.name == "drift":
            known, what = [*first, *base], "neither the summaries nor the baseline have"
        else:
            known, what = first, "no summary has"
        if rule.feature not in known:
            listed = ", ".join(known) if known else "none"
            raise InputError(
                f"rules file '{rules.path}': {rule.where}: {what} feature "
                f"'{rule.feature}' (features: {listed})"
            )


def evaluate(
    summaries: Sequence[tuple[str, Summary]],
    rules: RuleSet,
    *,
    baseline: tuple[str, Summary] | None = None,
) -> AuditResult:
    """Evaluate ``rules`` on the ``(label, summary)`` pairs (label: how reports name it).

    InputError (one line naming the rule and the feature) for a drift rule
    without a baseline and for a rule on a feature no summary has.
    """
    explicit = {(r.name, r.feature) for r in rules.rules if r.feature != WILDCARD}
    ctx = _Context(summaries=summaries, baseline=baseline, explicit=explicit)
    _check_features(rules, ctx)
    checks: list[Check] = []
    for rule in rules.rules:
        if rule.name == "max_interaction":
            checks += _interaction_checks(rule, ctx)
        elif rule.name == "drift":
            checks += _drift_checks(rule, ctx)
        else:
            checks += _first_order_checks(rule, ctx)
    return AuditResult(
        checks=tuple(checks),
        summaries=tuple(label for label, _ in summaries),
        rules=str(rules.path),
        baseline=baseline[0] if baseline is not None else None,
    )
