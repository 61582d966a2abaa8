"""The Python API: every command as a function of plain values, returning frozen results.

Options are the command's (``max_bins`` is ``--max-bins``, ``pairs`` ``--pair``; ``ale
COMMAND --help`` says what each does); names are a list or one comma-separated string.
``model`` may be the model object, ``data`` a DataFrame and ``store`` a
:class:`~ale_cli.store.npz.Store` (docs/commands.md, "From Python"; docs/models.md, "Models
in a notebook"). Errors are ``InputError`` (naming the parameter) or ``RunError``.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Sequence
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ale_cli.estimators.classic as classic_estimator
import ale_cli.estimators.interact as interact_estimator
import ale_cli.estimators.regional as regional_estimator
from ale_cli import API
from ale_cli.checks import make_request, refuse_stdio
from ale_cli.engines import engine_for
from ale_cli.errors import InputError
from ale_cli.estimators import dale, local_effects
from ale_cli.estimators.bands import Bootstrap
from ale_cli.estimators.inputs import ModelInputs
from ale_cli.estimators.local_effects import ComputeResult
from ale_cli.job import read_job, run_job
from ale_cli.models.objects import Predictor as Predictor  # exported (API)
from ale_cli.outputs.guard import guard, model_files, store_kind
from ale_cli.passes.engine import Engine
from ale_cli.plot.first_order import feature_figure, overview_figure
from ale_cli.plot.outputs import outputs_figure
from ale_cli.plot.second_order import interaction_figure
from ale_cli.report import build_report, write_report
from ale_cli.store.npz import Store, read_store
from ale_cli.summary import export
from ale_cli.summary import model as _summary
from ale_cli.summary.model import FeatureSummary as FeatureSummary  # exported (API)
from ale_cli.summary.model import Summary, read_summary
from ale_cli.summary.regional import RegionalSummary

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = list(API)  # the one list, kept in ale_cli/__init__.py for its lazy re-export

Names = str | Sequence[str] | None


def compute(
    model: str | Path | Any,
    data: str | Path | pd.DataFrame,
    *,
    out: str | Path,
    features: Names = None,
    pairs: Sequence[str | Sequence[str]] = (),
    force: bool = False,
    discrete: Names = None,
    engine: str | Engine = "local",
    scheduler: str | None = None,
    **options: Any,
) -> ComputeResult:
    """Compute the local effects and write a store at ``out`` (reused when made from the
    same model, data and options, unless ``force``); ``options`` are the other fields of
    :class:`~ale_cli.estimators.inputs.ModelInputs` (``exclude``, ``output``, ``method``...).
    """
    inputs = _model_inputs(compute, model, data, features, options)
    where = engine_for(engine, scheduler)
    read = _paths(*model_files(model), data)
    guard(out, kind=store_kind(where.splits, out), inputs=read, force=force)
    request = make_request(
        local_effects.ComputeRequest,
        locals(),
        inputs=inputs,
        out=Path(out),
    )
    return local_effects.compute(request, engine=where, force=force)


def rebin(
    store: str | Path | Store,
    *,
    bins: int | None = None,
    binning: str | None = None,
    edges: str | Path | None = None,
    center: str = "mean",
    features: Names = None,
    bootstrap: int = 0,
    ci: float = 0.95,
    seed: int | None = None,
    engine: str = "local",
    scheduler: str | None = None,
    statistics: str = "ale-cli",
) -> Summary:
    """DALE on fixed bins (default: 20 uniform bins) from a store; ``bootstrap`` B > 0 adds
    percentile bands at level ``ci``."""
    request = make_request(
        dale.RebinRequest,
        locals(),
        store=_path(store),
        edges=_path(edges),
        bootstrap=Bootstrap(bootstrap, ci, seed),
        engine=engine_for(engine, scheduler),
    )
    return dale.rebin(request).summary


def rhale(
    store: str | Path | Store,
    *,
    max_bins: int = 50,
    min_points: int | None = None,
    alpha: float = 0.2,
    grid: str = "uniform",
    center: str = "mean",
    features: Names = None,
    bootstrap: int = 0,
    ci: float = 0.95,
    seed: int | None = None,
    engine: str = "local",
    scheduler: str | None = None,
    statistics: str = "ale-cli",
) -> Summary:
    """RHALE with automatic bins from a store; ``bootstrap`` as in :func:`rebin`."""
    request = make_request(
        dale.RhaleRequest,
        locals(),
        store=_path(store),
        bootstrap=Bootstrap(bootstrap, ci, seed),
        engine=engine_for(engine, scheduler),
    )
    return dale.rhale(request).summary


def regional(
    store: str | Path | Store,
    *,
    features: Names = None,
    max_depth: int = 2,
    min_drop: float = 0.1,
    min_rows: int | None = None,
    candidates: int = 20,
    search_rows: int | str | None = regional_estimator.SEARCH_ROWS,
    bins: int | None = None,
    max_bins: int = 50,
    center: str = "mean",
    engine: str = "local",
    scheduler: str | None = None,
) -> RegionalSummary:
    """Regional effects from a store: per feature, the splits of the rows on the other
    inputs that lower the heterogeneity by ``min_drop``, each leaf with its own record.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, (4000, 2))
    >>> E = np.column_stack([np.where(X[:, 1] > 0, 3.0, -3.0), np.ones(4000)])
    >>> store = Store(X=X, local_effects=E, prediction=E.sum(1), feature_names=("x1", "x3"),
    ...               meta={})
    >>> out = regional(store, max_depth=1)
    >>> [leaf.label for leaf in out.feature("x1").leaves]
    ['x3 <= -0.01107', 'x3 > -0.01107']
    >>> round(out.feature("x1").drop, 2), out.feature("x3").status
    (0.91, 'no_split')
    """

    request = make_request(
        regional_estimator.RegionalRequest,
        locals(),
        store=_path(store),
        engine=engine_for(engine, scheduler),
    )
    return regional_estimator.regional(request).summary


def classic(
    model: str | Path | Any,
    data: str | Path | pd.DataFrame,
    *,
    features: Names = None,
    bins: int | None = None,
    binning: str | None = None,
    edges: str | Path | None = None,
    center: str = "mean",
    bootstrap: int = 0,
    ci: float = 0.95,
    seed: int | None = None,
    discrete: Names = None,
    chunk_rows: int | None = 1 << 16,
    engine: str = "local",
    scheduler: str | None = None,
    statistics: str = "ale-cli",
    **options: Any,
) -> Summary:
    """Classic ALE (Apley-Zhu) from the model at the bin limits (default: 20 quantile bins);
    ``chunk_rows`` None reads the whole table at once; ``options`` as in :func:`compute`."""
    request = make_request(
        classic_estimator.ClassicRequest,
        locals(),
        inputs=_model_inputs(classic, model, data, features, options),
        edges=_path(edges),
        bootstrap=Bootstrap(bootstrap, ci, seed),
    )
    return classic_estimator.classic(request, engine=engine_for(engine, scheduler)).summary


def interact(
    model: str | Path | Any,
    data: str | Path | pd.DataFrame,
    *,
    pairs: Sequence[str | Sequence[str]] = (),
    features: Names = None,
    estimator: str | None = None,
    bins: int | None = None,
    binning: str | None = None,
    edges: str | Path | None = None,
    store: str | Path | None = None,
    chunk_rows: int | None = 1 << 16,
    engine: str = "local",
    scheduler: str | None = None,
    **options: Any,
) -> Summary:
    """Second-order effects of ``pairs`` (default: every pair of ``features``), with the
    mixed derivatives of a ``store`` from ``compute(pairs=...)`` when it matches."""
    request = make_request(
        interact_estimator.InteractRequest,
        locals(),
        inputs=_model_inputs(interact, model, data, features, options),
        store=_path(store),
        edges=_path(edges),
    )
    return interact_estimator.interact(request, engine=engine_for(engine, scheduler)).summary


def plot(
    summary: Summary | str | Path,
    feature: str | tuple[str, str] | None = None,
    *,
    store: Store | str | Path | None = None,
) -> Figure:
    """A matplotlib Figure of one feature (or pair ``(a, b)`` of an interact summary);
    without ``feature``, the overview of every feature. Nothing is shown or saved."""
    summary = read_summary(summary) if not isinstance(summary, Summary) else summary
    loaded = read_store(store) if store is not None and not isinstance(store, Store) else store
    if isinstance(feature, tuple):
        for index, item in enumerate(summary.interactions):
            if set(item.features) == set(feature):
                return interaction_figure(summary, index, store=loaded)
        pairs = ", ".join(i.name for i in summary.interactions) or "none"
        raise InputError(f"summary has no interaction {','.join(feature)} (interactions: {pairs})")
    if feature is None:
        return overview_figure(summary)
    summary.feature(feature)  # InputError listing the features if unknown
    if summary.outputs:  # a row of panels, one per output, as ale plot draws it
        return outputs_figure(summary, (feature,))
    return feature_figure(summary, feature, store=loaded)


def report(
    summaries: Sequence[str | Path],
    *,
    out: str | Path | None = None,
    store: str | Path | None = None,
    audit: str | Path | None = None,
    history: str | Path | None = None,
    timestamp: bool = True,
    force: bool = False,
) -> str:
    """The HTML page of ``ale report`` (also written to ``out`` when given)."""
    guard(out, kind="html", inputs=_paths(*summaries, store, audit, history), force=force)
    page = build_report(summaries, store=store, audit=audit, history=history, timestamp=timestamp)
    if out is not None:
        write_report(out, page.html)
    return page.html


def run(
    job: str | Path, *, out: str | Path | None = None, wait: bool = False, model: Any = None
) -> Any:
    """Run a job file as ``ale run`` does; a :class:`~ale_cli.job.JobResult`. ``model``: a
    model object run in place of the job file's model."""
    refuse_stdio(job, "job", "a job file")
    spec = read_job(job, model=model)
    target = Path(out) if out is not None else spec.out
    if target is None:
        raise InputError("{param}: give the run's directory, or 'out' in the job file", param="out")
    refuse_stdio(target, "out", "a run directory")
    return run_job(spec, target, wait=wait)


def write_summary(
    path: str | Path, summary: Summary, *, timestamp: bool = True, force: bool = False
) -> None:
    """Write ``summary`` as JSON to ``path`` atomically (over another file: ``force``)."""
    guard(path, kind="summary", force=force)
    _summary.write_summary(path, summary, timestamp=timestamp)


def summary_frame(summary: Summary | str | Path) -> pd.DataFrame:
    """The summary as one long pandas DataFrame (the table of ``ale export``)."""
    return export.summary_frame(summary if isinstance(summary, Summary) else read_summary(summary))


def _model_inputs(
    func: Callable[..., Any], model: Any, data: Any, features: Names, options: dict[str, Any]
) -> ModelInputs:
    """The ModelInputs of ``func``'s ``options``; an unknown keyword is an InputError naming
    the closest one (``pairs`` for ``--pair``)."""
    params = inspect.signature(func).parameters.values()
    known = sorted(
        {p.name for p in params if p.kind is p.KEYWORD_ONLY}.union(
            f.name for f in fields(ModelInputs) if f.name not in ("model", "data", "model_source")
        )
    )
    for key in sorted(options.keys() - set(known)):
        close = difflib.get_close_matches(key, known, n=1)
        hint = f"did you mean '{close[0]}'?" if close else f"it takes {', '.join(known)}"
        raise InputError(f"{func.__name__}() has no keyword '{key}'; {hint}")
    return ModelInputs(model=model, data=data, features=features, **options)


def _paths(*values: Any) -> list[str | Path]:
    """The arguments that name files (a DataFrame or an in-memory Store does not)."""
    return [v for v in values if isinstance(v, str | Path)]


def _path(value: Any) -> Any:
    """A file name as a Path; None and an in-memory Store as they are."""
    return value if value is None or isinstance(value, Store) else Path(value)
