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
            f"edges must be strictly increasing (edge {k + 1} = {float(z[k + 1])!r} "
            f"follows {float(z[k])!r})"
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
    positions = _quantile_positions(n, bins)
    # np.partition puts every requested order statistic in place in one call
    part = np.partition(x, np.unique(positions))
    return np.unique(part[positions])


#: Below this many values :func:`quantile_bins` just partitions (its bucketing pays off above).
_BUCKETING_MIN_ROWS = 4096
#: Average values per bucket in :func:`quantile_bins` (more buckets: fewer candidates to
#: select from, but a larger count table).
_ROWS_PER_BUCKET = 8
#: :func:`quantile_bins` falls back to partitioning all values when more than this share
#: of them would have to be selected from (very skewed data, or an outlier).
_MAX_CANDIDATE_SHARE = 0.25


def _quantile_positions(n: int, bins: int) -> np.ndarray:
    """0-based positions in sorted order of the type-1 quantiles at ``k/K``, k = 0..K."""
    k = np.arange(bins + 1, dtype=np.int64)
    ranks = -(-n * k // bins)  # ceil(n k / K), 1-based; 0 for k = 0
    return np.maximum(ranks - 1, 0)


@dataclass(frozen=True)
class _Buckets:
    """Equal-width buckets over ``[lo, hi]``: ``b(x) = min(floor((x - lo) scale), B - 1)``.

    ``b`` is non-decreasing in x in floating point too (each operation is
    monotone), so every value in a lower bucket is smaller than every value
    in a higher one.

    Attributes
    ----------
    bucket : ndarray (n,), intp
        Bucket of each value.
    counts : ndarray (B,), int
        Values per bucket.
    lo, scale : float
    """

    bucket: np.ndarray
    counts: np.ndarray
    lo: float
    scale: float

    @classmethod
    def build(cls, x: np.ndarray, lo: float, hi: float) -> _Buckets | None:
        """The buckets of x in ``[lo, hi]``; None if the range is too wide or too
        narrow for a finite, non-zero scale."""
        n_buckets = int(np.clip(x.size // _ROWS_PER_BUCKET, 64, 1 << 16))
        width = hi - lo
        scale = n_buckets / width if width > 0 else 0.0
        if not (np.isfinite(width) and np.isfinite(scale) and scale > 0):
            return None
        self = cls(np.empty(0, dtype=np.intp), np.zeros(n_buckets, dtype=np.intp), lo, scale)
        bucket = self.of(x)
        return cls(bucket, np.bincount(bucket, minlength=n_buckets), lo, scale)

    def of(self, v: np.ndarray) -> np.ndarray:
        """Bucket of each value of v (in ``[lo, hi]``)."""
        u = v - self.lo
        u *= self.scale
        bucket = u.astype(np.intp)  # u >= 0: truncation is floor
        np.minimum(bucket, self.counts.size - 1, out=bucket)  # hi lands on B (or rounds there)
        return bucket

    def order_statistics(
        self, x: np.ndarray, positions: np.ndarray, *, max_candidates: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """``np.sort(x)[positions]`` from the values of the buckets holding the positions.

        The statistic at position p lies in the bucket where the cumulative count
        first exceeds p, at rank ``p - (count below it)`` among that bucket's
        values. A bucket whose values are all equal gives its value directly;
        the others are selected from with ``np.partition``.

        Returns ``(stats, varied, candidates)``: ``varied[b]`` is True for the
        buckets holding a position and more than one distinct value, and
        ``candidates`` are the indices of all values in those buckets. None if
        more than ``max_candidates`` values would have to be selected from.
        """
        n_buckets = self.counts.size
        upto = np.cumsum(self.counts)  # values in buckets <= j
        home = np.searchsorted(upto, positions, side="right")
        rank = positions - (upto[home] - self.counts[home])
        targets = np.unique(home)
        is_target = np.zeros(n_buckets, dtype=bool)
        is_target[targets] = True
        candidates = np.flatnonzero(is_target.take(self.bucket))
        values = x[candidates]
        within = self.bucket[candidates]
        some = np.zeros(n_buckets, dtype=np.float64)
        some[within] = values  # one of each target bucket's values
        varied = np.zeros(n_buckets, dtype=bool)
        varied[within[values != some[within]]] = True
        stats = some[home]  # right for the buckets holding one distinct value
        keep = varied[within]
        candidates = candidates[keep]
        if candidates.size > max_candidates:
            return None
        pick = varied[home]
        if np.any(pick):
            # candidates of lower varied buckets first, then the rank in the bucket
            vt = targets[varied[targets]]
            before = np.cumsum(self.counts[vt]) - self.counts[vt]
            local = before[np.searchsorted(vt, home[pick])] + rank[pick]
            keys, inverse = np.unique(local, return_inverse=True)
            stats[pick] = np.partition(values[keep], keys)[keys][inverse]
        return stats, varied, candidates


def quantile_bins(x: np.ndarray, *, bins: int) -> tuple[np.ndarray, Assignment]:
    """``quantile_edges(x, bins=K)`` and ``assign(x, edges)`` together, exactly, in a few passes.

    The values are counted in B equal-width buckets over ``[min, max]``
    (:class:`_Buckets`; every value in a lower bucket is smaller than every
    value in a higher one). Then:

    - each quantile is selected from the values of its own bucket only
      (:meth:`_Buckets.order_statistics`);
    - a value in a bucket that holds no interior edge, or whose values are all
      equal, is above exactly the edges of the lower buckets, so its bin is a
      table lookup by bucket; only the values in the other buckets holding
      edges are compared with the edges.

    The results are the same numbers as those two functions give (tested).
    For few values, a range too wide or narrow for a finite bucket scale, or
    too many values to select from (very skewed data), it calls them.

    >>> z, a = quantile_bins(np.array([5.0, 1.0, 2.0, 2.0, 3.0, 4.0]), bins=3)
    >>> z.tolist(), a.index.tolist()
    ([1.0, 2.0, 3.0, 5.0], [2, 0, 0, 0, 1, 2])
    """
    if bins < 1:
        raise ValueError(f"bins must be at least 1, got {bins}")
    x = np.ascontiguousarray(x, dtype=np.float64)
    done = _bucketed_bins(x, bins) if x.size >= _BUCKETING_MIN_ROWS else None
    if done is None:
        z = quantile_edges(x, bins=bins)
        return z, assign(x, z)
    return done


def _bucketed_bins(x: np.ndarray, bins: int) -> tuple[np.ndarray, Assignment] | None:
    """:func:`quantile_bins` by buckets; None where they do not apply."""
    n = x.size
    lo, hi = float(x.min()), float(x.max())
    buckets = _Buckets.build(x, lo, hi)
    if buckets is None:
        return None
    positions = _quantile_positions(n, bins)[1:-1]  # 0 and n - 1 are lo and hi
    found = buckets.order_statistics(x, positions, max_candidates=int(n * _MAX_CANDIDATE_SHARE))
    if found is None:
        return None
    stats, varied, candidates = found
    z = np.unique(np.concatenate(([lo], stats, [hi])))
    # bin = #{interior edges < x}: edges of lower buckets are < x, of higher ones > x,
    # and in a bucket of equal values none is < x
    interior = z[1:-1]
    edge_bucket = buckets.of(interior)
    below = np.searchsorted(edge_bucket, np.arange(buckets.counts.size), side="left")
    index = below.astype(np.int64).take(buckets.bucket)
    compare = np.zeros(buckets.counts.size, dtype=bool)
    compare[edge_bucket] = True
    compare &= varied
    # every edge is a candidate, so the values sharing a varied bucket with one are too
    near = candidates[compare[buckets.bucket[candidates]]]
    if near.size:
        index[near] = assign(x[near], z).index
    return z, Assignment(index=index, n_outside=0)


#: Up to this many interior edges, membership is counted edge by edge (branch-free,
#: about 8x faster than a binary search of 100k unsorted values into 20 bins).
_COUNTING_EDGES = 64


def assign(x: np.ndarray, edges: np.ndarray) -> Assignment:
    """Bin of each value for bins ``(z_k, z_{k+1}]``, the first also holding ``z_0``.

    ``index = #{interior edges < x}``: counted edge by edge for few edges, by
    binary search otherwise (the same numbers); values outside ``[z_0, z_K]``
    get ``-1`` and are counted in ``n_outside``.

    >>> a = assign(np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0]), np.array([0.0, 1.0, 2.0]))
    >>> a.index.tolist(), a.n_outside
    ([0, 0, 0, 1, 1, -1], 1)
    """
    # one contiguous copy of a strided column beats ~K strided passes over it
    x = np.ascontiguousarray(x, dtype=np.float64)
    interior = edges[1:-1]
    if interior.size <= _COUNTING_EDGES:
        counts = np.zeros(x.shape, dtype=np.uint8)
        for z in interior:
            np.add(counts, x > z, out=counts, casting="unsafe")
        index = counts.astype(np.int64)
    else:
        index = np.searchsorted(interior, x, side="left").astype(np.int64, copy=False)
    outside = (x < edges[0]) | (x > edges[-1])
    n_outside = int(np.count_nonzero(outside))
    if n_outside:
        index[outside] = -1
    return Assignment(index=index, n_outside=n_outside)


@dataclass(frozen=True)
class UniformGrid:
    """Uniform edges for D columns with K bins each, for fast membership of (N, D) arrays.

    Gives the same bins as :func:`assign` with ``uniform_edges(lo[j], hi[j], bins=K)``
    for every column j, but for the whole array at once and without a binary
    search: ``k = ceil((x - z_0) K / (z_K - z_0)) - 1``, clipped to ``0 .. K-1``.
    That formula can be off by one bin for a value within rounding distance
    of an edge; such values (``u`` within ``tol`` of an integer) are checked
    against the exact edges and moved. Build it with :meth:`build`.

    Attributes
    ----------
    edges : ndarray, shape (D, K+1)
        ``np.linspace(lo[j], hi[j], K+1)`` per column.
    scale : ndarray, shape (D,)
        ``K / (hi - lo)``.
    tol : ndarray, shape (D,)
        Rounding margin of ``u = (x - lo) * scale``, in units of u.
    """

    edges: np.ndarray
    scale: np.ndarray
    tol: np.ndarray

    @property
    def bins(self) -> int:
        return int(self.edges.shape[1] - 1)

    @classmethod
    def build(cls, lo: np.ndarray, hi: np.ndarray, *, bins: int) -> UniformGrid | None:
        """The grid, or None when a column has ``hi <= lo``, edges that round together,
        or values so far from 0 relative to the width that the margin is useless
        (callers then use :func:`assign` per column)."""
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
        """Bin of every entry of X (n, D), all inside ``[lo, hi]`` per column; int64 (n, D).

        >>> g = UniformGrid.build(np.array([0.0, 10.0]), np.array([1.0, 12.0]), bins=2)
        >>> g.index(np.array([[0.0, 10.0], [0.5, 11.0], [0.7, 12.0]])).tolist()
        [[0, 0], [0, 0], [1, 1]]
        """
        k = self.bins
        X = np.ascontiguousarray(X, dtype=np.float64)
        n, d = X.shape
        # u - 1 = (x - z_0) K / (z_K - z_0) - 1, so that ceil gives the 0-based bin directly
        u = X * self.scale
        u -= self.edges[:, 0] * self.scale + 1.0
        up = np.ceil(u)
        # |(ceil(u) - u) - 1/2| > 1/2 - tol: u within tol of an integer, i.e. of an edge
        np.subtract(up, u, out=u)
        u -= 0.5
        np.abs(u, out=u)
        near = np.flatnonzero(u > 0.5 - self.tol)
        index: np.ndarray = up.astype(np.int64)
        if near.size:
            # only these can be off by one, or out of 0 .. K-1 (x = z_0 or x = z_K)
            cols = near % d
            x = X.reshape(-1)[near]
            flat = index.reshape(-1)
            b = np.clip(flat[near], 0, k - 1)
            table = self.edges.reshape(-1)
            base = cols * (k + 1)
            b += x > table[base + b + 1]  # above the bin's upper edge: next bin
            b -= (x <= table[base + b]) & (b > 0)  # at or below its lower edge: previous bin
            flat[near] = b
        return index
