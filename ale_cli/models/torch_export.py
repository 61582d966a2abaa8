"""``torch.export`` programs (``.pt2`` files of ``torch.export.save``), differentiated as
a TorchScript module (:class:`~ale_cli.models.torchscript.TorchScriptModel`); the program
must be exported with a dynamic first dimension (``docs/models.md``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ale_cli.errors import ModelError
from ale_cli.models.base import Columns, LoadOptions, first_line
from ale_cli.models.torchscript import TorchScriptModel

FORMAT = "torch-export"

EXPORT_HINT = (
    "export it with a dynamic first dimension: torch.export.export(model, (x,), "
    'dynamic_shapes=({0: torch.export.Dim("batch", min=1)},))'
)


def is_export_archive(names: list[str]) -> bool:
    """True when the members of a zip archive are those of ``torch.export.save``.

    >>> is_export_archive(["m/archive_format", "m/models/model.json"])
    True
    >>> is_export_archive(["m/code/__torch__.py", "m/constants.pkl"])
    False
    """
    return any(n.endswith("/archive_format") for n in names) and any(
        "/models/" in n and n.endswith(".json") for n in names
    )


def fixed_batch(program: Any) -> int | None:
    """The number of rows the program's first input is fixed to (None: dynamic)."""
    user_inputs = set(program.graph_signature.user_inputs)
    for node in program.graph.nodes:
        if node.op == "placeholder" and node.name in user_inputs:
            shape = getattr(node.meta.get("val"), "shape", None)
            if shape is not None and len(shape) and isinstance(shape[0], int):
                return int(shape[0])
            return None
    return None


def load(path: Path, options: LoadOptions, columns: Columns, X: np.ndarray) -> TorchScriptModel:
    """Load a ``.pt2`` file with ``torch.export.load`` (a ModelError naming it if it cannot
    be), check it takes any number of rows, and check its module on X as a TorchScript
    module is checked."""
    import torch

    try:
        program = torch.export.load(str(path))
    except Exception as exc:  # torch raises RuntimeError/KeyError/... for foreign archives
        raise ModelError(
            f"cannot load model file '{path}' as a torch.export program: {first_line(exc)}"
        ) from None
    return from_program(program, path, options, columns, X)


def from_program(
    program: Any, label: Path | Any, options: LoadOptions, columns: Columns, X: np.ndarray
) -> TorchScriptModel:
    """The adapter of an ``ExportedProgram`` (from a file, or given as an object)."""
    rows = fixed_batch(program)
    if rows is not None:  # it takes that many rows only
        raise ModelError(
            f"model '{label}' was exported for batches of exactly {rows} rows; "
            f"local effects need any number of rows: {EXPORT_HINT}"
        )
    return TorchScriptModel.from_module(program.module(), label, options, columns, X, fmt=FORMAT)
