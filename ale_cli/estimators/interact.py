"""``ale interact``: second-order ALE of feature pairs, classic or DALE: a grid per pair,
one pass of :class:`~ale_cli.estimators.interact_kernel.PairKernel` over the rows of a
matching store or of the data (:func:`open_rows`), then the surfaces."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ale_cli.checks import check_choice
from ale_cli.core.second_order import PairCells, second_order_from_cells
from ale_cli.data.stream import inputs_sha256
from ale_cli.errors import InputError
from ale_cli.estimators.inputs import ModelInputs, Opened, table_columns
from ale_cli.estimators.inputs_stream import Streamed, shipped
from ale_cli.estimators.interact_kernel import PairKernel, PairPlan, Passed
from ale_cli.estimators.model_rows import ModelRequest, open_model_rows
from ale_cli.estimators.pairs import Pair, pair_columns, pair_grids, parse_pairs
from ale_cli.estimators.rows import Rows
from ale_cli.io.files import sha256_file
from ale_cli.io.jsonio import to_jsonable
from ale_cli.io.threads import in_background
from ale_cli.models.checks import dropped_note, nothing_left
from ale_cli.models.mixed import require_mixed_derivatives
from ale_cli.models.profile import DataProfile
from ale_cli.passes.engine import LOCAL, Engine, Ready, Shared
from ale_cli.passes.shipped import ShippedModel
from ale_cli.store.format import one_output
from ale_cli.store.npz import open_store, store_sha256
from ale_cli.summary.build import EstimateResult, run_notes, store_info, utc_now
from ale_cli.summary.model import InteractionSummary, Summary, with_statistics

if TYPE_CHECKING:
    from ale_cli.models.base import ProgressFn

ESTIMATORS = ("dale", "ale")
_ROUTES = {"ale": "classic", "dale": "dale"}


@dataclass(frozen=True)
class InteractRequest(ModelRequest):
    """Options of ``ale interact``: without ``pairs``, every pair of ``inputs.features``;
    ``estimator`` None: dale when the model has autodiff, else ale."""

    pairs: tuple[Pair, ...] = ()
    estimator: str | None = None
    store: Path | None = None
    default_bins: ClassVar[int] = 10

    def __post_init__(self) -> None:
        pairs = parse_pairs(self.pairs)
        features = self.inputs.features
        if not pairs and features is not None:
            pairs = tuple(combinations(features, 2))
        if not pairs:
            raise InputError(
                "{param}: ale interact needs at least one pair A,B (or two features)", param="pairs"
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
        super().__post_init__()


#: options of ``ale compute`` a store must share (with the model and data bytes) to be used
MATCH_OPTIONS = (
    "data_format",
    "inputs",
    "exclude",
    "dropna",
    "model_format",
    "output",
    "categorical",
)


def store_mismatch(path: Path, found: dict[str, Any], inputs: ModelInputs) -> str | None:
    """Why the store at ``path`` with the meta ``found`` is not used (a note), None if it is."""
    if found.get("model", {}).get("sha256") != sha256_file(inputs.model):
        why = "the model file differs"
    elif found.get("data", {}).get("sha256") != inputs_sha256(inputs.data):
        why = "the data file differs"
    else:
        wanted = {k: v for k, v in inputs.result_options().items() if k in MATCH_OPTIONS}
        have = found.get("options") or {}
        other = [k for k, v in to_jsonable(wanted).items() if have.get(k) != v]
        if not other:
            return None
        why = f"it was made with other options ({other[0]})"
    return f"store '{path}' does not match ({why}); computing from the model"


@dataclass
class Found:
    """The rows of a run and the model loaded on the data (``opened`` None when a store
    gives every value); ``stored``: each stored pair (either order) to its row of mixed
    derivatives."""

    rows: Rows
    opened: Streamed | Opened | None
    summary_store: Callable[[int], dict[str, Any]]
    where: str
    stored: dict[Pair, int] = field(default_factory=dict)
    stored_prediction: bool = False


def _opened(
    request: InteractRequest, engine: Engine | None, notes: list[str], timings: dict[str, float]
) -> tuple[Rows, Streamed | Opened]:
    """The model loaded on the data streamed or read whole (None ``engine``: none reads)."""
    rows, found, reading = open_model_rows(request.inputs, request.chunk_rows, engine)
    timings |= found.timings
    notes.extend((*((reading.reason,) if reading.reason else ()), *found.notes))
    return rows, found


def _ship(inputs: ModelInputs, found: Streamed | Opened) -> ShippedModel:
    """The model as a handle (streamed: loaded on the first chunk; a whole table's with the
    profile of its rows)."""
    if isinstance(found, Streamed):
        return shipped(inputs, found.model, found.model_columns, found.scan.first)
    profile = DataProfile.of(found.table.X)
    return shipped(inputs, found.model, table_columns(found.table), profile.head, profile=profile)


def open_rows(
    request: InteractRequest, engine: Engine, notes: list[str], timings: dict[str, float]
) -> Found:
    """The rows of ``request`` as a source for ``engine``, with their notes and timings."""
    if request.store is not None:
        found = _store_rows(request, request.store, notes, timings)
        if found is not None:
            return found
    inputs = request.inputs
    rows, opened = _opened(request, engine, notes, timings)
    made = opened.source(inputs, method=opened.model.method)
    return Found(
        rows,
        opened,
        lambda dropped: made | {"data": made["data"] | {"rows_nonfinite": dropped}},
        f"data '{inputs.data_label}'",
    )


def _store_rows(
    request: InteractRequest, path: Path, notes: list[str], timings: dict[str, float]
) -> Found | None:
    """The rows of a store the estimator uses, else None (with the note saying why)."""
    if request.estimator == "ale":
        notes.append(f"store '{path}' is not used by the ale estimator (it needs the model)")
        return None
    store = open_store(path)
    one_output(store.meta, f"store '{path}'", "ale interact")
    unused = store_mismatch(path, store.meta, request.inputs)
    if unused is not None:
        notes.append(unused)
        return None
    digest = in_background(partial(store_sha256, path))  # overlapping the passes
    stored = {pair: i for i, pair in enumerate(store.pairs())}
    stored |= {(b, a): i for (a, b), i in stored.items() if (b, a) not in stored}
    found = None
    missing = [p for p in request.pairs if p not in stored]
    if missing:
        listed = " ".join(",".join(p) for p in missing)
        notes.append(
            f"store '{path}' has no mixed derivatives of {listed}; computing "
            "them (add them to the store with 'ale compute --pair')"
        )
        found = _opened(request, None, notes, timings)[1]  # no engine reads the data
    names, lo_hi = store.input_names, store.x_range()
    if request.edges is not None:  # the edges file's grids need no ranges
        lo_hi = (np.zeros(len(names)),) * 2
    if lo_hi is None or len(lo_hi[0]) != len(names):  # not recorded: a pass
        rows = Rows.scanned(store, names)
    else:
        rows = Rows(store, names, store.n_rows, *lo_hi)
    categorical = tuple(store.meta.get("categorical_features") or ())
    return Found(
        replace(rows, categorical=categorical),
        found,
        lambda dropped: store_info(path, store, sha256=digest.result()),
        f"store '{path}'",
        stored=stored,
        stored_prediction=True,
    )


def interactions(
    pairs: Sequence[Pair],
    estimator: str,
    plans: dict[int, PairPlan],
    cells: dict[int, PairCells],
    reasons: dict[int, str],
) -> list[InteractionSummary]:
    """Every pair's summary (by position): not estimable, or its surface from its cells."""
    out: list[InteractionSummary] = []
    for p, pair in enumerate(pairs):
        found, reason = cells.get(p), reasons.get(p)
        if found is not None and found.cells.total == 0:
            reason = "no rows inside the given edges of both features"
        if reason is not None or found is None:
            outside = 0 if found is None else found.outside
            out.append(
                InteractionSummary(pair, estimator, "not_estimable", reason, n_outside=outside)
            )
            continue
        plan = plans[p]
        res = second_order_from_cells(
            found.cells, edges_a=plan.edges_a, edges_b=plan.edges_b, route=_ROUTES[estimator]
        )
        note = None
        if estimator == "dale" and not found.nonzero:  # every per-row value was 0
            note = (
                "every mixed derivative is exactly 0: an additive model, or a piecewise-linear "
                "one (e.g. a ReLU network) whose second derivatives vanish almost everywhere; "
                "--estimator ale measures the interactions of piecewise-linear models"
            )
        surface = vars(res) | {"cell_std": res.cell_std if estimator == "dale" else None}
        out.append(
            InteractionSummary(pair, estimator, **surface, n_outside=found.outside, note=note)
        )
    return out


def _pass(
    request: InteractRequest,
    got: Found,
    plans: dict[int, PairPlan],
    estimator: str,
    engine: Engine,
    progress: Callable[[int, str], ProgressFn] | None,
) -> Passed:
    """The one pass of the kernel on ``engine``: every planned pair's cells."""
    bar = None
    if progress is not None and any(p.values != "stored" for p in plans.values()):
        label = "mixed derivatives" if estimator == "dale" else "cell corners"
        bar = progress(got.rows.n_rows, label)
    kernel = PairKernel(
        tuple(plans.values()),
        estimator,
        str(request.inputs.model),
        request.inputs.drop_nonfinite,
        stored_prediction=got.stored_prediction,
    )
    shared: Shared | None = None  # the model for the kernels (None: the store gives every value)
    if got.opened is not None:
        shared = _ship(request.inputs, got.opened) if engine.splits else Ready(got.opened.model)
    passed = engine.run(
        got.rows.source,
        kernel,
        Passed.merge,
        Passed.empty(kernel.plans),
        arrays=kernel.arrays,
        shared=shared,
        progress=bar,
    )
    if passed.kept == 0:
        raise nothing_left(request.inputs.model)
    return passed


def interact(
    request: InteractRequest,
    *,
    engine: Engine = LOCAL,
    progress: Callable[[int, str], ProgressFn] | None = None,
) -> EstimateResult:
    """``ale interact``: the second-order effect of every requested pair on ``engine``."""
    started = time.perf_counter()
    fixed = request.fixed_bins()
    request.inputs.check_files()
    notes: list[str] = []
    timings: dict[str, float] = {}
    got = open_rows(request, engine, notes, timings)
    model = None if got.opened is None else got.opened.model
    if model is not None:
        where = f"model '{request.inputs.model}' with {{param}} {request.inputs.output}"
        one_output(model.describe(), where, "ale interact", "pass one {param} NAME")
    cols = pair_columns(request.pairs, got.rows.names, param="pairs", where=got.where)
    fixed.check_rows(got.rows.n_rows, f"data '{request.inputs.data_label}'")
    estimator = request.estimator
    if estimator is None:
        estimator = "dale" if model is None or model.method == "autodiff" else "ale"
    if estimator == "dale" and model is not None:
        require_mixed_derivatives(
            model, request.inputs.model, param="estimator", value="dale", hint="use {param} ale"
        )
    t_load = time.perf_counter()
    grids, reasons = pair_grids(request.pairs, cols, got.rows, fixed)
    plans = {}  # every estimable pair's grid and where its values come from
    for p in sorted(grids):
        row = got.stored.get(request.pairs[p], -1) if estimator == "dale" else -1
        values = "corners" if estimator == "ale" else "stored" if row >= 0 else "autodiff"
        plans[p] = PairPlan(cols[p], *grids[p], values, row)
    passed = _pass(request, got, plans, estimator, engine, progress)
    cells = dict(zip(plans, passed.pairs, strict=True))
    found = interactions(request.pairs, estimator, plans, cells, reasons)
    if any(p.values != "stored" for p in plans.values()):
        spent = "mixed_derivatives_s" if estimator == "dale" else "model_evaluations_s"
        timings[spent] = passed.model_s
    timings |= {"load_s": t_load - started, "estimate_s": time.perf_counter() - t_load}
    dropped, pairs = passed.dropped_rows(), request.pairs
    params = {
        "pairs": [list(p) for p in pairs],
        "estimator": estimator,
        **{k: v for k, v in fixed.params("mean", None).items() if k != "features"},
        "cached_pairs": [list(p) for p in pairs if p in got.stored] if estimator == "dale" else [],
    }
    summary = with_statistics(
        Summary(
            estimator=estimator,
            params=params,
            store=got.summary_store(len(dropped)),
            n_rows=passed.kept,
            features=(),
            interactions=tuple(found),
            created=utc_now(),
        ),
        passed.prediction(),
    )
    if len(dropped):
        notes.append(dropped_note(request.inputs.model, dropped))
    return EstimateResult(
        summary=summary,
        seconds=time.perf_counter() - started,
        timings=timings,
        notes=(*notes, *run_notes(found)),
    )
