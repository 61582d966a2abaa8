"""The chunk kernel of ``ale compute``: a chunk of rows in, its store rows and what the
store's meta needs out, as one mergeable state (:class:`Computed`). Rows with NaN or
infinite model values are refused naming them, or dropped and counted
(``drop_nonfinite``); the same kernel runs on a whole table, a stream and Dask partitions."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ale_cli.data.source import Chunk
from ale_cli.data.sources import READ, Reads
from ale_cli.estimators.levels import LEVEL_DOWN, LEVEL_UP, LevelPlan, level_arrays
from ale_cli.models.base import Effects, Model
from ale_cli.models.checks import row_list, screen_rows
from ale_cli.models.mixed import require_mixed_derivatives
from ale_cli.store.format import split_outputs
from ale_cli.store.npz import MIXED

_NO_ROWS = np.empty(0, dtype=np.int64)


@dataclass(frozen=True)
class Computed:
    """A run's state over some rows, mergeable in row order: ``rows`` kept, ``seen`` by the
    model, ``nonfinite`` (those dropped, numbered from the first seen), ``reads``, the
    part stores written (``parts``) and their inputs' ``lo``/``hi``, ``timings``, and the
    chunk's store rows (``arrays``) until a sink writes them."""

    rows: int = 0
    seen: int = 0
    nonfinite: np.ndarray = field(default_factory=lambda: _NO_ROWS)
    reads: Reads = field(default_factory=Reads)
    parts: tuple[dict[str, Any], ...] = ()
    lo: np.ndarray | None = None
    hi: np.ndarray | None = None
    timings: Mapping[str, float] = field(default_factory=dict)
    arrays: Mapping[str, np.ndarray] | None = None

    def merge(self, other: Computed) -> Computed:
        """The state of these rows followed by ``other``'s (rows written by then)."""
        if self.arrays is not None or other.arrays is not None:
            raise RuntimeError("a state's rows are merged before a sink wrote them")
        timings = dict(self.timings)
        for key, value in other.timings.items():
            timings[key] = timings.get(key, 0.0) + value
        return Computed(
            rows=self.rows + other.rows,
            seen=self.seen + other.seen,
            nonfinite=np.concatenate([self.nonfinite, other.nonfinite + self.seen]),
            reads=self.reads.merge(other.reads),
            parts=self.parts + other.parts,
            lo=_pick(np.minimum, self.lo, other.lo),
            hi=_pick(np.maximum, self.hi, other.hi),
            timings=timings,
        )

    def note(self, model_path: str) -> str | None:
        """The note naming the rows dropped for non-finite model values (None: none)."""
        n = len(self.nonfinite)
        if not n:
            return None
        return (
            f"dropped {n} row{'s' if n != 1 else ''} where model '{model_path}' gave NaN or "
            f"infinite values ({row_list(self.nonfinite)})"
        )


def merge_computed(a: Computed, b: Computed) -> Computed:
    """``a.merge(b)`` (a module-level function: it travels to Dask workers)."""
    return a.merge(b)


def _pick(fn: Any, a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    return b if a is None else a if b is None else fn(a, b)


@dataclass(frozen=True)
class LevelJumps:
    """The features estimated per level: the input names, their plans and the rows per
    model call of the jumps to the adjacent levels."""

    names: tuple[str, ...]
    plans: tuple[LevelPlan, ...]
    eval_rows: int


@dataclass(frozen=True)
class LocalEffectsKernel:
    """A chunk's store rows: ``X`` (float32 with ``float32_x``), the ``local_effects`` of
    the inputs ``columns``, ``prediction``, the mixed derivatives of ``pair_cols`` and the
    per-level jumps ``levels``; float64 rows for a finite-difference model."""

    columns: tuple[int, ...]
    model_path: str
    drop_nonfinite: bool
    float64_model: bool = False
    float32_x: bool = False
    pair_cols: tuple[tuple[int, int], ...] = ()
    levels: LevelJumps | None = None

    def __call__(self, chunk: Chunk, model: Model) -> Computed:
        end = chunk.end.get(READ)
        reads = Reads() if end is None else Reads((end,))
        X = chunk["X"]
        if not len(X):
            return Computed(reads=reads, arrays={})
        timings: dict[str, float] = {}
        model_X = X.astype(np.float64, copy=False) if self.float64_model else X
        arrays = self._arrays(model, model_X, timings)
        arrays["X"] = X.astype(np.float32) if self.float32_x else X
        kept, dropped = self._screen(arrays, chunk.offset)
        kept = split_outputs(kept)
        return Computed(
            rows=len(kept["prediction"]),
            seen=len(X),
            nonfinite=dropped,
            reads=reads,
            timings=timings,
            arrays=kept,
        )

    def _arrays(self, model: Model, X: np.ndarray, timings: dict[str, float]) -> dict[str, Any]:
        """The store entries of one chunk of rows X (n, D), each step timed."""
        mixed = None
        if self.pair_cols:
            mixed = require_mixed_derivatives(model, self.model_path, param="pairs", hint="")
        t = time.perf_counter()
        effects: Effects = model.local_effects(X, features=list(self.columns), progress=None)
        timings["local_effects_s"] = time.perf_counter() - t
        arrays = {"X": X, "local_effects": effects.local_effects, "prediction": effects.prediction}
        if effects_dtype(model) == np.float32:  # float32 numbers: exact in float32
            arrays["local_effects"] = effects.local_effects.astype(np.float32)
            arrays["prediction"] = effects.prediction.astype(np.float32)
        if mixed is not None:
            t = time.perf_counter()
            arrays[MIXED] = mixed(X, list(self.pair_cols), progress=None)
            timings["mixed_derivatives_s"] = time.perf_counter() - t
        if self.levels is not None and self.levels.plans:
            t = time.perf_counter()
            jumps = self.levels
            arrays |= level_arrays(
                model.predict, X, jumps.names, jumps.plans, eval_rows=jumps.eval_rows
            )
            timings["level_jumps_s"] = time.perf_counter() - t
        return arrays

    def _screen(
        self, arrays: dict[str, np.ndarray], offset: int
    ) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """The arrays without their rows of non-finite model values, and those rows;
        refused naming them without ``drop_nonfinite``."""
        checks = [("predictions", arrays["prediction"], 0)]
        checks.append(("local effects", arrays["local_effects"], 0))
        if MIXED in arrays:
            checks.append(("mixed derivatives", arrays[MIXED], 1))
        if LEVEL_UP in arrays:  # the model moved to the adjacent levels
            checks += [
                ("jumps to the adjacent levels", arrays[a], 0) for a in (LEVEL_UP, LEVEL_DOWN)
            ]
        found = screen_rows(
            self.model_path, len(arrays["prediction"]), checks, drop=self.drop_nonfinite,
            offset=offset, allow_empty=True,
        )  # fmt: skip
        if not len(found.dropped):
            return arrays, _NO_ROWS
        keep = found.keep
        kept = {k: (v[:, keep] if k == MIXED else v[keep]) for k, v in arrays.items()}
        return kept, np.asarray(found.dropped, dtype=np.int64)


def effects_dtype(model: Model) -> type[np.floating]:
    """float32 for a float32 model differentiated by autodiff (float32 holds its numbers
    exactly), else float64."""
    if model.method == "autodiff" and model.describe().get("dtype") == "float32":
        return np.float32
    return np.float64


def without_rows(state: Computed) -> Computed:
    """``state`` once its rows are written."""
    return replace(state, arrays=None)
