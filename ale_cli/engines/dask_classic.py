"""``ale classic --engine dask``: the model evaluations on the workers of a Dask cluster.

Apley-Zhu's estimate evaluates the model at both limits of every row's bin for every
feature: 2 F model calls per row, nearly all of the run's time. Those run on the
workers, one task per partition of the data (a file of a partitioned Parquet dataset,
or a range of row groups of a large Parquet file: :mod:`ale_cli.engines.partitions`),
chunk by chunk with the function the local engine uses
(:func:`ale_cli.streaming_classic.chunk_cells`). The model file is sent to every worker
once and loaded once per worker process (:func:`ale_cli.engines.dask._worker_model`).

This process makes the cheap passes that read the columns only, as the local engine
does: the first (ranges, row count, hash; the model is checked on the first chunk)
and, for quantile bins, the two of the exact type-1 quantile edges. It merges the
workers' cells in partition order (:meth:`~ale_cli.core.binstats.CellStats.merge`)
and spools their predictions for the summary's distribution, one partition at a time.
The summary equals the local engine's (to rounding of the merges, ~1e-16).

Row numbers in messages (non-finite values) count from each partition's first row by
the Parquet footers' row counts, as ``ale compute --engine dask`` counts them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ale_cli.adapters.passes import PredictionSpool
from ale_cli.core.binstats import CellStats
from ale_cli.streaming_classic import Passed, chunk_cells, empty_cells

if TYPE_CHECKING:
    from distributed import Client

    from ale_cli.engines.dask import _PartSpec
    from ale_cli.inputs import ModelInputs
    from ale_cli.models.base import ProgressFn
    from ale_cli.streaming_inputs import Streamed


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
    from ale_cli.engines.dask import _worker_model, open_partition

    stream = open_partition(spec, file, row_groups)
    cols = list(spec.columns)
    cells = empty_cells(edges)
    outside = dict.fromkeys(edges, 0)
    dropped: list[np.ndarray] = []
    predictions: list[np.ndarray] = []
    model = None
    read = 0
    for chunk in stream:
        X = np.asarray(chunk, dtype=np.float64)  # as the local passes give the chunks
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
    """The evaluation pass of :func:`ale_cli.streaming_classic.classic_streamed` on the
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
            for found in _in_order(dask_client, plan, edges):
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
    """The partitions for ``slots`` worker threads (:func:`~ale_cli.engines.partitions.
    plan_partitions`), the model's bytes and what every task is given."""
    from ale_cli.adapters.files import sha256_file
    from ale_cli.adapters.stream import dataset_files
    from ale_cli.engines.dask import _PartSpec
    from ale_cli.engines.partitions import plan_partitions
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


def _in_order(
    dask_client: Client, plan: dict[str, Any], edges: dict[int, np.ndarray]
) -> Iterator[dict[str, Any]]:
    """Every partition's answer in partition order, one at a time (memory: one answer); the
    first error in that order is raised, as the local pass would meet it, and the other
    tasks are cancelled."""
    sent = dask_client.scatter(plan["model_bytes"], broadcast=True, hash=False)
    futures = [
        dask_client.submit(
            classic_part,
            sent,
            plan["spec"],
            plan["inputs"],
            str(part.file),
            part.offset,
            edges,
            part.row_groups,
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
