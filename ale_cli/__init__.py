"""ale: Accumulated Local Effects for trained models, from the command line and from Python.

The Python API is :mod:`ale_cli.api`; its names are also here, imported on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

#: the names :mod:`ale_cli.api` exports (its ``__all__``)
API = (
    "FeatureSummary",
    "ModelInputs",
    "Predictor",
    "Store",
    "Summary",
    "classic",
    "compute",
    "interact",
    "plot",
    "read_store",
    "read_summary",
    "rebin",
    "regional",
    "report",
    "rhale",
    "run",
    "summary_frame",
    "write_summary",
)


def __getattr__(name: str) -> Any:
    if name in API:
        return getattr(importlib.import_module("ale_cli.api"), name)
    raise AttributeError(f"module 'ale_cli' has no attribute {name!r}")
