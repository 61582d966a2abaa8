"""``ale interact``: second-order (pairwise) ALE of feature pairs, classic or DALE.

For each pair (a, b) the two features get their one-dimensional partitions
(type-1 quantile bins by default, as ALEPlot; uniform; or the edges of a file),
which make a K_a x K_b grid of cells. The per-row values come from one of two
routes and go to :func:`ale_cli.core.second_order.second_order_effect`:

- ``ale`` (Apley & Zhu Eq. 13-15): the model at the four corners of each row's
  cell, ``f(z_k, w_l) - f(z_{k-1}, w_l) - f(z_k, w_{l-1}) + f(z_{k-1}, w_{l-1})``,
  4 evaluations per row and pair stacked into few model calls
  (:func:`ale_cli.models.evaluate.predict_moved`); every model format.
- ``dale`` (Gkolemis et al. Eq. 9): the mixed derivative d2f/dx_a dx_b at each
  row, by autodiff (TorchScript, the ONNX torch path); taken from a store made
  with ``ale compute --pairs`` when it matches the model and data, computed
  otherwise. The default when the model has autodiff.

Rows outside the given edges (``--edges``) are left out and counted; a pair
with a constant or categorical feature is reported as not estimable.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, replace
from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ale_cli.checks import check_choice, check_count
from ale_cli.core.binning import assign, quantile_edges, uniform_edges
from ale_cli.core.second_order import SecondOrderEffect, second_order_effect
from ale_cli.data.stream import DEFAULT_CHUNK_ROWS, inputs_sha256
from ale_cli.errors import InputError
from ale_cli.estimators.bins import FixedBins
from ale_cli.estimators.inputs import ModelInputs, model_source, open_inputs
from ale_cli.estimators.pairs import Pair, pair_columns, parse_pairs
from ale_cli.io.files import sha256_file
from ale_cli.store.npz import read_meta, read_store
from ale_cli.summary.build import (
    CATEGORICAL_REASON,
    CONSTANT_REASON,
    EstimateResult,
    run_notes,
    store_info,
    utc_now,
)
from ale_cli.summary.edges import EdgesFile
from ale_cli.summary.model import InteractionSummary, Summary, with_statistics

if TYPE_CHECKING:
    from ale_cli.models.base import Model, ProgressFn
    from ale_cli.models.checks import Screened

ESTIMATORS = ("dale", "ale")
DEFAULT_BINS = 10
DEFAULT_BINNING = "quantile"
#: Options of ``ale compute`` that decide the rows and the output; a store matches an
#: ``ale interact`` run when these, the model bytes and the data bytes are the same.
MATCH_OPTIONS = (
    "data_format",
    "inputs",
    "exclude",
    "dropna",
    "model_format",
    "output",
    "categorical",
)
_ROUTES = {"ale": "classic", "dale": "dale"}


@dataclass(frozen=True)
class InteractRequest:
    """Options of ``ale interact``.

    ``inputs`` says how to read the model and the data. ``pairs`` are the
    pairs to estimate; without pairs, every pair of ``inputs.features`` (at
    least two); with both, the pairs' features must be among those features.
    ``estimator`` None means dale when the model has autodiff, else ale;
    ``bins``/``binning`` None mean the defaults (10 type-1 quantile bins per
    feature) unless ``edges`` gives the bins.
    """

    inputs: ModelInputs
    pairs: tuple[Pair, ...] = ()
    bins: int | None = None
    binning: str | None = None
    estimator: str | None = None
    store: Path | None = None
    edges: Path | None = None
    #: rows read at a time from a data file (:mod:`ale_cli.estimators.interact_stream`; a store
    #: is read by its own chunks, :mod:`ale_cli.estimators.interact_store`); None reads
    #: the whole table (or store) at once
    chunk_rows: int | None = DEFAULT_CHUNK_ROWS
    #: where the model calls run: local, or dask (:mod:`ale_cli.engines.dask_model`)
    engine: str = "local"
    scheduler: str | None = None

    def __post_init__(self) -> None:
        from ale_cli.engines import check_engine

        check_engine(self.engine, self.scheduler)
        if self.engine == "dask" and self.store is not None:
            raise InputError(
                "{param} reads mixed derivatives from a store in this process: it is not "
                "used by {param:engine} dask (compute them from the data, or use "
                "{param:engine} local)",
                param="store",
            )
        if self.chunk_rows is not None:
            check_count(self.chunk_rows, "chunk_rows", least=2)
        pairs = parse_pairs(self.pairs)
        features = self.inputs.features
        if not pairs and features is not None:
            pairs = tuple(combinations(features, 2))
        if not pairs:
            raise InputError(
                "{param}: ale interact needs at least one pair A,B (or two features)",
                param="pairs",
            )
        outside = [n for p in pairs for n in p if features is not None and n not in features]
        if outside:
            raise InputError(
                f"{{param}} names '{outside[0]}', which is not among the features to explain "
                f"({', '.join(features or ())})",
                param="pairs",
            )
        object.__setattr__(self, "pairs", pairs)
        check_choice(self.estimator, ESTIMATORS, "estimator")
        if self.edges is None:
            FixedBins.from_options(
                bins=self.bins,
                binning=self.binning,
                edges=None,
                default=DEFAULT_BINNING,
                default_bins=DEFAULT_BINS,
            )


@dataclass
class _Inputs:
    """The rows, and where the mixed derivatives come from."""

    X: np.ndarray
    names: tuple[str, ...]
    categorical: tuple[str, ...]
    store_part: dict[str, Any]
    cached: dict[Pair, np.ndarray]
    model: Model | None = None
    prediction: np.ndarray | None = None


def _bins(request: InteractRequest) -> FixedBins:
    """The bins asked for (the edges file read), before the model or data are loaded."""
    fixed = FixedBins.from_options(
        bins=request.bins,
        binning=request.binning,
        edges=request.edges,
        default=DEFAULT_BINNING,
        default_bins=DEFAULT_BINS,
    )
    request.inputs.check_files()
    return fixed


def interaction_params(
    pairs: Sequence[Pair], estimator: str, fixed: FixedBins, cached: Container[Pair]
) -> dict[str, Any]:
    """A summary's ``params``: the pairs, the estimator, the binning and the pairs whose
    mixed derivatives came from the store (``cached``; only DALE reads them)."""
    return {
        "pairs": [list(p) for p in pairs],
        "estimator": estimator,
        **{k: v for k, v in fixed.params("mean", None).items() if k != "features"},
        "cached_pairs": [list(p) for p in pairs if p in cached] if estimator == "dale" else [],
    }


def store_mismatch(meta: dict[str, Any], request: ModelInputs) -> str | None:
    """Why a store's meta does not describe the rows of ``request`` (None if it does)."""
    if meta.get("model", {}).get("sha256") != sha256_file(request.model):
        return "the model file differs"
    if meta.get("data", {}).get("sha256") != inputs_sha256(request.data):
        return "the data file differs"
    wanted = {k: v for k, v in request.result_options().items() if k in MATCH_OPTIONS}
    from ale_cli.io.jsonio import to_jsonable

    have = meta.get("options") or {}
    for key, value in to_jsonable(wanted).items():
        if have.get(key) != value:
            return f"it was made with other options ({key})"
    return None


def store_unused(request: InteractRequest, meta: Callable[[], dict[str, Any]]) -> str | None:
    """Why the store of ``request`` is not used (a note), None when it is; ``meta`` reads
    the store's meta (only when the estimator may use it)."""
    path = request.store
    if request.estimator == "ale":
        return f"store '{path}' is not used by the ale estimator (it needs the model)"
    why = store_mismatch(meta(), request.inputs)
    if why is not None:
        return f"store '{path}' does not match ({why}); computing from the model"
    return None


def _from_store(request: InteractRequest, notes: list[str]) -> _Inputs | None:
    """The store's rows and cached mixed derivatives when it matches, else None (with a note)."""
    path = request.store
    if path is None:
        return None
    unused = store_unused(request, lambda: read_meta(path))
    if unused is not None:
        notes.append(unused)
        return None
    store = read_store(path)
    return _Inputs(
        X=store.X,
        names=store.input_names,
        categorical=tuple(store.meta.get("categorical_features") or ()),
        store_part=store_info(path, store),
        cached=_both_orders(store.mixed_derivatives()),
        prediction=store.prediction,
    )


def _both_orders(cached: dict[Pair, np.ndarray]) -> dict[Pair, np.ndarray]:
    """d2f/dx_a dx_b = d2f/dx_b dx_a: a cached pair serves both orders."""
    return {(b, a): v for (a, b), v in cached.items()} | cached


def _open_model(request: InteractRequest, timings: dict[str, float], notes: list[str]) -> _Inputs:
    """The data's rows and the loaded model (and the notes on its columns)."""
    opened = open_inputs(request.inputs)
    timings |= opened.timings
    notes.extend(opened.notes)
    return _Inputs(
        X=opened.table.X,
        names=opened.table.feature_names,
        categorical=tuple(opened.table.categorical),
        store_part=model_source(request.inputs, opened, method=opened.model.method),
        cached={},
        model=opened.model,
    )


def _pair_edges(
    x: np.ndarray, name: str, *, bins: int, binning: str, edges: EdgesFile | None
) -> np.ndarray | str:
    """The feature's edges, or the reason why it has none."""
    if edges is not None:
        if name not in edges.edges:
            raise InputError(f"edges file '{edges.path}' has no edges for feature '{name}'")
        return edges.edges[name]
    if len(x) == 0 or not x.max() > x.min():
        return CONSTANT_REASON
    if binning == "uniform":
        return uniform_edges(float(x.min()), float(x.max()), bins=bins)
    return quantile_edges(x, bins=bins)


def corner_moves(
    j_a: int, j_b: int, ea: np.ndarray, eb: np.ndarray, ia: np.ndarray, ib: np.ndarray
) -> list[Any]:
    """The four moves of the classic route, in the order (k, l), (k-1, l), (k, l-1), (k-1, l-1).

    Row i (in cell (ia_i, ib_i), 0-based) gets ``(x_a, x_b)`` set to the corners
    ``(z_{k}, w_{l})`` etc. of its cell, with z_k = ``ea[ia + 1]``, z_{k-1} = ``ea[ia]``.
    """
    from ale_cli.models.evaluate import Move

    hi_a, lo_a, hi_b, lo_b = ea[ia + 1], ea[ia], eb[ib + 1], eb[ib]
    return [
        Move((j_a, j_b), np.column_stack([za, wb]))
        for za, wb in ((hi_a, hi_b), (lo_a, hi_b), (hi_a, lo_b), (lo_a, lo_b))
    ]


def second_differences(
    predict: Callable[[np.ndarray], np.ndarray],
    X: np.ndarray,
    cols: tuple[int, int],
    ea: np.ndarray,
    eb: np.ndarray,
    ia: np.ndarray,
    ib: np.ndarray,
    *,
    progress: ProgressFn | None = None,
) -> np.ndarray:
    """Per-row second-order finite differences at the corners of each row's cell, (N,).

    ``f(z_k, w_l) - f(z_{k-1}, w_l) - f(z_k, w_{l-1}) + f(z_{k-1}, w_{l-1})``, the
    four evaluations of every row stacked into the same model calls.

    >>> X = np.array([[0.5, 0.5], [1.5, 0.2]])
    >>> e = np.array([0.0, 1.0, 2.0])
    >>> second_differences(lambda a: a[:, 0] * a[:, 1], X, (0, 1), e, e,
    ...                    np.array([0, 1]), np.array([0, 0])).tolist()
    [1.0, 1.0]
    """
    from ale_cli.models.evaluate import predict_moved

    f = predict_moved(predict, X, corner_moves(*cols, ea, eb, ia, ib), progress=progress)
    out: np.ndarray = (f[0] - f[1]) - (f[2] - f[3])
    return out


def _not_estimable(
    pair: Pair, estimator: str, reason: str, n_outside: int = 0
) -> InteractionSummary:
    return InteractionSummary(
        features=pair,
        estimator=estimator,
        status="not_estimable",
        reason=reason,
        n_outside=n_outside,
    )


def _with_nonfinite(source: dict[str, Any], count: int) -> dict[str, Any]:
    """A summary's ``store`` part counting the rows dropped for non-finite model values."""
    return source | {"data": source["data"] | {"rows_nonfinite": count}}


def _loaded(model: Model | None) -> Model:
    if model is None:  # pragma: no cover - the model is loaded whenever something is not cached
        raise RuntimeError("internal error: the model was not loaded")
    return model


@dataclass(frozen=True)
class _Grid:
    """The cells of one pair: edges, the rows inside them and their 0-based cells."""

    ea: np.ndarray
    eb: np.ndarray
    rows: np.ndarray
    ia: np.ndarray
    ib: np.ndarray
    n_outside: int


def _grid(
    pair: Pair,
    cols: tuple[int, int],
    inputs: _Inputs,
    *,
    estimator: str,
    bins: int,
    binning: str,
    edges: EdgesFile | None,
) -> _Grid | InteractionSummary:
    """The pair's grid, or its not-estimable summary."""
    for name in pair:
        if name in inputs.categorical:
            return _not_estimable(pair, estimator, f"'{name}': {CATEGORICAL_REASON}")
    limits = []
    for name, j in zip(pair, cols, strict=True):
        z = _pair_edges(inputs.X[:, j], name, bins=bins, binning=binning, edges=edges)
        if isinstance(z, str):
            return _not_estimable(pair, estimator, f"'{name}': {z}")
        limits.append(z)
    ea, eb = limits
    ia = assign(inputs.X[:, cols[0]], ea).index
    ib = assign(inputs.X[:, cols[1]], eb).index
    rows = np.flatnonzero((ia >= 0) & (ib >= 0))
    n_outside = int(len(ia) - len(rows))
    if len(rows) == 0:
        reason = "no rows inside the given edges of both features"
        return _not_estimable(pair, estimator, reason, n_outside)
    return _Grid(ea, eb, rows, ia[rows], ib[rows], n_outside)


def _pair_summary(
    pair: Pair, estimator: str, grid: _Grid, per_row: np.ndarray
) -> InteractionSummary:
    """The second-order effect of one pair from its per-row values on ``grid``."""
    res = second_order_effect(
        grid.ia, grid.ib, per_row, edges_a=grid.ea, edges_b=grid.eb, route=_ROUTES[estimator]
    )
    return pair_summary(
        pair, estimator, res, n_outside=grid.n_outside, all_zero=not np.any(per_row)
    )


def pair_summary(
    pair: Pair, estimator: str, res: SecondOrderEffect, *, n_outside: int, all_zero: bool
) -> InteractionSummary:
    """A pair's summary from its effect; ``all_zero``: every per-row value was exactly 0
    (for DALE, a note says what that means)."""
    note = None
    if estimator == "dale" and all_zero:
        note = (
            "every mixed derivative is exactly 0: an additive model, or a piecewise-linear one "
            "(e.g. a ReLU network) whose second derivatives vanish almost everywhere; "
            "--estimator ale measures the interactions of piecewise-linear models"
        )
    return InteractionSummary(
        features=pair,
        estimator=estimator,
        edges_a=res.edges_a,
        edges_b=res.edges_b,
        counts=res.counts,
        cell_effect=res.cell_effect,
        cell_std=res.cell_std if estimator == "dale" else None,
        filled=res.filled,
        effect=res.effect,
        center_offset=res.center_offset,
        n_outside=n_outside,
        note=note,
    )


def _rows(
    request: InteractRequest, notes: list[str], timings: dict[str, float]
) -> tuple[_Inputs, list[tuple[int, int]]]:
    """The rows (from a matching store, else from the data with the model loaded) and the
    columns of every pair; the model is loaded too when the store lacks a pair."""
    inputs = _from_store(request, notes)
    if inputs is None:
        inputs = _open_model(request, timings, notes)
        where = f"data '{request.inputs.data_label}'"
        return inputs, pair_columns(request.pairs, inputs.names, param="pairs", where=where)
    cols = pair_columns(
        request.pairs, inputs.names, param="pairs", where=f"store '{request.store}'"
    )
    missing = [p for p in request.pairs if p not in inputs.cached]
    if missing:
        listed = " ".join(",".join(p) for p in missing)
        notes.append(
            f"store '{request.store}' has no mixed derivatives of {listed}; computing "
            "them (add them to the store with 'ale compute --pairs')"
        )
        inputs.model = _open_model(request, timings, notes).model
    return inputs, cols


def _estimator(request: InteractRequest, model: Model | None) -> str:
    """The estimator asked for, else dale when the model has autodiff (or none is needed)."""
    if request.estimator is not None:
        return request.estimator
    has_autodiff = model is None or model.method == "autodiff"
    return "dale" if has_autodiff else "ale"


def _mixed_values(
    request: InteractRequest,
    inputs: _Inputs,
    cols: list[tuple[int, int]],
    timings: dict[str, float],
    progress: Callable[[int, str], ProgressFn] | None,
) -> dict[Pair, np.ndarray]:
    """The mixed derivatives of every pair, (N,) each: cached ones, the rest by autodiff."""
    from ale_cli.models.mixed import require_mixed_derivatives

    values = {p: inputs.cached[p] for p in request.pairs if p in inputs.cached}
    todo = [(p, c) for p, c in zip(request.pairs, cols, strict=True) if p not in inputs.cached]
    if not todo:
        return values
    mixed = require_mixed_derivatives(
        _loaded(inputs.model),
        request.inputs.model,
        param="estimator",
        value="dale",
        hint="use {param} ale",
    )
    bar = progress(len(inputs.X), "mixed derivatives") if progress else None
    t = time.perf_counter()
    computed = mixed(inputs.X, [c for _, c in todo], progress=bar)
    timings["mixed_derivatives_s"] = time.perf_counter() - t
    return values | {p: computed[i] for i, (p, _) in enumerate(todo)}


def _pair_effects(
    request: InteractRequest,
    fixed: FixedBins,
    inputs: _Inputs,
    cols: list[tuple[int, int]],
    estimator: str,
    values: dict[Pair, np.ndarray],
    progress: Callable[[int, str], ProgressFn] | None,
    notes: list[str],
) -> tuple[list[InteractionSummary], float, Screened]:
    """Every pair's summary, the seconds spent evaluating the model (ale route) and the
    rows screened out (:func:`screen_pairs`: a row with a non-finite value in any pair
    leaves every pair)."""
    found: list[tuple[Pair, _Grid | InteractionSummary, np.ndarray | None]] = []
    t_eval = 0.0
    for pair, pc in zip(request.pairs, cols, strict=True):
        grid = _grid(
            pair,
            pc,
            inputs,
            estimator=estimator,
            bins=fixed.bins,
            binning=fixed.binning,
            edges=fixed.edges_file,
        )
        if isinstance(grid, InteractionSummary):
            found.append((pair, grid, None))
            continue
        if estimator == "dale":
            per_row = values[pair][grid.rows]
        else:
            bar = progress(len(grid.rows), f"{pair[0]} x {pair[1]}") if progress else None
            t = time.perf_counter()
            per_row = second_differences(
                _loaded(inputs.model).predict,
                inputs.X[grid.rows],
                pc,
                grid.ea,
                grid.eb,
                grid.ia,
                grid.ib,
                progress=bar,
            )
            t_eval += time.perf_counter() - t
        found.append((pair, grid, per_row))
    screened = screen_pairs(
        request.inputs.model,
        len(inputs.X),
        [(g.rows, v) for _, g, v in found if isinstance(g, _Grid) and v is not None],
        estimator,
        inputs.prediction,
        drop=request.inputs.drop_nonfinite,
    )
    if screened.note is not None:
        notes.append(screened.note)
    interactions: list[InteractionSummary] = []
    for pair, grid, per_row in found:
        if isinstance(grid, InteractionSummary) or per_row is None:
            interactions.append(grid)  # type: ignore[arg-type]
            continue
        inside = screened.keep[grid.rows]
        if not inside.all():
            grid = replace(grid, rows=grid.rows[inside], ia=grid.ia[inside], ib=grid.ib[inside])
            per_row = per_row[inside]
        interactions.append(_pair_summary(pair, estimator, grid, per_row))
    return interactions, t_eval, screened


def screen_pairs(
    path: Path,
    n_rows: int,
    values: list[tuple[np.ndarray, np.ndarray]],
    estimator: str,
    prediction: np.ndarray | None,
    *,
    drop: bool,
    offset: int = 0,
    allow_empty: bool = False,
) -> Screened:
    """The rows whose prediction or any pair's value is not finite: a ModelFailed naming
    them, or with ``drop`` the :class:`~ale_cli.models.checks.Screened` rows to leave out
    of every pair.

    ``values`` are ``(rows, per_row)`` per estimable pair (the rows inside its grid);
    ``offset`` is the first row's number in the data (a chunk's rows).
    """
    from ale_cli.models.checks import screen_rows

    label = "mixed derivatives" if estimator == "dale" else "evaluations at the cell corners"
    checks: list[tuple[str, np.ndarray, int]] = []
    if prediction is not None:
        checks.append(("predictions", prediction, 0))
    if values:
        full = np.zeros((len(values), n_rows))
        for p, (rows, per_row) in enumerate(values):
            full[p, rows] = per_row  # row numbers of the data in the message
        checks.append((label, full, 1))
    return screen_rows(path, n_rows, checks, drop=drop, offset=offset, allow_empty=allow_empty)


def _whole_table_reason(request: InteractRequest) -> str | None:
    """Why the data are read as a whole table (a note; "" when that needs none), None when
    they are streamed (:mod:`ale_cli.estimators.interact_stream`)."""
    from ale_cli.estimators.inputs_stream import whole_table_reason

    return whole_table_reason(request.inputs, request.chunk_rows)


def interact(
    request: InteractRequest,
    *,
    progress: Callable[[int, str], ProgressFn] | None = None,
) -> EstimateResult:
    """``ale interact``: the second-order effect of every requested pair.

    ``progress(total, label)`` may return a callable told how many rows each
    model call finished (one bar for the mixed derivatives, one per pair for
    the classic route).
    """
    t0 = time.perf_counter()
    fixed = _bins(request)
    unused: tuple[str, ...] = ()  # why a store given is not used
    if request.store is not None and request.chunk_rows is not None:
        from ale_cli.estimators.interact_store import interact_store_streamed

        found = interact_store_streamed(request, fixed, progress=progress, started=t0)
        if isinstance(found, EstimateResult):
            return found
        unused, request = (found,), replace(request, store=None)
    from ale_cli.estimators.inputs_stream import Streamed, streamed_or_reason

    opened = streamed_or_reason(  # a store given (and matching) is read whole here
        request.inputs,
        chunk_rows=request.chunk_rows,
        reason="" if request.store is not None else _whole_table_reason(request),
        engine=request.engine,
    )
    if isinstance(opened, Streamed):
        from ale_cli.estimators.interact_stream import interact_streamed

        evaluate = None
        if request.engine == "dask":
            from ale_cli.engines.dask_model import dask_accumulate

            evaluate = dask_accumulate(request.scheduler)
        result = interact_streamed(
            request, fixed, opened, progress=progress, started=t0, evaluate=evaluate
        )
        return replace(result, notes=(*unused, *result.notes))
    reason = opened
    notes: list[str] = [*unused, *([reason] if reason else [])]
    return _whole_table(request, fixed, notes, progress=progress, started=t0)


def _whole_table(
    request: InteractRequest,
    fixed: FixedBins,
    notes: list[str],
    *,
    progress: Callable[[int, str], ProgressFn] | None,
    started: float,
) -> EstimateResult:
    """``ale interact`` on rows held in memory (a matching store's, else the whole table's),
    after the ``notes`` so far; ``started``: when the run began (``perf_counter``)."""
    timings: dict[str, float] = {}
    inputs, cols = _rows(request, notes, timings)
    fixed.check_rows(len(inputs.X), f"data '{request.inputs.data_label}'")
    t_load = time.perf_counter()
    estimator = _estimator(request, inputs.model)
    values = _mixed_values(request, inputs, cols, timings, progress) if estimator == "dale" else {}
    prediction = inputs.prediction
    if prediction is None and inputs.model is not None:
        prediction = inputs.model.predict(inputs.X)  # the spread max_interaction reads
    if prediction is not None:
        inputs.prediction = prediction
    interactions, t_eval, screened = _pair_effects(
        request, fixed, inputs, cols, estimator, values, progress, notes
    )
    if estimator == "ale":
        timings["model_evaluations_s"] = t_eval
    t_end = time.perf_counter()
    timings |= {"load_s": t_load - started, "estimate_s": t_end - t_load}
    params = interaction_params(request.pairs, estimator, fixed, inputs.cached)
    if prediction is not None:
        prediction = prediction[screened.keep]  # the others were refused or dropped
    store_part = inputs.store_part
    if inputs.model is not None and store_part.get("path") is None:  # made from the model
        store_part = _with_nonfinite(store_part, len(screened.dropped))
    summary = with_statistics(
        Summary(
            estimator=estimator,
            params=params,
            store=store_part,
            n_rows=int(screened.keep.sum()),
            features=(),
            interactions=tuple(interactions),
            created=utc_now(),
        ),
        prediction,
    )
    return EstimateResult(
        summary=summary,
        seconds=time.perf_counter() - started,
        timings=timings,
        notes=(*notes, *run_notes(interactions)),
    )
