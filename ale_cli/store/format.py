"""The local-effects store's format: one ``.npz`` file per (model, data, options).

Arrays (all loadable with ``np.load(path, allow_pickle=False)``), for N rows,
D model inputs and F explained features (``ale compute --features``; F = D by
default):

=================  ===========  ==========================================
``X``              (N, D) f8    every model input at each row, in the
                                model's column order
``input_names``    (D,) unicode the model's inputs (schema 2; a schema-1
                                store has none: its inputs are its features)
``local_effects``  (N, F) f8    d prediction / d x_j of each explained feature
``prediction``     (N,) f8      the model output that was differentiated
``feature_names``  (F,) unicode the explained features, in the order of
                                the columns of ``local_effects``
``meta``           0-d unicode  JSON text, see :data:`META_KEYS`
=================  ===========  ==========================================

Optional arrays (``ale compute --pairs a,b``; the meta's ``pairs`` lists them):

=====================  ===========  ======================================
``pairs``              (P, 2) str   feature pairs (a, b)
``mixed_derivatives``  (P, N) f8    d2 prediction / dx_a dx_b at each row
=====================  ===========  ======================================

Optional arrays of the features estimated per level (``ale compute`` on text,
``categorical`` or ``discrete`` columns; the meta's ``levels`` lists, per
column, the feature, its kind, its sorted distinct ``values``, their estimated
``order`` and the text ``labels`` of a text column):

================  ===========  ===========================================
``level_up``      (N, L) f8    f(row moved to its next level) - f(row);
                               0 at the last level
``level_down``    (N, L) f8    f(row) - f(row moved to its previous
                               level); 0 at the first level
================  ===========  ===========================================

Stores are written atomically (temporary file, then rename) and are reused as
a cache only when their ``cache_key`` (a hash of the model bytes, the data
bytes and every option that changes the result) matches.

Chunked stores (schema 3, written by ``ale compute`` through
:class:`~ale_cli.store.writer.StoreWriter`): the row arrays are split into chunks of consecutive
rows, one zip entry per chunk and array, ``X.00000``, ``local_effects.00000``,
``prediction.00000`` (and ``mixed_derivatives.00000``, shape (P, n_i)), ...;
the meta's ``chunks`` manifest lists ``rows`` (n_i per chunk), ``arrays``,
the per-input ``x_min`` / ``x_max`` over all rows and ``prediction``: the count,
mean and 101 percentiles of the finite predictions, as every estimator's summary
reports them (so that they do not read and sort N predictions again; absent when
no prediction is finite, and in stores written before). The archive is zip64 (no
4 GiB limit) and written entry by entry, so compute never holds more than
one chunk. ``X`` keeps the source dtype (float32 data stay float32: the values
are those float32 numbers exactly). ``local_effects`` and ``prediction`` are
float32 when a float32 model is differentiated by autodiff (its gradients and
outputs are float32 numbers, held exactly, in half the space) and float64
otherwise (finite-difference quotients carry float64 digits); estimators
accumulate in float64 either way. ``mixed_derivatives`` are float64.
:func:`~ale_cli.store.npz.read_store` concatenates the chunks as float64 (as the
older layouts hold them); :meth:`~ale_cli.store.reader.StoreFile.chunks` yields them
one at a time, as stored, for the streaming estimators.

The store's identity (the ``sha256`` a summary records of its store) is recorded in
the meta when the store is written: ``content_sha256``, the sha256 of the listing of
every member but the meta (:func:`content_digest`: each member's name, CRC-32 and
size, in the archive's order). A reader checks each member's bytes against its CRC-32
as it reads them (:mod:`ale_cli.store.verify`), so the bytes it uses are those the
digest names; the digest itself is compared with the archive's listing when the
identity is taken (:func:`ale_cli.store.reader.file_sha256`), which reads no array.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ale_cli.data.source import Chunk
from ale_cli.errors import InputError
from ale_cli.io.jsonio import to_jsonable

SCHEMA_VERSION = 3
REQUIRED_ARRAYS = ("X", "local_effects", "prediction", "feature_names", "meta")
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
    "content_sha256",  # DIGEST: the store's identity, recorded when it is written
)
PAIRS = "pairs"
MIXED = "mixed_derivatives"
#: optional row arrays (N, L) of the features estimated per level (meta ``levels``)
LEVEL_ARRAYS = ("level_up", "level_down")
#: optional arrays of a store of secants (method "secant", :mod:`ale_cli.models.secant`):
#: the fine grids of the explained features, flat, and where each feature's starts (F+1,)
FINE_EDGES = "fine_edges"
FINE_OFFSETS = "fine_offsets"
#: the meta key of the store's identity, recorded when it is written (:func:`content_digest`)
DIGEST = "content_sha256"


class _Columns:
    """Where a store's named columns are: shared by :class:`Store` (in memory) and
    :class:`~ale_cli.store.reader.StoreFile` (read chunk by chunk)."""

    feature_names: tuple[str, ...]
    input_names: tuple[str, ...]

    def feature_index(self, name: str) -> int:
        """Column of ``local_effects`` of feature ``name``; InputError if it is not explained."""
        try:
            return self.feature_names.index(name)
        except ValueError:
            raise InputError(
                f"store has no feature '{name}' (features: {', '.join(self.feature_names)})"
            ) from None

    def input_index(self, name: str) -> int:
        """Column of X of the model input ``name``; InputError listing the inputs if unknown."""
        try:
            return self.input_names.index(name)
        except ValueError:
            raise InputError(
                f"store has no input '{name}' (inputs: {', '.join(self.input_names)})"
            ) from None


@dataclass(frozen=True)
class Store(_Columns):
    """The contents of a store file.

    Attributes
    ----------
    X : ndarray, shape (N, D), float64
        Every model input.
    local_effects : ndarray, shape (N, F), float64
        The local effects of the explained features.
    prediction : ndarray, shape (N,), float64
    feature_names : tuple of str, length F
        The explained features.
    meta : dict
        Provenance and settings, keys :data:`META_KEYS`.
    extra : dict of str to ndarray
        Optional further arrays (later schema additions), kept on round trip.
    input_names : tuple of str, length D
        The model's inputs, the columns of X (default: ``feature_names``).
    """

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
        """N, the rows of X."""
        return int(self.X.shape[0])

    def feature_data(self, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """The values (N, F') and local effects (N, F') of the explained features ``names``."""
        e_cols = [self.feature_index(n) for n in names]
        x_cols = [self.input_index(n) for n in names]
        if x_cols == list(range(self.X.shape[1])) and e_cols == x_cols:
            return self.X, self.local_effects
        if e_cols == list(range(self.local_effects.shape[1])):
            return np.ascontiguousarray(self.X[:, x_cols]), self.local_effects
        return (
            np.ascontiguousarray(self.X[:, x_cols]),
            np.ascontiguousarray(self.local_effects[:, e_cols]),
        )

    def parts(self) -> tuple[Store, ...]:
        """A store in memory is one part (:class:`~ale_cli.data.source.Source`)."""
        return (self,)

    def chunks(self, arrays: Sequence[str] = ROW_ARRAYS) -> Iterator[Chunk]:
        """The row arrays ``arrays`` as one chunk (mixed derivatives (P, N), as stored)."""
        rows = {"X": self.X, "local_effects": self.local_effects, "prediction": self.prediction}
        yield Chunk(0, {name: rows[name] if name in rows else self.extra[name] for name in arrays})

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
    """The store's identity: the sha256 of the listing of its members but the meta,
    each ``(name, crc, size)`` (name without ``.npy``, its CRC-32 and its size in bytes)
    as a line ``name crc size`` in the archive's order.

    >>> content_digest([("X", 0x1234, 128)])[:12]
    'b64a0da15428'
    """
    listing = "".join(f"{name} {crc:08x} {size}\n" for name, crc, size in members)
    return hashlib.sha256(listing.encode()).hexdigest()
