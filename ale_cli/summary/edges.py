"""``--edges FILE.json``: bin edges per feature, from a summary (the edges of its features
with status ``ok``) or a plain mapping ``{"feature": [z_0, ..., z_K], ...}``; every list
at least 2 finite numbers, strictly increasing."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ale_cli.errors import InputError
from ale_cli.io.jsonio import parse_json, read_bytes
from ale_cli.summary.validate import edges_problem, validate_summary


@dataclass(frozen=True)
class EdgesFile:
    """The edges read from one file (``kind`` ``summary`` or ``mapping``): strictly
    increasing (K+1,) per feature, in the file's order."""

    path: Path
    sha256: str
    kind: str
    edges: dict[str, np.ndarray] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        """Where the edges came from, for a summary's ``params``."""
        return {"path": str(self.path), "sha256": self.sha256, "kind": self.kind}


def _check(path: Path, name: str, values: Any) -> np.ndarray:
    where = f"edges file '{path}', feature '{name}'"
    if not isinstance(values, list) or len(values) < 2:
        raise InputError(f"{where}: expected a list of at least 2 numbers")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise InputError(f"{where}: expected finite numbers, got {_shown(v)}")
    problem = edges_problem(values)
    if problem is not None:
        raise InputError(f"{where}: {problem}")
    return np.asarray(values, dtype=np.float64)


def _shown(value: Any) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, float) and math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, str):
        return f"'{value[:40]}'"
    if isinstance(value, int | float | None):
        return str(value)[:40]
    return f"a {type(value).__name__}"


def read_edges(path: str | Path) -> EdgesFile:
    """Read and check the edges in ``path``; one-line InputError naming file and feature."""
    path = Path(path)
    content = read_bytes(path, "edges file")
    data = parse_json(content, path, "edges file")
    if not isinstance(data, dict):
        raise InputError(
            f"edges file '{path}' must hold a summary or a mapping of feature names to edge lists"
        )
    if "features" in data and "estimator" in data:
        kind = "summary"
        validate_summary(path, data)
        raw = {f["name"]: f["edges"] for f in data["features"] if f["status"] == "ok"}
    else:
        kind = "mapping"
        raw = {str(k): v for k, v in data.items()}
    if not raw:
        raise InputError(f"edges file '{path}' has no edges")
    edges = {name: _check(path, name, values) for name, values in raw.items()}
    return EdgesFile(path=path, sha256=hashlib.sha256(content).hexdigest(), kind=kind, edges=edges)
