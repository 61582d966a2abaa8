"""``ale compute``: model + data -> local-effects store, with caching.

The library function :func:`compute` does the work; the CLI only parses
options, draws the progress bar and prints the one-line result.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from ale_cli import __version__
from ale_cli.adapters.data import data_sha256
from ale_cli.adapters.files import sha256_file
from ale_cli.adapters.store import (
    MIXED,
    PAIRS,
    SCHEMA_VERSION,
    Store,
    cache_key,
    read_meta,
    write_store,
)
from ale_cli.errors import InputError
from ale_cli.inputs import ModelInputs, Opened, open_inputs
from ale_cli.models.base import Effects, ProgressFn
from ale_cli.models.checks import screen_effects
from ale_cli.models.mixed import MixedFn, require_mixed_derivatives
from ale_cli.pairs import Pair, pair_columns


@dataclass(frozen=True)
class ComputeRequest:
    """What ``ale compute`` is asked: the model and data, the store to write, the pairs
    whose mixed derivatives to cache. The result-affecting part keys the cache."""

    inputs: ModelInputs
    out: Path
    pairs: tuple[Pair, ...] = ()

    def result_options(self) -> dict[str, Any]:
        """Options that change the store's arrays (batch size and trust do not)."""
        return self.inputs.result_options() | {"pairs": [list(p) for p in self.pairs]}


@dataclass(frozen=True)
class ComputeResult:
    """What one ``ale compute`` run did.

    ``cache_hit`` is True when an existing store was reused; ``reason`` says
    why a store at the output path was not reused (None if there was none).
    """

    out: Path
    cache_hit: bool
    n_rows: int
    n_features: int
    method: str
    seconds: float
    rows_dropped: int = 0
    reason: str | None = None
    notes: tuple[str, ...] = ()
    rows_nonfinite: int = 0


@dataclass(frozen=True)
class _Hashes:
    """The inputs' content hashes and the cache key they make with the options."""

    model: str
    data: str
    key: str

    @classmethod
    def of(cls, request: ComputeRequest) -> _Hashes:
        model = sha256_file(request.inputs.model)
        data = data_sha256(request.inputs.data)
        return cls(model, data, cache_key(model, data, request.result_options()))

    def stale_reason(self, meta: dict[str, Any]) -> str | None:
        """Why a store with this meta is not a cache hit (None when it is)."""
        if meta.get("cache_key") == self.key:
            return None
        if meta.get("model", {}).get("sha256") != self.model:
            return "the model file changed"
        if meta.get("data", {}).get("sha256") != self.data:
            return "the data file changed"
        return "the options changed"


def _cached(request: ComputeRequest, hashes: _Hashes, t0: float) -> ComputeResult | str | None:
    """The cache hit at ``request.out``, else why the store there is stale (None: no store)."""
    if not request.out.exists():
        return None
    try:
        meta = read_meta(request.out)
    except InputError:
        raise InputError(
            f"output '{request.out}' exists and is not a local-effects store; "
            "remove it, choose another output, or pass {param} to overwrite it",
            param="force",
        ) from None
    reason = hashes.stale_reason(meta)
    if reason is not None:
        return reason
    return ComputeResult(
        out=request.out,
        cache_hit=True,
        n_rows=int(meta["n_rows"]),
        n_features=len(meta["feature_names"]),
        method=str(meta["method"]),
        seconds=time.perf_counter() - t0,
        rows_dropped=int(meta["data"].get("rows_dropped", 0)),
        rows_nonfinite=int(meta["data"].get("rows_nonfinite", 0)),
    )


def _pair_plan(
    request: ComputeRequest, opened: Opened
) -> tuple[list[tuple[int, int]], MixedFn | None]:
    """Columns of the pairs and the model's mixed-derivative function (None without pairs)."""
    if not request.pairs:
        return [], None
    table = opened.table
    cols = pair_columns(
        request.pairs,
        table.feature_names,
        param="pairs",
        where=f"data '{request.inputs.data_label}'",
    )
    fixed = next((n for pair in request.pairs for n in pair if n in table.categorical), None)
    if fixed is not None:
        raise InputError(
            f"{{param}}: feature '{fixed}' is categorical (held fixed), so it has no derivative",
            param="pairs",
        )
    mixed = require_mixed_derivatives(
        opened.model,
        request.inputs.model,
        param="pairs",
        hint="leave out {param} and use 'ale interact --estimator ale'",
    )
    return cols, mixed


def _effects(
    request: ComputeRequest,
    opened: Opened,
    timings: dict[str, float],
    progress: Callable[[int], ProgressFn] | None,
) -> tuple[Effects, dict[str, np.ndarray]]:
    """The local effects of the explained features (the adapters hold categorical ones
    at 0) and the optional arrays (cached mixed derivatives)."""
    pair_cols, mixed = _pair_plan(request, opened)
    table = opened.table
    bar = progress(len(table.X)) if progress else None
    t = time.perf_counter()
    effects = opened.model.local_effects(table.X, features=list(opened.columns), progress=bar)
    timings["local_effects_s"] = time.perf_counter() - t
    extra: dict[str, np.ndarray] = {}
    if mixed is not None:
        t = time.perf_counter()
        bar = progress(len(table.X)) if progress else None
        extra = {
            PAIRS: np.array(request.pairs, dtype=np.str_).reshape(-1, 2),
            MIXED: mixed(table.X, pair_cols, progress=bar),
        }
        timings["mixed_derivatives_s"] = time.perf_counter() - t
    return effects, extra


def _meta(
    request: ComputeRequest, opened: Opened, hashes: _Hashes, timings: dict[str, float]
) -> dict[str, Any]:
    """The store's meta: provenance, columns, method and options (:data:`META_KEYS`)."""
    table, model, inputs = opened.table, opened.model, request.inputs
    details = model.describe()
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "ale", "version": __version__},
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "model": {"path": str(inputs.model), "sha256": hashes.model, "format": model.format},
        "data": {
            "path": inputs.data_label,
            "sha256": hashes.data,
            "format": table.format,
            "rows_read": table.rows_read,
            "rows_dropped": table.rows_dropped,
            "dropped_columns": list(table.dropped_columns),
            "dtypes": table.dtypes,
        },
        # the explained features (columns of local_effects) and every model input (of X)
        "feature_names": list(opened.features),
        "features": list(opened.features),
        "inputs": list(table.feature_names),
        # held fixed, local effect 0; the estimators report them as not estimable
        "categorical_features": list(table.categorical),
        # text columns are stored as integer codes: levels[name][code] is the value
        "categorical_levels": {name: list(values) for name, values in table.levels.items()},
        "method": model.method,
        "method_details": details,
        "output": details.get("output"),
        "options": request.result_options()
        | {
            "batch_size": inputs.batch_size,
            "trust": list(inputs.trust),
            "trust_pickle": inputs.trust_pickle,
        },
        "n_rows": len(table.X),
        # optional arrays: mixed derivatives d2f/dx_a dx_b of these pairs (ale compute --pairs)
        "pairs": [list(p) for p in request.pairs],
        "timings": timings,
        "cache_key": hashes.key,
    }


def compute(
    request: ComputeRequest,
    *,
    force: bool = False,
    progress: Callable[[int], ProgressFn] | None = None,
) -> ComputeResult:
    """Compute (or reuse) the local-effects store described by ``request``.

    ``progress(total_rows)`` may return a callable that is told how many rows
    each model call finished.
    """
    t0 = time.perf_counter()
    request.inputs.check_files()
    hashes = _Hashes.of(request)
    cached = None if force else _cached(request, hashes, t0)
    if isinstance(cached, ComputeResult):
        return cached
    timings: dict[str, float] = {"hash_inputs_s": time.perf_counter() - t0}
    opened = open_inputs(request.inputs)
    timings |= opened.timings
    effects, extra = _effects(request, opened, timings, progress)
    screened = screen_effects(
        request.inputs.model,
        effects.prediction,
        effects.local_effects,
        extra.get(MIXED),
        drop=request.inputs.drop_nonfinite,
    )
    keep = screened.keep if len(screened.dropped) else slice(None)
    if MIXED in extra:
        extra[MIXED] = extra[MIXED][:, keep]
    table = opened.table
    X = table.X[keep]
    meta = _meta(request, opened, hashes, timings)
    meta["n_rows"] = len(X)
    meta["data"]["rows_nonfinite"] = len(screened.dropped)
    notes = (*opened.model.describe().get("notes", ()), *opened.notes)
    notes += (screened.note,) if screened.note else ()
    meta["notes"] = list(notes)
    store = Store(
        X=X,
        local_effects=effects.local_effects[keep],
        prediction=effects.prediction[keep],
        feature_names=opened.features,
        input_names=table.feature_names,
        meta=meta,
        extra=extra,
    )
    timings["total_before_write_s"] = time.perf_counter() - t0
    write_store(request.out, store)
    return ComputeResult(
        out=request.out,
        cache_hit=False,
        n_rows=len(X),
        n_features=len(opened.features),
        method=opened.model.method,
        seconds=time.perf_counter() - t0,
        rows_dropped=table.rows_dropped,
        reason=cached,
        notes=notes,
        rows_nonfinite=len(screened.dropped),
    )
