"""Two first-order curves of a feature on a common grid: what ``ale diff`` and the drift rule use.

The grid is the *base* curve's K+1 edges; the other curve is interpolated there (exact:
it is linear between its edges), grid points outside its ``[z_0, z_K]`` left out and
counted. With ``d = other - base``:

- ``max_abs``: the largest ``|d - c|``, ``c = sum_k n_k (d_{k-1} + d_k) / 2 / N`` with the
  base's counts over the bins with both limits on the grid (a change of centering alone
  is not a difference);
- ``max_z``: the largest ``|D_k| / sqrt(V_k)``, ``D_k = d_k - d_first`` and ``V_k`` the
  sum of the variances of both changes from the first common point
  (``stderr(b)^2 - stderr(a)^2``, the other's ``stderr^2`` interpolated). Where ``V_k``
  is 0, ``|D_k|`` within rounding (1e-9 of the curves' scale) is z = 0, else infinite.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ale_cli.summary.model import FeatureSummary, Summary
from ale_cli.summary.statistics import definitions_of, feature_statistics

#: differences within this share of the curves' largest |value| count as rounding
ROUNDING = 1e-9
#: the recorded statistics that are computable from the curve alone (recomputed when null)
_NEEDED = ("aled", "aler_min", "aler_max", "heterogeneity_share", "rank")


@dataclass(frozen=True)
class CurveDifference:
    """``other - base`` on the M points of the base's ``grid`` inside the other curve:
    ``difference`` ``d - c`` and ``z`` (M,), their largest absolute values and where they
    are, the grid points left out (``n_outside``) and ``offset`` ``c``."""

    grid: np.ndarray
    difference: np.ndarray
    z: np.ndarray
    max_abs: float
    max_abs_at: float
    max_z: float
    max_z_at: float
    n_outside: int
    offset: float = 0.0


def _difference(
    grid: np.ndarray, centered: np.ndarray, z: np.ndarray, *, n_outside: int, offset: float
) -> CurveDifference:
    """The difference on ``grid`` with where its largest absolute value and z fall."""
    i_abs, i_z = int(np.argmax(np.abs(centered))), int(np.argmax(z))
    return CurveDifference(
        grid=grid,
        difference=centered,
        z=z,
        max_abs=float(abs(centered[i_abs])),
        max_abs_at=float(grid[i_abs]),
        max_z=float(z[i_z]),
        max_z_at=float(grid[i_z]),
        n_outside=n_outside,
        offset=offset,
    )


def _z(
    change: np.ndarray, var: np.ndarray, base: FeatureSummary, other: FeatureSummary
) -> np.ndarray:
    """``|change| / sqrt(var)``: 0 within rounding, infinite where ``var`` is not > 0."""
    scale = max(float(np.nanmax(np.abs(base.effect))), float(np.nanmax(np.abs(other.effect))))
    tiny = ROUNDING * max(scale, np.finfo(np.float64).tiny)
    ratio = np.abs(change) / np.sqrt(np.where(var > 0, var, 1.0))
    return np.where(np.abs(change) <= tiny, 0.0, np.where(var > 0, ratio, np.inf))


def level_difference(base: FeatureSummary, other: FeatureSummary) -> CurveDifference | None:
    """``other - base`` per level of two per-level records with the same levels (None if not),
    on the base's level positions: ``d_k`` centered with ``c = sum_k n_k d_k / N``, and
    ``z_k = |d_k - d_0| / sqrt(SE_b(k)^2 + SE_o(k)^2 + SE_b(0)^2 + SE_o(0)^2)`` (a bound:
    the levels need not be in the same order on both sides)."""
    if base.levels is None or other.levels is None:
        return None
    where = {level: i for i, level in enumerate(other.levels)}
    if len(where) != len(base.levels) or any(level not in where for level in base.levels):
        return None
    idx = np.array([where[level] for level in base.levels])
    d = other.effect[idx] - base.effect
    n = base.counts.astype(np.float64)
    offset = float(np.dot(n, d) / n.sum())
    centered = d - offset
    var_o = other.stderr[idx] ** 2
    var = np.nan_to_num(base.stderr**2 + var_o + base.stderr[0] ** 2 + var_o[0])
    grid = np.arange(d.size, dtype=np.float64)
    return _difference(grid, centered, _z(d - d[0], var, base, other), n_outside=0, offset=offset)


def records_difference(base: FeatureSummary, other: FeatureSummary) -> CurveDifference | None:
    """The difference of two first-order records' curves on the base's edges; None when
    they share no bin.

    >>> base = FeatureSummary("x", edges=np.array([0.0, 1.0, 2.0]), counts=np.array([5, 5]),
    ...     effect=np.array([-1.0, 0.0, 1.0]), stderr=np.array([0.0, 0.1, 0.2]))
    >>> other = FeatureSummary("x", edges=np.array([0.0, 2.0]), effect=np.array([-2.0, 2.0]),
    ...     stderr=np.array([0.0, 0.0]))
    >>> d = records_difference(base, other)
    >>> d.difference.tolist(), d.max_abs, d.max_abs_at
    ([-1.0, 0.0, 1.0], 1.0, 0.0)
    >>> round(d.max_z, 6), d.max_z_at
    (10.0, 1.0)
    """
    grid = np.asarray(base.edges, dtype=np.float64)
    inside = (grid >= other.edges[0]) & (grid <= other.edges[-1])
    whole_bins = inside[:-1] & inside[1:]
    if not whole_bins.any():
        return None
    keep = np.flatnonzero(inside)
    x = grid[keep]
    d = np.interp(x, other.edges, other.effect) - base.effect[keep]
    # center with the base's counts over the bins whose limits are both on the grid
    weights = np.where(whole_bins, base.counts, 0).astype(np.float64)
    mids = (np.interp(grid[:-1], x, d) + np.interp(grid[1:], x, d)) / 2.0
    total = weights.sum()
    offset = float(np.dot(weights, mids) / total) if total > 0 else float(d.mean())
    centered = d - offset

    var_b = base.stderr[keep] ** 2
    var_o = np.interp(x, other.edges, np.asarray(other.stderr, dtype=np.float64) ** 2)
    var = np.nan_to_num((var_b - var_b[0]) + (var_o - var_o[0]))
    z = _z(d - d[0], var, base, other)
    return _difference(x, centered, z, n_outside=int(grid.size - keep.size), offset=offset)


@dataclass(frozen=True)
class FeatureComparison:
    """One feature of two summaries: ``status`` ``ok`` (``difference`` set),
    ``missing_in_base``, ``missing_in_other``, ``not_estimable`` or ``no_overlap``
    (``reason`` says why); ``rank_*`` are the ALED ranks and ``statistics_*`` every
    statistic the side records (None where not estimable)."""

    name: str
    status: str
    reason: str | None = None
    difference: CurveDifference | None = None
    rank_base: int | None = None
    rank_other: int | None = None
    aled_base: float | None = None
    aled_other: float | None = None
    statistics_base: dict[str, Any] | None = None
    statistics_other: dict[str, Any] | None = None

    @property
    def rank_changed(self) -> bool:
        return None not in (self.rank_base, self.rank_other) and self.rank_base != self.rank_other


def summary_statistics(summary: Summary) -> dict[str, dict[str, Any]]:
    """Per estimable feature, its recorded statistics, any ``null`` or missing value
    computed from the curve by the summary's definitions (older summaries have none)."""
    estimable = [f for f in summary.features if f.estimable]
    if all(
        f.statistics is not None and all(f.statistics.get(k) is not None for k in _NEEDED)
        for f in estimable
    ):
        return {f.key: dict(f.statistics or {}) for f in estimable}
    quantiles = None if summary.prediction is None else np.asarray(summary.prediction["quantiles"])
    computed = feature_statistics(summary.features, quantiles, definitions_of(summary.params))
    out: dict[str, dict[str, Any]] = {}
    for feat, fresh in zip(summary.features, computed, strict=True):
        if fresh is None:
            continue
        recorded = feat.statistics or {}
        out[feat.key] = {
            k: recorded[k] if recorded.get(k) is not None else v for k, v in fresh.items()
        }
    return out


def compare_feature(
    name: str,
    base: FeatureSummary | None,
    other: FeatureSummary | None,
    *,
    base_label: str = "base",
    other_label: str = "other",
) -> FeatureComparison:
    """Compare one feature's curves (either may be missing or not estimable)."""
    if base is None:
        return FeatureComparison(name, "missing_in_base", f"not in the {base_label}")
    if other is None:
        return FeatureComparison(name, "missing_in_other", f"not in the {other_label}")
    sides = [(side, f) for side, f in ((base_label, base), (other_label, other)) if not f.estimable]
    if sides:
        why = "; ".join(f"not estimable in the {side} ({f.reason})" for side, f in sides)
        return FeatureComparison(name, "not_estimable", why)
    if (base.kind is None) != (other.kind is None):
        why = "a per-level effect is not compared with a curve"
        return FeatureComparison(name, "not_estimable", why)
    if base.kind is not None:
        diff = level_difference(base, other)
        why = f"the {base_label} and the {other_label} have other levels"
    else:
        diff = records_difference(base, other)
        why = (
            f"the {other_label}'s range [{other.edges[0]:.6g}, {other.edges[-1]:.6g}] covers "
            f"no bin of the {base_label}'s edges"
        )
    if diff is None:
        return FeatureComparison(name, "no_overlap", why)
    return FeatureComparison(name, "ok", difference=diff)


def compare_summaries(
    base: Summary,
    other: Summary,
    *,
    features: Sequence[str] | None = None,
    base_label: str = "base",
    other_label: str = "other",
) -> list[FeatureComparison]:
    """Every feature of either summary (base order, then the other's new ones), with ranks;
    ``features``: those names only (reported as missing in the base when neither has one)."""
    a, b = ({f.key: f for f in s.features} for s in (base, other))
    names = list(dict.fromkeys([*a, *b]))  # name [output] in a summary of several outputs
    if features is not None:
        bare = {f.key: f.name for s in (base, other) for f in s.features}
        kept = [k for k in names if bare[k] in features or k in features]
        names = kept + [n for n in features if n not in {bare[k] for k in kept} | set(kept)]
    stats_a, stats_b = summary_statistics(base), summary_statistics(other)
    out = []
    for name in names:
        c = compare_feature(
            name, a.get(name), b.get(name), base_label=base_label, other_label=other_label
        )
        for side, st in (("base", stats_a.get(name)), ("other", stats_b.get(name))):
            if st is not None:
                ranked = {f"rank_{side}": int(st["rank"]), f"aled_{side}": float(st["aled"])}
                c = replace(c, **ranked, **{f"statistics_{side}": st})
        out.append(c)
    return out
