"""Accumulate bin effects into the effect curve, its heterogeneity and standard error; center it.

With ``dz_k = z_k - z_{k-1}``, at the K+1 edges:

- effect: ``f(z_0) = 0``, ``f(z_k) = sum_{j<=k} mu_j dz_j``, linear between edges;
- heterogeneity (RHALE Eq. 16): ``STD(z_k) = sqrt(sum_{j<=k} dz_j^2 s_j^2)``;
- standard error (DALE Eq. 15): ``SE(z_k) = sqrt(sum_{j<=k} dz_j^2 s_j^2 / n_j)``;
- centering ``mean`` subtracts ``c = sum_k n_k (f(z_{k-1}) + f(z_k)) / 2 / N``;
  ``start`` and ``none`` nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CENTER_MODES = ("mean", "start", "none")


@dataclass(frozen=True)
class Accumulated:
    """Uncentered ``effect`` f(z_k) (f(z_0) = 0), ``std`` STD(z_k) and ``stderr`` SE(z_k)
    at the K+1 edges."""

    effect: np.ndarray
    std: np.ndarray
    stderr: np.ndarray


def _cumsum0(values: np.ndarray) -> np.ndarray:
    return np.concatenate([np.zeros(1), np.cumsum(values)])


def accumulate(
    edges: np.ndarray, bin_effect: np.ndarray, *, bin_var: np.ndarray, counts: np.ndarray
) -> Accumulated:
    """Effect, heterogeneity and standard error at the edges (K+1,) from ``mu_k``, ``s_k^2``
    (K,, no NaN) and ``n_k`` (0 counts as 1 in the standard error).

    >>> a = accumulate(np.array([0.0, 1.0, 3.0]), np.array([2.0, -1.0]),
    ...                bin_var=np.array([4.0, 1.0]), counts=np.array([4, 1]))
    >>> a.effect.tolist(), a.std.tolist(), a.stderr.tolist()
    ([0.0, 2.0, 0.0], [0.0, 2.0, 2.8284271247461903], [0.0, 1.0, 2.23606797749979])
    """
    dz = np.diff(edges)
    dz2var = dz * dz * bin_var
    return Accumulated(
        effect=_cumsum0(bin_effect * dz),
        std=np.sqrt(_cumsum0(dz2var)),
        stderr=np.sqrt(_cumsum0(dz2var / np.maximum(counts, 1))),
    )


def center_offset(effect: np.ndarray, counts: np.ndarray, *, mode: str = "mean") -> float:
    """The constant subtracted for centering ``mode`` (see the module docstring).

    >>> center_offset(np.array([0.0, 1.0, 3.0]), np.array([1, 3]), mode="mean")
    1.625
    """
    if mode not in CENTER_MODES:
        raise ValueError(f"center must be one of {', '.join(CENTER_MODES)}, got {mode!r}")
    if mode != "mean":
        return 0.0
    n = counts.sum()
    if n == 0:
        return 0.0
    mids = (effect[:-1] + effect[1:]) / 2.0
    return float(np.dot(counts, mids) / n)


def evaluate(
    x: np.ndarray,
    edges: np.ndarray,
    effect: np.ndarray,
    bin_effect: np.ndarray,
) -> np.ndarray:
    """The curve at points x: ``f(x) = f(z_{k-1}) + mu_k (x - z_{k-1})`` for x in bin k;
    NaN outside ``[z_0, z_K]``.

    >>> evaluate(np.array([-1.0, 0.0, 0.5, 2.0, 3.0]), np.array([0.0, 1.0, 3.0]),
    ...          np.array([0.0, 2.0, 0.0]), np.array([2.0, -1.0])).tolist()
    [nan, 0.0, 1.0, 1.0, 0.0]
    """
    x = np.asarray(x, dtype=np.float64)
    k = np.clip(np.searchsorted(edges[1:-1], x, side="left"), 0, len(bin_effect) - 1)
    out = effect[k] + bin_effect[k] * (x - edges[k])
    return np.where((x < edges[0]) | (x > edges[-1]), np.nan, out)
