"""Model adapters, one module per format, behind :func:`load_model`.

Torch, onnx and onnxruntime are imported only inside the adapter that needs
them, so commands that do not load a model never pay for them.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from ale_cli.errors import ModelError
from ale_cli.models.base import METHODS, Columns, Effects, LoadOptions, Model, ProgressFn

__all__ = [
    "METHODS",
    "MODEL_FORMATS",
    "Columns",
    "Effects",
    "LoadOptions",
    "Model",
    "ProgressFn",
    "detect_format",
    "load_model",
    "sniff_format",
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


_LABELS = {
    "torchscript": "a TorchScript archive (torch.jit.save)",
    "onnx": "an ONNX model",
    "skops": "a skops file",
    "pickle": "a pickle",
}


def sniff_format(path: Path) -> str | None:
    """The format the file's first bytes show, or None when they do not tell.

    TorchScript and skops files are zip archives (told apart by their members);
    a pickle starts with the PROTO opcode 0x80; an ONNX ModelProto starts with
    field 1 (ir_version, a varint): byte 0x08.
    """
    if zipfile.is_zipfile(path):
        try:
            with zipfile.ZipFile(path) as zf:
                names = zf.namelist()
        except (zipfile.BadZipFile, OSError):
            return None
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
    path: str | Path,
    *,
    model_format: str | None = None,
    options: LoadOptions,
    columns: Columns | None = None,
) -> Model:
    """Load ``path`` with the adapter for its format.

    ``columns`` describes the feature columns (names, held-fixed categorical
    columns, text levels, dtypes); the scikit-learn adapter needs it to rebuild
    DataFrames.
    """
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
            f"{_LABELS[found]}; rename it or pass --model-format {found}"
        )
    columns = columns or Columns(names=())
    if fmt == "torchscript":
        if found is None:
            raise ModelError(f"model file '{path}' is not a TorchScript archive (torch.jit.save)")
        if options.method == "finite-differences" or options.step is not None:
            raise ModelError(
                "--method finite-differences and --step apply to ONNX and scikit-learn models; "
                f"TorchScript model '{path}' is differentiated exactly (autodiff)"
            )
        from ale_cli.models.torchscript import TorchScriptModel

        return TorchScriptModel.load(path, options)
    if fmt == "onnx":
        from ale_cli.models.onnx_model import OnnxModel

        return OnnxModel.load(path, options, columns)
    from ale_cli.models.scikit import SklearnModel

    return SklearnModel.load(path, fmt, options, columns)
