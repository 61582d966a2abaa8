"""Discrete and nominal features in ``ale classic``: the effect per level.

A *discrete* feature is numeric with few distinct values (named with
``discrete``, or every numeric input with at most
:data:`~ale_cli.core.discrete.MAX_DISCRETE_LEVELS` distinct values with
``discrete="auto"``); its levels are its distinct values in numeric order. A
*categorical* feature is a text column (encoded as integer codes when read)
or a column declared ``categorical``; its levels are ordered by ALEPlot's
method (:func:`~ale_cli.core.discrete.level_order`) from the other inputs
(the other categorical columns by total variation, the numeric ones by
Kolmogorov-Smirnov). Each row is moved to the adjacent levels and the model
evaluated there (3 predictions per row at most: as is, one level up, one
down); a text column is perturbed as text (the model adapter maps the codes
back to the column's values, so a pipeline's one-hot encoder sees a real
level). :func:`~ale_cli.core.discrete.level_effect` turns the differences into
the per-level effect.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ale_cli.adapters.summary import FeatureSummary, Replicates
from ale_cli.bands import Bootstrap, replicate_cells
from ale_cli.core.bootstrap import percentile_band
from ale_cli.core.discrete import MAX_DISCRETE_LEVELS, level_effect, level_order
from ale_cli.errors import InputError
from ale_cli.models.finite_diff import DEFAULT_EVAL_ROWS, PredictFn

KINDS = ("discrete", "categorical")


def discrete_names(
    X: np.ndarray,
    names: Sequence[str],
    discrete: Sequence[str] | str | None,
    exclude: Sequence[str],
) -> tuple[str, ...]:
    """The features estimated per value: those named, or with ``"auto"`` every column of X
    (N, D) outside ``exclude`` with 2 to ``MAX_DISCRETE_LEVELS`` distinct values.

    >>> X = np.column_stack([[1.0, 2.0, 1.0] * 5, np.arange(15.0)])  # 2 and 15 values
    >>> discrete_names(X, ["s", "b"], "auto", ())
    ('s',)
    """
    if discrete is None:
        return ()
    if isinstance(discrete, str) and discrete == "auto":
        out = []
        for j, name in enumerate(names):
            if name in exclude:
                continue
            k = np.unique(X[:, j]).size
            if 2 <= k <= MAX_DISCRETE_LEVELS:
                out.append(name)
        return tuple(out)
    chosen = (discrete,) if isinstance(discrete, str) else tuple(discrete)
    for name in chosen:
        if name not in names:
            raise InputError(
                f"{{param}} names '{name}', which is not an input column "
                f"(inputs: {', '.join(names)})",
                param="discrete",
            )
    return chosen


def _predict_chunked(f: PredictFn, X: np.ndarray, eval_rows: int) -> np.ndarray:
    out = np.empty(len(X))
    for start in range(0, len(X), eval_rows):
        out[start : start + eval_rows] = f(X[start : start + eval_rows])
    return out


def level_features(
    f: PredictFn,
    X: np.ndarray,
    names: Sequence[str],
    kinds: dict[str, str],
    *,
    categorical: Sequence[str] = (),
    labels: dict[str, tuple[Any, ...]] | None = None,
    center: str = "mean",
    eval_rows: int = DEFAULT_EVAL_ROWS,
    base: np.ndarray | None = None,
    bootstrap: Bootstrap | None = None,
) -> dict[str, FeatureSummary]:
    """The per-level effect of each feature in ``kinds`` (name -> "discrete"/"categorical").

    Parameters
    ----------
    f : callable
        (M, D) float64 -> (M,) float64, the model.
    X : ndarray, shape (N, D)
        Every input of the model (categorical columns as integer codes).
    names : sequence of str, length D
    categorical : sequence of str
        Every categorical input (compared by total variation when ordering levels).
    labels : dict of str to tuple
        The original values of text columns, indexed by code.
    base : ndarray, shape (N,), optional
        ``f(X)`` if already known.
    bootstrap : Bootstrap, optional
        Percentile bands of the per-level effects from the same differences with
        the rows resampled (:func:`level_bands`; no further model call).

    Returns
    -------
    dict of name to FeatureSummary with ``kind``, ``levels`` (K,) in the estimated
    order, ``order`` (K,) (each level's index among the sorted distinct values),
    and per level ``counts``, ``effect``, ``std``, ``stderr`` (K,); ``bin_*`` hold
    the K-1 jumps between adjacent levels.
    """
    labels = labels or {}
    out: dict[str, FeatureSummary] = {}
    base_pred: list[np.ndarray] = [] if base is None else [base]
    for name, kind in kinds.items():
        j = list(names).index(name)
        values, codes = np.unique(X[:, j], return_inverse=True)
        if values.size < 2:
            out[name] = FeatureSummary(
                name=name, status="not_estimable", reason="single distinct value"
            )
            continue
        order = _order(X, names, j, codes, values.size, kind, set(categorical))
        if not base_pred:
            base_pred.append(_predict_chunked(f, X, eval_rows))
        out[name] = _level_record(
            f, X, j, name, kind, values, codes, order, base_pred[0],
            labels=labels, center=center, eval_rows=eval_rows, bootstrap=bootstrap,
        )  # fmt: skip
    return out


def _order(
    X: np.ndarray,
    names: Sequence[str],
    j: int,
    codes: np.ndarray,
    k: int,
    kind: str,
    cats: set[str],
) -> np.ndarray:
    """The levels' order: Apley-Zhu's for a categorical feature, numeric order otherwise."""
    if kind != "categorical":
        return np.arange(k)
    others = [i for i, n in enumerate(names) if n != names[j]]
    return level_order(
        codes,
        k,
        numeric=[X[:, i] for i in others if names[i] not in cats],
        categorical=[
            np.unique(X[:, i], return_inverse=True)[1] for i in others if names[i] in cats
        ],
    )


def _level_record(
    f: PredictFn,
    X: np.ndarray,
    j: int,
    name: str,
    kind: str,
    values: np.ndarray,
    codes: np.ndarray,
    order: np.ndarray,
    y: np.ndarray,
    *,
    labels: dict[str, tuple[Any, ...]],
    center: str,
    eval_rows: int,
    bootstrap: Bootstrap | None,
) -> FeatureSummary:
    """One feature's per-level record: every row moved to the next and the previous
    level (in ``order``), the jumps' means accumulated and centred."""
    k = values.size
    position = np.empty(k, dtype=np.int64)
    position[order] = np.arange(k)
    pos = position[codes]
    up = np.zeros(len(X))
    down = np.zeros(len(X))
    for step, target in ((1, up), (-1, down)):
        rows = np.flatnonzero((pos + step >= 0) & (pos + step < k))
        moved = X[rows].copy()
        moved[:, j] = values[order[pos[rows] + step]]
        pred = _predict_chunked(f, moved, eval_rows)
        target[rows] = pred - y[rows] if step == 1 else y[rows] - pred
    eff = level_effect(position=pos, up=up, down=down, n_levels=k, center=center)
    shown = values[order]
    if name in labels:
        level_names: tuple[Any, ...] = tuple(labels[name][int(c)] for c in shown)
    else:
        level_names = tuple(float(v) for v in shown)
    with np.errstate(invalid="ignore", divide="ignore"):
        jump_se = eff.jump_std / np.sqrt(eff.jump_count)
    bands: dict[str, Any] = {}
    if bootstrap is not None and bootstrap.replicates:
        bands = level_bands(pos, up, down, k, bootstrap, center=center)
    return FeatureSummary(
        **bands,
        name=name,
        kind=kind,
        levels=level_names,
        order=order.astype(np.int64),
        edges=shown.astype(np.float64),
        counts=eff.counts,
        bin_effect=eff.jump,
        bin_std=eff.jump_std,
        bin_stderr=jump_se,
        bin_filled=eff.jump_count == 0,
        effect=eff.effect,
        std=eff.std,
        stderr=eff.stderr,
        center_offset=eff.center_offset,
    )


def level_bands(
    position: np.ndarray,
    up: np.ndarray,
    down: np.ndarray,
    n_levels: int,
    boot: Bootstrap,
    *,
    center: str,
) -> dict[str, Any]:
    """``ci_low``, ``ci_high`` (K,) and the replicates of a per-level effect, rows resampled.

    A row at level k holds ``up`` for jump k and ``down`` for jump k-1, so the
    replicates' jump sums and counts are those of two "features" on the K-1
    jumps (:func:`~ale_cli.bands.replicate_cells`, the rows drawn alike), and a
    third gives each replicate's rows per level for its centering.
    """
    k = n_levels
    rise = np.where(position < k - 1, position, -1)
    fall = np.where(position > 0, position - 1, -1)
    cells = replicate_cells(
        np.column_stack([rise, fall, position]),
        np.column_stack([up, down, np.zeros(len(position))]),
        [k - 1, k - 1, k],
        replicates=boot.replicates,
        rng=np.random.default_rng(boot.seed),
    )
    counts = cells[0].counts + cells[1].counts
    with np.errstate(invalid="ignore", divide="ignore"):
        jump = (cells[0].sums + cells[1].sums) / counts
    jump = np.where(counts > 0, jump, 0.0)  # a jump no drawn row crosses: no change
    effect = np.zeros((boot.replicates, k))
    np.cumsum(jump, axis=1, out=effect[:, 1:])
    n_level = cells[2].counts
    if center == "mean":
        effect -= ((n_level * effect).sum(axis=1) / n_level.sum(axis=1))[:, None]
    low, high = percentile_band(effect, ci=boot.ci)
    return {
        "ci_low": low,
        "ci_high": high,
        "replicates": Replicates(effect=effect, counts=n_level, ci=boot.ci),
    }
