"""What every estimator returns (:class:`EstimateResult`) and the pieces of a summary they
all build alike: which features are not estimable and why, a feature's summary from its
bin statistics, where the numbers came from (:func:`store_info`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ale_cli.core.binstats import CellStats
from ale_cli.core.effect import effect_from_cells
from ale_cli.store.npz import store_sha256
from ale_cli.summary.model import FeatureSummary, InteractionSummary, Summary

if TYPE_CHECKING:
    from ale_cli.store.npz import Store, StoreFile

CATEGORICAL_REASON = "categorical feature (held fixed)"
CONSTANT_REASON = "single distinct value"
NO_EDGES_REASON = "no edges for this feature in the edges file"


@dataclass(frozen=True)
class EstimateResult:
    """One estimator run: the summary, timings and notes for the user (stderr)."""

    summary: Summary
    seconds: float
    timings: dict[str, float]
    notes: tuple[str, ...] = field(default_factory=tuple)


def not_estimable(name: str, reason: str, *, n_outside: int = 0) -> FeatureSummary:
    """The summary of a feature that could not be estimated, with the reason."""
    return FeatureSummary(name=name, status="not_estimable", reason=reason, n_outside=n_outside)


def no_rows_reason(edges: np.ndarray) -> str:
    """Why a feature none of whose rows is inside its ``edges`` is not estimable."""
    return f"no rows inside the given edges [{float(edges[0]):g}, {float(edges[-1]):g}]"


def column_ranges(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-column minimum and maximum of X (N, D); zeros when N = 0."""
    if X.shape[0] == 0:
        return np.zeros(X.shape[1]), np.zeros(X.shape[1])
    return X.min(axis=0), X.max(axis=0)


def skip_reasons(
    names: Sequence[str],
    lo: np.ndarray,
    hi: np.ndarray,
    categorical: Sequence[str],
    edges: Mapping[str, np.ndarray] | None = None,
) -> dict[str, str]:
    """Features that are not estimable (with given ``edges``: also those without), with
    the reason; the others are absent.

    >>> skip_reasons(["a", "b", "c"], np.array([0., 1., 0.]), np.array([1., 1., 2.]), ["c"])
    {'b': 'single distinct value', 'c': 'categorical feature (held fixed)'}
    """
    cats = set(categorical)
    skip: dict[str, str] = {}
    for j, name in enumerate(names):
        if name in cats:
            skip[name] = CATEGORICAL_REASON
        elif not hi[j] > lo[j]:
            skip[name] = CONSTANT_REASON
        elif edges is not None and name not in edges:
            skip[name] = NO_EDGES_REASON
    return skip


def summary_from_cells(
    name: str, edges: np.ndarray, cells: CellStats, *, n_outside: int, center: str
) -> FeatureSummary:
    """A feature's summary from the statistics of its bins (not estimable if all are empty)."""
    if cells.total == 0:
        return not_estimable(name, no_rows_reason(edges), n_outside=n_outside)
    effect = effect_from_cells(edges, cells, center=center)
    return FeatureSummary.from_effect(name, effect, n_outside=n_outside)


def utc_now() -> str:
    """The current UTC time, ISO 8601 to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def run_notes(features: Sequence[FeatureSummary | InteractionSummary]) -> tuple[str, ...]:
    """One line per not-estimable item, per item with rows outside its edges, per note."""
    notes: list[str] = []
    for f in features:
        if f.status != "ok":
            notes.append(f"{f.name}: not estimable ({f.reason})")
        if f.n_outside:
            notes.append(
                f"{f.name}: {f.n_outside} row{'s' if f.n_outside != 1 else ''} outside the "
                "given edges left out"
            )
        if f.note:
            notes.append(f"{f.name}: {f.note}")
    return tuple(notes)


def store_info(
    path: Path | None, store: Store | StoreFile, *, sha256: str | None = None
) -> dict[str, Any]:
    """The store's identity and the parts of its meta a summary's reader needs
    (``path`` None: a store built in memory, which has no file hash; ``sha256``: the
    file's hash when the caller has it already)."""
    meta = store.meta
    model = meta.get("model") or {}
    data = meta.get("data") or {}
    return {
        "path": None if path is None else str(path),
        "sha256": None if path is None else (sha256 or store_sha256(path)),
        # "object": the type of a model given as an object (no path; sha256 None: no hash)
        "model": {k: model.get(k) for k in ("path", "sha256", "format")}
        | ({"object": model["object"]} if "object" in model else {}),
        "data": {k: data.get(k) for k in ("path", "sha256")}
        | {"rows_nonfinite": int(data.get("rows_nonfinite", 0))},
        "method": meta.get("method"),
        "output": meta.get("output"),
        **({"outputs": meta["outputs"]} if meta.get("outputs") else {}),
        "n_rows": store.n_rows,
        "inputs": list(store.input_names),
    }
