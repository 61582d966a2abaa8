"""A callable ``f(X) -> y`` as a model, checked on the data as the files' adapters are:
local effects by central finite differences (:func:`finite_diff.plan_steps`), or from
the gradient given with it (:class:`~ale_cli.models.objects.Predictor`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

import ale_cli.models.finite_diff as fd
from ale_cli.errors import ModelError, ModelFailed
from ale_cli.models.base import (
    CHECK_ROWS,
    Effects,
    Features,
    LoadRequest,
    Model,
    ProgressFn,
    batched_effects,
    call_model,
    first_rows_failed,
    rows_independent,
    unique_columns,
)
from ale_cli.models.objects import Predictor


@dataclass(frozen=True, eq=False)
class Caller:
    """Calls the predictor on rows of X (as a DataFrame with ``frame``), returns the
    selected output (M,) float64; ``column`` picks one of an (M, k) output, ``columns``
    several ((M, C): ``all`` or a list)."""

    predictor: Predictor
    label: str
    names: tuple[str, ...]
    column: int | None
    columns: tuple[int, ...] = ()

    def data(self, X: np.ndarray) -> Any:
        if not self.predictor.frame:
            return X
        import pandas as pd

        return pd.DataFrame(X, columns=list(self.names), copy=False)

    def __call__(self, X: np.ndarray) -> np.ndarray:
        out = np.asarray(call_model(self.label, self.predictor.predict, self.data(X)))
        if out.ndim == 2 and out.shape[1] == 1 and self.column is None:
            out = out[:, 0]
        if out.ndim == 1 and self.column is not None and not self.columns:  # column 0..0
            out = out[:, None]
        if out.ndim == 2 and out.shape[0] == len(X) and self.column is not None:
            if max((self.column, *self.columns)) >= out.shape[1]:
                raise ModelError(
                    f"{{param}} {max((self.column, *self.columns))} is out of range: model "
                    f"'{self.label}' gives columns 0..{out.shape[1] - 1}",
                    param="output",
                )
            out = out[:, list(self.columns)] if self.columns else out[:, self.column]
        if out.shape != (len(X), *((len(self.columns),) if self.columns else ())):
            hint = "; choose a column with {param} INDEX" if out.ndim == 2 else ""
            want = f"(N, k) to pick columns {self.columns}" if self.columns else "one value per row"
            raise ModelError(
                f"model '{self.label}' returned shape {out.shape} for {len(X)} rows, expected "
                f"{want}{hint}",
                param="output" if hint else None,
            )
        if not np.issubdtype(out.dtype, np.number) or np.issubdtype(out.dtype, np.complexfloating):
            raise ModelError(f"model '{self.label}' returned {out.dtype} values, expected numbers")
        return out.astype(np.float64, copy=False)

    def gradient(self, X: np.ndarray) -> np.ndarray:
        assert self.predictor.gradient is not None  # only called when one was given
        out = np.asarray(call_model(self.label, self.predictor.gradient, self.data(X)))
        if out.shape != X.shape:
            raise ModelError(
                f"the gradient of model '{self.label}' returned shape {out.shape} for rows "
                f"of shape {X.shape}, expected the same shape (d y / d x per row and column)",
                param="gradient",
            )
        return out.astype(np.float64, copy=False)


def _columns(caller: Caller, spec: str | None, rows: np.ndarray) -> Caller:
    """``caller`` picking the output ``spec``: INDEX, a list (``0,2``) or ``all`` (on ``rows``)."""
    parts = [p.strip() for p in (spec or "").split(",") if spec not in (None, "all")]
    if not all(p.isdigit() for p in parts):
        raise ModelError(
            f"{{param}} '{spec}' is not valid for a callable model; expected a column INDEX "
            "of its (N, k) output, a list of them (0,2) or all",
            param="output",
        )
    columns = [int(p) for p in parts]
    if spec == "all":
        out = np.asarray(call_model(caller.label, caller.predictor.predict, caller.data(rows)))
        columns = list(range(out.shape[1] if out.ndim == 2 else 1))
        if len(columns) < 2:
            raise ModelError(
                f"{{param}} all: model '{caller.label}' has one output", param="output"
            )
    unique_columns(str(spec), [str(c) for c in columns])
    many = tuple(columns) if len(columns) > 1 else ()
    return replace(caller, column=columns[0] if columns else None, columns=many)


@dataclass(frozen=True, eq=False)
class CallableModel(Model):
    """A prediction function checked on the data; build it with :meth:`of`. ``plan``:
    its finite differences (None: the given gradient is used)."""

    caller: Caller
    eval_rows: int
    fixed: np.ndarray
    plan: fd.FdPlan | None
    #: callable, or the native booster format read through its library's predict
    format: str = "callable"

    @property
    def method(self) -> str:
        return "gradient" if self.plan is None else "finite-differences"

    @classmethod
    def of(
        cls, predictor: Predictor | Any, req: LoadRequest, *, piecewise: bool = False
    ) -> CallableModel:
        """Check ``predictor`` (a callable, named as ``req.model`` in messages) on the data
        (or the profile) and decide its method and steps; ``piecewise``: a model type known
        to be piecewise constant (the large step, then secants)."""
        predictor = predictor if isinstance(predictor, Predictor) else Predictor(predictor)
        options, columns, label = req.options, req.columns, str(req.model)
        has_gradient = predictor.gradient is not None
        if options.method == "autodiff" and not has_gradient:
            raise ModelError(
                "{param} autodiff needs a gradient: give the callable as "
                "Predictor(f, gradient=g), or use finite differences",
                param="method",
            )
        use_gradient = has_gradient and options.method != "finite-differences"
        if use_gradient and options.step is not None:
            raise ModelError(
                "{param} applies to finite differences; this model's gradient is given",
                param="step",
            )
        profile = req.profile
        try:
            caller = _columns(
                Caller(predictor, label, columns.names, None), options.output, profile.head[:1]
            )
            first = caller(profile.head[:CHECK_ROWS])
            if use_gradient:
                caller.gradient(profile.head[:CHECK_ROWS])
        except ModelFailed as exc:
            raise first_rows_failed(label, exc) from None
        if not rows_independent(caller, profile.head, rtol=1e-9, first=first):
            raise ModelError(
                f"model '{caller.label}' is not deterministic or mixes rows: a row's output "
                "changes with the other rows of the call; local effects need each output row "
                "to depend on its own input row only"
            )
        if use_gradient and caller.columns:
            raise ModelError(
                f"{{param}} {options.output}: the gradient given with model '{label}' is of "
                "one output; explain one output per run, or several by finite differences "
                "({param:method} finite-differences)",
                param="output",
            )
        plan = None if use_gradient else fd.plan_steps(caller, req, piecewise_type=piecewise)
        rows = options.batch_size or fd.DEFAULT_EVAL_ROWS
        return cls(caller, rows, columns.fixed_mask(), plan, req.format)

    def predict(self, X: np.ndarray) -> np.ndarray:
        """The selected output at every row, shape (N,)."""
        return self.caller(X)

    def effects(self, X: np.ndarray, features: Features, progress: ProgressFn | None) -> Effects:
        """The given gradient's columns ``features`` (held-fixed ones 0), or central
        differences as for scikit-learn models."""
        if self.plan is not None:
            label = f"model '{self.caller.label}'"
            return self.plan.effects(self.caller, X, features, progress=progress, label=label)

        def step(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            return self.caller(rows), self.caller.gradient(rows)

        return batched_effects(
            step, X, features, rows=self.eval_rows, fixed=self.fixed, progress=progress
        )

    def describe(self) -> dict[str, Any]:
        column = self.caller.column
        records = [{"selector": str(c), "name": str(c), "column": c} for c in self.caller.columns]
        return {
            **super().describe(),
            "output": records[0]
            if records
            else {"selector": None if column is None else str(column)},
            **({"outputs": records} if records else {}),
            "dtype": "float64",
            "eval_rows_per_call": self.eval_rows,
            "dataframe_input": self.caller.predictor.frame,
        } | ({} if self.plan is None else self.plan.details())


def load(req: LoadRequest) -> CallableModel:
    """A callable model object, checked (:meth:`CallableModel.of`)."""
    return CallableModel.of(req.model.obj, req)
