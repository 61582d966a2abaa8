"""The curve rules of ``ale audit``: what each measures on a first-order curve.

On ``effect`` f at the K+1 edges, ``stderr`` SE, ``counts`` n_k:

- ``monotonic``: a *dip* (``decreasing``: a rise) ``f(z_a) - f(z_b)``, a < b, has
  standard error ``sqrt(SE(z_b)^2 - SE(z_a)^2)``; it violates when it exceeds ``z``
  SEs (default 2) or ``tolerance`` output units. Dips within 1e-9 of max |f| are 0.
- ``sign``: the mean slope ``sum_k n_k mu_k / N`` must be > 0 or < 0.
- ``range``: every ``f(z_k)`` in ``[lo, hi]``.
- the statistics rules read the feature's ``statistics`` (:mod:`ale_cli.core.statistics`).
"""

from __future__ import annotations

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
    # per-level records: the "bins" are the jumps between adjacent levels, n_{k-1} + n_k rows
    counts = feat.counts if feat.kind is None else feat.counts[:-1] + feat.counts[1:]
    n = counts.astype(np.float64)
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
STATISTICS = ("max_aled", "min_aled", "max_heterogeneity_share", "rank_at_most")
