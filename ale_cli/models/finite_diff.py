"""Central finite differences on stacked evaluation batches (ONNX and scikit-learn).

One model call per chunk of m rows evaluates the (2P + 1) m rows
``[x; x + h_1 e_1; ...; x + h_P e_P; x - h_1 e_1; ...]`` and

    effect_ij = (f(x_i + h_j e_j) - f(x_i - h_j e_j)) / (x_ij^+ - x_ij^-)

with x^+, x^- the perturbed values as the model saw them (rounded to its input
dtype). h_j = ``rel_step * scale_j``, scale_j the std (max(|mean|, 1) if constant);
held-fixed columns are not perturbed and get 0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ale_cli.errors import RunError
from ale_cli.models.base import (
    Effects,
    ProgressFn,
    close_with_nonfinite,
    other_batch,
    stacked_chunks,
)

if TYPE_CHECKING:
    from ale_cli.models.profile import DataProfile

#: Evaluation rows per model call (bench/bench_formats.py).
DEFAULT_EVAL_ROWS = 32_768
#: Step for smooth float64 models, as a fraction of each feature's std.
SMALL_STEP = 1e-5
#: Step for float32 graphs (onnxruntime): rounding error ~1e-7 |f| / h must stay small.
FLOAT32_STEP = 1e-2
#: Step for piecewise-constant models (trees, boosting, neighbours).
LARGE_STEP = 5e-2
#: Share of exactly-zero small-step derivatives above which a model is piecewise constant.
ZERO_SHARE_LIMIT = 0.5
_SAMPLE_ROWS = 200

#: ``f(X)`` for X of shape (M, D) float64 -> (M,) float64.
PredictFn = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class StepChoice:
    """The relative step used and why (``rule``; ``zero_share`` if measured)."""

    rel_step: float
    rule: str
    zero_share: float | None = None

    def to_dict(self) -> dict[str, object]:
        return {"rel_step": self.rel_step, "rule": self.rule, "zero_share": self.zero_share}


def describe_step(step: StepChoice) -> str:
    """One line saying which step was used and why.

    >>> describe_step(StepChoice(0.05, "piecewise-constant model type"))
    'finite-difference step 0.05 x std per feature (piecewise-constant model type)'
    """
    why = step.rule
    if step.zero_share is not None:
        why += f"; {step.zero_share:.0%} of small-step derivatives exactly zero on a sample"
    return f"finite-difference step {step.rel_step:g} x std per feature ({why})"


def feature_scale(X: np.ndarray) -> np.ndarray:
    """Per-column scale for the step: the std, or max(|mean|, 1) for a constant column.

    >>> feature_scale(np.array([[0.0, 5.0], [2.0, 5.0]])).tolist()
    [1.0, 5.0]
    """
    std = X.std(axis=0)
    fallback = np.maximum(np.abs(X.mean(axis=0)), 1.0)
    return np.where(std > 0, std, fallback)


def central_differences(
    f: PredictFn,
    X: np.ndarray,
    steps: np.ndarray,
    *,
    features: np.ndarray | None = None,
    fixed: np.ndarray | None = None,
    dtype: type[np.floating] | np.dtype = np.float64,
    eval_rows: int = DEFAULT_EVAL_ROWS,
    progress: ProgressFn | None = None,
    label: str = "model",
) -> Effects:
    """Local effects (N, F) and predictions (N,) of ``f`` by central differences; (N, K,
    F) and (N, K) when ``f`` returns K outputs (M, K).

    ``steps`` (D,) absolute; ``features`` (F,) the columns differentiated (default
    all); ``fixed`` (D,) bool columns not perturbed; ``dtype`` the model's input dtype.

    >>> X = np.array([[1.0, 2.0], [3.0, -1.0]])
    >>> f = lambda Z: Z[:, 0] ** 2 + 5 * Z[:, 1]
    >>> central_differences(f, X, np.array([1e-3, 1e-3]), features=np.array([1])).local_effects
    array([[5.],
           [5.]])
    """
    n, d = X.shape
    features = np.arange(d) if features is None else features
    fixed = np.zeros(d, dtype=bool) if fixed is None else fixed
    where = np.flatnonzero(~fixed[features])  # positions in ``features`` that are perturbed
    moved = features[where]
    p = len(moved)
    blocks = 2 * p + 1
    rows = max(1, eval_rows // blocks)
    effects = np.zeros((n, len(features)), dtype=np.float64)
    prediction = np.empty(n, dtype=np.float64)
    for sl, stack in stacked_chunks(X, blocks, rows):
        xc = X[sl]
        m = len(xc)
        plus = (xc[:, moved] + steps[moved]).astype(dtype).astype(np.float64)
        minus = (xc[:, moved] - steps[moved]).astype(dtype).astype(np.float64)
        for k, j in enumerate(moved):
            stack[(1 + k) * m : (2 + k) * m, j] = plus[:, k]
            stack[(1 + p + k) * m : (2 + p + k) * m, j] = minus[:, k]
        out = np.asarray(f(stack), dtype=np.float64)
        if out.ndim == 2 and effects.ndim == 2:  # K outputs: (N, K, F) and (N, K)
            effects = np.zeros((n, out.shape[1], len(features)), dtype=np.float64)
            prediction = np.empty((n, out.shape[1]), dtype=np.float64)
        out = out.reshape(blocks, m, *out.shape[1:])
        dx = plus - minus  # (m, p)
        if p and np.any(dx == 0):
            j = int(moved[np.flatnonzero((dx == 0).any(axis=0))[0]])
            raise RunError(
                f"the finite-difference step of feature {j} is too small to change its "
                f"value in the {label}'s input precision; pass a larger {{param}}",
                param="step",
            )
        prediction[sl] = out[0]
        if p:
            diff = np.moveaxis(out[1 : 1 + p] - out[1 + p :], 0, -1)  # (m, [K,] p)
            effects[sl, ..., where] = diff / (dx if diff.ndim == 2 else dx[:, None, :])
        if progress is not None:
            progress(m)
    return Effects(local_effects=effects, prediction=prediction)


def zero_share(
    f: PredictFn,
    X: np.ndarray,
    steps: np.ndarray,
    *,
    fixed: np.ndarray | None = None,
    dtype: type[np.floating] | np.dtype = np.float64,
) -> float:
    """Share of exactly-zero derivatives on up to 200 rows of X, over the features
    with at least one non-zero derivative (0.0 if the model looks constant).

    A step function is flat except at the 2 of 50 rows that sit on a jump (0 and 1):

    >>> X = np.linspace(0, 1, 50).reshape(-1, 1)
    >>> zero_share(lambda Z: np.floor(4 * Z[:, 0]), X, np.array([1e-6]))
    0.96
    >>> zero_share(lambda Z: (Z[:, 0] + 1) ** 2, X, np.array([1e-6]))
    0.0
    """
    if len(X) > _SAMPLE_ROWS:
        rows = np.random.default_rng(0).choice(len(X), size=_SAMPLE_ROWS, replace=False)
        X = X[np.sort(rows)]
    grads = central_differences(f, X, steps, fixed=fixed, dtype=dtype).local_effects
    grads = grads.reshape(-1, grads.shape[-1])  # K outputs: every output's rows
    used = (grads != 0).any(axis=0)
    if not used.any():
        return 0.0
    return float(np.mean(grads[:, used] == 0))


def plan_steps(
    f: PredictFn,
    X: np.ndarray,
    *,
    user_step: float | None,
    piecewise_type: bool,
    smooth_step: float,
    fixed: np.ndarray,
    dtype: type[np.floating] | np.dtype = np.float64,
    profile: DataProfile | None = None,
) -> tuple[StepChoice, np.ndarray]:
    """The relative step and the absolute steps (D,), 0 for held-fixed columns.

    The user's step if given; the large step for a piecewise-constant model type or
    when most small-step derivatives on a sample are exactly zero; else
    ``smooth_step``. Scale and sample come from ``profile`` (all rows) if given, else X.
    """
    if profile is not None:
        scale, X = profile.scale(), profile.rows(_SAMPLE_ROWS)
    else:
        scale = feature_scale(X)
    if user_step is not None:
        step = StepChoice(user_step, "user")
    elif piecewise_type:
        step = StepChoice(LARGE_STEP, "piecewise-constant model type")
    else:
        share = zero_share(f, X, smooth_step * scale, fixed=fixed, dtype=dtype)
        if share > ZERO_SHARE_LIMIT:
            step = StepChoice(LARGE_STEP, "zero share on a sample", share)
        else:
            step = StepChoice(smooth_step, "smooth default", share)
    return step, step.rel_step * scale * ~fixed


def rows_independent(
    f: PredictFn,
    X: np.ndarray,
    *,
    rtol: float,
    first: np.ndarray | None = None,
    spread: np.ndarray | None = None,
) -> bool:
    """True when the outputs of the first 8 rows do not change if the other rows of
    the batch change, or if they are evaluated alone (``first``: ``f(X[:8])`` if known).

    >>> X = np.arange(20.0).reshape(10, 2)
    >>> rows_independent(lambda Z: Z.sum(axis=1), X, rtol=1e-9)
    True
    >>> rows_independent(lambda Z: Z.sum(axis=1) - Z.mean(), X, rtol=1e-9)
    False
    """
    rows = X[:8]
    other, half = other_batch(rows, X, spread=spread)
    a = f(rows) if first is None else first
    b, c = f(other), f(rows[:1])
    return close_with_nonfinite(a[:half], b[:half], rtol=rtol) and close_with_nonfinite(
        a[:1], c, rtol=rtol
    )
