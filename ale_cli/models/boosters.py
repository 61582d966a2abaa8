"""Native gradient-boosting files: XGBoost (``.json``, ``.ubj``), LightGBM (``.txt``) and
CatBoost (``.cbm``), each read by its own library (an optional extra:
``pip install 'ale-cli[xgboost]'``, ``[lightgbm]``, ``[catboost]``).

A booster is piecewise constant: it is predicted in its library's own fast path on
float64 rows and explained as the scikit-learn trees are (the large finite-difference
step, and for ``ale compute`` secants across a fine grid; see
:mod:`ale_cli.models.secant`), through :class:`~ale_cli.models.callable_model.CallableModel`.
It takes its columns by position; its width is checked against the data's.
``--output INDEX`` picks a column of a multi-class booster's (N, k) output.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ale_cli.errors import ModelError
from ale_cli.models.base import Columns, LoadOptions, first_line
from ale_cli.models.callable_model import CallableModel
from ale_cli.models.objects import Predictor
from ale_cli.models.profile import DataProfile

#: format -> (module to import, extra that installs it, label)
BOOSTERS = {
    "xgboost": ("xgboost", "xgboost", "an XGBoost model"),
    "lightgbm": ("lightgbm", "lightgbm", "a LightGBM model"),
    "catboost": ("catboost", "catboost", "a CatBoost model"),
}
EXTENSIONS = {".json": "xgboost", ".ubj": "xgboost", ".txt": "lightgbm", ".cbm": "catboost"}


def library(fmt: str, path: Path | str) -> Any:
    """The booster's library, or a ModelError naming the extra that installs it."""
    import importlib

    module, extra, label = BOOSTERS[fmt]
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ModelError(
            f"model file '{path}' is {label}, which needs the {extra} extra: "
            f"pip install 'ale-cli[{extra}]'"
        ) from None


def _xgboost(path: Path) -> tuple[Callable[[np.ndarray], Any], int]:
    xgb = library("xgboost", path)
    booster = xgb.Booster()
    booster.load_model(str(path))
    booster.set_param({"nthread": 1})

    def predict(X: np.ndarray) -> Any:
        return booster.inplace_predict(X, validate_features=False)

    return predict, booster.num_features()


def _lightgbm(path: Path) -> tuple[Callable[[np.ndarray], Any], int]:
    lgb = library("lightgbm", path)
    booster = lgb.Booster(model_file=str(path))

    def predict(X: np.ndarray) -> Any:
        return booster.predict(X, num_threads=1)

    return predict, booster.num_feature()


def _catboost(path: Path) -> tuple[Callable[[np.ndarray], Any], int]:
    cb = library("catboost", path)
    model = cb.CatBoost()
    model.load_model(str(path), format="cbm")

    def predict(X: np.ndarray) -> Any:
        return model.predict(X, thread_count=1)

    return predict, len(model.feature_names_)


_READERS = {"xgboost": _xgboost, "lightgbm": _lightgbm, "catboost": _catboost}


def load(
    path: Path,
    fmt: str,
    options: LoadOptions,
    columns: Columns,
    X: np.ndarray,
    profile: DataProfile | None = None,
) -> CallableModel:
    """Read the booster file and check it on X (or ``profile``): its width, its output."""
    if options.method == "autodiff":
        raise ModelError(
            f"{{param}} autodiff is not available for {BOOSTERS[fmt][2]} (trees have no "
            "gradient); it is explained by secants or finite differences",
            param="method",
        )
    reader = _READERS[fmt]
    library(fmt, path)  # a missing extra first, in its own words
    try:
        predict, width = reader(path)
    except Exception as exc:  # each library raises its own error for a foreign file
        raise ModelError(
            f"cannot load model file '{path}' as {BOOSTERS[fmt][2]}: {first_line(exc)}"
        ) from None
    if width != X.shape[1]:
        raise ModelError(
            f"model '{path}' takes {width} features but {X.shape[1]} are selected "
            f"({', '.join(columns.names)}); select the model's inputs with {{param:inputs}} "
            "or {param:exclude}",
            param="features",
        )
    return CallableModel.of(
        Predictor(predict), str(path), options, columns, X, profile, fmt=fmt, piecewise=True
    )
