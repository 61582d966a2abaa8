"""``ale compute``: model + data -> local-effects store, with caching.

The library function :func:`compute` does the work; the CLI only parses
options, draws the progress bar and prints the one-line result.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ale_cli import __version__
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
from ale_cli.models.base import LoadOptions, ProgressFn
from ale_cli.models.mixed import MixedFn, require_mixed_derivatives
from ale_cli.pairs import pair_columns

if TYPE_CHECKING:
    from ale_cli.adapters.data import Table
    from ale_cli.models.base import Model


@dataclass(frozen=True)
class ComputeRequest:
    """Everything ``ale compute`` was asked; the result-affecting part keys the cache."""

    model: Path
    data: Path
    out: Path
    data_format: str | None = None
    features: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()
    dropna: bool = False
    model_format: str | None = None
    output: str | None = None
    batch_size: int | None = None
    categorical: tuple[str, ...] = ()
    method: str = "auto"
    step: float | None = None
    trust: tuple[str, ...] = ()
    trust_pickle: bool = False
    pairs: tuple[tuple[str, str], ...] = ()

    def check_files(self) -> None:
        """InputError naming the model or data file that does not exist (before hashing)."""
        for label, path in (("model", self.model), ("data", self.data)):
            if not path.exists():
                raise InputError(f"{label} file '{path}' does not exist")

    def result_options(self) -> dict[str, Any]:
        """Options that change the store's arrays (batch size and trust do not)."""
        options = asdict(self)
        for name in ("model", "data", "out", "batch_size", "trust", "trust_pickle"):
            options.pop(name)
        return options


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


def _stale_reason(meta: dict[str, Any], model_sha: str, data_sha: str, key: str) -> str | None:
    if meta.get("cache_key") == key:
        return None
    if meta.get("model", {}).get("sha256") != model_sha:
        return "the model file changed"
    if meta.get("data", {}).get("sha256") != data_sha:
        return "the data file changed"
    return "the options changed"


def open_inputs(
    request: ComputeRequest, *, timings: dict[str, float] | None = None
) -> tuple[Table, Model]:
    """Load the data table and the model of ``request`` and check the model on the data.

    Shared by every command that needs the model (compute, classic, interact).
    ``timings`` (if given) receives load_data_s and load_model_s (loading and
    checking the model on the data).
    """
    from ale_cli.adapters.data import load_table
    from ale_cli.models import Columns, detect_format, load_model

    timings = {} if timings is None else timings
    model_format = detect_format(request.model, request.model_format)
    t = time.perf_counter()
    table = load_table(
        request.data,
        fmt=request.data_format,
        features=request.features,
        exclude=request.exclude,
        dropna=request.dropna,
        categorical=request.categorical,
        # scikit-learn pipelines can take text columns; tensor models cannot
        encode_text=model_format in ("skops", "pickle"),
    )
    timings["load_data_s"] = time.perf_counter() - t

    t = time.perf_counter()
    model = load_model(
        request.model,
        model_format=model_format,
        options=LoadOptions(
            output=request.output,
            batch_size=request.batch_size,
            method=request.method,
            step=request.step,
            trust=request.trust,
            trust_pickle=request.trust_pickle,
        ),
        columns=Columns(
            names=table.feature_names,
            fixed=table.categorical,
            levels=table.levels,
            dtypes=table.dtypes,
        ),
        X=table.X,
    )
    timings["load_model_s"] = time.perf_counter() - t
    return table, model


def _pair_plan(
    request: ComputeRequest, table: Table, model: Model
) -> tuple[list[tuple[int, int]], MixedFn | None]:
    """Columns of ``--pairs`` and the model's mixed-derivative function (None without pairs)."""
    if not request.pairs:
        return [], None
    cols = pair_columns(
        request.pairs, table.feature_names, option="--pairs", where=f"data '{request.data}'"
    )
    fixed = next((n for pair in request.pairs for n in pair if n in table.categorical), None)
    if fixed is not None:
        raise InputError(
            f"--pairs: feature '{fixed}' is categorical (held fixed), so it has no derivative"
        )
    mixed = require_mixed_derivatives(
        model,
        request.model,
        param="pairs",
        hint="leave out --pairs and use 'ale interact --estimator ale'",
    )
    return cols, mixed


def model_source(
    request: ComputeRequest, model: Model, n_rows: int, *, method: str
) -> dict[str, Any]:
    """A summary's ``store`` part when it was made from the model, not from a store."""
    return {
        "path": None,
        "model": {
            "path": str(request.model),
            "sha256": sha256_file(request.model),
            "format": model.format,
        },
        "data": {"path": str(request.data), "sha256": sha256_file(request.data)},
        "method": method,
        "output": model.describe().get("output"),
        "n_rows": n_rows,
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
    request.check_files()
    model_sha = sha256_file(request.model)
    data_sha = sha256_file(request.data)
    key = cache_key(model_sha, data_sha, request.result_options())

    reason = None
    if request.out.exists() and not force:
        try:
            meta = read_meta(request.out)
        except InputError:
            raise InputError(
                f"output '{request.out}' exists and is not a local-effects store; "
                "remove it, choose another -o, or pass --force to overwrite it"
            ) from None
        reason = _stale_reason(meta, model_sha, data_sha, key)
        if reason is None:
            return ComputeResult(
                out=request.out,
                cache_hit=True,
                n_rows=int(meta["n_rows"]),
                n_features=len(meta["feature_names"]),
                method=str(meta["method"]),
                seconds=time.perf_counter() - t0,
                rows_dropped=int(meta["data"].get("rows_dropped", 0)),
            )

    timings: dict[str, float] = {"hash_inputs_s": time.perf_counter() - t0}
    table, model = open_inputs(request, timings=timings)
    pair_cols, mixed = _pair_plan(request, table, model)

    t = time.perf_counter()
    effects = model.local_effects(table.X, progress=progress(len(table.X)) if progress else None)
    timings["local_effects_s"] = time.perf_counter() - t
    local_effects = effects.local_effects
    fixed = [table.feature_names.index(name) for name in table.categorical]
    if fixed:  # categorical columns are held fixed: no local effect (autodiff gives one)
        local_effects = local_effects.copy()
        local_effects[:, fixed] = 0.0

    extra: dict[str, Any] = {}
    if mixed is not None:
        t = time.perf_counter()
        extra = {
            PAIRS: np.array(request.pairs, dtype=np.str_).reshape(-1, 2),
            MIXED: mixed(table.X, pair_cols, progress=progress(len(table.X)) if progress else None),
        }
        timings["mixed_derivatives_s"] = time.perf_counter() - t

    details = model.describe()
    meta: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "ale", "version": __version__},
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "model": {
            "path": str(request.model),
            "sha256": model_sha,
            "format": model.format,
        },
        "data": {
            "path": str(request.data),
            "sha256": data_sha,
            "format": table.format,
            "rows_read": table.rows_read,
            "rows_dropped": table.rows_dropped,
            "dropped_columns": list(table.dropped_columns),
            "dtypes": table.dtypes,
        },
        "feature_names": list(table.feature_names),
        # held fixed, local effect 0; the estimators report them as not estimable
        "categorical_features": list(table.categorical),
        # text columns are stored as integer codes: levels[name][code] is the value
        "categorical_levels": {name: list(values) for name, values in table.levels.items()},
        "method": model.method,
        "method_details": details,
        "output": details.get("output"),
        "options": request.result_options()
        | {
            "batch_size": request.batch_size,
            "trust": list(request.trust),
            "trust_pickle": request.trust_pickle,
        },
        "n_rows": len(table.X),
        # optional arrays: mixed derivatives d2f/dx_a dx_b of these pairs (ale compute --pairs)
        "pairs": [list(p) for p in request.pairs],
        "timings": timings,
        "cache_key": key,
    }
    store = Store(
        X=table.X,
        local_effects=local_effects,
        prediction=effects.prediction,
        feature_names=table.feature_names,
        meta=meta,
        extra=extra,
    )
    timings["total_before_write_s"] = time.perf_counter() - t0
    write_store(request.out, store)
    seconds = time.perf_counter() - t0
    return ComputeResult(
        out=request.out,
        cache_hit=False,
        n_rows=len(table.X),
        n_features=len(table.feature_names),
        method=model.method,
        seconds=seconds,
        rows_dropped=table.rows_dropped,
        reason=reason,
        notes=tuple(details.get("notes", ())),
    )
