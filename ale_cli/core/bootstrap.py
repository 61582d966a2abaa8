"""Bootstrap bands: rows resampled with replacement, the edges held fixed.

Replicate b draws row i ``w_bi`` times, ``w_b ~ Multinomial(N, 1/N, ..., 1/N)``; with
the bins fixed its cell statistics are weighted sums over the rows::

    n_bk = sum_{i in bin k} w_bi
    S_bk = sum_{i in bin k} w_bi e_i = n_bk mu_k + sum_{i in bin k} w_bi (e_i - mu_k)

(``mu_k`` the bin's mean on the data: a bin of equal values stays exact). The rows drawn
depend only on the seed and N, not on the block size or the features.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ale_cli.core.binstats import fill_missing
from ale_cli.core.discrete import level_statistics
from ale_cli.core.effect import check_center
from ale_cli.core.statistics import ALE_CLI, Definitions, effect_statistics

#: at most this many weights (replicates x rows) are held at once
BLOCK_WEIGHTS = 1 << 23
#: the statistics that get percentile bands
BAND_KEYS = ("aled", "aler_min", "aler_max", "naled", "naler_min", "naler_max")


def resampled_weights(
    n_rows: int, *, replicates: int, rng: np.random.Generator
) -> Iterator[np.ndarray]:
    """Blocks (b, N) of ``W``, how often each row is drawn per replicate
    (``bincount(rng.integers(0, N, N))``, in order; ``b * N <= BLOCK_WEIGHTS``).

    >>> [w.sum(axis=1).tolist() for w in resampled_weights(3, replicates=2,
    ...                                                    rng=np.random.default_rng(0))]
    [[3.0, 3.0]]
    """
    block = max(1, BLOCK_WEIGHTS // max(n_rows, 1))
    for start in range(0, replicates, block):
        b = min(block, replicates - start)
        out = np.empty((b, n_rows))
        for r in range(b):
            out[r] = np.bincount(rng.integers(0, n_rows, n_rows), minlength=n_rows)
        yield out


@dataclass(frozen=True)
class ReplicateCells:
    """``counts`` n_bk (whole numbers) and ``sums`` S_bk per replicate and bin, (B, K)."""

    counts: np.ndarray
    sums: np.ndarray


def replicate_effects(
    edges: np.ndarray,
    cells: ReplicateCells,
    *,
    center: str = "mean",
    widths: np.ndarray | None = None,
) -> np.ndarray:
    """The effect (B, K+1) of every replicate: ``mu_bk = S_bk / n_bk`` (divided by
    ``widths`` (K,) for classic ALE), empty bins interpolated between bin centers,
    ``f_b(z_k) = sum_{j<=k} mu_bj dz_j`` centered by the replicate's own counts.

    >>> rc = ReplicateCells(counts=np.array([[2.0, 0.0, 2.0]]), sums=np.array([[2.0, 0.0, 6.0]]))
    >>> replicate_effects(np.array([0.0, 1.0, 2.0, 3.0]), rc, center="start").tolist()
    [[0.0, 1.0, 3.0, 6.0]]
    """
    n = cells.counts
    with np.errstate(invalid="ignore", divide="ignore"):
        mu = cells.sums / n
    if widths is not None:
        mu = mu / widths
    empty = n == 0
    if empty.any():
        centers = (edges[:-1] + edges[1:]) / 2.0
        for b in np.flatnonzero(empty.any(axis=1)):
            mu[b] = fill_missing(mu[b], ~empty[b], centers)
    dz = np.diff(edges)
    effect = np.zeros((n.shape[0], edges.size))
    np.cumsum(mu * dz, axis=1, out=effect[:, 1:])
    return centered_replicates(effect, n, center)


def centered_replicates(
    effect: np.ndarray, n: np.ndarray, center: str, *, per_level: bool = False
) -> np.ndarray:
    """For ``center`` "mean", each replicate's curve (a row of ``effect`` (B, K+1)) less its
    mean over the rows (``n`` (B, K) per bin, or ``per_level`` (B, K+1) per point):
    :func:`~.effect.center_offset` of every one."""
    if check_center(center) != "mean":
        return effect
    total = n.sum(axis=1)
    mids = effect if per_level else (effect[:, :-1] + effect[:, 1:]) / 2.0
    with np.errstate(invalid="ignore", divide="ignore"):
        return effect - np.where(total > 0, (n * mids).sum(axis=1) / total, 0.0)[:, None]


def percentile_band(values: np.ndarray, *, ci: float) -> tuple[np.ndarray, np.ndarray]:
    """The ``(1 - ci) / 2`` and ``(1 + ci) / 2`` percentiles over the replicates (axis 0).

    >>> lo, hi = percentile_band(np.arange(101.0)[:, None], ci=0.9)  # 101 replicates, 1 edge
    >>> np.round(lo, 12).tolist(), np.round(hi, 12).tolist()
    ([5.0], [95.0])
    """
    if not 0.0 < ci < 1.0:
        raise ValueError(f"ci must be between 0 and 1, got {ci}")
    q = np.quantile(values, [(1.0 - ci) / 2.0, (1.0 + ci) / 2.0], axis=0)
    return q[0], q[1]


def statistics_bands(
    effect: np.ndarray,
    counts: np.ndarray,
    *,
    quantiles: np.ndarray | None,
    ci: float,
    definitions: Definitions = ALE_CLI,
    levels: bool = False,
) -> dict[str, float | None]:
    """Percentile bands (``aled_ci_low``, ``aled_ci_high``, ...) of ALED, ALER and, with the
    data's prediction ``quantiles``, NALED and NALER over the replicates' ``effect``
    (B, K+1) and ``counts`` (B, K) by the ``definitions`` (None where a replicate has
    None); ``levels``: per-level effects (B, K) (:func:`~ale_cli.core.discrete.level_statistics`).

    >>> e = np.array([[-1.0, 1.0], [-2.0, 2.0], [-3.0, 3.0]]); n = np.ones((3, 1))
    >>> b = statistics_bands(e, n, quantiles=None, ci=0.5)
    >>> b["aled_ci_low"], b["aled_ci_high"], b["naled_ci_low"]
    (0.75, 1.25, None)
    >>> statistics_bands(e, np.ones((3, 2)), quantiles=None, ci=0.5, levels=True)["aled_ci_low"]
    1.5
    """
    of = level_statistics if levels else effect_statistics
    rows = [
        of(effect=e, std=np.zeros_like(e), counts=n, quantiles=quantiles, definitions=definitions)
        for e, n in zip(effect, counts, strict=True)
    ]
    out: dict[str, float | None] = {}
    for key in BAND_KEYS:
        values = [r[key] for r in rows]
        if any(v is None for v in values):
            out[f"{key}_ci_low"] = out[f"{key}_ci_high"] = None
            continue
        lo, hi = percentile_band(np.array(values, dtype=np.float64)[:, None], ci=ci)
        out[f"{key}_ci_low"], out[f"{key}_ci_high"] = float(lo[0]), float(hi[0])
    return out
