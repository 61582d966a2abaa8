"""Central finite differences on stacked evaluation batches (ONNX and scikit-learn).

One model call per chunk of m rows evaluates the (2P + 1) m rows
``[x; x + h_1 e_1; ...; x + h_P e_P; x - h_1 e_1; ...]`` and

    effect_ij = (f(x_i + h_j e_j) - f(x_i - h_j e_j)) / (x_ij^+ - x_ij^-)

with x^+, x^- the perturbed values as the model saw them (rounded to its input
dtype). h_j = ``rel_step * scale_j``, scale_j the std (max(|mean|, 1) if constant);
held-fixed columns are not perturbed and get 0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ale_cli.errors import RunError
from ale_cli.models.base import Effects, LoadRequest, ProgressFn, feature_indices, stacked_chunks

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
class FdPlan:
    """Central differences with absolute ``steps`` (D,) (0 in the ``fixed`` (D,) columns),
    ``eval_rows`` rows per model call, on inputs of ``dtype``: ``rel_step`` x std, chosen
    by ``rule`` (``zero_share`` if measured)."""

    steps: np.ndarray
    fixed: np.ndarray
    eval_rows: int = DEFAULT_EVAL_ROWS
    dtype: Any = np.float64
    rel_step: float = 0.0
    rule: str = ""
    zero_share: float | None = None

    def effects(
        self,
        f: PredictFn,
        X: np.ndarray,
        features: Sequence[int] | None = None,
        *,
        progress: ProgressFn | None = None,
        label: str = "model",
    ) -> Effects:
        """Local effects (N, F) in the columns ``features`` (None: all) and predictions
        (N,) of ``f``; (N, K, F) and (N, K) when ``f`` returns K outputs (M, K).

        >>> X = np.array([[1.0, 2.0], [3.0, -1.0]])
        >>> f = lambda Z: Z[:, 0] ** 2 + 5 * Z[:, 1]
        >>> FdPlan(np.array([1e-3, 1e-3]), np.zeros(2, bool)).effects(f, X, [1]).local_effects
        array([[5.],
               [5.]])
        """
        index = feature_indices(features, X.shape[1])
        where = np.flatnonzero(~self.fixed[index])  # positions in ``index`` that are perturbed
        moved, dtype = index[where], self.dtype
        steps = self.steps[moved]

        def bounds(sl: slice) -> tuple[np.ndarray, np.ndarray]:
            xc = X[sl][:, moved]
            plus = (xc + steps).astype(dtype).astype(np.float64)
            return plus, (xc - steps).astype(dtype).astype(np.float64)

        def divide(diff: np.ndarray, dx: np.ndarray) -> np.ndarray:
            zero = (dx == 0).reshape(-1, len(moved)).any(axis=0)
            if zero.any():
                raise RunError(
                    f"the finite-difference step of feature {int(moved[np.flatnonzero(zero)[0]])} "
                    f"is too small to change its value in the {label}'s input precision; pass a "
                    "larger {param}",
                    param="step",
                )
            return diff / dx

        return stacked_differences(f, X, index, where, bounds, divide, self.eval_rows, progress)

    def details(self, *notes: str) -> dict[str, Any]:
        """The adapter's ``describe()`` entries of the plan, its note after ``notes``.

        >>> plan = FdPlan(np.ones(1), np.zeros(1, bool), rel_step=0.05, rule="piecewise")
        >>> plan.details()["notes"]
        ['finite-difference step 0.05 x std per feature (piecewise)']
        """
        why = self.rule
        if self.zero_share is not None:
            why += f"; {self.zero_share:.0%} of small-step derivatives exactly zero on a sample"
        note = f"finite-difference step {self.rel_step:g} x std per feature ({why})"
        step = {"rel_step": self.rel_step, "rule": self.rule, "zero_share": self.zero_share}
        step["absolute"] = self.steps.tolist()
        return {"eval_rows_per_call": self.eval_rows, "step": step, "notes": [*notes, note]}


def stacked_differences(
    f: PredictFn,
    X: np.ndarray,
    features: np.ndarray,
    where: np.ndarray,
    bounds: Callable[[slice], tuple[np.ndarray, np.ndarray]],
    quotient: Callable[[np.ndarray, np.ndarray], np.ndarray],
    eval_rows: int,
    progress: ProgressFn | None,
) -> Effects:
    """Effects (N, [K,] F) and predictions (N, [K]) of ``f`` from one call per chunk of m
    rows on the stacked ``[x; x + (u_1 - x_1) e_1; ...; x + (l_1 - x_1) e_1; ...]`` of
    the P columns ``features[where]``: ``quotient(f(u) - f(l), u - l)`` (m, [K,] P), with
    ``bounds(sl) -> (u, l)`` (m, P) of the chunk's rows."""
    n = len(X)
    moved = features[where]
    p = len(moved)
    blocks = 2 * p + 1
    effects = np.zeros((n, len(features)), dtype=np.float64)
    prediction = np.empty(n, dtype=np.float64)
    for sl, stack in stacked_chunks(X, blocks, max(1, eval_rows // blocks)):
        m = sl.stop - sl.start
        upper, lower = bounds(sl)
        for k, j in enumerate(moved):
            stack[(1 + k) * m : (2 + k) * m, j] = upper[:, k]
            stack[(1 + p + k) * m : (2 + p + k) * m, j] = lower[:, k]
        out = np.asarray(f(stack), dtype=np.float64)
        if out.ndim == 2 and effects.ndim == 2:  # K outputs: (N, K, F) and (N, K)
            effects = np.zeros((n, out.shape[1], len(features)), dtype=np.float64)
            prediction = np.empty((n, out.shape[1]), dtype=np.float64)
        out = out.reshape(blocks, m, *out.shape[1:])
        if p:
            diff = np.moveaxis(out[1 : 1 + p] - out[1 + p :], 0, -1)  # (m, [K,] p)
            width = upper - lower
            effects[sl, ..., where] = quotient(diff, width if diff.ndim == 2 else width[:, None])
        prediction[sl] = out[0]
        if progress is not None:
            progress(m)
    return Effects(local_effects=effects, prediction=prediction)


def zero_share(f: PredictFn, X: np.ndarray, plan: FdPlan) -> float:
    """Share of exactly-zero derivatives of ``plan`` on the rows X (a sample), over the
    features with at least one non-zero derivative; with none, 1.0 if the predictions
    vary over X (a step function whose jumps no row meets), 0.0 if they do not (constant).

    A step function is flat except at the 2 of 50 rows that sit on a jump (0 and 1):

    >>> X = np.linspace(0, 1, 50).reshape(-1, 1)
    >>> plan = FdPlan(np.array([1e-6]), np.zeros(1, bool))
    >>> zero_share(lambda Z: np.floor(4 * Z[:, 0]), X, plan)
    0.96
    >>> zero_share(lambda Z: np.floor(4 * Z[:, 0] + 0.1), X, plan)  # no row on a jump
    1.0
    >>> zero_share(lambda Z: np.ones(len(Z)), X, plan)
    0.0
    >>> zero_share(lambda Z: (Z[:, 0] + 1) ** 2, X, plan)
    0.0
    """
    effects = plan.effects(f, X)
    grads = effects.local_effects.reshape(-1, effects.local_effects.shape[-1])  # K outputs
    used = (grads != 0).any(axis=0)
    if not used.any():
        return float(np.ptp(effects.prediction, axis=0).any())
    return float(np.mean(grads[:, used] == 0))


def plan_steps(
    f: PredictFn, req: LoadRequest, *, piecewise_type: bool, dtype: Any = np.float64
) -> FdPlan:
    """The user's step if given; the large step for a piecewise-constant model type or
    when most small-step derivatives on a sample of the profiled rows are exactly zero;
    else the small step of inputs of ``dtype`` (float32 graphs: :data:`FLOAT32_STEP`)."""
    profile, options, fixed = req.profile, req.options, req.columns.fixed_mask()
    smooth_step = FLOAT32_STEP if dtype == np.float32 else SMALL_STEP
    scale = profile.scale()
    rows = options.batch_size or DEFAULT_EVAL_ROWS
    if options.step is not None:
        rel, rule, share = options.step, "user", None
    elif piecewise_type:
        rel, rule, share = LARGE_STEP, "piecewise-constant model type", None
    else:
        trial = FdPlan(smooth_step * scale, fixed, dtype=dtype)
        share = zero_share(f, profile.rows(_SAMPLE_ROWS), trial)
        if share > ZERO_SHARE_LIMIT:
            rel, rule = LARGE_STEP, "zero share on a sample"
        else:
            rel, rule = smooth_step, "smooth default"
    return FdPlan(rel * scale * ~fixed, fixed, rows, dtype, rel, rule, share)
