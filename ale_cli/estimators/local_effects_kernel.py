"""The chunk kernel of ``ale compute`` (a chunk of rows in, its store rows and the meta's
needs out, as one mergeable :class:`Computed`) and its sinks: one store file written here
(:class:`FileSink`), or a directory store whose parts are written where they are computed
(:class:`PartStoreSink`; a failed part leaves :data:`STOP` and the others stop)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ale_cli.data.source import Chunk
from ale_cli.data.sources import READ, Reads
from ale_cli.errors import RunError
from ale_cli.estimators.levels import LEVEL_DOWN, LEVEL_UP, LevelPlan, level_arrays
from ale_cli.models.base import Effects, Model
from ale_cli.models.checks import screen_rows
from ale_cli.models.finite_diff import DEFAULT_EVAL_ROWS
from ale_cli.models.mixed import require_mixed_derivatives
from ale_cli.store.format import split_outputs
from ale_cli.store.npz import MIXED, PAIRS, StoreWriter
from ale_cli.store.parts import PartStoreWriter, part_name

_NO_ROWS = np.empty(0, dtype=np.int64)


@dataclass(frozen=True)
class Computed:
    """A run's state over some rows, mergeable in row order: ``rows`` kept, ``seen``, the
    ``nonfinite`` ones dropped (numbered from the first seen), the part stores written and
    their inputs' ``lo``/``hi``, and the chunk's store rows until a sink writes them."""

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


def _pick(fn: Any, a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    return b if a is None else a if b is None else fn(a, b)


@dataclass(frozen=True)
class LocalEffectsKernel:
    """A chunk's store rows: ``X`` (float32 with ``float32_x``), the ``local_effects`` of
    the inputs ``columns``, ``prediction``, the mixed derivatives of ``pair_cols`` and the
    jumps to the adjacent ``levels`` (of the inputs ``names``, ``eval_rows`` rows per model
    call); float64 rows for a finite-difference model."""

    columns: tuple[int, ...]
    model_path: str
    drop_nonfinite: bool
    float64_model: bool = False
    float32_x: bool = False
    pair_cols: tuple[tuple[int, int], ...] = ()
    levels: tuple[LevelPlan, ...] = ()
    names: tuple[str, ...] = ()
    eval_rows: int = DEFAULT_EVAL_ROWS

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
        if model.method == "autodiff" and model.describe().get("dtype") == "float32":
            # a float32 model differentiated by autodiff: float32 holds its numbers exactly
            arrays["local_effects"] = effects.local_effects.astype(np.float32)
            arrays["prediction"] = effects.prediction.astype(np.float32)
        if mixed is not None:
            t = time.perf_counter()
            arrays[MIXED] = mixed(X, list(self.pair_cols), progress=None)
            timings["mixed_derivatives_s"] = time.perf_counter() - t
        if self.levels:
            t = time.perf_counter()
            arrays |= level_arrays(
                model.predict, X, self.names, self.levels, eval_rows=self.eval_rows
            )
            timings["level_jumps_s"] = time.perf_counter() - t
        return arrays

    def _screen(
        self, arrays: dict[str, np.ndarray], offset: int
    ) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """The arrays without their rows of non-finite model values, and those rows."""
        checks = [("predictions", arrays["prediction"], 0)]
        checks.append(("local effects", arrays["local_effects"], 0))
        if MIXED in arrays:
            checks.append(("mixed derivatives", arrays[MIXED], 1))
        if LEVEL_UP in arrays:  # the model moved to the adjacent levels (up or down)
            jumps = np.concatenate([arrays[LEVEL_UP], arrays[LEVEL_DOWN]], axis=-1)
            checks.append(("jumps to the adjacent levels", jumps, 0))
        found = screen_rows(
            self.model_path, len(arrays["prediction"]), checks, drop=self.drop_nonfinite,
            offset=offset, allow_empty=True,
        )  # fmt: skip
        if not len(found.dropped):
            return arrays, _NO_ROWS
        keep = found.keep
        kept = {k: (v[:, keep] if k == MIXED else v[keep]) for k, v in arrays.items()}
        return kept, np.asarray(found.dropped, dtype=np.int64)


#: a file the run leaves in a directory store's temporary folder when a part failed
STOP = ".stop"


@dataclass(frozen=True)
class StoreColumns:
    """The names a store records: the explained features, the inputs, the pairs, and
    what each part store's meta needs to read its row arrays (``outputs``, ``levels``)."""

    features: tuple[str, ...]
    inputs: tuple[str, ...]
    pairs: tuple[tuple[str, str], ...] = ()
    part_meta: Mapping[str, Any] = field(default_factory=dict)

    def add_pairs(self, writer: StoreWriter) -> None:
        if self.pairs:
            writer.add_array(PAIRS, np.array(self.pairs, dtype=np.str_).reshape(-1, 2))


@dataclass(frozen=True)
class FileSink:
    """A store file written in this process: the sink of the run (never shipped; every
    part's rows into the one file, in row order), then :meth:`finish`."""

    writer: StoreWriter
    columns: StoreColumns = StoreColumns((), ())

    def part(self, index: int) -> AbstractContextManager[FileSink]:
        return nullcontext(self)

    def stop(self) -> None:
        return None

    def write(self, state: Computed) -> Computed:
        if state.rows:
            self.writer.add(state.arrays or {})
        return replace(state, arrays=None)

    def done(self, state: Computed) -> Computed:
        return state

    def finish(
        self, meta: dict[str, Any], state: Computed, extras: Mapping[str, np.ndarray]
    ) -> None:
        """Write the pairs, ``extras`` (a secant model's grids) and the manifest."""
        self.columns.add_pairs(self.writer)
        for name, array in extras.items():
            self.writer.add_array(name, array)
        self.writer.finish(
            feature_names=self.columns.features, input_names=self.columns.inputs, meta=meta
        )


class _PartWriter:
    """One part's rows into a part store of their own (opened at the first row kept)."""

    def __init__(self, sink: PartStoreSink, path: Path) -> None:
        self.sink = sink
        self.path = path
        self.writer: StoreWriter | None = None

    def __enter__(self) -> _PartWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.writer is not None:  # a failure before done(): the part is discarded
            writer, self.writer = self.writer, None
            writer.__exit__(*exc)

    def write(self, state: Computed) -> Computed:
        folder = self.path.parent
        if (folder / STOP).exists() or not folder.is_dir():  # another part failed
            raise RunError(f"stopped computing part {self.path.name}: the run failed")
        if not state.rows:
            return replace(state, arrays=None)
        arrays = state.arrays or {}
        if self.writer is None:
            self.writer = StoreWriter(self.path).__enter__()
        self.writer.add(arrays)
        X = arrays["X"]
        lo, hi = X.min(axis=0).astype(np.float64), X.max(axis=0).astype(np.float64)
        return replace(state, arrays=None, lo=lo, hi=hi)

    def done(self, state: Computed) -> Computed:
        """The part store finished (none: every row dropped): its manifest entry."""
        if self.writer is None:
            return state
        end = state.reads.ends[-1] if state.reads.ends else None
        where: dict[str, Any] = {} if end is None else {"source": end.file}
        if end is not None and end.row_groups is not None:
            where["row_groups"] = list(end.row_groups)
        columns = self.sink.columns
        meta = {"schema_version": 3, "n_rows": state.rows, **columns.part_meta, **where}
        columns.add_pairs(self.writer)
        self.writer.finish(feature_names=columns.features, input_names=columns.inputs, meta=meta)
        writer, self.writer = self.writer, None
        writer.__exit__(None, None, None)
        entry = {"file": self.path.name, "rows": state.rows, "sha256": writer.sha256, **where}
        if end is not None:
            entry["source"] = Path(end.file).as_posix()
        entry["arrays"] = list(writer.arrays)  # for the manifest; taken out there
        return replace(state, parts=(*state.parts, entry))


@dataclass(frozen=True)
class PartStoreSink:
    """The sink of a directory store: part ``i`` of the run is written as the part store
    ``folder/part-0000i.npz`` where it is computed."""

    folder: str
    columns: StoreColumns

    def part(self, index: int) -> AbstractContextManager[_PartWriter]:
        return _PartWriter(self, Path(self.folder) / part_name(index))

    def stop(self) -> None:
        with suppress(OSError):
            (Path(self.folder) / STOP).touch()


def _finish_parts(
    writer: PartStoreWriter,
    columns: StoreColumns,
    meta: dict[str, Any],
    state: Computed,
    extras: Mapping[str, np.ndarray],
) -> None:
    """Write a directory store's manifest: ``meta``, the parts and the inputs' ranges."""
    if extras:
        raise RuntimeError("a directory store holds no secant grids")
    if state.lo is None or state.hi is None:  # unreachable: n_rows > 0
        raise RuntimeError("no part holds rows")
    writer.finish(
        meta,
        feature_names=columns.features,
        input_names=columns.inputs,
        parts=[{k: v for k, v in p.items() if k != "arrays"} for p in state.parts],
        x_min=state.lo,
        x_max=state.hi,
        arrays=state.parts[0]["arrays"],
    )


@contextmanager
def store_output(
    out: Path, columns: StoreColumns, *, parts: bool
) -> Iterator[tuple[FileSink | PartStoreSink, Callable[..., None]]]:
    """The store at ``out`` being written, atomically (a directory store with ``parts``,
    else one file): its sink, and ``finish(meta, state, extras)``."""
    if parts:
        with PartStoreWriter(out) as writer:
            sink = PartStoreSink(str(writer.tmp), columns)
            yield sink, partial(_finish_parts, writer, columns)
    else:
        with StoreWriter(out) as writer:
            file = FileSink(writer, columns)
            yield file, file.finish
