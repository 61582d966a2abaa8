"""What a finite-difference adapter needs to know about all rows of X (std, a sample,
the first rows), in one pass that gives the same numbers for any chunking.

- moments: blocks of :data:`BLOCK` rows counted from the first row, merged in
  order (Chan, Golub & LeVeque)::

      n = n_a + n_b,  delta = mean_b - mean_a
      mean = mean_a + delta n_b / n
      M2 = M2_a + M2_b + delta^2 n_a n_b / n,  std = sqrt(M2 / n)

- sample: row i gets the key ``splitmix64(i)``; the sample of k rows is the k rows
  with the smallest keys, in row order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BLOCK = 4096
HEAD_ROWS = 8
SAMPLE_ROWS = 256

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def row_keys(index: np.ndarray) -> np.ndarray:
    """``splitmix64`` of the row numbers ``index`` (n,) -> (n,) uint64: the sample keys.

    >>> row_keys(np.arange(3)).tolist()
    [16294208416658607535, 7960286522194355700, 487617019471545679]
    """
    with np.errstate(over="ignore"):
        z = index.astype(np.uint64) * _GOLDEN + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        return z ^ (z >> np.uint64(31))


@dataclass(frozen=True)
class DataProfile:
    """Moments ``mean``, ``std`` (D,), first rows ``head`` (<= 8, D) and ``sample``
    (<= 256, D) with its ``sample_keys`` of the rows of X (N, D).

    >>> p = DataProfile.of(np.array([[0.0, 5.0], [2.0, 5.0], [4.0, 5.0]]))
    >>> p.n_rows, p.mean.tolist(), p.scale().tolist()
    (3, [2.0, 5.0], [1.632993161855452, 5.0])
    >>> p.rows(2).tolist()
    [[2.0, 5.0], [4.0, 5.0]]
    """

    n_rows: int
    mean: np.ndarray
    std: np.ndarray
    head: np.ndarray
    sample: np.ndarray
    sample_keys: np.ndarray

    @classmethod
    def of(cls, X: np.ndarray) -> DataProfile:
        """The profile of the rows of X (N, D) in memory."""
        return ProfileBuilder(X.shape[1]).add(X).finish()

    def scale(self) -> np.ndarray:
        """Per-column step scale (D,): the std, or max(|mean|, 1) for a constant column."""
        return np.where(self.std > 0, self.std, np.maximum(np.abs(self.mean), 1.0))

    def rows(self, k: int) -> np.ndarray:
        """The ``k`` sample rows with the smallest keys, in row order (k <= 256)."""
        if k >= len(self.sample_keys):
            return self.sample
        keep = np.sort(np.argsort(self.sample_keys, kind="stable")[:k])
        return self.sample[keep]


class ProfileBuilder:
    """Builds a :class:`DataProfile` from chunks of rows given in order (``add``)."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.n = 0  # rows merged into the moments
        self.mean = np.zeros(width)
        self.m2 = np.zeros(width)
        self.pending = np.empty((0, width))  # rows after the last full block
        self.head = np.empty((0, width))
        self.sample = np.empty((0, width))
        self.keys = np.empty(0, dtype=np.uint64)
        self.index = np.empty(0, dtype=np.int64)
        self.seen = 0

    def add(self, X: np.ndarray) -> ProfileBuilder:
        """Take the next rows X (n, D) (any float dtype; used as float64)."""
        X = np.asarray(X, dtype=np.float64)
        if len(self.head) < HEAD_ROWS:
            self.head = np.concatenate([self.head, X[: HEAD_ROWS - len(self.head)]])
        self._add_sample(X)
        rows = np.concatenate([self.pending, X]) if len(self.pending) else X
        full = len(rows) - len(rows) % BLOCK
        for start in range(0, full, BLOCK):
            self._merge(rows[start : start + BLOCK])
        self.pending = rows[full:].copy()
        return self

    def _add_sample(self, X: np.ndarray) -> None:
        index = np.arange(self.seen, self.seen + len(X), dtype=np.int64)
        self.seen += len(X)
        keys = row_keys(index)
        if len(keys) > SAMPLE_ROWS:  # only the chunk's smallest keys can enter
            best = np.argpartition(keys, SAMPLE_ROWS - 1)[:SAMPLE_ROWS]
            keys, index, X = keys[best], index[best], X[best]
        keys = np.concatenate([self.keys, keys])
        index = np.concatenate([self.index, index])
        rows = np.concatenate([self.sample, X])
        if len(keys) > SAMPLE_ROWS:
            best = np.argpartition(keys, SAMPLE_ROWS - 1)[:SAMPLE_ROWS]
            keys, index, rows = keys[best], index[best], rows[best]
        order = np.argsort(index, kind="stable")
        self.keys, self.index, self.sample = keys[order], index[order], rows[order]

    def _merge(self, block: np.ndarray) -> None:
        block = np.array(block, dtype=np.float64, order="C", copy=True)  # one memory layout
        n_b = len(block)
        mean_b = block.mean(axis=0)
        m2_b = ((block - mean_b) ** 2).sum(axis=0)
        n = self.n + n_b
        delta = mean_b - self.mean
        self.mean = self.mean + delta * (n_b / n)
        self.m2 = self.m2 + m2_b + delta**2 * (self.n * n_b / n)
        self.n = n

    def finish(self) -> DataProfile:
        """The profile of every row added."""
        if len(self.pending):
            self._merge(self.pending)
            self.pending = self.pending[:0]
        std = np.sqrt(self.m2 / self.n) if self.n else np.zeros(self.width)
        return DataProfile(
            n_rows=self.n,
            mean=self.mean.copy(),
            std=std,
            head=self.head.copy(),
            sample=self.sample.copy(),
            sample_keys=self.keys.copy(),
        )
