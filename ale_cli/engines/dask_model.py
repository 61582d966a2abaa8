"""``ale classic`` and ``ale interact`` with ``--engine dask``: the model calls on the workers.

Apley-Zhu's first-order estimate evaluates the model at both limits of every row's
bin for every feature (2 F calls per row); the second-order estimators at the four
corners of every row's cell for every pair, or the mixed derivatives by autodiff.
That is nearly all of a run's time, and it runs on the workers: one task per
partition of the data (a file of a partitioned Parquet dataset, or a range of row
groups of a large Parquet file: :mod:`ale_cli.data.partitions`), chunk by chunk
with the functions the local engine uses (:func:`ale_cli.estimators.classic_stream.chunk_cells`,
:func:`ale_cli.estimators.interact_stream.chunk_pairs`). The model file is sent to every
worker once and loaded once per worker process
(:func:`ale_cli.engines.dask._worker_model`).

This process makes the cheap passes that read the columns only, as the local engine
does: the first (ranges, row count, hash; the model is checked on the first chunk)
and, for quantile bins, the two of the exact type-1 quantile edges. It merges the
workers' cells in partition order (:meth:`~ale_cli.core.binstats.CellStats.merge`)
and spools their predictions for the summary's distribution, one partition at a
time. The summaries equal the local engine's (to rounding of the merges, ~1e-16).

Row numbers in messages (non-finite values) count from each partition's first row by
the Parquet footers' row counts, as ``ale compute --engine dask`` counts them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ale_cli.core.binstats import CellStats
from ale_cli.estimators.classic_stream import Passed, chunk_cells, empty_cells
from ale_cli.estimators.interact_stream import PairCells, chunk_pairs
from ale_cli.estimators.interact_stream import Passed as PairsPassed
from ale_cli.passes.spool import PredictionSpool

if TYPE_CHECKING:
    from distributed import Client

    from ale_cli.engines.dask import _PartSpec
    from ale_cli.estimators.inputs import ModelInputs
    from ale_cli.estimators.inputs_stream import Streamed
    from ale_cli.estimators.interact import InteractRequest
    from ale_cli.models.base import ProgressFn
    from ale_cli.models.mixed import MixedFn


def classic_part(
    model_bytes: bytes,
    spec: _PartSpec,
    inputs: ModelInputs,
    file: str,
    offset: int,
    edges: dict[int, np.ndarray],
    row_groups: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """On a worker: the evaluation pass over the partition ``file`` (its row groups
    ``row_groups``, None: all of it; its first row is row ``offset`` of the dataset),
    chunk by chunk: its cells merged in order, its rows outside the edges, the rows
    dropped and the kept predictions of each chunk."""
    from ale_cli.engines.dask import _worker_model

    cols = list(spec.columns)
    cells = empty_cells(edges)
    outside = dict.fromkeys(edges, 0)
    dropped: list[np.ndarray] = []
    predictions: list[np.ndarray] = []
    model = None
    read = 0
    for X in _partition(spec, file, row_groups):
        if model is None:
            model = _worker_model(model_bytes, spec, X)
        part = chunk_cells(inputs, model, X, cols, edges, offset=offset + read)
        for j, c in part.cells.items():
            cells[j] = cells[j].merge(c)
            outside[j] += part.outside[j]
        dropped.append(part.dropped)
        predictions.append(part.prediction)
        read += len(X)
    return {
        "cells": {j: (c.counts, c.mean, c.m2) for j, c in cells.items()},
        "outside": outside,
        "dropped": np.concatenate(dropped) if dropped else np.empty(0, dtype=np.intp),
        "predictions": predictions,
        "rows": read,
    }


def dask_evaluate(scheduler: str | None) -> Callable[..., Passed]:
    """The evaluation pass of :func:`ale_cli.estimators.classic_stream.classic_streamed` on the
    workers of the cluster at ``scheduler`` (a local cluster without one)."""

    def evaluate(
        inputs: ModelInputs,
        streamed: Streamed,
        edges: dict[int, np.ndarray],
        progress: Callable[[int], ProgressFn] | None,
    ) -> Passed:
        from ale_cli.engines.dask import client, worker_slots

        bar = progress(streamed.scan.n_rows) if progress is not None else None
        cells = empty_cells(edges)
        outside = dict.fromkeys(edges, 0)
        dropped: list[np.ndarray] = []
        with client(scheduler) as dask_client, PredictionSpool(streamed.passes.chunk_rows) as spool:
            plan = _plan(inputs, streamed, worker_slots(dask_client))
            for found in _in_order(dask_client, plan, classic_part, edges):
                for j, (counts, mean, m2) in found["cells"].items():
                    cells[j] = cells[j].merge(CellStats(counts=counts, mean=mean, m2=m2))
                    outside[j] += found["outside"][j]
                dropped.append(found["dropped"])
                for prediction in found["predictions"]:
                    spool.add(prediction)
                if bar is not None:
                    bar(found["rows"])
            kept, distribution = spool.n, spool.distribution()
        rows_out = np.concatenate(dropped) if dropped else np.empty(0, dtype=np.intp)
        return Passed(cells, outside, rows_out, kept, distribution)

    return evaluate


def _plan(inputs: ModelInputs, streamed: Streamed, slots: int) -> dict[str, Any]:
    """The partitions for ``slots`` worker threads (:func:`~ale_cli.data.partitions.
    plan_partitions`), the model's bytes and what every task is given."""
    from ale_cli.data.partitions import plan_partitions
    from ale_cli.data.stream import dataset_files
    from ale_cli.engines.dask import _PartSpec
    from ale_cli.io.files import sha256_file
    from ale_cli.models import detect_format

    scan = streamed.scan
    files = dataset_files(Path(inputs.data))
    spec = _PartSpec(
        model_path=str(inputs.model),
        model_sha256=sha256_file(inputs.model),
        load_options=inputs.load_options(),
        names=scan.names,
        categorical=scan.categorical,
        features=streamed.features,
        columns=streamed.columns,
        data_format=scan.format,
        dropna=inputs.dropna,
        drop_nonfinite=inputs.drop_nonfinite,
        chunk_rows=streamed.passes.chunk_rows,
        model_format=detect_format(inputs.model, inputs.model_format),
        dtypes=dict(scan.dtypes),
        data_sha256=scan.sha256,
    )
    return {
        "spec": spec,
        "model_bytes": Path(inputs.model).read_bytes(),
        "inputs": inputs,
        "partitions": plan_partitions(files, fmt=scan.format, slots=slots),
    }


def _in_order(dask_client: Client, plan: dict[str, Any], task: Any, *args: Any) -> Iterator[Any]:
    """``task(model, spec, inputs, file, offset, *args, row_groups=...)`` of every
    partition on the workers, the answers in partition order, one at a time (memory: one
    answer); the first error in that order is raised, as the local pass would meet it,
    and the other tasks are cancelled."""
    sent = dask_client.scatter(plan["model_bytes"], broadcast=True, hash=False)
    futures = [
        dask_client.submit(
            task,
            sent,
            plan["spec"],
            plan["inputs"],
            str(part.file),
            part.offset,
            *args,
            row_groups=part.row_groups,
            pure=False,
        )
        for part in plan["partitions"]
    ]
    try:
        for future in futures:
            yield future.result()
            future.release()
    finally:
        dask_client.cancel(futures)


def _partition(
    spec: _PartSpec, file: str, row_groups: tuple[int, int] | None
) -> Iterator[np.ndarray]:
    """The float64 chunks of the partition ``file`` (its row groups ``row_groups``, None:
    all of it), as the local passes give them."""
    from ale_cli.engines.dask import open_partition

    for X in open_partition(spec, file, row_groups):
        yield np.asarray(X, dtype=np.float64)


def interact_part(
    model_bytes: bytes,
    spec: _PartSpec,
    inputs: ModelInputs,
    file: str,
    offset: int,
    grids: dict[int, tuple[np.ndarray, np.ndarray]],
    cols: list[tuple[int, int]],
    estimator: str,
    row_groups: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """On a worker: the pass of ``ale interact`` over the partition ``file`` (its row groups
    ``row_groups``, None: all of it; its first row is row ``offset`` of the dataset), chunk
    by chunk into a fresh :class:`PairCells`: its
    statistics, the rows dropped, the kept predictions of each chunk and the seconds in
    the model."""
    from ale_cli.engines.dask import _worker_model
    from ale_cli.models.mixed import require_mixed_derivatives

    acc = PairCells(grids, cols)
    model: Any = None
    mixed: MixedFn | None = None
    dropped: list[np.ndarray] = []
    predictions: list[np.ndarray] = []
    read, spent = 0, 0.0
    for X in _partition(spec, file, row_groups):
        if model is None:
            model = _worker_model(model_bytes, spec, X)
            if estimator == "dale":
                mixed = require_mixed_derivatives(
                    model, inputs.model, param="estimator", value="dale", hint="use {param} ale"
                )
        rows_out, kept, seconds = chunk_pairs(
            inputs, model, mixed, X, acc, estimator, offset=offset + read
        )
        dropped.append(rows_out)
        predictions.append(kept)
        read += len(X)
        spent += seconds
    return {
        "cells": {p: (c.counts, c.mean, c.m2) for p, c in acc.cells.items()},
        "outside": dict(acc.outside),
        "nonzero": dict(acc.nonzero),
        "dropped": np.concatenate(dropped) if dropped else np.empty(0, dtype=np.intp),
        "predictions": predictions,
        "rows": read,
        "model_s": spent,
    }


def dask_accumulate(scheduler: str | None) -> Callable[..., PairsPassed]:
    """The pass of :func:`ale_cli.estimators.interact_stream.interact_streamed` on the workers of
    the cluster at ``scheduler`` (a local cluster without one)."""

    def accumulate(
        request: InteractRequest,
        streamed: Streamed,
        acc: PairCells,
        estimator: str,
        mixed: MixedFn | None,
        progress: Callable[[int, str], ProgressFn] | None,
    ) -> PairsPassed:
        from ale_cli.engines.dask import client, worker_slots

        what = "mixed derivatives" if estimator == "dale" else "cell corners"
        bar = progress(streamed.scan.n_rows, what) if progress is not None else None
        dropped: list[np.ndarray] = []
        spent = 0.0
        args = (acc.grids, acc.cols, estimator)
        with client(scheduler) as dask_client, PredictionSpool(streamed.passes.chunk_rows) as spool:
            plan = _plan(request.inputs, streamed, worker_slots(dask_client))
            for found in _in_order(dask_client, plan, interact_part, *args):
                cells = {
                    p: CellStats(counts=n, mean=m, m2=m2)
                    for p, (n, m, m2) in found["cells"].items()
                }
                acc.merge_from(cells, found["outside"], found["nonzero"])
                dropped.append(found["dropped"])
                for prediction in found["predictions"]:
                    spool.add(prediction)
                spent += found["model_s"]
                if bar is not None:
                    bar(found["rows"])
            kept, distribution = spool.n, spool.distribution()
        rows_out = np.concatenate(dropped) if dropped else np.empty(0, dtype=np.intp)
        return PairsPassed(rows_out, kept, distribution, spent)

    return accumulate
