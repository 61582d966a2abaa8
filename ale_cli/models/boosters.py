"""Native gradient-boosting files (XGBoost, LightGBM, CatBoost), each read and predicted
by its own library (an optional extra) on float64 rows and explained as a piecewise-
constant :class:`~ale_cli.models.callable_model.CallableModel`; columns are taken by
position. A booster object is read from its bytes in the same format."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ale_cli.errors import ModelError, first_line
from ale_cli.models.base import LoadRequest, extra, width_error
from ale_cli.models.callable_model import CallableModel
from ale_cli.models.objects import BOOSTERS, ModelObject, Predictor, native_bytes

EXTENSIONS = {".json": "xgboost", ".ubj": "xgboost", ".txt": "lightgbm", ".cbm": "catboost"}


#: a booster file, or a booster object's bytes in the same format
Saved = Path | bytes


def _read(fmt: str, lib: Any, saved: Saved) -> tuple[Callable[[np.ndarray], Any], int]:
    """The booster's predict on float64 rows (one thread) and its number of features."""
    file = isinstance(saved, Path)
    if fmt == "xgboost":
        xgb = lib.Booster()
        xgb.load_model(str(saved) if file else bytearray(saved))
        xgb.set_param({"nthread": 1})
        return lambda X: xgb.inplace_predict(X, validate_features=False), xgb.num_features()
    if fmt == "lightgbm":
        lgb = lib.Booster(model_file=str(saved)) if file else lib.Booster(model_str=saved.decode())
        return lambda X: lgb.predict(X, num_threads=1), lgb.num_feature()
    cat = lib.CatBoost()
    if file:
        cat.load_model(str(saved), format="cbm")
    else:
        cat.load_model(blob=saved)
    return lambda X: cat.predict(X, thread_count=1), len(cat.feature_names_)


def load(req: LoadRequest) -> CallableModel:
    """Read the booster file (or object, from its bytes) and check it on X (or the
    profile): its width, its output."""
    path, fmt = req.model, req.format
    module, _, kind = BOOSTERS[fmt]
    what = f"model {path}" if isinstance(path, ModelObject) else f"model file '{path}'"
    if req.options.method == "autodiff":
        raise ModelError(
            f"{{param}} autodiff is not available for {kind} (trees have no "
            "gradient); it is explained by secants or finite differences",
            param="method",
        )
    lib = extra(module, f"model file '{path}' is {kind}, which")  # before reading the file
    try:
        saved = native_bytes(path.obj, fmt) if isinstance(path, ModelObject) else path
        predict, width = _read(fmt, lib, saved)
    except Exception as exc:  # each library raises its own error for a foreign file
        raise ModelError(f"cannot load {what} as {kind}: {first_line(exc)}") from None
    if width != req.X.shape[1]:
        raise width_error(what, width, req.columns.names)
    return CallableModel.of(Predictor(predict), req, piecewise=True)
