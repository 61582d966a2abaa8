"""scikit-learn estimators (skops files and trusted pickles): local effects by
central finite differences in float64.

The estimator is called with a DataFrame carrying the original column names
when it was fitted on one (``feature_names_in_``), so pipelines with a
ColumnTransformer / OneHotEncoder get the columns they expect; text columns are
rebuilt from their integer codes. Only numeric, non-categorical columns are
perturbed. The step is chosen per model (see :func:`finite_diff.choose_step`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ale_cli.errors import ModelError, RunError
from ale_cli.models import finite_diff as fd
from ale_cli.models.base import Columns, Effects, LoadOptions, ProgressFn, first_line

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


def load_skops(path: Path, trust: tuple[str, ...]) -> tuple[Any, list[str]]:
    """Load a skops file, trusting only the types the user named; returns (estimator, trusted)."""
    import skops.io as sio

    try:
        untrusted = list(sio.get_untrusted_types(file=path))
    except Exception as exc:  # skops raises zipfile/json/key errors for foreign files
        raise ModelError(f"model file '{path}' is not a skops file: {first_line(exc)}") from None
    missing = [t for t in untrusted if t not in trust]
    if missing:
        raise ModelError(
            f"skops file '{path}' holds types that are not trusted by default: "
            f"{', '.join(missing)}; check them and pass --trust {','.join(missing)} to load it"
        )
    try:
        return sio.load(path, trusted=untrusted or None), untrusted
    except Exception as exc:
        raise ModelError(f"cannot load skops file '{path}': {first_line(exc)}") from None


def load_pickle(path: Path, trust_pickle: bool) -> Any:
    """Unpickle (with joblib) only when the user said the file is trusted."""
    if not trust_pickle:
        raise ModelError(
            f"model file '{path}' is a pickle, and loading a pickle runs code stored in it; "
            "pass --trust-pickle if you trust its source (or save the model with skops)"
        )
    import joblib

    try:
        return joblib.load(path)
    except Exception as exc:  # anything can go wrong while unpickling
        raise ModelError(
            f"cannot load model file '{path}' as a pickle: {type(exc).__name__}: {first_line(exc)}"
        ) from None


def final_estimator(est: Any) -> Any:
    """The last step of (nested) pipelines and target transformers."""
    while True:
        if hasattr(est, "steps"):
            est = est.steps[-1][1]
        elif hasattr(est, "regressor_"):
            est = est.regressor_
        else:
            return est


class SklearnModel:
    """A fitted scikit-learn estimator explained by central finite differences."""

    method = "finite-differences"

    def __init__(
        self,
        estimator: Any,
        path: Path,
        fmt: str,
        options: LoadOptions,
        columns: Columns,
        trusted: list[str] | None = None,
    ) -> None:
        from sklearn.base import is_classifier

        if options.method == "autodiff":
            raise ModelError(
                "--method autodiff is not available for scikit-learn models; "
                "they are differentiated by finite differences"
            )
        if not any(hasattr(estimator, m) for m in ("predict", "predict_proba")):
            raise ModelError(
                f"model file '{path}' holds a {type(estimator).__name__}, "
                "not a fitted scikit-learn estimator (it has no predict method)"
            )
        self.estimator = estimator
        self.path = path
        self.format = fmt
        self.columns = columns
        self.options = options
        self.trusted = trusted
        self.is_classifier = bool(is_classifier(estimator))
        self.eval_rows = options.batch_size or fd.DEFAULT_EVAL_ROWS
        self.kind, self.column, self.label = self._parse_output(options.output)
        names_in = getattr(estimator, "feature_names_in_", None)
        self.names_in = None if names_in is None else [str(n) for n in names_in]
        self.level_values = {
            name: np.array(values, dtype=object) for name, values in columns.levels.items()
        }
        self.step: fd.StepChoice | None = None
        self.steps: np.ndarray | None = None

    @classmethod
    def load(cls, path: Path, fmt: str, options: LoadOptions, columns: Columns) -> SklearnModel:
        if fmt == "skops":
            est, trusted = load_skops(path, options.trust)
            return cls(est, path, fmt, options, columns, trusted)
        return cls(load_pickle(path, options.trust_pickle), path, fmt, options, columns)

    # -- output selection --------------------------------------------------------------

    def _choices(self) -> str:
        if not self.is_classifier:
            return "predict (or predict:INDEX for a multi-output regressor)"
        classes = ", ".join(str(c) for c in getattr(self.estimator, "classes_", []))
        decision = " or decision[:INDEX]" if hasattr(self.estimator, "decision_function") else ""
        return f"proba:CLASS (classes: {classes}){decision}"

    def _parse_output(self, spec: str | None) -> tuple[str, int | None, str | None]:
        name = type(self.estimator).__name__
        if spec is None:
            if self.is_classifier:
                raise ModelError(
                    f"model '{self.path}' is a classifier ({name}); choose the output to "
                    f"explain with --output: {self._choices()}"
                )
            return "predict", None, None
        kind, _, arg = spec.partition(":")
        if (
            kind == "proba"
            and arg
            and self.is_classifier
            and hasattr(self.estimator, "predict_proba")
        ):
            classes = [str(c) for c in self.estimator.classes_]
            if arg in classes:
                return "proba", classes.index(arg), arg
            if arg.isdigit() and int(arg) < len(classes):
                return "proba", int(arg), classes[int(arg)]
            raise ModelError(
                f"--output {spec}: model '{self.path}' has no class '{arg}' "
                f"(classes: {', '.join(classes)}; or an index 0..{len(classes) - 1})"
            )
        if kind == "decision" and hasattr(self.estimator, "decision_function"):
            if not arg:
                return "decision", None, None
            if arg.isdigit():
                return "decision", int(arg), None
        if kind == "predict" and not self.is_classifier:
            if not arg:
                return "predict", None, None
            if arg.isdigit():
                return "predict", int(arg), None
        raise ModelError(
            f"--output '{spec}' is not an output of model '{self.path}' ({name}); "
            f"choose {self._choices()}"
        )

    def _output_name(self) -> str:
        return self.kind + ("" if self.column is None else f":{self.column}")

    def _raw(self, X: np.ndarray) -> np.ndarray:
        data = self._frame(X)
        if self.kind == "proba":
            return np.asarray(self.estimator.predict_proba(data))
        if self.kind == "decision":
            return np.asarray(self.estimator.decision_function(data))
        return np.asarray(self.estimator.predict(data))

    def _select(self, out: np.ndarray, n_rows: int) -> np.ndarray:
        if out.ndim == 2 and out.shape[1] == 1 and self.column is None:
            out = out[:, 0]
        if out.ndim == 1:
            if self.column is not None:
                raise ModelError(
                    f"--output {self.options.output}: model '{self.path}' gives one "
                    f"{self.kind} value per row; drop the :INDEX"
                )
            return out.astype(np.float64, copy=False)
        if out.ndim != 2 or out.shape[0] != n_rows:
            raise ModelError(
                f"model '{self.path}' {self.kind} returned shape {out.shape} for {n_rows} rows"
            )
        if self.column is None:
            raise ModelError(
                f"model '{self.path}' {self.kind} gives {out.shape[1]} columns; "
                f"choose one with --output {self.kind}:INDEX (0..{out.shape[1] - 1})"
            )
        if self.column >= out.shape[1]:
            raise ModelError(
                f"--output {self.options.output} is out of range: model '{self.path}' "
                f"{self.kind} gives columns 0..{out.shape[1] - 1}"
            )
        return out[:, self.column].astype(np.float64, copy=False)

    def _frame(self, X: np.ndarray) -> Any:
        if self.names_in is None:
            return X
        import pandas as pd

        cols: dict[str, Any] = {}
        for j, name in enumerate(self.columns.names):
            values = X[:, j]
            if name in self.level_values:
                cols[name] = self.level_values[name][values.astype(np.intp)]
            elif name in self.columns.fixed and self.columns.dtypes.get(name, "").startswith("int"):
                cols[name] = values.astype(self.columns.dtypes[name])
            else:
                cols[name] = values
        return pd.DataFrame(cols, columns=self.names_in, copy=False)

    def _f(self, X: np.ndarray) -> np.ndarray:
        return self._select(self._raw(X), len(X))

    # -- the adapter interface ---------------------------------------------------------

    def check(self, X: np.ndarray) -> None:
        """Refuse a model whose inputs differ from the selected features."""
        names = list(self.columns.names)
        width = X.shape[1]
        if self.names_in is not None:
            missing = [n for n in self.names_in if n not in names]
            extra = [n for n in names if n not in self.names_in]
            if missing or extra:
                parts = [
                    f"lack {', '.join(missing)}" if missing else "",
                    f"add {', '.join(extra)}" if extra else "",
                ]
                raise ModelError(
                    f"model '{self.path}' was fitted on columns {', '.join(self.names_in)}; "
                    f"the selected features {' and '.join(p for p in parts if p)}; select the "
                    "model's inputs with --features or --exclude"
                )
        else:
            if self.level_values:
                text = next(iter(self.level_values))
                raise ModelError(
                    f"column '{text}' is not numeric and model '{self.path}' was fitted on an "
                    "array without column names; it can only take numeric features"
                )
            expected = getattr(self.estimator, "n_features_in_", None)
            if expected is not None and expected != width:
                raise ModelError(
                    f"model '{self.path}' takes {expected} features but {width} are selected "
                    f"({', '.join(names)}); select the model's inputs with --features or --exclude"
                )
        try:
            self._f(X[:8])
        except ModelError:
            raise
        except Exception as exc:
            raise ModelError(
                f"model '{self.path}' fails on the selected features: {first_line(exc)}"
            ) from None

    def predict(self, X: np.ndarray) -> np.ndarray:
        """The selected output at every row, shape (N,)."""
        return self._f(X)

    def _choose_step(self, X: np.ndarray) -> np.ndarray:
        final = type(final_estimator(self.estimator)).__name__
        self.step, self.steps = fd.plan_steps(
            self._f,
            X,
            user_step=self.options.step,
            piecewise_type=any(s in final for s in PIECEWISE_CONSTANT),
            smooth_step=fd.SMALL_STEP,
            fixed=self.columns.fixed_mask(),
        )
        return self.steps

    def local_effects(self, X: np.ndarray, *, progress: ProgressFn | None = None) -> Effects:
        """Central differences of the selected output, stacked and chunked."""
        steps = self.steps if self.steps is not None else self._choose_step(X)
        try:
            return fd.central_differences(
                self._f,
                X,
                steps,
                fixed=self.columns.fixed_mask(),
                eval_rows=self.eval_rows,
                progress=progress,
                label=f"model '{self.path}'",
            )
        except (ModelError, RunError):
            raise
        except Exception as exc:
            raise RunError(f"model '{self.path}' failed: {first_line(exc)}") from None

    def describe(self) -> dict[str, Any]:
        est = self.estimator
        details: dict[str, Any] = {
            "method": self.method,
            "format": self.format,
            "estimator": type(est).__name__,
            "final_estimator": type(final_estimator(est)).__name__,
            "output": {
                "selector": self.options.output,
                "kind": self.kind,
                "column": self.column,
                "class": self.label,
                "name": self._output_name(),
            },
            "dtype": "float64",
            "eval_rows_per_call": self.eval_rows,
            "dataframe_input": self.names_in is not None,
        }
        if hasattr(est, "steps"):
            details["pipeline"] = [f"{n}: {type(s).__name__}" for n, s in est.steps]
        if self.step is not None and self.steps is not None:
            details["step"] = self.step.to_dict() | {"absolute": self.steps.tolist()}
            details["notes"] = [fd.describe_step(self.step)]
        if self.trusted is not None:
            details["trusted_types"] = self.trusted
        return details
