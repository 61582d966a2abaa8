"""scikit-learn estimators (skops files and trusted pickles): local effects by central
finite differences in float64; one fitted on a DataFrame is called with one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

import ale_cli.models.finite_diff as fd
from ale_cli.errors import ModelError, ModelFailed, first_line
from ale_cli.models.base import (
    CHECK_ROWS,
    INPUTS_HINT,
    Columns,
    Effects,
    Features,
    LoadOptions,
    LoadRequest,
    Model,
    ProgressFn,
    call_model,
    first_rows_failed,
    integer_output_message,
    unique_columns,
    width_error,
)
from ale_cli.models.objects import ModelObject

#: Final-estimator class names (substrings) whose predictions are piecewise constant.
PIECEWISE_CONSTANT = (
    "Tree",
    "Forest",
    "GradientBoosting",
    "KNeighbors",
    "RadiusNeighbors",
    "XGB",
    "LGBM",
    "CatBoost",
)


def piecewise_type(estimator: Any) -> bool:
    """True when the final estimator's type is piecewise constant (:data:`PIECEWISE_CONSTANT`)
    or it combines fitted ``estimators_`` that all are, seeing no raw input beside them
    (AdaBoost, Bagging, Voting, Stacking without passthrough, multi-output wrappers)."""
    est = final_estimator(estimator)
    if any(s in type(est).__name__ for s in PIECEWISE_CONSTANT):
        return True
    members = getattr(est, "estimators_", None)
    members = [m for m in members if m != "drop"] if isinstance(members, list) else []
    return (
        bool(members)
        and not getattr(est, "passthrough", False)
        and all(map(piecewise_type, members))
    )


def read_estimator(path: Path, fmt: str, options: LoadOptions) -> tuple[Any, list[str] | None]:
    """(estimator, trusted types) of a skops file, trusting only the types the user named;
    (estimator, None) of a pickle, unpickled (with joblib) only when the user trusts it."""
    if fmt == "pickle":
        if not options.trust_pickle:
            raise ModelError(
                f"model file '{path}' is a pickle, and loading a pickle runs code stored in it; "
                "pass {param} if you trust its source (or save the model with skops)",
                param="trust_pickle",
            )
        import joblib

        try:
            return joblib.load(path), None
        except Exception as exc:  # anything can go wrong while unpickling
            raise ModelError(
                f"cannot load model file '{path}' as a pickle: {type(exc).__name__}: "
                f"{first_line(exc)}"
            ) from None
    import skops.io as sio

    try:
        untrusted = list(sio.get_untrusted_types(file=path))
    except Exception as exc:  # skops raises zipfile/json/key errors for foreign files
        raise ModelError(f"model file '{path}' is not a skops file: {first_line(exc)}") from None
    missing = [t for t in untrusted if t not in options.trust]
    if missing:
        raise ModelError(
            f"skops file '{path}' holds types that are not trusted by default: "
            f"{', '.join(missing)}; check them and pass {{param}} {','.join(missing)} to load it",
            param="trust",
        )
    try:
        return sio.load(path, trusted=untrusted or None), untrusted
    except Exception as exc:
        raise ModelError(f"cannot load skops file '{path}': {first_line(exc)}") from None


def final_estimator(est: Any) -> Any:
    """The last step of (nested) pipelines and target transformers."""
    while True:
        if hasattr(est, "steps"):
            est = est.steps[-1][1]
        elif hasattr(est, "regressor_"):
            est = est.regressor_
        else:
            return est


_METHODS = {"proba": "predict_proba", "decision": "decision_function"}


def _choices(estimator: Any, is_classifier: bool) -> str:
    if not is_classifier:
        return "predict (or predict:INDEX for a multi-output regressor)"
    classes = ", ".join(str(c) for c in getattr(estimator, "classes_", []))
    decision = " or decision[:INDEX]" if hasattr(estimator, "decision_function") else ""
    return f"proba:CLASS (classes: {classes}){decision}"


def parse_output(
    estimator: Any, spec: str | None, path: Path
) -> tuple[str, int | None, str | None]:
    """(kind, column, class label) of the output selector ``spec`` for ``estimator``:
    kind is "predict", "proba" or "decision"."""
    from sklearn.base import is_classifier

    classifier = bool(is_classifier(estimator))
    name = type(estimator).__name__
    if spec is None:
        if classifier:
            raise ModelError(
                f"model '{path}' is a classifier ({name}); choose the output to "
                f"explain with {{param}}: {_choices(estimator, classifier)}",
                param="output",
            )
        return "predict", None, None
    kind, _, arg = spec.partition(":")
    if kind == "proba" and arg and classifier and hasattr(estimator, "predict_proba"):
        classes = [str(c) for c in estimator.classes_]
        if arg in classes:
            return "proba", classes.index(arg), arg
        if arg.isdigit() and int(arg) < len(classes):
            return "proba", int(arg), classes[int(arg)]
        raise ModelError(
            f"{{param}} {spec}: model '{path}' has no class '{arg}' "
            f"(classes: {', '.join(classes)}; or an index 0..{len(classes) - 1})",
            param="output",
        )
    allowed = kind == "decision" and hasattr(estimator, "decision_function")
    allowed = allowed or (kind == "predict" and not classifier)
    if allowed and (not arg or arg.isdigit()):
        return kind, (int(arg) if arg else None), None
    raise ModelError(
        f"{{param}} '{spec}' is not an output of model '{path}' ({name}); "
        f"choose {_choices(estimator, classifier)}",
        param="output",
    )


def parse_outputs(
    estimator: Any, spec: str | None, path: Path
) -> tuple[tuple[str, int | None, str | None], ...]:
    """:func:`parse_output` of each selector of ``spec``: one, a comma-separated list of
    one method's outputs, or "all" (every class probability of a classifier, every
    column of a multi-output regressor)."""
    if spec == "all":
        classes = getattr(estimator, "classes_", None)
        if hasattr(estimator, "predict_proba") and classes is not None:
            spec = ",".join(f"proba:{i}" for i in range(len(classes)))
        elif getattr(estimator, "n_outputs_", 1) > 1:
            spec = ",".join(f"predict:{i}" for i in range(estimator.n_outputs_))
        else:
            raise ModelError(
                f"{{param}} all: model '{path}' ({type(estimator).__name__}) has one output",
                param="output",
            )
    if spec is None or "," not in spec:
        return (parse_output(estimator, spec, path),)
    parsed = tuple(parse_output(estimator, s.strip(), path) for s in spec.split(","))
    if len({kind for kind, _, _ in parsed}) > 1 or any(c is None for _, c, _ in parsed):
        raise ModelError(
            f"{{param}} {spec}: a list names columns of one output (e.g. proba:0,proba:2)",
            param="output",
        )
    unique_columns(spec, [f"{kind}:{c}" for kind, c, _ in parsed])
    return parsed


@dataclass(frozen=True, eq=False)
class SklearnCaller:
    """Calls the estimator on rows of X (as a DataFrame if it was fitted on one) and
    returns the selected output (M,): method ``kind``, its ``column`` (None: one value
    per row), the class ``label`` of a "proba" output."""

    estimator: Any
    path: Path
    columns: Columns
    selector: str | None
    kind: str
    column: int | None
    label: str | None
    names_in: tuple[str, ...] | None
    level_values: Mapping[str, np.ndarray]
    #: (column, label) of every selected output; two or more: calls return (M, K)
    outputs: tuple[tuple[int | None, str | None], ...] = ()

    @classmethod
    def build(cls, estimator: Any, path: Path, spec: str | None, columns: Columns) -> SklearnCaller:
        parsed = parse_outputs(estimator, spec, path)
        kind, column, label = parsed[0]
        names_in = getattr(estimator, "feature_names_in_", None)
        return cls(
            estimator=estimator,
            path=path,
            columns=columns,
            selector=spec,
            kind=kind,
            column=column,
            label=label,
            names_in=None if names_in is None else tuple(str(n) for n in names_in),
            level_values={
                name: np.array(values, dtype=object) for name, values in columns.levels.items()
            },
            outputs=tuple((c, lab) for _, c, lab in parsed) if len(parsed) > 1 else (),
        )

    def __call__(self, X: np.ndarray) -> np.ndarray:
        return self._select(self.raw(X), len(X))

    def output_records(self) -> list[dict[str, Any]]:
        """The meta's record of each selected output (one: the output)."""
        picked = self.outputs or ((self.column, self.label),)
        return [
            {"selector": self.selector if not self.outputs else f"{self.kind}:{c}",
             "kind": self.kind, "column": c, "class": label,
             "name": self.kind + ("" if c is None else f":{c}")}
            for c, label in picked
        ]  # fmt: skip

    def raw(self, X: np.ndarray) -> np.ndarray:
        """The estimator's output as it returns it (any dtype, every column)."""
        method = _METHODS.get(self.kind, "predict")
        return np.asarray(call_model(self.path, getattr(self.estimator, method), self._frame(X)))

    def _select(self, out: np.ndarray, n_rows: int) -> np.ndarray:
        if out.ndim == 2 and out.shape[1] == 1 and self.column is None:
            out = out[:, 0]
        if out.ndim == 1:
            if self.column is not None:
                raise ModelError(
                    f"{{param}} {self.selector}: model '{self.path}' gives one "
                    f"{self.kind} value per row; drop the :INDEX",
                    param="output",
                )
            return out.astype(np.float64, copy=False)
        if out.ndim != 2 or out.shape[0] != n_rows:
            raise ModelError(
                f"model '{self.path}' {self.kind} returned shape {out.shape} for {n_rows} rows"
            )
        if self.column is None:
            raise ModelError(
                f"model '{self.path}' {self.kind} gives {out.shape[1]} columns; "
                f"choose one with {{param}} {self.kind}:INDEX (0..{out.shape[1] - 1})",
                param="output",
            )
        if self.column >= out.shape[1]:
            raise ModelError(
                f"{{param}} {self.selector} is out of range: model '{self.path}' "
                f"{self.kind} gives columns 0..{out.shape[1] - 1}",
                param="output",
            )
        if self.outputs:
            return out[:, [c for c, _ in self.outputs]].astype(np.float64)
        return out[:, self.column].astype(np.float64, copy=False)

    def _frame(self, X: np.ndarray) -> Any:
        if self.names_in is None:
            return X
        import pandas as pd

        cols: dict[str, Any] = {}
        fixed, dtypes = self.columns.fixed, self.columns.dtypes
        for j, name in enumerate(self.columns.names):
            values = X[:, j]
            if name in self.level_values:
                cols[name] = self.level_values[name][values.astype(np.intp)]
            elif name in fixed and dtypes.get(name, "").startswith("int"):
                cols[name] = values.astype(dtypes[name])
            else:
                cols[name] = values
        return pd.DataFrame(cols, columns=list(self.names_in), copy=False)


def check_inputs(caller: SklearnCaller, X: np.ndarray) -> str | None:
    """Check inputs and first rows; the dtype of a non-float output, else None."""
    names = list(caller.columns.names)
    width = X.shape[1]
    if caller.names_in is not None:
        missing = [n for n in caller.names_in if n not in names]
        extra = [n for n in names if n not in caller.names_in]
        if missing or extra:
            parts = [
                f"lack {', '.join(missing)}" if missing else "",
                f"add {', '.join(extra)}" if extra else "",
            ]
            raise ModelError(
                f"model '{caller.path}' was fitted on columns {', '.join(caller.names_in)}; "
                f"the selected features {' and '.join(p for p in parts if p)}; {INPUTS_HINT}",
                param="features",
            )
    elif caller.level_values:
        raise ModelError(
            f"column '{next(iter(caller.level_values))}' is not numeric and model "
            f"'{caller.path}' was fitted on an array without column names; it can only take "
            "numeric features"
        )
    elif getattr(caller.estimator, "n_features_in_", None) not in (None, width):
        raise width_error(f"model '{caller.path}'", caller.estimator.n_features_in_, names)
    try:
        out = caller.raw(X[:CHECK_ROWS])
    except ModelFailed as exc:
        raise first_rows_failed(caller.path, exc) from None
    caller._select(out, len(X[:CHECK_ROWS]))
    return None if np.issubdtype(out.dtype, np.floating) else out.dtype.name


@dataclass(frozen=True, eq=False)
class SklearnModel(Model):
    """A fitted scikit-learn estimator, explained by central finite differences."""

    caller: SklearnCaller
    format: str
    plan: fd.FdPlan
    trusted: tuple[str, ...] | None = None
    integer_output: str | None = None
    method: ClassVar[str] = "finite-differences"

    @classmethod
    def of(
        cls, estimator: Any, req: LoadRequest, *, trusted: Sequence[str] | None = None
    ) -> SklearnModel:
        """Check a fitted estimator on the request's profile and choose its steps there."""
        path, options = req.model, req.options
        if options.method == "autodiff":
            raise ModelError(
                "{param} autodiff is not available for scikit-learn models; "
                "they are differentiated by finite differences",
                param="method",
            )
        if not any(hasattr(estimator, m) for m in ("predict", "predict_proba")):
            raise ModelError(
                f"model file '{path}' holds a {type(estimator).__name__}, "
                "not a fitted scikit-learn estimator (it has no predict method)"
            )
        caller = SklearnCaller.build(estimator, path, options.output, req.columns)
        integer = check_inputs(caller, req.profile.head)
        plan = fd.plan_steps(caller, req, piecewise_type=piecewise_type(estimator))
        return cls(caller, req.format, plan, None if trusted is None else tuple(trusted), integer)

    def predict(self, X: np.ndarray) -> np.ndarray:
        """The selected output at every row, shape (N,)."""
        return self.caller(X)

    def effects(self, X: np.ndarray, features: Features, progress: ProgressFn | None) -> Effects:
        """Central differences in the columns ``features``; refused for an integer output."""
        if self.integer_output is not None:
            raise ModelError(
                integer_output_message(self.caller.path, self.integer_output), param="output"
            )
        label = f"model '{self.caller.path}'"
        return self.plan.effects(self.caller, X, features, progress=progress, label=label)

    def describe(self) -> dict[str, Any]:
        est, caller = self.caller.estimator, self.caller
        details: dict[str, Any] = {
            **super().describe(),
            "estimator": type(est).__name__,
            "final_estimator": type(final_estimator(est)).__name__,
            "output": caller.output_records()[0],
            "dtype": "float64",
            "dataframe_input": caller.names_in is not None,
            "feature_names_in": None if caller.names_in is None else list(caller.names_in),
        } | self.plan.details()
        if hasattr(est, "steps"):
            details["pipeline"] = [f"{n}: {type(s).__name__}" for n, s in est.steps]
        if self.trusted is not None:
            details["trusted_types"] = list(self.trusted)
        if caller.outputs:
            details["outputs"] = caller.output_records()
        return details


def load(req: LoadRequest) -> SklearnModel:
    """Load a skops file or a trusted pickle, or take a fitted estimator object, and check
    it (:meth:`SklearnModel.of`)."""
    path = req.model
    if isinstance(path, ModelObject):
        from sklearn.exceptions import NotFittedError
        from sklearn.utils.validation import check_is_fitted

        est, trusted = path.obj, None
        try:
            check_is_fitted(est)
        except NotFittedError:
            raise ModelError(
                f"{{param}} is a {type(est).__name__} that is not fitted; fit it first",
                param="model",
            ) from None
        except TypeError:  # not an estimator check_is_fitted knows: SklearnModel.of checks it
            pass
    else:
        est, trusted = read_estimator(path, req.format, req.options)
    return SklearnModel.of(est, req, trusted=trusted)
