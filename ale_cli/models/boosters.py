"""Native gradient-boosting files: XGBoost (``.json``, ``.ubj``), LightGBM (``.txt``) and
CatBoost (``.cbm``), each read and predicted by its own library (an optional extra) on
float64 rows, and explained as the scikit-learn trees are (:mod:`ale_cli.models.secant`)
through :class:`~ale_cli.models.callable_model.CallableModel`. Columns are taken by
position; a booster object is read from its bytes in the same format
(:func:`~ale_cli.models.objects.native_bytes`), so it is explained as its file would be."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ale_cli.errors import ModelError
from ale_cli.models.base import Columns, LoadOptions, first_line
from ale_cli.models.callable_model import CallableModel
from ale_cli.models.objects import ModelObject, Predictor, native_bytes
from ale_cli.models.profile import DataProfile

#: format -> (module to import, extra that installs it, label)
BOOSTERS = {
    "xgboost": ("xgboost", "xgboost", "an XGBoost model"),
    "lightgbm": ("lightgbm", "lightgbm", "a LightGBM model"),
    "catboost": ("catboost", "catboost", "a CatBoost model"),
}
EXTENSIONS = {".json": "xgboost", ".ubj": "xgboost", ".txt": "lightgbm", ".cbm": "catboost"}


#: a booster file, or a booster object's bytes in the same format
Saved = Path | bytes


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


def _xgboost(xgb: Any, saved: Saved) -> tuple[Callable[[np.ndarray], Any], int]:
    booster = xgb.Booster()
    booster.load_model(str(saved) if isinstance(saved, Path) else bytearray(saved))
    booster.set_param({"nthread": 1})

    def predict(X: np.ndarray) -> Any:
        return booster.inplace_predict(X, validate_features=False)

    return predict, booster.num_features()


def _lightgbm(lgb: Any, saved: Saved) -> tuple[Callable[[np.ndarray], Any], int]:
    if isinstance(saved, Path):
        booster = lgb.Booster(model_file=str(saved))
    else:
        booster = lgb.Booster(model_str=saved.decode())

    def predict(X: np.ndarray) -> Any:
        return booster.predict(X, num_threads=1)

    return predict, booster.num_feature()


def _catboost(cb: Any, saved: Saved) -> tuple[Callable[[np.ndarray], Any], int]:
    model = cb.CatBoost()
    if isinstance(saved, Path):
        model.load_model(str(saved), format="cbm")
    else:
        model.load_model(blob=saved)

    def predict(X: np.ndarray) -> Any:
        return model.predict(X, thread_count=1)

    return predict, len(model.feature_names_)


_READERS = {"xgboost": _xgboost, "lightgbm": _lightgbm, "catboost": _catboost}


def from_object(
    given: ModelObject,
    options: LoadOptions,
    columns: Columns,
    X: np.ndarray,
    profile: DataProfile | None = None,
) -> CallableModel:
    """A booster object, read from its bytes in its library's own format as its file is."""
    saved = native_bytes(given.obj, given.format)
    return load(saved, given.format, options, columns, X, profile, name=str(given))


def load(
    path: Saved,
    fmt: str,
    options: LoadOptions,
    columns: Columns,
    X: np.ndarray,
    profile: DataProfile | None = None,
    *,
    name: str | None = None,
) -> CallableModel:
    """Read the booster file (or an object's bytes, ``name`` in messages) and check it on
    X (or ``profile``): its width, its output."""
    what = f"model file '{path}'" if name is None else f"model {name}"
    if options.method == "autodiff":
        raise ModelError(
            f"{{param}} autodiff is not available for {BOOSTERS[fmt][2]} (trees have no "
            "gradient); it is explained by secants or finite differences",
            param="method",
        )
    lib = library(fmt, str(path) if name is None else name)  # a missing extra, in its words
    try:
        predict, width = _READERS[fmt](lib, path)
    except Exception as exc:  # each library raises its own error for a foreign file
        raise ModelError(f"cannot load {what} as {BOOSTERS[fmt][2]}: {first_line(exc)}") from None
    if width != X.shape[1]:
        raise ModelError(
            f"{what} takes {width} features but {X.shape[1]} are selected "
            f"({', '.join(columns.names)}); select the model's inputs with {{param:inputs}} "
            "or {param:exclude}",
            param="features",
        )
    label = str(path) if name is None else name
    return CallableModel.of(
        Predictor(predict), label, options, columns, X, profile, fmt=fmt, piecewise=True
    )
