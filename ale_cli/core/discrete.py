"""ALE of a discrete or nominal feature per level, from adjacent-level jumps (ALEPlot's
factors, Apley & Zhu 2020, Sec. 5.4; docs/estimators.md, "Discrete and categorical
features"). Levels ``l_0 .. l_{K-1}`` in order (nominal: :func:`order_of`)::

    up_i = f(x_i with x_s = l_{k+1}) - f(x_i),  down_i = f(x_i) - f(x_i with x_s = l_{k-1})
    d_k  = mean of the up of level k-1 and the down of level k   (m_k values, std s_k)
    f(l_k) = sum_{j<=k} d_j, centered so that sum_k n_k f(l_k) = 0
    STD(l_k) = sqrt(sum_{j<=k} s_j^2),  SE(l_k) = sqrt(sum_{j<=k} s_j^2 / m_j)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ale_cli.core.binstats import CellStats
from ale_cli.core.effect import accumulate, center_offset
from ale_cli.core.statistics import ALE_CLI, Definitions

#: numeric features with at most this many distinct values are discrete under ``auto``
MAX_DISCRETE_LEVELS = 10
#: most levels a feature is estimated per level with (K x K distances, K^3 eigensolver)
MAX_LEVELS = 2_000
#: quantile levels at which the KS distance compares two ECDFs (ALEPlot: 100 points)
KS_POINTS = 100
#: those levels, ``0, 1/99, ..., 1``
QS = np.linspace(0.0, 1.0, KS_POINTS)


@dataclass(frozen=True)
class LevelEffect:
    """One feature's effect per level, K levels in the estimated order: ``counts`` n_k,
    ``effect`` f(l_k) (centered), ``std`` and ``stderr`` (K,); ``jump`` d_k (K-1,), NaN where
    no row jumps (the jumps' spread and counts: the cells it is made from)."""

    counts: np.ndarray
    effect: np.ndarray
    std: np.ndarray
    stderr: np.ndarray
    jump: np.ndarray
    center_offset: float


def level_cells(
    *, position: np.ndarray, up: np.ndarray, down: np.ndarray, n_levels: int
) -> tuple[CellStats, np.ndarray]:
    """The jumps' statistics (K-1 cells of the pooled ``up``/``down`` of the rows at level
    ``position`` (N,): ``up`` read where ``position < K-1``, ``down`` where > 0) and ``n_k``
    (K,); both merge across chunks of rows.

    >>> cells, counts = level_cells(position=np.array([0, 1, 1]), up=np.array([2.0, 0, 0]),
    ...                             down=np.array([0, 4.0, 6.0]), n_levels=2)
    >>> cells.counts.tolist(), cells.mean.tolist(), counts.tolist()
    ([3], [4.0], [1, 2])
    """
    position = np.asarray(position, dtype=np.int64)
    if n_levels < 2:
        raise ValueError(f"n_levels must be at least 2, got {n_levels}")
    rise = position < n_levels - 1
    fall = position > 0
    cells = CellStats.from_values(
        np.concatenate([position[rise], position[fall] - 1]),
        np.concatenate([np.asarray(up)[rise], np.asarray(down)[fall]]),
        n_cells=n_levels - 1,
    )
    counts = np.bincount(position, minlength=n_levels).astype(np.int64)
    return cells, counts


def level_effect_from_cells(
    cells: CellStats, counts: np.ndarray, *, center: str = "mean"
) -> LevelEffect:
    """The per-level effect from the jumps' statistics ``cells`` (K-1 cells) and ``n_k`` (K,).

    >>> cells = CellStats.from_values(np.array([0, 0, 1]), np.array([1.0, 3.0, 5.0]), n_cells=2)
    >>> level_effect_from_cells(cells, np.array([1, 1, 2]), center="start").effect.tolist()
    [0.0, 2.0, 7.0]
    """
    n = cells.counts
    var = cells.var
    var = np.where(np.isfinite(var), var, 0.0)
    levels = np.arange(n.size + 1, dtype=np.float64)  # a unit step between levels
    effect, std, stderr = accumulate(levels, cells.mean, bin_var=var, counts=n)
    counts = np.asarray(counts, dtype=np.int64)
    offset = center_offset(effect, counts, mode=center, per_level=True)
    return LevelEffect(
        counts=counts,
        effect=effect - offset,
        std=std,
        stderr=stderr,
        jump=np.where(n > 0, cells.mean, np.nan),
        center_offset=offset,
    )


#: bytes of the (block, K, 100) differences compared at once in :func:`max_abs_differences`
_BLOCK_BYTES = 16 << 20


def max_abs_differences(F: np.ndarray) -> np.ndarray:
    """``max_p |F[a, p] - F[b, p]|`` for every pair of rows, (K, K), a block at a time."""
    k, p = F.shape
    out = np.empty((k, k))
    step = max(1, _BLOCK_BYTES // max(k * p * 8, 1))
    for start in range(0, k, step):
        block = F[start : start + step, None, :]
        out[start : start + step] = np.abs(block - F[None, :, :]).max(axis=2)
    return out


def total_variation(
    level: np.ndarray, value: np.ndarray, counts: np.ndarray, n_levels: int
) -> np.ndarray:
    """The total variation ``sum_c |p_ac - p_bc| / 2 = 1 - sum_c min(p_ac, p_bc)`` between the
    levels (K, K) from the ``counts`` of rows at each (``level``, ``value`` code) pair present.

    >>> total_variation(np.array([0, 0, 1]), np.array([0, 1, 1]), np.array([1, 1, 2]), 2)
    array([[0. , 0.5],
           [0.5, 0. ]])
    """
    share = counts / np.bincount(level, weights=counts, minlength=n_levels).astype(np.int64)[level]
    overlap = np.zeros((n_levels, n_levels))
    order = np.argsort(value, kind="stable")
    level, value, share = level[order], value[order], share[order]
    cuts = np.flatnonzero(np.diff(value)) + 1
    for rows, shares in zip(np.split(level, cuts), np.split(share, cuts), strict=True):
        overlap[np.ix_(rows, rows)] += np.minimum.outer(shares, shares)
    return np.maximum(1.0 - overlap, 0.0)


def ks_points(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sorted positions below and above the :data:`KS_POINTS` type-7 quantiles of n
    values and the weight of the one above, as numpy's ``quantile`` finds them (:func:`lerp`).

    >>> x = np.array([3.0, 1.0, 4.0, 1.5, 9.0])
    >>> below, above, gamma = ks_points(x.size)
    >>> s = np.sort(x)
    >>> bool(np.array_equal(lerp(s[below], s[above], gamma), np.quantile(x, QS)))
    True
    """
    virtual = (n - 1) * QS
    below = np.floor(virtual)
    above = below + 1
    top = virtual >= n - 1
    below[top] = above[top] = n - 1
    gamma = virtual - np.where(top, -1, below).astype(np.intp)
    return below.astype(np.intp), above.astype(np.intp), gamma


def lerp(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``a + (b - a) t``, from ``b`` where ``t >= 0.5``: numpy's interpolation between
    order statistics, to the last bit."""
    diff = b - a
    out: np.ndarray = np.add(a, diff * t)
    np.subtract(b, diff * (1 - t), out=out, where=t >= 0.5)
    return out


def mds_1d(dist: np.ndarray) -> np.ndarray:
    """Classical MDS in one dimension: ``sqrt(lambda_1) v_1`` of ``B = -J D^2 J / 2``,
    ``J = I - 11'/K``, the sign chosen so that the first point is not after the last.

    >>> d = np.abs(np.subtract.outer([0.0, 3.0, 1.0], [0.0, 3.0, 1.0]))
    >>> np.round(mds_1d(d), 12).tolist()
    [-1.333333333333, 1.666666666667, -0.333333333333]
    """
    d2 = dist * dist
    rows = d2.mean(axis=1)
    b = d2 - rows[:, None] - d2.mean(axis=0)[None, :] + rows.mean()
    b *= -0.5
    b += b.T
    b *= 0.5
    vals, vecs = np.linalg.eigh(b)
    coord: np.ndarray = vecs[:, -1] * np.sqrt(max(float(vals[-1]), 0.0))
    if coord[0] > coord[-1]:
        coord = -coord
    return coord


def order_of(dist: np.ndarray) -> np.ndarray:
    """ALEPlot's order (K,) of nominal levels (``order[p]`` the level at position p): by the
    1-D MDS coordinate (:func:`mds_1d`) of their distances ``dist`` (K, K) (summed over the
    other columns: KS by :func:`max_abs_differences` of the levels' ECDFs at :data:`QS`,
    :func:`total_variation`); the input order when every distance is 0.

    >>> order_of(np.abs(np.subtract.outer([0.0, 2.0, 1.0], [0.0, 2.0, 1.0]))).tolist()
    [0, 2, 1]
    """
    if not np.any(dist > 0):
        return np.arange(len(dist))
    order: np.ndarray = np.argsort(mds_1d(dist), kind="stable")
    return order


def level_statistics(
    *,
    effect: np.ndarray,
    std: np.ndarray,
    counts: np.ndarray,
    quantiles: np.ndarray | None,
    definitions: Definitions | None = None,
) -> dict[str, float | None]:
    """Effect-size statistics of a per-level effect (R ``ale``'s): ``aled = sum_k n_k |f_k| /
    N``, ``aler_min/max`` of ``f_k``, ``naled``/``naler_*`` normalised by ``definitions``
    (None without ``quantiles``), ``heterogeneity_share = (sum_k n_k STD_k / N) / aled``
    (None if only aled is 0).

    >>> s = level_statistics(effect=np.array([-1.0, 3.0]), std=np.zeros(2),
    ...                      counts=np.array([3, 1]), quantiles=None)
    >>> s["aled"], s["aler_min"], s["aler_max"], s["heterogeneity_share"]
    (1.5, -1.0, 3.0, 0.0)
    """
    n = np.asarray(counts, dtype=np.float64)
    total = n.sum()
    aled = float(np.dot(n, np.abs(effect)) / total)
    het = float(np.dot(n, std) / total)
    share = (het / aled if aled > 0 else (0.0 if het == 0 else None)) if total else None
    norm = None
    if quantiles is not None:
        norm = (definitions or ALE_CLI).normalize(np.asarray(effect, dtype=np.float64), quantiles)
    return {
        "aled": aled,
        "aler_min": float(np.min(effect)),
        "aler_max": float(np.max(effect)),
        "naled": None if norm is None else float(np.dot(n, np.abs(norm)) / total),
        "naler_min": None if norm is None else float(norm.min()),
        "naler_max": None if norm is None else float(norm.max()),
        "heterogeneity_share": share,
    }
