"""``ale interact --store``: second order from a store, read chunk by chunk.

A store made with ``ale compute --pairs A,B`` holds every row's mixed
derivatives d2f/dx_a dx_b beside X and the predictions. DALE second order
needs, per cell of a pair's grid, only the count, mean and M2 of those values
(mergeable :class:`~ale_cli.core.binstats.CellStats`), so a store file is
read by its own chunks (:meth:`~ale_cli.store.npz.StoreFile.chunks`,
never more than one at a time):

1. each input's range from the store's manifest (a pass over X for stores
   without one); uniform edges from it, exact type-1 quantile edges out of
   core in two passes over the columns that need them
   (:func:`~ale_cli.core.outofcore.chunked_quantile_edges`), or the edges file;
2. one pass: every row's cell in each pair's grid, the stored mixed
   derivatives (and, for pairs the store lacks, the model's on the store's
   rows, as the in-memory path computes them), the non-finite screen with the
   store's row numbers (:func:`ale_cli.estimators.interact.screen_pairs`), the cells merged
   (:class:`~ale_cli.estimators.interact_stream.PairCells`) and the predictions spooled
   to disk (:class:`~ale_cli.passes.spool.PredictionSpool`).

Pairs missing from the store need the model: it is loaded as
:mod:`ale_cli.estimators.interact_stream` loads it (a first pass over the data file,
the model checked on its first chunk), or from the whole table when the inputs
need that (with the note saying why). A store that does not match the model
and data, or the ``ale`` estimator, leaves the store unused (the caller then
reads the data file, with the note :func:`interact_store_streamed` returns).

The results equal the in-memory path's (the whole store read,
``chunk_rows=None``) to rounding (tested to 1e-12) whatever the store's chunk
sizes. A store of schema 1 or 2 (one array per name) is a single chunk: it is
read whole, as before.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ale_cli.core.binning import uniform_edges
from ale_cli.core.outofcore import chunked_quantile_edges
from ale_cli.errors import InputError
from ale_cli.estimators.bins import FixedBins
from ale_cli.estimators.interact_stream import Located, PairCells
from ale_cli.estimators.pairs import Pair, pair_columns
from ale_cli.models.checks import dropped_note, nothing_left
from ale_cli.passes.spool import PredictionSpool
from ale_cli.store.npz import MIXED, StoreFile, open_store
from ale_cli.summary.build import (
    CATEGORICAL_REASON,
    CONSTANT_REASON,
    EstimateResult,
    run_notes,
    store_info,
    utc_now,
)
from ale_cli.summary.model import Summary, with_statistics

if TYPE_CHECKING:
    from concurrent.futures import Future
    from pathlib import Path

    from ale_cli.estimators.interact import InteractRequest
    from ale_cli.models.base import Model, ProgressFn
    from ale_cli.models.mixed import MixedFn


def _x_chunks(store: StoreFile) -> Iterator[np.ndarray]:
    """X (n_i, D) of every chunk as float64, checked finite (the check a whole-store read
    makes, here with the row's number in the store)."""
    offset = 0
    for chunk in store.chunks(("X",)):
        X = np.asarray(chunk["X"], dtype=np.float64)
        _check_finite(store, X, offset)
        offset += len(X)
        yield X


def _check_finite(store: StoreFile, X: np.ndarray, offset: int) -> None:
    bad = ~np.isfinite(X)
    if bad.any():
        rows, cols = np.nonzero(bad)
        raise InputError(
            f"store '{store.path}': array 'X' has NaN or infinite values (first: row "
            f"{offset + int(rows[0])}, input '{store.input_names[cols[0]]}')"
        )


def input_ranges(store: StoreFile) -> tuple[np.ndarray, np.ndarray]:
    """Every input's minimum and maximum, (D,) each: from the manifest, else by a pass."""
    known = store.x_range()
    if known is not None and len(known[0]) == len(store.input_names):
        return known
    d = len(store.input_names)
    lo, hi = np.full(d, np.inf), np.full(d, -np.inf)
    for X in _x_chunks(store):
        if len(X):
            lo, hi = np.minimum(lo, X.min(axis=0)), np.maximum(hi, X.max(axis=0))
    return lo, hi


def pair_grids(
    store: StoreFile,
    pairs: tuple[Pair, ...],
    cols: list[tuple[int, int]],
    fixed: FixedBins,
) -> tuple[dict[int, tuple[np.ndarray, np.ndarray]], dict[int, str]]:
    """Per pair (by position): its two edge arrays, or why it is not estimable, as the
    in-memory path decides (a categorical feature, then each feature's edges: the edges
    file's, else not estimable when constant, else uniform or type-1 quantile edges;
    the quantile edges of every column that needs them in one out-of-core run)."""
    categorical = set(store.meta.get("categorical_features") or ())
    given = fixed.edges_file
    lo, hi = input_ranges(store)
    plan: dict[int, tuple[int, int] | str] = {}
    for p, (pair, pc) in enumerate(zip(pairs, cols, strict=True)):
        cat = next((n for n in pair if n in categorical), None)
        if cat is not None:
            plan[p] = f"'{cat}': {CATEGORICAL_REASON}"
            continue
        for name, c in zip(pair, pc, strict=True):
            if given is not None:
                if name not in given.edges:
                    raise InputError(f"edges file '{given.path}' has no edges for feature '{name}'")
            elif not hi[c] > lo[c]:
                plan[p] = f"'{name}': {CONSTANT_REASON}"
                break
        else:
            plan[p] = pc
    needed = sorted({c for v in plan.values() if not isinstance(v, str) for c in v})
    by_col: dict[int, np.ndarray] = {}
    if given is not None:
        names = dict(zip(store.input_names, range(len(store.input_names)), strict=True))
        by_col = {names[n]: np.asarray(z, dtype=np.float64) for n, z in given.edges.items()
                  if n in names}  # fmt: skip
    elif fixed.binning == "uniform":
        by_col = {c: uniform_edges(float(lo[c]), float(hi[c]), bins=fixed.bins) for c in needed}
    elif needed:
        found = chunked_quantile_edges(
            lambda: (X[:, needed] for X in _x_chunks(store)),
            n=store.n_rows,
            bins=fixed.bins,
            lo=lo[needed],
            hi=hi[needed],
        )
        by_col = dict(zip(needed, found, strict=True))
    reasons = {p: v for p, v in plan.items() if isinstance(v, str)}
    grids = {p: (by_col[v[0]], by_col[v[1]]) for p, v in plan.items() if not isinstance(v, str)}
    return grids, reasons


def _load_model(request: InteractRequest, timings: dict[str, float], notes: list[str]) -> Model:
    """The model for the pairs the store lacks: loaded on the data file's first chunk after
    a pass over it (:func:`~ale_cli.estimators.inputs_stream.open_streamed`), or with the whole
    table when the inputs need that (a note says why)."""
    from ale_cli.estimators.inputs import open_inputs
    from ale_cli.estimators.inputs_stream import NeedsWholeTable, open_streamed, whole_table_reason

    rows = request.chunk_rows
    reason = whole_table_reason(request.inputs, rows)
    if reason is None and rows is not None:
        try:
            streamed = open_streamed(request.inputs, chunk_rows=rows)
        except NeedsWholeTable as exc:
            reason = str(exc)
        else:
            timings |= streamed.timings
            notes.extend(streamed.notes)
            return streamed.model
    if reason:
        notes.append(reason)
    opened = open_inputs(request.inputs)
    timings |= opened.timings
    notes.extend(opened.notes)
    return opened.model


def _sha256_in_background(path: Path) -> Future[str]:
    """The store's sha256 (:func:`~ale_cli.store.npz.store_sha256`: a file's, kept with
    it once hashed, or a directory store's) by a helper thread (hashlib releases the GIL)."""
    from concurrent.futures import ThreadPoolExecutor

    from ale_cli.store.npz import store_sha256

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ale-hash")
    future = pool.submit(store_sha256, path)
    pool.shutdown(wait=False)  # the thread ends with the hash
    return future


def _loaded(model: Model | None) -> Model:
    if model is None:  # pragma: no cover - the model is loaded whenever a pair is missing
        raise RuntimeError("internal error: the model was not loaded")
    return model


def interact_store_streamed(
    request: InteractRequest,
    fixed: FixedBins,
    *,
    progress: Callable[[int, str], ProgressFn] | None = None,
    started: float | None = None,
) -> EstimateResult | str:
    """``ale interact --store`` with the store read chunk by chunk (see the module
    docstring): the in-memory path's summary (:func:`ale_cli.estimators.interact.interact` with
    ``chunk_rows=None``), or the note saying why the store is not used (the ``ale``
    estimator, or a store made from another model, data or options).
    ``started``: when the run began (``perf_counter``), for the result's seconds."""
    t0 = time.perf_counter()
    started = t0 if started is None else started
    path, inputs = request.store, request.inputs
    if path is None:
        raise ValueError("interact_store_streamed needs request.store")
    store = _usable_store(request, path)
    if isinstance(store, str):
        return store
    digest = _sha256_in_background(store.path)  # overlaps the passes below
    cols = pair_columns(request.pairs, store.input_names, param="pairs", where=f"store '{path}'")
    cached = _stored_pairs(store)
    notes: list[str] = []
    timings: dict[str, float] = {}
    model = _model_for_missing(request, cached, timings, notes)
    fixed.check_rows(store.n_rows, f"data '{inputs.data_label}'")
    estimator = request.estimator or (
        "dale" if model is None or model.method == "autodiff" else "ale"
    )
    t_load = time.perf_counter()
    grids, reasons = pair_grids(store, request.pairs, cols, fixed)
    src = _pair_sources(request, estimator, cached, PairCells(grids, cols), model)
    passed = _pass_over_store(request, store, src, _progress_bar(progress, src, store.n_rows))
    interactions = src.acc.interactions(request.pairs, estimator, reasons)
    if src.from_model:
        key = "mixed_derivatives_s" if estimator == "dale" else "model_evaluations_s"
        timings[key] = passed.t_model
    t_end = time.perf_counter()
    timings |= {"load_s": t_load - started, "estimate_s": t_end - t_load}
    from ale_cli.estimators.interact import interaction_params

    summary = with_statistics(
        Summary(
            estimator=estimator,
            params=interaction_params(request.pairs, estimator, fixed, cached),
            store=store_info(path, store, sha256=digest.result()),
            n_rows=passed.kept,
            features=(),
            interactions=tuple(interactions),
            created=utc_now(),
            prediction=passed.distribution,
        ),
        None,
    )
    notes += [dropped_note(inputs.model, passed.dropped)] if len(passed.dropped) else []
    return EstimateResult(
        summary=summary,
        seconds=time.perf_counter() - started,
        timings=timings,
        notes=(*notes, *run_notes(interactions)),
    )


def _usable_store(request: InteractRequest, path: Path) -> StoreFile | str:
    """The store at ``path``, or the note saying why the estimator does not use it."""
    from ale_cli.estimators.interact import store_unused

    opened: list[StoreFile] = []

    def meta() -> dict[str, Any]:  # the store is opened only when the estimator may use it
        opened.append(open_store(path))
        return opened[0].meta

    unused = store_unused(request, meta)
    if unused is not None:
        return unused
    return opened[0]


def _stored_pairs(store: StoreFile) -> dict[Pair, int]:
    """Each pair the store holds (either order) -> its row in the stored mixed derivatives."""
    cached = {pair: i for i, pair in enumerate(store.pairs())}
    cached |= {(b, a): i for (a, b), i in cached.items() if (b, a) not in cached}
    return cached


def _model_for_missing(
    request: InteractRequest,
    cached: dict[Pair, int],
    timings: dict[str, float],
    notes: list[str],
) -> Model | None:
    """The model when the store lacks some requested pairs (a note says which), else None."""
    missing = [p for p in request.pairs if p not in cached]
    if not missing:
        return None
    listed = " ".join(",".join(p) for p in missing)
    notes.append(
        f"store '{request.store}' has no mixed derivatives of {listed}; computing "
        "them (add them to the store with 'ale compute --pairs')"
    )
    return _load_model(request, timings, notes)


@dataclass(frozen=True)
class _PairSources:
    """Where the values of every estimable pair come from in the pass over the store."""

    estimator: str
    #: the cells of the estimable pairs (their grids and columns), merged chunk by chunk
    acc: PairCells
    #: each stored pair (either order) -> its row in the stored mixed derivatives
    cached: dict[Pair, int]
    #: estimable pairs (by position) read from the store, and those the model gives
    from_store: list[int]
    from_model: list[int]
    #: the model (None when no pair is missing from the store)
    model: Model | None
    #: the model's mixed derivatives (dale on pairs the store lacks), else None
    mixed: MixedFn | None


def _pair_sources(
    request: InteractRequest,
    estimator: str,
    cached: dict[Pair, int],
    acc: PairCells,
    model: Model | None,
) -> _PairSources:
    """The estimable pairs split into those read from the store and those the model gives."""
    from ale_cli.models.mixed import require_mixed_derivatives

    todo = acc.todo
    from_store = [p for p in todo if request.pairs[p] in cached] if estimator == "dale" else []
    from_model = [p for p in todo if p not in from_store]
    mixed = None
    if estimator == "dale" and from_model:
        mixed = require_mixed_derivatives(
            _loaded(model),
            request.inputs.model,
            param="estimator",
            value="dale",
            hint="use {param} ale",
        )
    return _PairSources(estimator, acc, cached, from_store, from_model, model, mixed)


def _progress_bar(
    progress: Callable[[int, str], ProgressFn] | None, src: _PairSources, n_rows: int
) -> ProgressFn | None:
    """The bar of the model's work on the pairs the store lacks (None when there is none)."""
    if progress is None or not src.from_model:
        return None
    label = "mixed derivatives" if src.mixed is not None else "cell corners"
    return progress(n_rows * (1 if src.mixed is not None else len(src.from_model)), label)


@dataclass(frozen=True)
class _Passed:
    """What the pass over the store leaves besides the merged cells."""

    #: rows kept (finite values)
    kept: int
    #: the kept rows' predictions, as the summary records them
    distribution: dict[str, Any] | None
    #: seconds spent in the model
    t_model: float
    #: the store's rows dropped for NaN or infinite values (M,)
    dropped: np.ndarray


def _pass_over_store(
    request: InteractRequest, store: StoreFile, src: _PairSources, bar: ProgressFn | None
) -> _Passed:
    """The pass over the store's chunks, the cells merged into ``src.acc`` (see module)."""
    from ale_cli.estimators.interact import screen_pairs

    inputs, acc, todo = request.inputs, src.acc, src.acc.todo
    arrays = ("X", "prediction", *((MIXED,) if src.from_store else ()))
    t_model = 0.0
    dropped: list[np.ndarray] = []
    offset = 0
    with PredictionSpool(max(store.rows, default=1)) as spool:
        for chunk in store.chunks(arrays):
            X = np.asarray(chunk["X"], dtype=np.float64)
            _check_finite(store, X, offset)
            prediction = np.asarray(chunk["prediction"], dtype=np.float64)
            located = dict(zip(todo, acc.locate(X), strict=True))
            values = {
                p: np.asarray(chunk[MIXED][src.cached[request.pairs[p]]], dtype=np.float64)[
                    located[p].rows
                ]
                for p in src.from_store
            }
            t = time.perf_counter()
            values |= _model_values(X, located, src, bar)
            t_model += time.perf_counter() - t
            screened = screen_pairs(
                inputs.model,
                len(X),
                [(located[p].rows, values[p]) for p in todo],
                src.estimator,
                prediction,
                drop=inputs.drop_nonfinite,
                offset=offset,
                allow_empty=True,
            )
            if len(screened.dropped):
                dropped.append(screened.dropped + offset)
            acc.add([located[p] for p in todo], [values[p] for p in todo], screened.keep)
            spool.add(prediction[screened.keep])
            offset += len(X)
        kept = spool.n
        distribution = spool.distribution()
    if kept == 0:
        raise nothing_left(inputs.model)
    rows_out = np.concatenate(dropped) if dropped else np.empty(0, dtype=np.intp)
    return _Passed(kept=kept, distribution=distribution, t_model=t_model, dropped=rows_out)


def _model_values(
    X: np.ndarray, located: dict[int, Located], src: _PairSources, bar: ProgressFn | None
) -> dict[int, np.ndarray]:
    """The model's values of the pairs the store lacks, at each pair's located rows of X."""
    from ale_cli.estimators.interact import second_differences

    cols, grids = src.acc.cols, src.acc.grids
    if src.mixed is not None:
        computed = src.mixed(X, [cols[p] for p in src.from_model], progress=bar)
        return {p: computed[i][located[p].rows] for i, p in enumerate(src.from_model)}
    if not src.from_model:
        return {}
    predict = _loaded(src.model).predict
    return {
        p: second_differences(
            predict, X[located[p].rows], cols[p], *grids[p], located[p].ia,
            located[p].ib, progress=bar,
        )
        for p in src.from_model
    }  # fmt: skip
