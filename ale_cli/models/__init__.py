"""Model adapters, one module per format, behind :func:`load_model` (torch, onnx
and onnxruntime are imported only inside the adapter that needs them)."""

from __future__ import annotations

import importlib
import zipfile
from pathlib import Path

import numpy as np

from ale_cli.errors import InputError, ModelError
from ale_cli.models.base import Columns, LoadOptions, LoadRequest, Model
from ale_cli.models.boosters import EXTENSIONS as BOOSTER_EXTENSIONS
from ale_cli.models.objects import BOOSTERS, ModelObject, Predictor
from ale_cli.models.profile import DataProfile

__all__ = [
    "MODEL_FORMATS",
    "Columns",
    "LoadOptions",
    "Model",
    "ModelObject",
    "Predictor",
    "detect_format",
    "load_model",
    "sniff_format",
]


_EXTENSIONS = {
    ".pt2": "torch-export",
    ".pt": "torchscript",
    ".pth": "torchscript",
    ".ts": "torchscript",
    ".onnx": "onnx",
    ".skops": "skops",
    ".pkl": "pickle",
    ".pickle": "pickle",
    ".joblib": "pickle",
    **BOOSTER_EXTENSIONS,
}


def detect_format(path: Path | ModelObject, override: str | None = None) -> str:
    """The model format: ``override`` if given (one of :data:`MODEL_FORMATS`, checked by
    the caller), else from the file's extension (an object's own format: sklearn,
    torch-module, torch-export, callable or a booster's)."""
    if isinstance(path, ModelObject):
        return path.format
    if override is not None:
        return override
    fmt = _EXTENSIONS.get(path.suffix.lower())
    if fmt is None:
        raise ModelError(
            f"cannot tell the format of model file '{path}' from its extension "
            f"(known: {', '.join(sorted(_EXTENSIONS))}); pass {{param}}",
            param="model_format",
        )
    return fmt


_LABELS = {
    "torchscript": "a TorchScript archive (torch.jit.save)",
    "torch-export": "a torch.export archive (torch.export.save)",
    "onnx": "an ONNX model",
    "skops": "a skops file",
    "pickle": "a pickle",
    **{fmt: label for fmt, (_, _, label) in BOOSTERS.items()},
}
MODEL_FORMATS = tuple(_LABELS)
_TORCH = ("torchscript", "torch-export", "torch-module")
#: format -> the adapter module whose ``load`` reads it (imported only to load a model)
_ADAPTERS = {
    **dict.fromkeys(_TORCH, "torchscript"),
    **dict.fromkeys(BOOSTERS, "boosters"),
    "onnx": "onnx_model",
    "callable": "callable_model",
}


def sniff_format(path: Path) -> str | None:
    """The format the file's first bytes show, or None: zip members tell TorchScript,
    torch.export and skops apart; a pickle starts with 0x80, an ONNX ModelProto with 0x08
    (field 1)."""
    if zipfile.is_zipfile(path):
        try:
            with zipfile.ZipFile(path) as zf:
                names = zf.namelist()
        except (zipfile.BadZipFile, OSError):
            return None
        if any(n.endswith("/archive_format") for n in names) and any(
            "/models/" in n and n.endswith(".json") for n in names
        ):
            return "torch-export"
        if any(n.endswith("constants.pkl") or "/code/" in n for n in names):
            return "torchscript"
        if "schema.json" in names:
            return "skops"
        return None
    with open(path, "rb") as fh:
        head = fh.read(2)
    if head[:1] == b"\x80":
        return "pickle"
    if head[:1] == b"\x08":
        return "onnx"
    return None


def load_model(
    path: str | Path | ModelObject,
    *,
    model_format: str | None = None,
    options: LoadOptions,
    columns: Columns,
    X: np.ndarray,
    profile: DataProfile | None = None,
) -> Model:
    """Load ``path`` (a model file, or a model object: :mod:`ale_cli.models.objects`) with
    the adapter for its format, checked on X (N, D) and its steps chosen there;
    ``profile`` (ONNX, scikit-learn): of all rows, X then its first rows."""
    if not isinstance(X, np.ndarray) or X.ndim != 2 or not np.issubdtype(X.dtype, np.floating):
        raise InputError("{param} must be a 2-D float array (rows x features)", param="X")
    if len(X) == 0:
        raise InputError("{param} has no rows to check the model on", param="X")
    if len(columns.names) != X.shape[1]:
        raise InputError(
            f"{{param}} names {len(columns.names)} columns but X has {X.shape[1]}",
            param="columns",
        )
    why = f"does not apply to {path}: a torch model"
    if isinstance(path, ModelObject):
        fmt = path.format
    else:
        path = Path(path)
        if not path.exists():
            raise ModelError(f"model file '{path}' does not exist")
        if path.is_dir():
            raise ModelError(f"model file '{path}' is a directory")
        fmt = detect_format(path, model_format)
        found = sniff_format(path)
        if found is not None and found != fmt:
            raise ModelError(
                f"model file '{path}' is not {_LABELS[fmt]}: its content looks like "
                f"{_LABELS[found]}; rename it or pass {{param}} {found}",
                param="model_format",
            )
        if fmt in ("torchscript", "torch-export") and found is None:
            raise ModelError(f"model file '{path}' is not {_LABELS[fmt]}")
        name = "TorchScript" if fmt == "torchscript" else "torch.export"
        why = f"applies to ONNX and scikit-learn models; {name} model '{path}'"
    if fmt in _TORCH:
        exact = "differentiated exactly (autodiff)"
        if options.method == "finite-differences":
            raise ModelError(f"{{param}} finite-differences {why} is {exact}", param="method")
        if options.step is not None:
            raise ModelError(f"{{param}} {why} is {exact}", param="step")
    adapter = importlib.import_module(f"{__name__}.{_ADAPTERS.get(fmt, 'scikit')}")
    return adapter.load(LoadRequest(path, fmt, options, columns, X, profile))
