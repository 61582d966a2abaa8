"""Effect-size statistics of a first-order ALE curve (Okoli 2023, arXiv:2310.09877, as R's
``ale``; docs/audit.md, "Effect-size statistics"), on the mean-centered curve.

Where ours differ from R's: a bin whose limits ``u``, ``v`` have opposite signs is split at
the zero into pieces ``(u/2, n_k |u|/(|u|+|v|))`` and ``(v/2, n_k |v|/(|u|+|v|))`` (a
midpoint is a large error for RHALE's few wide bins; :func:`pieces`), and ``F`` is the
piecewise-linear CDF through the 101 recorded percentiles of the predictions
(:func:`normalize`). :data:`R` gives R's own (:func:`normalize_r`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ale_cli.core.effect import center_offset

#: the percentile levels recorded for the prediction distribution: 0, 1, ..., 100 %
N_QUANTILES = 101
_LEVELS = np.linspace(0.0, 1.0, N_QUANTILES)


@dataclass(frozen=True)
class PredictionDistribution:
    """The model's finite predictions: count ``n``, ``mean`` and the percentiles
    ``quantiles`` (101,) (type 7)."""

    n: int
    mean: float
    quantiles: np.ndarray


def prediction_distribution(
    *, prediction: np.ndarray, scratch: bool = False
) -> PredictionDistribution:
    """Count, mean and the 101 percentiles of the finite values of ``prediction`` (N,)
    (``scratch``: a float64 array that may be reordered).

    >>> d = prediction_distribution(prediction=np.arange(101.0))
    >>> d.n, d.mean, d.quantiles[[0, 50, 100]].tolist()
    (101, 50.0, [0.0, 50.0, 100.0])
    """
    values = np.asarray(prediction, dtype=np.float64).reshape(-1)
    finite = np.isfinite(values)
    if not finite.all():
        values, scratch = values[finite], True  # a copy of ours
    del finite
    if values.size == 0:
        raise ValueError("no finite predictions to summarise")
    mean = float(values.mean())  # before the percentiles may reorder the values
    quantiles = np.quantile(values, _LEVELS, overwrite_input=scratch)
    return PredictionDistribution(n=int(values.size), mean=mean, quantiles=quantiles)


def pieces(
    *, effect: np.ndarray, counts: np.ndarray, split: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Values and weights of the curve's pieces (the module docstring; not ``split``: one
    ``(m_k, n_k)`` per bin).

    >>> values, weights = pieces(effect=np.array([-1.0, 3.0, 5.0]), counts=np.array([4, 2]))
    >>> values.tolist(), weights.tolist()
    ([-0.5, 1.5, 4.0], [1.0, 3.0, 2.0])
    """
    u, v = effect[:-1], effect[1:]
    w = np.asarray(counts, dtype=np.float64)
    cross = u * v < 0
    if not (split and cross.any()):
        return (u + v) / 2.0, w
    span = np.where(cross, np.abs(u) + np.abs(v), 1.0)
    values = np.where(cross, u / 2.0, (u + v) / 2.0)
    weights = np.where(cross, w * np.abs(u) / span, w)
    k = np.flatnonzero(cross)
    values = np.insert(values, k + 1, v[k] / 2.0)
    weights = np.insert(weights, k + 1, w[k] * np.abs(v[k]) / span[k])
    return values, weights


def normalize(values: np.ndarray, *, quantiles: np.ndarray) -> np.ndarray:
    """Effect values in percentile points of the predictions: ``100 (F(M + a) - 1/2)`` in
    [-50, 50], 0 for ``a = 0``; ``M`` the median, ``F`` piecewise linear through the equally
    spaced ``quantiles`` (``F(q_i) = i / (Q - 1)``, 0 below, 1 above; a repeated value at
    its levels' middle).

    >>> norm = normalize(np.array([-100.0, -25.0, 0.0, 10.0]), quantiles=np.arange(101.0))
    >>> np.round(norm, 9).tolist()
    [-50.0, -25.0, 0.0, 10.0]
    >>> normalize(np.array([0.5, 2.0]), quantiles=np.array([0.0, 1.0, 1.0, 1.0, 2.0])).tolist()
    [25.0, 50.0]
    """
    q = np.asarray(quantiles, dtype=np.float64)
    x = float(q[q.size // 2]) + np.asarray(values, dtype=np.float64)
    xs, first, counts = np.unique(q, return_index=True, return_counts=True)
    levels = np.linspace(0.0, 1.0, q.size)
    fs = (levels[first] + levels[first + counts - 1]) / 2.0
    if xs.size == 1:
        F = np.where(x < xs[0], 0.0, np.where(x > xs[0], 1.0, fs[0]))
    else:
        F = np.interp(x, xs, fs, left=0.0, right=1.0)
    norm = np.where(np.asarray(values) == 0.0, 0.0, 100.0 * (F - 0.5))
    return np.clip(norm, -50.0, 50.0)


def normalize_r(values: np.ndarray, *, reference: np.ndarray) -> np.ndarray:
    """R ``ale``'s normalisation (``create_ale_y_norm_function``) by the ``reference``
    values ``y`` (R: the observed outcome for a numeric target, the predictions otherwise).

    With ``c = y - median(y)``: 0 for ``a`` between the largest ``c < 0`` and the smallest
    ``c > 0``; else ``-50 ECDF_-(-a)`` for ``a < 0``, ``ECDF_-`` the empirical distribution
    of ``-c`` over ``c <= 0``, and ``50 ECDF_+(a)`` for ``a > 0`` over ``c >= 0``.

    >>> a = np.array([-9.0, -3.0, -0.5, 1.0, 2.5, 9.0])
    >>> normalize_r(a, reference=np.arange(9.0)).tolist()  # c = -4..4: 0 on [-1, 1]
    [-50.0, -40.0, 0.0, 0.0, 30.0, 50.0]
    """
    c = np.asarray(reference, dtype=np.float64) - float(np.median(reference))
    lower, upper = np.sort(c[c <= 0]), np.sort(c[c >= 0])
    pre = float(lower[lower < 0].max()) if (lower < 0).any() else 0.0
    post = float(upper[upper > 0].min()) if (upper > 0).any() else 0.0
    a = np.asarray(values, dtype=np.float64)
    below = (lower.size - np.searchsorted(lower, a, side="left")) / lower.size
    above = np.searchsorted(upper, a, side="right") / upper.size
    norm = np.where(a < 0, -50.0 * below, 50.0 * above)
    return np.where((a >= pre) & (a <= post), 0.0, norm)


@dataclass(frozen=True)
class Definitions:
    """Which definitions the statistics follow: ``name`` (``params.statistics``), ``split``
    (:func:`pieces`), ``normalize(values, percentiles of the predictions)``."""

    name: str
    split: bool
    normalize: Callable[[np.ndarray, np.ndarray], np.ndarray]


#: ale's own (the module docstring)
ALE_CLI = Definitions("ale-cli", True, lambda v, q: normalize(v, quantiles=q))
#: R ``ale``'s ``calc_stats`` (the recorded percentiles as the reference values)
R = Definitions("r", False, lambda v, q: normalize_r(v, reference=q))
DEFINITIONS = {d.name: d for d in (ALE_CLI, R)}


def aled(
    *,
    effect: np.ndarray,
    counts: np.ndarray,
    definitions: Definitions = ALE_CLI,
    quantiles: np.ndarray | None = None,
) -> float:
    """ALE deviation ``sum_i w_i |p_i| / N`` over the pieces of the mean-centered curve
    (``effect`` (K+1,), ``counts`` (K,)); with ``quantiles``, NALED: of ``norm(p_i)``, in
    [0, 50].

    >>> aled(effect=np.array([0.0, 2.0, 4.0]), counts=np.array([1, 1]))
    1.0
    >>> aled(effect=np.array([-1.0, 1.0]), counts=np.array([10]))  # mean |x| on [-1, 1]
    0.5
    >>> round(aled(effect=np.array([0.0, 2.0, 4.0]), counts=np.array([1, 1]),
    ...            quantiles=np.arange(101.0)), 9)
    1.0
    """
    if counts.sum() == 0:
        return 0.0
    centered = effect - center_offset(effect, counts)
    values, weights = pieces(effect=centered, counts=counts, split=definitions.split)
    if quantiles is not None:
        values = definitions.normalize(values, quantiles)
    value = float(np.dot(weights, np.abs(values)) / weights.sum())
    return value if quantiles is None else min(value, 50.0)  # split weights' rounding


def aler(
    *,
    effect: np.ndarray,
    counts: np.ndarray,
    quantiles: np.ndarray | None = None,
    definitions: Definitions = ALE_CLI,
) -> tuple[float, float]:
    """ALE range ``(min_k f(z_k), max_k f(z_k))`` of the mean-centered curve; with
    ``quantiles``, NALER: ``norm`` of its limits, in [-50, 50].

    >>> aler(effect=np.array([0.0, 2.0, 4.0]), counts=np.array([1, 1]))
    (-2.0, 2.0)
    >>> lo, hi = aler(effect=np.array([0.0, 2.0, 4.0]), counts=np.array([1, 1]),
    ...               quantiles=np.arange(101.0))
    >>> round(lo, 9), round(hi, 9)
    (-2.0, 2.0)
    """
    centered = effect - center_offset(effect, counts)
    lo, hi = float(centered.min()), float(centered.max())
    if quantiles is None:
        return lo, hi
    norm = definitions.normalize(np.array([lo, hi]), quantiles)
    return float(norm[0]), float(norm[1])


def heterogeneity_share(
    *,
    effect: np.ndarray,
    std: np.ndarray,
    counts: np.ndarray,
    definitions: Definitions = ALE_CLI,
) -> float:
    """``(sum_k n_k (STD(z_{k-1}) + STD(z_k)) / 2 / N) / ALED`` (``std`` (K+1,)): 0 without
    heterogeneity, ``inf`` when only ALED is 0.

    >>> heterogeneity_share(effect=np.array([0.0, 2.0, 4.0]), std=np.array([0.0, 1.0, 1.0]),
    ...                     counts=np.array([1, 1]))
    0.75
    """
    n = counts.sum()
    if n == 0:
        return 0.0
    s = np.nan_to_num(np.asarray(std, dtype=np.float64))
    mean_std = float(np.dot(counts, (s[:-1] + s[1:]) / 2.0) / n)
    if mean_std == 0.0:
        return 0.0
    deviation = aled(effect=effect, counts=counts, definitions=definitions)
    if deviation == 0.0:
        return float("inf")
    return mean_std / deviation


def ranks(values: np.ndarray) -> np.ndarray:
    """Rank 1 for the largest value; ties share the smaller rank (1, 2, 2, 4); NaN last.

    >>> ranks(np.array([0.5, 2.0, 0.5, 0.1])).tolist()
    [2, 1, 2, 4]
    """
    v = np.asarray(values, dtype=np.float64)
    v = np.where(np.isnan(v), -np.inf, v)
    return np.array([1 + int(np.sum(v > x)) for x in v], dtype=np.int64)


def effect_statistics(
    *,
    effect: np.ndarray,
    std: np.ndarray,
    counts: np.ndarray,
    quantiles: np.ndarray | None = None,
    definitions: Definitions = ALE_CLI,
) -> dict[str, float | None]:
    """Every statistic of one curve by name (as
    :func:`~ale_cli.core.discrete.level_statistics`): ``effect`` and ``std`` (K+1,),
    ``counts`` (K,); the normalised ones None without the prediction ``quantiles`` (101,).

    >>> s = effect_statistics(effect=np.array([0.0, 2.0, 4.0]), std=np.zeros(3),
    ...                       counts=np.array([1, 1]))
    >>> s["aled"], s["aler_min"], s["aler_max"], s["heterogeneity_share"], s["naled"]
    (1.0, -2.0, 2.0, 0.0, None)
    """
    counts = np.asarray(counts)
    curve: dict[str, Any] = {"effect": effect, "counts": counts, "definitions": definitions}
    lo, hi = aler(effect=effect, counts=counts)
    nlo, nhi = (None, None) if quantiles is None else aler(quantiles=quantiles, **curve)
    return {
        "aled": aled(**curve),
        "aler_min": lo,
        "aler_max": hi,
        "naled": None if quantiles is None else aled(quantiles=quantiles, **curve),
        "naler_min": nlo,
        "naler_max": nhi,
        "heterogeneity_share": heterogeneity_share(std=std, **curve),
    }
