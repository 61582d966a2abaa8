"""The local-effects store: one ``.npz`` file per (model, data, options).

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

Stores are written atomically (temporary file, then rename) and are reused as
a cache only when their ``cache_key`` (a hash of the model bytes, the data
bytes and every option that changes the result) matches.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ale_cli.adapters.files import atomic_write
from ale_cli.adapters.jsonio import to_jsonable
from ale_cli.adapters.validate import load_npz, validate_npz
from ale_cli.errors import InputError

SCHEMA_VERSION = 2
REQUIRED_ARRAYS = ("X", "local_effects", "prediction", "feature_names", "meta")
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
)
PAIRS = "pairs"
MIXED = "mixed_derivatives"


@dataclass(frozen=True)
class Store:
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


def write_store(path: str | Path, store: Store) -> None:
    """Write ``store`` to ``path`` atomically (never a partial file at ``path``)."""
    n, d = store.X.shape
    f = len(store.feature_names)
    if store.local_effects.shape != (n, f) or store.prediction.shape != (n,):
        raise ValueError("store arrays have inconsistent shapes")
    if len(store.input_names) != d or not set(store.feature_names) <= set(store.input_names):
        raise ValueError("store feature names are not among its input names")
    # the keys every reader checks, filled in for stores built by hand (tests, the API)
    defaults = {"schema_version": SCHEMA_VERSION, "n_rows": n}
    meta = json.dumps(to_jsonable(defaults | store.meta), allow_nan=False)
    arrays = {
        "X": np.ascontiguousarray(store.X, dtype=np.float64),
        "local_effects": np.ascontiguousarray(store.local_effects, dtype=np.float64),
        "prediction": np.ascontiguousarray(store.prediction, dtype=np.float64),
        "feature_names": np.array(store.feature_names, dtype=np.str_),
        "input_names": np.array(store.input_names, dtype=np.str_),
        "meta": np.array(meta, dtype=np.str_),
        **store.extra,
    }
    with atomic_write(path) as fh:
        np.savez(fh, **arrays)


def _open(path: Path) -> Any:
    if not path.exists():
        raise InputError(f"store '{path}' does not exist; create it with 'ale compute'")
    if path.is_dir():
        raise InputError(f"store '{path}' is a directory, expected an .npz file")
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError, zipfile.BadZipFile, EOFError):
        raise InputError(
            f"'{path}' is not a local-effects store (.npz from 'ale compute')"
        ) from None


def _parse_meta(path: Path, npz: Any) -> dict[str, Any]:
    if "meta" not in npz.files:
        raise InputError(f"'{path}' is not a local-effects store: it has no 'meta' array")
    try:
        meta = json.loads(str(npz["meta"][()]))
    except (ValueError, TypeError):
        raise InputError(f"store '{path}' has an unreadable 'meta' array") from None
    if not isinstance(meta, dict):
        raise InputError(f"store '{path}' has an unreadable 'meta' array")
    version = meta.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int) or version > SCHEMA_VERSION:
        raise InputError(
            f"store '{path}' has schema_version {str(version)[:40]}; "
            f"this ale reads up to {SCHEMA_VERSION}"
        )
    return meta


def read_meta(path: str | Path) -> dict[str, Any]:
    """The meta of a store, after checking the whole file (:func:`validate_npz`: one read
    of the file, the big arrays are not kept); a damaged store is an InputError."""
    path = Path(path)
    with _open(path) as npz:
        meta = _parse_meta(path, npz)
        validate_npz(path, npz, meta)
        return meta


def read_store(path: str | Path) -> Store:
    """Load a store written by :func:`write_store`, checking its arrays and shapes."""
    path = Path(path)
    with _open(path) as npz:
        meta = _parse_meta(path, npz)
        missing = [name for name in REQUIRED_ARRAYS if name not in npz.files]
        if missing:
            raise InputError(f"store '{path}' lacks the array(s) {', '.join(missing)}")
        arrays = load_npz(path, npz, meta)
    X = arrays.pop("X")
    effects = arrays.pop("local_effects")
    prediction = arrays.pop("prediction")
    names = tuple(str(s) for s in arrays.pop("feature_names"))
    inputs = tuple(str(s) for s in arrays.pop("input_names", names))
    arrays.pop("meta")
    if (
        X.ndim != 2
        or effects.ndim != 2
        or effects.shape[0] != X.shape[0]
        or prediction.shape != (X.shape[0],)
    ):
        raise InputError(f"store '{path}' has arrays of inconsistent shapes")
    if len(inputs) != X.shape[1]:
        raise InputError(f"store '{path}' has {len(inputs)} input names for {X.shape[1]} columns")
    if len(names) != effects.shape[1]:
        raise InputError(
            f"store '{path}' has {len(names)} feature names for {effects.shape[1]} "
            "columns of local effects"
        )
    unknown = [n for n in names if n not in inputs]
    if unknown:
        raise InputError(f"store '{path}': feature '{unknown[0]}' is not one of its inputs")
    return Store(
        input_names=inputs,
        X=X,
        local_effects=effects,
        prediction=prediction,
        feature_names=names,
        meta=meta,
        extra=arrays,
    )
