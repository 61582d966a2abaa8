"""Bootstrap bands on the features of a summary (``--bootstrap B --ci C --seed S``): the
rows resampled on the summary's bins (:mod:`ale_cli.core.bootstrap`), no model call."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ale_cli.core.bootstrap import (
    ReplicateCells,
    percentile_band,
    replicate_effects,
    resampled_weights,
)
from ale_cli.errors import InputError
from ale_cli.summary.model import FeatureSummary, Replicates

DEFAULT_CI = 0.95
#: most replicates asked for: each holds a curve per feature in memory and in the summary
MAX_BOOTSTRAP = 10_000
#: rows per chunk of the sparse products in :func:`replicate_cells`
CHUNK_ROWS = 8192


@dataclass(frozen=True)
class Bootstrap:
    """How many replicates (0: no bands, else 2 to :data:`MAX_BOOTSTRAP`), the band level
    and the seed (None: fresh entropy); InputError naming the first out of its range.

    >>> Bootstrap(20_000, 0.9)
    Traceback (most recent call last):
    ale_cli.errors.InputError: bootstrap must be at most 10,000 replicates (each one is a \
curve per feature, held in memory and in the summary), got 20,000
    """

    replicates: int = 0
    ci: float = DEFAULT_CI
    seed: int | None = None

    def __post_init__(self) -> None:
        replicates, ci, seed = self.replicates, self.ci, self.seed
        whole = isinstance(replicates, int) and not isinstance(replicates, bool)
        if not whole or replicates < 0 or replicates == 1:
            raise InputError(
                f"{{param}} must be 0 (no bands) or a whole number of at least 2, "
                f"got {replicates!s}",
                param="bootstrap",
            )
        if replicates > MAX_BOOTSTRAP:
            raise InputError(
                f"{{param}} must be at most {MAX_BOOTSTRAP:,} replicates (each one is a curve per "
                f"feature, held in memory and in the summary), got {replicates:,}",
                param="bootstrap",
            )
        if isinstance(ci, bool) or not (
            isinstance(ci, int | float) and math.isfinite(ci) and 0.0 < ci < 1.0
        ):
            raise InputError(f"{{param}} must be a number between 0 and 1, got {ci}", param="ci")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise InputError(f"{{param}} must be a whole number >= 0, got {seed}", param="seed")

    def params(self) -> dict[str, Any]:
        """The summary's params for the bands (none without replicates)."""
        if not self.replicates:
            return {}
        return {"bootstrap": self.replicates, "ci": self.ci, "seed": self.seed}


def replicate_cells(
    index: np.ndarray,
    values: np.ndarray,
    n_bins: Sequence[int],
    *,
    replicates: int,
    rng: np.random.Generator,
) -> list[ReplicateCells]:
    """Per-replicate bin counts and sums (B, K_j) of D features, rows resampled alike.

    ``n_bk = sum_{i in k} w_bi`` and ``S_bk = n_bk mu_k + sum_{i in k} w_bi (e_i - mu_k)``,
    as two sparse products ``A (sum K_j, n) @ W^T (n, B)`` per chunk of rows (``A``: a 1,
    or the row's deviation from its bin mean, at (its bin, its row)). ``index`` (N, D):
    each row's bin, -1 outside (drawn, counted nowhere); ``values`` (N, D).

    >>> idx = np.array([[0], [0], [1]]); v = np.array([[1.0], [3.0], [5.0]])
    >>> rc = replicate_cells(idx, v, [2], replicates=2, rng=np.random.default_rng(0))
    >>> w = next(resampled_weights(3, replicates=2, rng=np.random.default_rng(0)))
    >>> w.tolist(), rc[0].counts.tolist(), rc[0].sums.tolist()
    ([[0.0, 2.0, 1.0], [3.0, 0.0, 0.0]], [[2.0, 1.0], [3.0, 0.0]], [[6.0, 5.0], [3.0, 0.0]])
    """
    import scipy.sparse  # type: ignore[import-untyped]

    index = np.asarray(index, dtype=np.int64)
    values = np.asarray(values, dtype=np.float64)
    n, d = index.shape
    offsets = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(n_bins)])
    width = int(offsets[-1])
    inside = index >= 0
    values = np.where(inside, values, 0.0)  # rows outside may hold anything
    flat = np.where(inside, index + offsets[:-1], width)  # row `width` of A: nowhere
    counts = np.bincount(flat.ravel(), minlength=width + 1)[:width]
    sums = np.bincount(flat.ravel(), weights=values.ravel(), minlength=width + 1)[:width]
    means = np.divide(sums, counts, out=np.zeros(width), where=counts > 0)
    dev = np.where(inside, values - np.append(means, 0.0)[flat], 0.0)
    n_acc = np.zeros((width + 1, replicates))
    s_acc = np.zeros((width + 1, replicates))
    row = 0
    for weights in resampled_weights(n, replicates=replicates, rng=rng):
        b = weights.shape[0]
        for start in range(0, n, CHUNK_ROWS):
            stop = min(start + CHUNK_ROWS, n)
            f = flat[start:stop].ravel()
            rows = np.repeat(np.arange(stop - start), d)
            shape = (width + 1, stop - start)
            wt = np.ascontiguousarray(weights[:, start:stop].T)
            ones = scipy.sparse.csr_matrix((np.ones(f.size), (f, rows)), shape=shape)
            devs = scipy.sparse.csr_matrix((dev[start:stop].ravel(), (f, rows)), shape=shape)
            n_acc[:, row : row + b] += ones @ wt
            s_acc[:, row : row + b] += devs @ wt
        row += b
    n_rep = n_acc[:width].T
    s_rep = s_acc[:width].T + n_rep * means
    return [
        ReplicateCells(counts=n_rep[:, a:e], sums=s_rep[:, a:e])
        for a, e in zip(offsets[:-1], offsets[1:], strict=True)
    ]


def with_bands(
    features: Sequence[FeatureSummary],
    index: dict[str, np.ndarray],
    values: dict[str, np.ndarray],
    boot: Bootstrap,
    *,
    center: str,
    differences: bool = False,
) -> list[FeatureSummary]:
    """The features with percentile bands over ``boot.replicates`` replicates, from each
    row's bin ``index[name]`` (N,) (-1 outside) and value ``values[name]`` (N,);
    ``differences``: values across the bins, divided by the widths (classic ALE)."""
    todo = [f for f in features if f.status == "ok" and f.name in index]
    if not boot.replicates or not todo:
        return list(features)
    cells = replicate_cells(
        np.column_stack([index[f.name] for f in todo]),
        np.column_stack([values[f.name] for f in todo]),
        [f.n_bins for f in todo],
        replicates=boot.replicates,
        rng=np.random.default_rng(boot.seed),
    )
    done: dict[str, FeatureSummary] = {}
    for f, rc in zip(todo, cells, strict=True):
        widths = np.diff(f.edges) if differences else None
        effect = replicate_effects(f.edges, rc, center=center, widths=widths)
        done[f.name] = banded(f, effect, rc.counts, boot.ci)
    return [done.get(f.name, f) for f in features]


def banded(f: FeatureSummary, effect: np.ndarray, counts: np.ndarray, ci: float) -> FeatureSummary:
    """``f`` with the ``ci`` percentile band of its replicates' ``effect`` and ``counts``."""
    low, high = percentile_band(effect, ci=ci)
    reps = Replicates(effect=effect, counts=counts, ci=ci)
    return replace(f, ci_low=low, ci_high=high, replicates=reps)
