"""``ale regional``: regional effects from a store, with no model call (the method:
docs/estimators.md, "Regional effects"): every feature's global record and grid in one
pass, the candidate splits, one pass per depth growing the trees, each leaf's record on
its rows. A store that fits in ``HOLD_BYTES`` is read once; a store of secants is refused.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ale_cli.checks import check_count, names_tuple
from ale_cli.core.binstats import CellStats
from ale_cli.core.rhale import DEFAULT_ALPHA, DEFAULT_MAX_BINS, default_min_points
from ale_cli.data.source import Held
from ale_cli.errors import InputError
from ale_cli.estimators import secants
from ale_cli.estimators.cells import ROWS, binned, ranges, store_passes
from ale_cli.estimators.dale import check_rhale_options, rhale_summary
from ale_cli.estimators.levels import (
    LEVEL_DOWN,
    LEVEL_UP,
    LevelPlan,
    stored_plans,
    with_stored_levels,
)
from ale_cli.estimators.regional_passes import Feature, search_sample, splitters
from ale_cli.estimators.regional_tree import Growth, grow
from ale_cli.passes.engine import LOCAL, Engine
from ale_cli.store.format import one_output
from ale_cli.store.npz import Store, StoreFile, open_store
from ale_cli.summary.build import (
    not_estimable,
    skip_reasons,
    store_info,
    summary_from_cells,
    utc_now,
)
from ale_cli.summary.model import FeatureSummary, Summary, with_statistics
from ale_cli.summary.regional import (
    REGIONAL,
    RegionalFeature,
    RegionalSummary,
)

#: a store whose rows take at most this many bytes is read once and its passes run in memory
HOLD_BYTES = 2**30
#: the splits are chosen on a sample of about this many rows by default (the search's work
#: is rows x inputs x features; the records use every row)
SEARCH_ROWS = 100_000
#: a prediction's rounding error, in units of eps x the largest |prediction| (the model's
#: own arithmetic rounds more than once)
ROUNDING_ULPS = 8
_EPS = {"float64": 2.0**-52, "float32": 2.0**-23, "float16": 2.0**-10, "bfloat16": 2.0**-7}


@dataclass(frozen=True)
class RegionalRequest:
    """Options of ``ale regional``, checked here: ``min_rows`` None means ``ceil(N / 20)``,
    at least 2; ``search_rows`` ``"all"`` (or None): the splits chosen on every row."""

    store: Path | Store
    features: tuple[str, ...] | None = None
    max_depth: int = 2
    min_drop: float = 0.1
    min_rows: int | None = None
    candidates: int = 20
    search_rows: int | str | None = SEARCH_ROWS
    bins: int | None = None
    max_bins: int = DEFAULT_MAX_BINS
    alpha: float = DEFAULT_ALPHA
    center: str = "mean"
    engine: Engine = field(default=LOCAL)

    def __post_init__(self) -> None:
        object.__setattr__(self, "features", names_tuple(self.features, "features"))
        check_count(self.max_depth, "max_depth")
        check_count(self.candidates, "candidates")
        if self.min_rows is not None:
            check_count(self.min_rows, "min_rows", least=2)
        rows = self.search_rows
        if isinstance(rows, str) and (rows.strip().isdigit() or rows.strip() == "all"):
            rows = None if rows.strip() == "all" else int(rows)
        if isinstance(rows, str):
            raise InputError(
                f"{{param}} must be a number of rows or 'all', got '{rows}'", param="search_rows"
            )
        if rows is not None:
            check_count(rows, "search_rows", least=2)
        object.__setattr__(self, "search_rows", rows)
        if self.bins is not None:
            check_count(self.bins, "bins")
        check_rhale_options(max_bins=self.max_bins, alpha=self.alpha, center=self.center)
        drop = self.min_drop
        if isinstance(drop, bool) or not (
            isinstance(drop, int | float) and math.isfinite(drop) and 0.0 <= drop < 1.0
        ):
            raise InputError(
                f"{{param}} must be a number from 0 to below 1, got {drop}", param="min_drop"
            )

    def record(self, name: str, edges: np.ndarray, cell: CellStats) -> FeatureSummary:
        """A first-order record from cells on ``edges``: RHALE's bins, or the fixed ``bins``."""
        if self.bins is not None:
            return summary_from_cells(name, edges, cell, n_outside=0, center=self.center)
        points = default_min_points(cell.total)
        return rhale_summary(
            name, edges, cell, min_points=points, alpha=self.alpha, center=self.center
        )

    def params(self, min_rows: int, searched: int) -> dict[str, Any]:
        return {
            "features": list(self.features) if self.features is not None else None,
            "max_depth": self.max_depth,
            "min_drop": self.min_drop,
            "min_rows": min_rows,
            "min_rows_rule": "given" if self.min_rows is not None else "ceil(N/20), at least 2",
            "candidates": self.candidates,
            "search_rows": self.search_rows,
            "searched_rows": searched,
            "bins": self.bins,
            "max_bins": self.max_bins,
            "alpha": self.alpha,
            "center": self.center,
            "heterogeneity": "sqrt(sum_k dz_k^2 s_k^2) on the feature's RHALE grid",
        }


@dataclass(frozen=True)
class RegionalResult:
    """What ``ale regional`` made: the summary, seconds taken and notes to print."""

    summary: RegionalSummary
    seconds: float
    notes: tuple[str, ...] = ()


def regional(request: RegionalRequest) -> RegionalResult:
    """``ale regional``: each chosen feature's regions (see the module docstring)."""
    t0 = time.perf_counter()
    store = request.store
    if not isinstance(store, Store):
        store = open_store(store)
        one_output(store.meta, f"store '{store.path}'", "ale regional")
    path = getattr(store, "path", None)
    if secants.is_secant(store.meta):
        raise InputError(
            f"store '{path}' holds secants of a piecewise-constant model; "
            "regional effects are computed from derivative stores"
        )
    n = store.n_rows
    min_rows = request.min_rows if request.min_rows is not None else default_min_points(n)
    with request.engine as engine:
        p = store_passes(store, request.features, engine)
        names = p.columns.names
        stored = stored_plans(store.meta, f"store '{path}'")
        held = {plan.name: (i, plan) for i, plan in enumerate(stored)}
        plans = {name: held[name] for name in names if name in held}  # held per level
        arrays = (*ROWS, *((LEVEL_UP, LEVEL_DOWN) if plans else ()))
        width = len(store.input_names) + len(store.feature_names)  # float64 columns
        if isinstance(store, StoreFile) and not engine.splits and n * width * 8 <= HOLD_BYTES:
            p = replace(p, source=Held.read(store, (*arrays, "prediction")))
        lo, hi = ranges(p)
        parts = [c["prediction"] for c in p.source.chunks(("prediction",))]  # held, or read
        prediction = np.concatenate(parts).astype(np.float64, copy=False)
        categorical = store.meta.get("categorical_features") or ()
        skip = skip_reasons(names, lo, hi, categorical)
        skip = {name: why for name, why in skip.items() if name not in plans}
        todo = [j for j, name in enumerate(names) if name not in skip and name not in plans]
        inputs = store.input_names
        per_level = (*categorical, *(pl.name for pl in stored))
        share = 1.0 if request.search_rows is None else min(1.0, int(request.search_rows) / n)
        search = p if share >= 1.0 else search_sample(p, share, arrays)
        found = splitters(search, inputs, per_level=per_level, candidates=request.candidates)
        feats = _level_features(store, p, plans, request.center)
        feats += _numeric_features(request, search, todo, (lo, hi), search is p)
        feats = _with_noise(feats, store.meta, prediction)
        growth = Growth(
            request.max_depth,
            request.min_drop,
            max(2, math.ceil(min_rows * search.n_rows / n)),  # on the search sample
            search is not p,
            request.center,
            request.record,
            n,
            {plan.name: plan.labels for plan in stored if plan.labels is not None},
        )
        trees, whole = grow(p, search, feats, found, growth)
    regions = [
        RegionalFeature(name, "not_estimable", reason=skip[name]) if name in skip else trees[name]
        for name in names
    ]
    # a record None (a sampled search's) from the leaves' cells on every row
    records = {f.name: f.record or request.record(f.name, f.grid, whole[f.name]) for f in feats}
    features = tuple(not_estimable(n, skip[n]) if n in skip else records[n] for n in names)
    summary = Summary(
        estimator=REGIONAL,
        params=request.params(min_rows, search.n_rows),
        store=store_info(path, store),
        n_rows=n,
        features=features,
        created=utc_now(),
    )
    result = RegionalSummary(with_statistics(summary, prediction), tuple(regions))
    notes = tuple(f"{r.name}: {r.note}" for r in regions if r.note)
    return RegionalResult(result, time.perf_counter() - t0, notes)


def _with_noise(
    feats: list[Feature], meta: dict[str, Any], prediction: np.ndarray
) -> list[Feature]:
    """Each feature's heterogeneity from rounding alone, ``delta sqrt(sum_k dz_k^2)``: a
    jump, or a central difference's numerator, is the difference of two predictions, each
    off by up to ``ROUNDING_ULPS`` x eps of the model's dtype x the largest |prediction|,
    so a local effect by ``delta`` = twice that (a jump) or that over the step h (a central
    difference, ``2 h`` apart); 0 for any other derivative (autodiff)."""
    details = meta.get("method_details") or {}
    eps = _EPS.get(str(details.get("dtype")), _EPS["float64"])
    top = float(np.max(np.abs(prediction), initial=0.0, where=np.isfinite(prediction)))
    rounding = ROUNDING_ULPS * eps * top
    steps = (details.get("step") or {}).get("absolute") or ()
    out = []
    for f in feats:
        if f.plan is not None:
            delta, dz = 2 * rounding, np.ones(f.n_cells - 1)
        else:
            h = float(steps[f.x]) if f.x < len(steps) else 0.0
            delta, dz = (rounding / h if h > 0 else 0.0), np.diff(f.grid)
        out.append(replace(f, noise=delta * float(np.sqrt(np.sum(dz**2)))))
    return out


def _numeric_features(
    request: RegionalRequest,
    search: Any,
    todo: list[int],
    ranged: tuple[np.ndarray, np.ndarray],
    every: bool,
) -> list[Feature]:
    """The numeric features ``todo``: grids and cells searched, records if ``every`` row."""
    bins = request.max_bins if request.bins is None else request.bins
    g, cells, _ = binned(search, todo, *ranged, bins=bins, binning="uniform")
    out = []
    for j in todo:
        name = search.columns.names[j]
        shift = np.where(cells[j].counts > 0, cells[j].mean, 0.0)
        record = request.record(name, g[j], cells[j]) if every else None
        x, e = search.columns.x[j], search.columns.e[j]
        out.append(Feature(name, x, e, record, g[j], shift, cells=cells[j]))
    return out


def _level_features(
    store: Store | StoreFile, p: Any, plans: dict[str, tuple[int, LevelPlan]], center: str
) -> list[Feature]:
    """The features held per level: records, their jumps' means the shifts of split cells."""
    held = [not_estimable(name, "held per level") for name in plans]
    records = with_stored_levels(held, store, center=center)
    out = []
    for (name, (i, plan)), record in zip(plans.items(), records, strict=True):
        shift = np.nan_to_num(np.asarray(record.bin_effect, dtype=np.float64))
        x = p.columns.x[p.columns.names.index(name)]
        out.append(Feature(name, x, i, record, np.empty(0), shift, plan))
    return out
