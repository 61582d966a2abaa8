"""Model adapters, one module per format, behind :func:`load_model`.

Torch, onnx and onnxruntime are imported only inside the adapter that needs
them, so commands that do not load a model never pay for them.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from ale_cli.errors import ModelError
from ale_cli.models.base import Effects, LoadOptions, Model, ProgressFn

__all__ = [
    "MODEL_FORMATS",
    "Effects",
    "LoadOptions",
    "Model",
    "ProgressFn",
    "detect_format",
    "load_model",
]

MODEL_FORMATS = ("torchscript", "onnx", "skops", "pickle")
_EXTENSIONS = {
    ".pt": "torchscript",
    ".pth": "torchscript",
    ".ts": "torchscript",
    ".onnx": "onnx",
    ".skops": "skops",
    ".pkl": "pickle",
    ".pickle": "pickle",
    ".joblib": "pickle",
}


def detect_format(path: Path, override: str | None = None) -> str:
    """The model format: ``override`` if given, else from the file's extension."""
    if override is not None:
        if override not in MODEL_FORMATS:
            raise ModelError(
                f"--model-format must be one of {', '.join(MODEL_FORMATS)}, got '{override}'"
            )
        return override
    fmt = _EXTENSIONS.get(path.suffix.lower())
    if fmt is None:
        raise ModelError(
            f"cannot tell the format of model file '{path}' from its extension "
            f"(known: {', '.join(sorted(_EXTENSIONS))}); pass --model-format"
        )
    return fmt


def _looks_like_torchscript(path: Path) -> bool:
    if not zipfile.is_zipfile(path):
        return False
    with zipfile.ZipFile(path) as zf:
        return any(name.endswith("constants.pkl") or "/code/" in name for name in zf.namelist())


def load_model(path: str | Path, *, model_format: str | None = None, options: LoadOptions) -> Model:
    """Load ``path`` with the adapter for its format."""
    path = Path(path)
    if not path.exists():
        raise ModelError(f"model file '{path}' does not exist")
    if path.is_dir():
        raise ModelError(f"model file '{path}' is a directory")
    fmt = detect_format(path, model_format)
    if fmt == "torchscript":
        if not _looks_like_torchscript(path):
            raise ModelError(f"model file '{path}' is not a TorchScript archive (torch.jit.save)")
        from ale_cli.models.torchscript import TorchScriptModel

        return TorchScriptModel.load(path, options)
    raise ModelError(
        f"model format '{fmt}' of '{path}' is not supported yet; this version of ale "
        "explains TorchScript models only"
    )
