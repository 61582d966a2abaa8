"""Local effects of piecewise-constant models as secants across a fine grid:
``(f(upper) - f(lower)) / (upper - lower)`` across each row's fine bin
(:mod:`ale_cli.core.finegrid`, ``docs/estimators.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ale_cli.core.binning import quantile_edges
from ale_cli.core.finegrid import K_FINE, row_limits, secants
from ale_cli.models.base import Effects, Features, Model, ProgressFn, feature_indices
from ale_cli.models.finite_diff import DEFAULT_EVAL_ROWS, stacked_differences

#: Step rules (:attr:`~ale_cli.models.finite_diff.FdPlan.rule`) of a piecewise-constant model.
PIECEWISE_RULES = ("piecewise-constant model type", "zero share on a sample")
METHOD = "secant"


def piecewise_constant(model: Model) -> bool:
    """True when the model was loaded as piecewise constant and the step was not the user's."""
    step = model.describe().get("step") or {}
    return step.get("rule") in PIECEWISE_RULES


def method_note(k_fine: int) -> str:
    """The note every store, summary and figure from secants carries.

    >>> method_note(240)[:40]
    'piecewise-constant model: local effects '
    """
    return (
        "piecewise-constant model: local effects are secants across the bins of a fine grid "
        f"of {k_fine} type-1 quantile bins per feature; the curve is the fine-grid ALE "
        "accumulated to the edges"
    )


@dataclass(frozen=True, eq=False)
class SecantModel(Model):
    """A piecewise-constant model explained by secants across fine bins: ``edges``
    (M_j + 1,) per moved column j; ``columns`` the explained ones (effect 0 without edges)."""

    inner: Model
    edges: dict[int, np.ndarray]
    columns: tuple[int, ...]
    k_fine: int
    eval_rows: int
    method: ClassVar[str] = METHOD

    @property
    def format(self) -> str:
        return self.inner.format

    def predict(self, X: np.ndarray) -> np.ndarray:
        return self.inner.predict(X)

    def effects(self, X: np.ndarray, features: Features, progress: ProgressFn | None) -> Effects:
        """Secants (N, F) in the columns ``features`` and predictions (N,); (N, K, F) and
        (N, K) for a model of K outputs."""
        index = feature_indices(features, X.shape[1])
        where = np.array([k for k, j in enumerate(index) if int(j) in self.edges], dtype=np.intp)
        X = np.asarray(X, dtype=np.float64)

        def bounds(sl: slice) -> tuple[np.ndarray, np.ndarray]:
            limits = [row_limits(X[sl, j], self.edges[j]) for j in index[where]]
            upper = np.array([lim.upper for lim in limits], ndmin=2).T
            return upper, np.array([lim.lower for lim in limits], ndmin=2).T

        rows, inner = self.eval_rows, self.inner.predict
        return stacked_differences(inner, X, index, where, bounds, secants, rows, progress)

    def describe(self) -> dict[str, Any]:
        details = dict(self.inner.describe())
        inner_notes = [n for n in details.get("notes", []) if "finite-difference step" not in n]
        details |= {
            "method": METHOD,
            "inner_method": self.inner.method,
            "secant": {"k_fine": self.k_fine, "eval_rows_per_call": self.eval_rows},
            "notes": [*inner_notes, method_note(self.k_fine)],
        }
        return details


def for_compute(
    model: Model,
    X: np.ndarray,
    *,
    columns: Sequence[int],
    names: Sequence[str],
    categorical: Sequence[str],
) -> Model:
    """A :class:`SecantModel` over all rows X for a piecewise-constant model (fine grids of
    the explained, not categorical, non-constant columns), else it."""
    if not piecewise_constant(model):
        return model
    edges: dict[int, np.ndarray] = {}
    for j in map(int, columns):
        if names[j] not in categorical and X[:, j].max() > X[:, j].min():
            edges[j] = quantile_edges(X[:, j], bins=K_FINE)
    rows = int(model.describe().get("eval_rows_per_call") or DEFAULT_EVAL_ROWS)
    return SecantModel(model, edges, tuple(map(int, columns)), K_FINE, rows)


def outdated(meta: dict[str, Any]) -> str | None:
    """Why a cached store of a piecewise-constant model made before secants must be
    recomputed, else None.

    >>> outdated({"method": "finite-differences",
    ...           "method_details": {"step": {"rule": "piecewise-constant model type"}}})
    'the method for piecewise-constant models changed (finite differences -> secants)'
    >>> outdated({"method": "finite-differences", "method_details": {"step": {"rule": "user"}}})
    """
    step = (meta.get("method_details") or {}).get("step") or {}
    if meta.get("method") == "finite-differences" and step.get("rule") in PIECEWISE_RULES:
        return "the method for piecewise-constant models changed (finite differences -> secants)"
    return None


def store_extras(model: Model) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The arrays and meta entries a store of ``model``'s effects adds (none but for
    secants): ``fine_edges`` (every feature's edges, one after the other), ``fine_offsets``
    (F+1,): feature k's edges are ``fine_edges[offsets[k]:offsets[k + 1]]``; meta ``secant``."""
    if not isinstance(model, SecantModel):
        return {}, {}
    parts = [model.edges.get(j, np.zeros(0)) for j in model.columns]
    offsets = np.concatenate([[0], np.cumsum([p.size for p in parts])]).astype(np.int64)
    flat = np.concatenate(parts) if parts else np.zeros(0)
    arrays = {"fine_edges": flat.astype(np.float64), "fine_offsets": offsets}
    return arrays, {"secant": {"k_fine": model.k_fine, "note": method_note(model.k_fine)}}
