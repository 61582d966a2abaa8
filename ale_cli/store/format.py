"""The local-effects store's format (docs/store-and-summary.md): names, the in-memory
:class:`Store`, the cache key and the recorded identity (:func:`content_digest`)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ale_cli.data.source import Chunk
from ale_cli.errors import InputError
from ale_cli.io.jsonio import to_jsonable

SCHEMA_VERSION = 3
#: the arrays split into row chunks in a schema-3 store
ROW_ARRAYS = ("X", "local_effects", "prediction")
META_KEYS = (
    "schema_version",
    "tool",
    "created",
    "model",
    "data",
    "feature_names",
    "inputs",
    "features",
    "method",
    "output",
    "options",
    "n_rows",
    "timings",
    "cache_key",
    "content_sha256",
)
PAIRS = "pairs"
MIXED = "mixed_derivatives"
#: optional row arrays (N, L) of the features estimated per level (meta ``levels``)
LEVEL_ARRAYS = ("level_up", "level_down")
#: a store of secants' fine grids, flat, and where each feature's starts (F+1,)
FINE_EDGES = "fine_edges"
FINE_OFFSETS = "fine_offsets"
#: row arrays held once per output (meta ``outputs``; :func:`output_entry`)
PER_OUTPUT = ("local_effects", "prediction", *LEVEL_ARRAYS)


def output_entry(name: str, k: int) -> str:
    """The array of output ``k`` of row array ``name`` (``name`` itself for output 0).

    >>> output_entry("local_effects", 0), output_entry("prediction", 2)
    ('local_effects', 'prediction.out2')
    """
    return name if k == 0 or name not in PER_OUTPUT else f"{name}.out{k}"


def split_outputs(arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Row arrays whose axis 1 is the output as one array per output (:func:`output_entry`)."""
    if arrays["prediction"].ndim < 2:
        return dict(arrays)
    out = {n: a for n, a in arrays.items() if n not in PER_OUTPUT}
    for name in (n for n in PER_OUTPUT if n in arrays):
        for k in range(arrays[name].shape[1]):
            out[output_entry(name, k)] = np.ascontiguousarray(arrays[name][:, k])
    return out


def output_records(meta: Mapping[str, Any]) -> list[Any]:
    """The outputs a store holds, the first the meta's ``output``."""
    return list(meta.get("outputs") or [meta.get("output")])


def one_output(
    meta: Mapping[str, Any],
    where: str,
    what: str,
    fix: str = "compute a store of that output with {param} NAME",
) -> None:
    """InputError when the store of ``meta`` holds several outputs and ``what`` explains one."""
    records = output_records(meta)
    if len(records) > 1:
        names = ", ".join(output_label(r) for r in records)
        raise InputError(
            f"{where} holds {len(records)} outputs ({names}); {what} explains one: {fix}",
            param="output",
        )


def output_label(record: Mapping[str, Any] | None) -> str:
    """How a summary's record names an output (its ``name``, else its ``selector``).

    >>> output_label({"selector": "proba:yes", "name": "proba:1"})
    'proba:1'
    """
    record = record or {}
    return str(record.get("name") or record.get("selector") or "output")


#: the meta key of the store's identity (:func:`content_digest`)
DIGEST = "content_sha256"


class _Columns:
    """Where a store's named columns are (:class:`Store` and ``StoreFile``)."""

    feature_names: tuple[str, ...]
    input_names: tuple[str, ...]

    def feature_index(self, name: str) -> int:
        """Column of ``local_effects`` of feature ``name``; InputError if it is not explained."""
        return _index(self.feature_names, name, "feature")

    def input_index(self, name: str) -> int:
        """Column of X of the model input ``name``; InputError listing the inputs if unknown."""
        return _index(self.input_names, name, "input")


def _index(names: tuple[str, ...], name: str, kind: str) -> int:
    if name not in names:
        raise InputError(f"store has no {kind} '{name}' ({kind}s: {', '.join(names)})")
    return names.index(name)


@dataclass(frozen=True)
class Store(_Columns):
    """A store in memory: ``X`` (N, D), ``local_effects`` (N, F), ``prediction`` (N,),
    ``feature_names`` (F), ``meta``, ``extra`` arrays, ``input_names`` (D; default: F)."""

    X: np.ndarray
    local_effects: np.ndarray
    prediction: np.ndarray
    feature_names: tuple[str, ...]
    meta: dict[str, Any]
    extra: dict[str, np.ndarray] = field(default_factory=dict)
    input_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.input_names:
            object.__setattr__(self, "input_names", tuple(self.feature_names))

    @property
    def n_rows(self) -> int:
        return int(self.X.shape[0])

    def feature_data(self, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The values (N, F') and local effects (N, F') of the explained features ``names``."""

        def columns(a: np.ndarray, cols: list[int]) -> np.ndarray:
            return a if cols == list(range(a.shape[1])) else np.ascontiguousarray(a[:, cols])

        return (
            columns(self.X, [self.input_index(n) for n in names]),
            columns(self.local_effects, [self.feature_index(n) for n in names]),
        )

    def parts(self) -> tuple[Store, ...]:
        return (self,)

    def chunks(self, arrays: Sequence[str] = ROW_ARRAYS) -> Iterator[Chunk]:
        """The row arrays ``arrays`` as one chunk (mixed derivatives (P, N), as stored)."""
        rows = {"X": self.X, "local_effects": self.local_effects, "prediction": self.prediction}
        yield Chunk(0, {name: rows[name] if name in rows else self.extra[name] for name in arrays})

    def select_output(self, k: int) -> Store:
        """This store as output ``k`` (of :func:`output_records`) alone."""
        records = output_records(self.meta)
        if k == 0 and len(records) == 1:
            return self
        entries = {n: output_entry(n, k) for n in PER_OUTPUT}
        taken = {n: self.extra[e] for n, e in entries.items() if e in self.extra}
        taken |= {n: getattr(self, n) for n in ("local_effects", "prediction") if k == 0}
        kept = {n: a for n, a in self.extra.items() if ".out" not in n and n not in LEVEL_ARRAYS}
        kept |= {n: taken[n] for n in LEVEL_ARRAYS if n in taken}
        return replace(
            self, local_effects=taken["local_effects"], prediction=taken["prediction"],
            extra=kept, meta=self.meta | {"output": records[k], "outputs": None},
        )  # fmt: skip

    def mixed_derivatives(self) -> dict[tuple[str, str], np.ndarray]:
        """The cached mixed derivatives by pair (a, b), each (N,); empty if there are none."""
        if PAIRS not in self.extra or MIXED not in self.extra:
            return {}
        pairs = self.extra[PAIRS].reshape(-1, 2)
        values = self.extra[MIXED].reshape(len(pairs), -1)
        return {(str(a), str(b)): values[p] for p, (a, b) in enumerate(pairs)}


def cache_key(model_sha256: str, data_sha256: str, options: Mapping[str, Any]) -> str:
    """Hash of everything that determines a store's arrays."""
    payload = json.dumps(
        {"model": model_sha256, "data": data_sha256, "options": to_jsonable(options)},
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def chunk_entry(name: str, i: int) -> str:
    """The zip entry (without ``.npy``) of chunk ``i`` of the row array ``name``."""
    return f"{name}.{i:05d}"


def content_digest(members: Iterable[tuple[str, int, int]]) -> str:
    """The store's identity: the sha256 of the lines ``name crc size`` of its members but
    the meta, in the archive's order.

    >>> content_digest([("X", 0x1234, 128)])[:12]
    'b64a0da15428'
    """
    listing = "".join(f"{name} {crc:08x} {size}\n" for name, crc, size in members)
    return hashlib.sha256(listing.encode()).hexdigest()
