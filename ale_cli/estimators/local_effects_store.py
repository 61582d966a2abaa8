"""Where ``ale compute`` writes: one store file in this process (:class:`FileSink`), or a
directory store (:class:`PartsOutput`) whose sink travels and writes each part of the run
as a part store on the worker that computed it; when a part fails, the sink leaves
:data:`STOP` in the folder and the other parts stop at their next chunk."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ale_cli.errors import RunError
from ale_cli.estimators.local_effects_kernel import Computed, without_rows
from ale_cli.store.npz import PAIRS, StoreWriter
from ale_cli.store.parts import PartStoreWriter, part_name

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
    part's rows into the one file, in row order; its own part writer), then :meth:`finish`."""

    writer: StoreWriter
    columns: StoreColumns = StoreColumns((), ())

    @property
    def sink(self) -> FileSink:
        return self

    def part(self, index: int) -> AbstractContextManager[FileSink]:
        return nullcontext(self)

    def stop(self) -> None:
        return None

    def write(self, state: Computed) -> Computed:
        if state.rows:
            self.writer.add(state.arrays or {})
        return without_rows(state)

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
            return without_rows(state)
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
        meta: dict[str, Any] = {"schema_version": 3, "n_rows": state.rows}
        meta |= self.sink.columns.part_meta
        if end is not None:
            meta["source"] = end.file
            if end.row_groups is not None:
                meta["row_groups"] = list(end.row_groups)
        self.sink.columns.add_pairs(self.writer)
        self.writer.finish(
            feature_names=self.sink.columns.features,
            input_names=self.sink.columns.inputs,
            meta=meta,
        )
        writer, self.writer = self.writer, None
        writer.__exit__(None, None, None)
        entry: dict[str, Any] = {
            "file": self.path.name,
            "rows": state.rows,
            "sha256": writer.sha256,
        }
        if end is not None:
            entry["source"] = Path(end.file).as_posix()
            if end.row_groups is not None:
                entry["row_groups"] = list(end.row_groups)
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
        try:
            (Path(self.folder) / STOP).touch()
        except OSError:
            pass


@dataclass
class PartsOutput:
    """A directory store being written: its sink, then :meth:`finish`."""

    writer: PartStoreWriter
    columns: StoreColumns

    @property
    def sink(self) -> PartStoreSink:
        return PartStoreSink(str(self.writer.tmp), self.columns)

    def finish(
        self, meta: dict[str, Any], state: Computed, extras: Mapping[str, np.ndarray]
    ) -> None:
        """Write the manifest: ``meta``, the parts, the inputs' ranges (no ``extras``:
        a model with them is computed on the whole table, in one file)."""
        if extras:
            raise RuntimeError("a directory store holds no secant grids")
        if state.lo is None or state.hi is None:  # unreachable: n_rows > 0
            raise RuntimeError("no part holds rows")
        parts = [{k: v for k, v in p.items() if k != "arrays"} for p in state.parts]
        self.writer.finish(
            meta,
            feature_names=self.columns.features,
            input_names=self.columns.inputs,
            parts=parts,
            x_min=state.lo,
            x_max=state.hi,
            arrays=state.parts[0]["arrays"],
        )


@contextmanager
def store_output(
    out: Path, columns: StoreColumns, *, parts: bool
) -> Iterator[FileSink | PartsOutput]:
    """The store at ``out`` being written, atomically: a directory store with ``parts``
    (an engine that runs the parts apart), else one file."""
    if parts:
        with PartStoreWriter(out) as writer:
            yield PartsOutput(writer, columns)
    else:
        with StoreWriter(out) as writer:
            yield FileSink(writer, columns)
