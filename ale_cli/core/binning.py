"""Bin edges and bin membership.

Conventions (shared with ALEPlot/PyALE, see DESIGN.md):

- edges ``z_0 < z_1 < ... < z_K`` are strictly increasing; bin k (0-based) is
  the interval ``(z_k, z_{k+1}]``, and the first bin also holds ``z_0``;
- uniform edges split ``[min, max]`` into K equal widths;
- quantile edges are type-1 (inverse-ECDF) quantiles at ``k/K``: the smallest
  data value x with ``F_N(x) >= k/K`` (R's ``quantile(type = 1)``), with
  ``z_0 = min``; duplicates are removed, so the effective K can be smaller
  than the K asked for.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BINNINGS = ("uniform", "quantile")

#: safety factor (in units of machine epsilon) for the uniform fast path's rounding check
_ULPS = 16.0


@dataclass(frozen=True)
class Assignment:
    """Bin membership of the rows of one feature.

    Attributes
    ----------
    index : ndarray, shape (N,), int64
        Bin of each row in ``0 .. K-1``; rows outside ``[z_0, z_K]`` get ``-1``.
    n_outside : int
        Rows outside ``[z_0, z_K]`` (index ``-1``).
    """

    index: np.ndarray
    n_outside: int


def check_edges(edges: np.ndarray) -> np.ndarray:
    """Return ``edges`` as float64 if they are finite, 1-D, at least 2 and strictly increasing.

    Raises ValueError saying what is wrong (callers add the feature and file).

    >>> check_edges([0, 1, 3])
    array([0., 1., 3.])
    """
    z = np.asarray(edges, dtype=np.float64)
    if z.ndim != 1 or z.size < 2:
        raise ValueError(f"expected at least 2 edges in a flat list, got shape {z.shape}")
    if not np.all(np.isfinite(z)):
        raise ValueError("edges must be finite numbers")
    steps = np.diff(z)
    if np.any(steps <= 0):
        k = int(np.argmax(steps <= 0))
        raise ValueError(
            f"edges must be strictly increasing (edge {k + 1} = {z[k + 1]!r} follows {z[k]!r})"
        )
    return z


def uniform_edges(x_min: float, x_max: float, *, bins: int) -> np.ndarray:
    """K equal-width bins over ``[x_min, x_max]``: ``z_k = x_min + k (x_max - x_min) / K``.

    ``z_K`` is exactly ``x_max``. When the range is so small relative to the
    values that neighbouring edges round to the same float, duplicates are
    removed (fewer bins). Requires ``x_max > x_min`` and ``bins >= 1``.

    >>> uniform_edges(0.0, 1.0, bins=4)
    array([0.  , 0.25, 0.5 , 0.75, 1.  ])
    """
    if bins < 1:
        raise ValueError(f"bins must be at least 1, got {bins}")
    if not x_max > x_min:
        raise ValueError(f"need x_max > x_min, got [{x_min!r}, {x_max!r}]")
    return np.unique(np.linspace(x_min, x_max, bins + 1))


def quantile_edges(x: np.ndarray, *, bins: int) -> np.ndarray:
    """Type-1 quantile edges at ``k/K``, deduplicated; ``z_0 = min``, ``z_K = max``.

    With the sorted values ``x_(1) <= ... <= x_(N)``, the edge at ``p = k/K`` is
    ``x_(ceil(N p))`` (the smallest x with ``F_N(x) >= p``), computed in exact
    integer arithmetic. The effective K is ``len(edges) - 1`` (it is 0 when x
    has a single distinct value).

    >>> quantile_edges(np.array([5.0, 1.0, 2.0, 2.0, 3.0, 4.0]), bins=3)
    array([1., 2., 3., 5.])
    """
    if bins < 1:
        raise ValueError(f"bins must be at least 1, got {bins}")
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    if n == 0:
        raise ValueError("quantile edges need at least one value")
    k = np.arange(bins + 1, dtype=np.int64)
    ranks = -(-n * k // bins)  # ceil(n k / K), 1-based; 0 for k = 0
    positions = np.maximum(ranks - 1, 0)
    # np.partition puts every requested order statistic in place in one call
    part = np.partition(x, np.unique(positions))
    return np.unique(part[positions])


def assign(x: np.ndarray, edges: np.ndarray) -> Assignment:
    """Bin of each value for bins ``(z_k, z_{k+1}]``, the first also holding ``z_0``.

    ``index = #{interior edges < x}``, by binary search; values outside
    ``[z_0, z_K]`` get ``-1`` and are counted in ``n_outside``.

    >>> a = assign(np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0]), np.array([0.0, 1.0, 2.0]))
    >>> a.index.tolist(), a.n_outside
    ([0, 0, 0, 1, 1, -1], 1)
    """
    x = np.asarray(x, dtype=np.float64)
    index = np.searchsorted(edges[1:-1], x, side="left").astype(np.int64)
    outside = (x < edges[0]) | (x > edges[-1])
    n_outside = int(np.count_nonzero(outside))
    if n_outside:
        index[outside] = -1
    return Assignment(index=index, n_outside=n_outside)


def assign_uniform_columns(
    X: np.ndarray, lo: np.ndarray, hi: np.ndarray, *, bins: int
) -> np.ndarray | None:
    """Bins of every entry of X for ``uniform_edges(lo[j], hi[j], bins=bins)`` per column j.

    The same result as :func:`assign` column by column (every value must lie
    in ``[lo[j], hi[j]]``), but computed for the whole (N, D) array at once:
    ``k = ceil((x - z_0) K / (z_K - z_0)) - 1``, clipped to ``0 .. K-1``; the
    few values within rounding distance of an edge are re-assigned by binary
    search against the exact edges. Returns None when a column's edges are
    not K distinct bins or the rounding margin is too wide to be useful
    (callers then use :func:`assign`).

    Returns
    -------
    index : ndarray, shape (N, D), int64, or None

    >>> X = np.array([[0.0, 10.0], [0.5, 11.0], [1.0, 12.0]])
    >>> assign_uniform_columns(X, np.array([0.0, 10.0]), np.array([1.0, 12.0]), bins=2).tolist()
    [[0, 0], [0, 0], [1, 1]]
    """
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    width = hi - lo
    if np.any(~(width > 0)):
        return None
    edges = [np.linspace(a, b, bins + 1) for a, b in zip(lo, hi, strict=True)]
    if any(np.any(np.diff(z) <= 0) for z in edges):
        return None
    scale = bins / width
    # u = (x - z_0) K / (z_K - z_0) carries a few ulps of error, measured in units of u
    tol = _ULPS * np.finfo(np.float64).eps * (bins + np.maximum(np.abs(lo), np.abs(hi)) * scale)
    if np.any(tol > 1e-3):
        return None
    u = X - lo
    u *= scale
    up = np.ceil(u)
    frac = up - u  # in [0, 1): distance of u to the integer above
    near = (frac < tol) | (frac > 1.0 - tol)
    index = up.astype(np.int64)
    index -= 1
    np.clip(index, 0, bins - 1, out=index)
    rows, cols = np.nonzero(near)
    if rows.size:
        for j in np.unique(cols):
            sel = cols == j
            index[rows[sel], j] = np.searchsorted(edges[j][1:-1], X[rows[sel], j], side="left")
    return index
