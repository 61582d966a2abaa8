"""Evaluate a rule set on summaries: one :class:`Check` per rule x feature (x summary).

Verdicts: ``pass``, ``fail`` (an error-severity rule failed: exit
:data:`EXIT_RULES_FAILED`), ``warn``, ``skip`` (not estimable -- the ``not_estimable``
rule decides about that -- or a quantity the rule needs not recorded). What each rule
measures: ``docs/audit.md`` and :mod:`ale_cli.audit.curves`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ale_cli.audit.curves import FIRST_ORDER, fmt, statistic, statistic_drift
from ale_cli.audit.rules import STATISTICS, WILDCARD, Rule, RuleSet, read_rules
from ale_cli.errors import InputError
from ale_cli.summary.compare import ROUNDING, compare_feature, summary_statistics
from ale_cli.summary.model import FeatureSummary, InteractionSummary, Summary, read_summary
from ale_cli.summary.regional import REGIONAL, RegionalSummary, read_regional
from ale_cli.summary.statistics import definitions_of

EXIT_PASSED = 0
EXIT_RULES_FAILED = 3
VERDICTS = ("pass", "fail", "warn", "skip")
#: a feature's record on one side of a drift rule (None: not there)
Side = FeatureSummary | None


@dataclass(frozen=True)
class Check:
    """One rule on one feature of one summary: ``observed``/``limit`` the table's text,
    ``value`` the main observed number (or None), ``details`` the numbers behind the text."""

    feature: str
    rule: str
    severity: str
    verdict: str
    observed: str
    limit: str
    value: float | None = None
    details: dict[str, Any] = field(default_factory=dict)
    summary: str = ""
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


@dataclass
class _Context:
    summaries: Sequence[tuple[str, Summary]]
    baseline: tuple[str, Summary] | None
    explicit: set[tuple[str, str]]
    rules: Path
    stats: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    regions: Mapping[str, RegionalSummary] = field(default_factory=dict)

    def statistics(self, label: str, summary: Summary) -> dict[str, dict[str, Any]]:
        if label not in self.stats:
            self.stats[label] = summary_statistics(summary)
        return self.stats[label]

    def applies(self, rule: Rule, name: str, feat: FeatureSummary | None = None) -> bool:
        """Does ``rule`` check feature ``name`` (its record ``feat``: of the rule's output)?"""
        if rule.output is not None and feat is not None and feat.output != rule.output:
            return False
        if rule.feature == WILDCARD:
            return (rule.measure, name) not in self.explicit
        return rule.feature == name


def _check(
    rule: Rule, label: str, feature: str, ok: bool | None, observed: str, limit: str, **kw: Any
) -> Check:
    """A check of ``rule``; ``ok`` None: skipped."""
    severity = kw.pop("severity", rule.severity)
    verdict = "skip" if ok is None else "pass" if ok else "fail" if severity == "error" else "warn"
    kw |= {"summary": label, "entry": rule.entry, "line": rule.line}
    return Check(feature, rule.name, severity, verdict, observed, limit, **kw)


def _first_order_checks(rule: Rule, ctx: _Context) -> list[Check]:
    out = []
    for label, summary in ctx.summaries:
        for feat in summary.features:
            if not ctx.applies(rule, feat.name, feat):
                continue
            key = feat.key
            if rule.name == "not_estimable":
                action = rule.params["action"]
                if action == "ignore":
                    continue
                severity = "error" if action == "fail" else "warn"
                ok = feat.estimable
                observed = "estimable" if ok else f"not estimable ({feat.reason})"
                out.append(_check(rule, label, key, ok, observed, "estimable", severity=severity))
                continue
            if not feat.estimable:
                out.append(_check(rule, label, key, None, f"not estimable ({feat.reason})", "-"))
                continue
            if rule.name in STATISTICS:
                stats = ctx.statistics(label, summary)[key]
                ok, observed, limit, value, details = statistic(rule.name, stats, rule.params)
            else:
                ok, observed, limit, value, details = FIRST_ORDER[rule.name](feat, rule.params)
            out.append(_check(rule, label, key, ok, observed, limit, value=value, details=details))
    return out


def _spread(summary: Summary, others: Sequence[tuple[str, Summary]]) -> float | None:
    """The 1st-99th percentile range of the predictions (this summary's or its store's)."""
    sha = summary.store.get("sha256")
    for s in (summary, *(s for _, s in others if sha and s.store.get("sha256") == sha)):
        if s.prediction is not None:
            q = np.asarray(s.prediction["quantiles"], dtype=np.float64)
            return float(q[99] - q[1])
    return None


def _interaction_check(
    rule: Rule, label: str, item: InteractionSummary, spread: float | None
) -> Check:
    if not item.estimable:
        return _check(rule, label, item.name, None, f"not estimable ({item.reason})", "-")
    max_abs = float(np.nanmax(np.abs(item.effect)))
    share = max_abs / spread if spread else None
    top, top_share = rule.params["max_abs"], rule.params["max_share"]
    bounds = (("max |effect|", top), ("share", top_share))
    limit = "; ".join(f"{what} <= {fmt(v)}" for what, v in bounds if v is not None)
    if top is None and share is None:  # a max_share rule alone
        observed = "share not available: no prediction distribution"
        return _check(rule, label, item.name, None, observed, limit)
    fits = share is None or top_share is None or share <= top_share
    ok = (top is None or max_abs <= top) and fits
    observed = f"max |effect| {fmt(max_abs)}"
    if share is not None:
        observed += f", share {fmt(share)} of the 1-99% prediction range"
    elif top_share is not None:
        observed += "; share not available"
    details = {"max_abs": max_abs, "share": share}
    return _check(rule, label, item.name, ok, observed, limit, value=max_abs, details=details)


def _interaction_checks(rule: Rule, ctx: _Context) -> list[Check]:
    out = []
    for label, summary in ctx.summaries:
        spread = _spread(summary, ctx.summaries)
        for item in summary.interactions:
            if any(ctx.applies(rule, n) for n in item.features):
                out.append(_interaction_check(rule, label, item, spread))
    return out


def _statistic_drift_check(
    rule: Rule, ctx: _Context, label: str, summary: Summary, name: str, b: Side, c: Side
) -> Check:
    """One feature's statistic against the baseline (:func:`.curves.statistic_drift`)."""
    base_label, base = ctx.baseline  # evaluate() refuses a drift rule without one
    p = rule.params
    limit = f"|change| <= {fmt(p['max_abs'])}"
    sides = {"baseline": (base_label, base, b), "summary": (label, summary, c)}
    stats, why = {}, []
    for side, (lab, s, feat) in sides.items():
        if feat is None:
            why.append(f"not in the {side}")
        elif not feat.estimable:
            why.append(f"not estimable in the {side} ({feat.reason})")
        else:
            stats[side] = ctx.statistics(lab, s)[name]
    if why:
        both = len(why) == 2 and all(w.startswith("not estimable") for w in why)
        return _check(rule, label, name, None if both else False, "; ".join(why), limit)
    if not _same_bins(b, c):  # a statistic depends on the bins: no drift across two binnings
        raise InputError(
            f"rules file '{ctx.rules}': {rule.where}: the summary '{label}' ({summary.estimator})"
            f" and the baseline '{base_label}' ({base.estimator}) have other edges for {name} "
            f"({c.n_bins} and {b.n_bins} bins): a statistic drift needs the baseline's edges "
            f"(ale rebin --edges {base_label})"
        )
    defs = [definitions_of(s.params).name for s in (base, summary)]
    if defs[0] != defs[1]:  # a change of definitions is not drift: compare like with like
        observed = f"statistics {defs[0]} in the baseline, {defs[1]} in the summary"
        return _check(rule, label, name, False, observed, limit)
    outcome = statistic_drift(p["statistic"], stats["baseline"], stats["summary"], p["max_abs"])
    if isinstance(outcome, str):
        return _check(rule, label, name, None, outcome, limit)
    ok, observed, limit, value, details = outcome
    return _check(rule, label, name, ok, observed, limit, value=value, details=details)


def _same_bins(a: FeatureSummary, b: FeatureSummary) -> bool:
    """The same edges (to rounding), or the same levels of a per-level feature."""
    if a.kind != b.kind or a.levels != b.levels or a.edges.shape != b.edges.shape:
        return False
    return bool(np.allclose(a.edges, b.edges, rtol=ROUNDING, atol=0.0))


def _curve_drift_check(rule: Rule, label: str, name: str, b: Side, c: Side) -> Check:
    """One feature's curve against the baseline's (:func:`.compare.compare_feature`)."""
    p = rule.params
    bounds = (("max |diff|", p["max_abs"]), ("max z", p["max_z"]))
    limit = "; ".join(f"{what} <= {fmt(v)}" for what, v in bounds if v is not None)
    if b is not None and c is not None and not b.estimable and not c.estimable:
        return _check(rule, label, name, None, "not estimable in both", limit)
    comp = compare_feature(name, b, c, base_label="baseline", other_label="summary")
    d = comp.difference
    if d is None:
        details = {"status": comp.status}
        return _check(rule, label, name, False, str(comp.reason), limit, details=details)
    ok = (p["max_abs"] is None or d.max_abs <= p["max_abs"]) and (
        p["max_z"] is None or d.max_z <= p["max_z"]
    )
    observed = (
        f"max |diff| {fmt(d.max_abs)} at {fmt(d.max_abs_at)}; "
        f"max z {fmt(d.max_z)} at {fmt(d.max_z_at)}"
    )
    if d.n_outside:
        observed += f"; {d.n_outside} baseline edges outside"
    value = d.max_abs if p["max_abs"] is not None else d.max_z
    keys = ("max_abs", "max_abs_at", "max_z", "max_z_at", "n_outside")
    details = {k: getattr(d, k) for k in keys}
    return _check(rule, label, name, ok, observed, limit, value=value, details=details)


def _drift_checks(rule: Rule, ctx: _Context) -> list[Check]:
    base_feats = {f.key: f for f in ctx.baseline[1].features}
    out = []
    for label, summary in ctx.summaries:
        cur = {f.key: f for f in summary.features}
        if not cur:
            continue
        records = base_feats | cur
        for name in dict.fromkeys([*cur, *base_feats]):
            if not ctx.applies(rule, records[name].name, records[name]):
                continue
            b, c = base_feats.get(name), cur.get(name)
            if rule.params["statistic"] is not None:
                out.append(_statistic_drift_check(rule, ctx, label, summary, name, b, c))
            else:
                out.append(_curve_drift_check(rule, label, name, b, c))
    return out


def _regional_checks(rule: Rule, ctx: _Context) -> list[Check]:
    """``max_regional_drop`` and ``per_region`` rules (skipped on other summaries)."""
    out = []
    for label, summary in ctx.summaries:
        found = ctx.regions.get(label)
        for feat in summary.features:
            if not ctx.applies(rule, feat.name):
                continue
            item = None if found is None else found.feature(feat.name)
            if item is None or item.status == "not_estimable":
                why = "not a regional summary" if item is None else "not estimable"
                out.append(_check(rule, label, feat.name, None, why, "-"))
                continue
            if rule.name == "max_regional_drop":
                limit, drop = rule.params["limit"], item.drop
                splits = "; ".join(f"{s.conditions[0].text}: {fmt(s.drop)}" for s in item.splits)
                observed = f"drop {fmt(drop)}" + (f" ({splits})" if splits else "")
                kw: dict[str, Any] = {"value": drop, "details": {"drop": drop}}
                ok, limit_text = drop <= limit, f"<= {fmt(limit)}"
            else:
                leaves = [n for n in item.leaves if n.record is not None and n.record.estimable]
                measure = FIRST_ORDER[rule.name]
                results = [(n.label, *measure(n.record, rule.params)) for n in leaves]
                bad = [r for r in results if not r[1]]
                head = f"{len(bad)} of {len(results)} regions fail" if bad else "every region"
                observed = f"{head}: " + "; ".join(f"{r[0]}: {r[2]}" for r in bad or results)
                regions = [{"region": r[0], "ok": r[1], "observed": r[2]} for r in results]
                kw = {"details": {"regions": regions}}
                ok, limit_text = not bad, f"{results[0][3] if results else '-'} in every region"
            out.append(_check(rule, label, feat.name, ok, observed, limit_text, **kw))
    return out


def _check_features(rules: RuleSet, ctx: _Context) -> None:
    first = list(dict.fromkeys(f.name for _, s in ctx.summaries for f in s.features))
    paired = list(
        dict.fromkeys(n for _, s in ctx.summaries for i in s.interactions for n in i.features)
    )
    base = [f.name for f in ctx.baseline[1].features] if ctx.baseline else []
    outputs = {label for _, s in ctx.summaries for label in s.outputs}
    for rule in rules.rules:
        if rule.output is not None and rule.output not in outputs:
            raise InputError(
                f"rules file '{rules.path}': {rule.where}: no summary has output "
                f"'{rule.output}' (outputs: {', '.join(sorted(outputs)) or 'one, unnamed'})"
            )
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
    regions: Mapping[str, RegionalSummary] | None = None,
) -> AuditResult:
    """Evaluate ``rules`` on the ``(label, summary)`` pairs (label: how reports name it);
    ``regions[label]``: the regions of the summaries that are regional summaries.

    InputError for a drift rule without a baseline or a rule on a feature no summary has.
    """
    explicit = {(r.measure, r.feature) for r in rules.rules if r.feature != WILDCARD}
    ctx = _Context(summaries, baseline, explicit, rules.path, regions=regions or {})
    _check_features(rules, ctx)
    checks: list[Check] = []
    for rule in rules.rules:
        if rule.name == "max_interaction":
            checks += _interaction_checks(rule, ctx)
        elif rule.name == "drift":
            checks += _drift_checks(rule, ctx)
        elif rule.name == "max_regional_drop" or rule.per_region:
            checks += _regional_checks(rule, ctx)
        else:
            checks += _first_order_checks(rule, ctx)
    return AuditResult(
        checks=tuple(checks),
        summaries=tuple(label for label, _ in summaries),
        rules=str(rules.path),
        baseline=baseline[0] if baseline is not None else None,
    )


def audit_files(
    summaries: Sequence[str | Path],
    rules: str | Path,
    *,
    baseline: str | Path | None = None,
    names: Sequence[str] | None = None,
) -> AuditResult:
    """Read the rules (first, so a bad rules file is reported first), the summaries and
    the baseline, and evaluate; ``names``: the summaries' names (default: their paths)."""
    rule_set = read_rules(rules)
    names = [str(p) for p in summaries] if names is None else names
    where = dict(zip(names, summaries, strict=True))
    loaded = [(label, read_summary(where[label])) for label in names]
    regions = {
        label: read_regional(where[label]) for label, s in loaded if s.estimator == REGIONAL
    }  # ale regional: the regions the per-region rules read
    base = (str(baseline), read_summary(baseline)) if baseline is not None else None
    return evaluate(loaded, rule_set, baseline=base, regions=regions)
