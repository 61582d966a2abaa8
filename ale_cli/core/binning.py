"""Bin edges and bin membership (the conventions of ALEPlot/PyALE).

Edges ``z_0 < ... < z_K``; bin k (0-based) is ``(z_k, z_{k+1}]``, the first also holding
``z_0``. Quantile edges are type-1 (the smallest x with ``F_N(x) >= k/K``, R's ``type = 1``),
deduplicated: the effective K can be smaller than asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from ale_cli.core.outofcore import chunked_quantile_edges

BINNINGS = ("uniform", "quantile")

#: safety factor (in units of machine epsilon) for the uniform fast path's rounding check
_ULPS = 16.0


@dataclass(frozen=True)
class Assignment:
    """Bin ``index`` (N,) of each row in ``0 .. K-1``; the ``n_outside`` rows outside
    ``[z_0, z_K]`` get ``-1``."""

    index: np.ndarray
    n_outside: int


def check_edges(edges: np.ndarray) -> np.ndarray:
    """``edges`` as float64 if finite, 1-D, at least 2 and strictly increasing, else a
    ValueError saying what is wrong (callers add the feature and file).

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
            f"edges must be strictly increasing (edge {k + 1} = {float(z[k + 1])!r} "
            f"follows {float(z[k])!r})"
        )
    return z


def uniform_edges(x_min: float, x_max: float, *, bins: int) -> np.ndarray:
    """K equal-width bins over ``[x_min, x_max]``: ``z_k = x_min + k (x_max - x_min) / K``
    (``z_K = x_max`` exactly; edges that round together deduplicated).

    >>> uniform_edges(0.0, 1.0, bins=4)
    array([0.  , 0.25, 0.5 , 0.75, 1.  ])
    """
    if bins < 1:
        raise ValueError(f"bins must be at least 1, got {bins}")
    if not x_max > x_min:
        raise ValueError(f"need x_max > x_min, got [{x_min!r}, {x_max!r}]")
    return np.unique(np.linspace(x_min, x_max, bins + 1))


def quantile_edges(x: np.ndarray, *, bins: int) -> np.ndarray:
    """Type-1 quantile edges at ``k/K`` (the sorted ``x_(ceil(N p))``), deduplicated;
    ``z_0 = min``, ``z_K = max``: :func:`~ale_cli.core.outofcore.chunked_quantile_edges`
    on one chunk.

    >>> quantile_edges(np.array([5.0, 1.0, 2.0, 2.0, 3.0, 4.0]), bins=3)
    array([1., 2., 3., 5.])
    """
    if bins < 1:
        raise ValueError(f"bins must be at least 1, got {bins}")
    x = np.ascontiguousarray(x, dtype=np.float64)
    if x.size == 0:
        raise ValueError("quantile edges need at least one value")
    lo, hi = np.array([x.min()]), np.array([x.max()])
    return chunked_quantile_edges(lambda: [x[:, None]], n=x.size, bins=bins, lo=lo, hi=hi)[0]


#: Up to this many values, :func:`count_below` counts value by value (branch-free)
_COUNTING_EDGES = 64


def count_below(x: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``#{values < x}`` for each x (``searchsorted(values, x, 'left')``, ``values``
    increasing; uint8 up to :data:`_COUNTING_EDGES` values).

    >>> count_below(np.array([-1.0, 0.0, 0.5, 2.0]), np.array([0.0, 1.0])).tolist()
    [0, 0, 1, 2]
    """
    if values.size > _COUNTING_EDGES:
        return np.searchsorted(values, x, side="left")
    counts = np.zeros(x.shape, dtype=np.uint8)
    for z in values:
        np.add(counts, x > z, out=counts, casting="unsafe")
    return counts


def assign(x: np.ndarray, edges: np.ndarray) -> Assignment:
    """Bin ``index = #{interior edges < x}`` of each value; outside ``[z_0, z_K]``: ``-1``.

    >>> a = assign(np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0]), np.array([0.0, 1.0, 2.0]))
    >>> a.index.tolist(), a.n_outside
    ([0, 0, 0, 1, 1, -1], 1)
    """
    x = np.ascontiguousarray(x, dtype=np.float64)
    index = count_below(x, edges[1:-1]).astype(np.int64, copy=False)
    outside = (x < edges[0]) | (x > edges[-1])
    n_outside = int(np.count_nonzero(outside))
    if n_outside:
        index[outside] = -1
    return Assignment(index=index, n_outside=n_outside)


@dataclass(frozen=True)
class UniformGrid:
    """Uniform edges (D, K+1) for D columns: the bins of :func:`assign` with
    ``uniform_edges(lo[j], hi[j], bins=K)`` for a whole (N, D) array at once, as
    ``k = ceil((x - z_0) K / (z_K - z_0)) - 1``; a value whose ``u`` is within ``tol`` (D,)
    of an integer is checked against the exact edges. ``scale = K / (hi - lo)`` (D,).
    """

    edges: np.ndarray
    scale: np.ndarray
    tol: np.ndarray

    @property
    def bins(self) -> int:
        return int(self.edges.shape[1] - 1)

    @classmethod
    def build(cls, lo: np.ndarray, hi: np.ndarray, *, bins: int) -> UniformGrid | None:
        """The grid, or None (use :func:`assign`) when a column has ``hi <= lo``, edges that
        round together, or values too far from 0 for the width."""
        lo = np.asarray(lo, dtype=np.float64)
        hi = np.asarray(hi, dtype=np.float64)
        width = hi - lo
        if bins < 1 or np.any(~(width > 0)):
            return None
        edges = np.linspace(lo, hi, bins + 1, axis=1)
        if np.any(np.diff(edges, axis=1) <= 0):
            return None
        scale = bins / width
        eps = np.finfo(np.float64).eps
        tol = _ULPS * eps * (bins + np.maximum(np.abs(lo), np.abs(hi)) * scale)
        if np.any(tol > 1e-3):
            return None
        return cls(edges=edges, scale=scale, tol=tol)

    def index(self, X: np.ndarray) -> np.ndarray:
        """Bin of every entry of X (n, D), all inside ``[lo, hi]``: int64 (n, D).

        >>> g = UniformGrid.build(np.array([0.0, 10.0]), np.array([1.0, 12.0]), bins=2)
        >>> g.index(np.array([[0.0, 10.0], [0.5, 11.0], [0.7, 12.0]])).tolist()
        [[0, 0], [0, 0], [1, 1]]
        """
        k = self.bins
        X = np.asarray(X, dtype=np.float64)
        # u - 1 = (x - z_0) K / (z_K - z_0) - 1, so that ceil gives the 0-based bin directly
        u = X * self.scale
        u -= self.edges[:, 0] * self.scale + 1.0
        up = np.ceil(u)
        # |(ceil(u) - u) - 1/2| > 1/2 - tol: u within tol of an integer, i.e. of an edge
        np.subtract(up, u, out=u)
        u -= 0.5
        np.abs(u, out=u)
        f_order = u.flags.f_contiguous and not u.flags.c_contiguous
        order: Literal["C", "F"] = "F" if f_order else "C"
        near = np.flatnonzero((u > 0.5 - self.tol).ravel(order))
        index: np.ndarray = up.astype(np.int64)
        if near.size:
            rows, cols = np.unravel_index(near, u.shape, order=order)
            x = X[rows, cols]
            b = np.clip(index[rows, cols], 0, k - 1)
            table = self.edges.reshape(-1)
            base = cols * (k + 1)
            b += x > table[base + b + 1]  # above the bin's upper edge: next bin
            b -= (x <= table[base + b]) & (b > 0)  # at or below its lower edge: previous bin
            index[rows, cols] = b
        return index
