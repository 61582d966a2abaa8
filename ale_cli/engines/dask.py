"""The Dask paths of the estimators not yet written on the engine protocol.

``ale classic`` / ``ale interact``: the model calls per partition on the workers
(:mod:`ale_cli.engines.dask_model`, which loads the model once per worker process with
:func:`_worker_model`). ``ale rebin`` / ``ale rhale``: :func:`dask_passes`, each part of a
store (:meth:`~ale_cli.store.npz.StoreFile.parts`) a task; exact type-1 quantile edges
take the out-of-core passes of :mod:`ale_cli.core.outofcore`. ``ale compute`` runs on
:class:`~ale_cli.engines.cluster.DaskEngine` (:mod:`ale_cli.estimators.local_effects`).
"""

from __future__ import annotations

import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ale_cli.engines.cluster import client, worker_slots  # noqa: F401  (engines.dask_model)
from ale_cli.store.npz import StoreFile

if TYPE_CHECKING:
    from distributed import Client

    from ale_cli.core.binstats import CellStats
    from ale_cli.data.stream import TableStream
    from ale_cli.estimators.dale_stream import Columns, Passes
    from ale_cli.models.base import ProgressFn


# -- classic and interact: the model on the workers --------------------------------------------


@dataclass(frozen=True)
class _PartSpec:
    """What a worker needs to compute one partition (the model comes as bytes)."""

    model_path: str
    model_sha256: str
    load_options: Any
    names: tuple[str, ...]
    categorical: tuple[str, ...]
    features: tuple[str, ...]
    columns: tuple[int, ...]
    data_format: str
    dropna: bool
    drop_nonfinite: bool
    chunk_rows: int
    model_format: str = "torchscript"
    #: pairs of ``--pairs`` and their columns (mixed derivatives stored per part)
    pairs: tuple[tuple[str, str], ...] = ()
    pair_cols: tuple[tuple[int, int], ...] = ()
    #: an ONNX or scikit-learn model's profile of all rows, its columns' dtypes and the
    #: data hash of the read that made it (None, {}, None for TorchScript)
    profile: Any = None
    dtypes: dict[str, str] = field(default_factory=dict)
    data_sha256: str | None = None


_MODELS: dict[str, Any] = {}
_MODELS_LOCK = threading.Lock()


def _worker_model(model_bytes: bytes, spec: _PartSpec, first: np.ndarray) -> Any:
    """The model, loaded once per worker process and set of load options (checked on the
    first chunk it sees).

    Loaded from the user's path when the worker sees the same bytes there (messages
    then name that path), else from the bytes sent, written to a temporary file."""
    from ale_cli.io.files import sha256_file
    from ale_cli.models import Columns, load_model

    # a long-lived worker may serve runs with other options (output, batch size, columns)
    # and, for a model whose steps come from the data, other data
    key = repr(
        (spec.model_sha256, spec.load_options, spec.names, spec.categorical, spec.data_sha256)
    )
    with _MODELS_LOCK:
        model = _MODELS.get(key)
        if model is not None:
            return model
        path = Path(spec.model_path)
        try:
            same = path.is_file() and sha256_file(path) == spec.model_sha256
        except OSError:
            same = False
        if not same:
            path = Path(tempfile.mkdtemp(prefix="ale-model-")) / path.name
            path.write_bytes(model_bytes)
        model = load_model(
            path,
            model_format=spec.model_format,
            options=spec.load_options,
            columns=Columns(names=spec.names, fixed=spec.categorical, dtypes=spec.dtypes),
            X=first if spec.profile is None else spec.profile.head,
            profile=spec.profile,
        )
        _MODELS[key] = model
        return model


def open_partition(spec: _PartSpec, file: str, row_groups: tuple[int, int] | None) -> TableStream:
    """On a worker: the partition ``file`` (its row groups ``row_groups``, None: all of it)
    opened for reading chunk by chunk as the local engine reads the data, without the
    check of 2 rows left (the client checks the whole dataset's count)."""
    from ale_cli.data.stream import open_stream

    return open_stream(
        file,
        fmt=spec.data_format,
        inputs=spec.names,
        dropna=spec.dropna,
        categorical=spec.categorical,
        chunk_rows=spec.chunk_rows,
        min_rows=0,
        row_groups=row_groups,
    )


def _gather_in_order(
    dask_client: Client,
    futures: list[Any],
    bar: ProgressFn | None,
    rows: Sequence[int],
    *,
    cancel: bool = True,
) -> list[Any]:
    """The futures' results in submission order; the first error is raised (with
    ``cancel`` the other tasks are cancelled); ``bar`` is told each partition's rows as
    it finishes."""
    from distributed import as_completed

    index = {f.key: i for i, f in enumerate(futures)}
    results: list[Any] = [None] * len(futures)
    try:
        for future in as_completed(futures):
            i = index[future.key]
            results[i] = future.result()
            if bar is not None:
                bar(rows[i])
    except BaseException:
        if cancel:
            dask_client.cancel(futures)
        raise
    return results


def _as_completed(dask_client: Client, futures: list[Any]) -> Iterator[Any]:
    """The futures' results as they finish, each released once taken (the client holds
    one at a time); the first error is raised and the other tasks are cancelled."""
    from distributed import as_completed

    try:
        for future in as_completed(futures):
            result = future.result()
            future.release()
            yield result
    except BaseException:
        dask_client.cancel(futures)
        raise


# -- estimators: one task per part (or chunk) of a store --------------------------------------


def store_parts(store: StoreFile) -> list[StoreFile]:
    """The pieces a store is reduced in, one task each, in row order
    (:meth:`~ale_cli.store.npz.StoreFile.parts`)."""
    return list(store.parts())


def _merge_cells(acc: dict[int, CellStats], cells: dict[int, CellStats]) -> dict[int, CellStats]:
    for j, c in cells.items():
        acc[j] = c if j not in acc else acc[j].merge(c)
    return acc


@contextmanager
def dask_passes(scheduler: str | None) -> Iterator[Passes]:
    """The streaming estimators' passes (:class:`~.dale_stream.Passes`) run per store
    part on the workers of the cluster at ``scheduler`` (None: a LocalCluster)."""
    from ale_cli.core.outofcore import absorb, chunked_quantile_edges, shipped
    from ale_cli.estimators.dale_stream import Passes, _cells_on_edges, _uniform, with_slower

    with client(scheduler) as dask_client:

        def cells_on_edges(
            store: StoreFile, cols: Columns, todo: list[int], edges: dict[int, np.ndarray]
        ) -> tuple[dict[int, CellStats], dict[int, int]]:
            futures = [
                dask_client.submit(_cells_on_edges, part, cols, todo, edges, pure=False)
                for part in store_parts(store)
            ]
            cells: dict[int, CellStats] = {}
            outside = dict.fromkeys(todo, 0)
            for part_cells, part_outside in _gather_in_order(dask_client, futures, None, ()):
                _merge_cells(cells, part_cells)
                for j, n in part_outside.items():
                    outside[j] += n
            return cells, outside

        def uniform(
            store: StoreFile, cols: Columns, todo: list[int], lo: Any, hi: Any, bins: int
        ) -> tuple[dict[int, np.ndarray], dict[int, CellStats]]:
            if not todo:
                return {}, {}
            futures = [
                dask_client.submit(_uniform, part, cols, todo, lo, hi, bins, pure=False)
                for part in store_parts(store)
            ]
            edges: dict[int, np.ndarray] = {}
            cells: dict[int, CellStats] = {}
            for part_edges, part_cells in _gather_in_order(dask_client, futures, None, ()):
                edges = part_edges  # the same on every part: from lo, hi and bins
                _merge_cells(cells, part_cells)
            return edges, cells

        def quantile(
            store: StoreFile, cols: Columns, todo: list[int], lo: Any, hi: Any, bins: int
        ) -> tuple[dict[int, np.ndarray], dict[int, CellStats]]:
            """The local engine's two passes (:func:`~.dale_stream._quantile`) per part:
            bucket counts, then cells and gathered rows, merged in part order; the columns
            they cannot finish take :func:`quantile_slow`."""
            if not todo:
                return {}, {}
            found = _two_pass_quantiles(dask_client, store, cols, todo, lo, hi, bins)
            return with_slower(
                todo, found, lambda rest: quantile_slow(store, cols, rest, lo, hi, bins)
            )

        def quantile_slow(
            store: StoreFile, cols: Columns, todo: list[int], lo: Any, hi: Any, bins: int
        ) -> tuple[dict[int, np.ndarray], dict[int, CellStats]]:
            x_cols = [cols.x[j] for j in todo]
            parts = store_parts(store)

            def run_pass(groups: list[Any], roots: list[Any]) -> None:
                sent = shipped(groups)
                futures = [
                    dask_client.submit(_part_pass, part, x_cols, sent, roots, pure=False)
                    for part in parts
                ]
                for result in _as_completed(dask_client, futures):  # any order: sums
                    absorb(groups, result)

            found = chunked_quantile_edges(
                lambda: (), n=store.n_rows, bins=bins, lo=lo[todo], hi=hi[todo], run_pass=run_pass
            )
            edges = dict(zip(todo, found, strict=True))
            return edges, cells_on_edges(store, cols, todo, edges)[0]

        yield Passes(cells_on_edges=cells_on_edges, uniform=uniform, quantile=quantile)


def _two_pass_quantiles(
    dask_client: Client,
    store: StoreFile,
    cols: Columns,
    todo: list[int],
    lo: Any,
    hi: Any,
    bins: int,
) -> list[Any]:
    """:func:`~ale_cli.core.outofcore.quantile_cells` with each pass run per store part on
    the workers: the counts added up (exact), the scans merged in part order."""
    from ale_cli.core import outofcore
    from ale_cli.core.outofcore import QuantilePlan, bucket_grid

    parts = store_parts(store)
    x_cols, e_cols = [cols.x[j] for j in todo], [cols.e[j] for j in todo]
    dtype = next(parts[0].chunks(("X",)))["X"].dtype  # as the local pass 1 builds its grid
    grid = bucket_grid(n=store.n_rows, lo=lo[todo], hi=hi[todo], dtype=dtype)
    futures = [dask_client.submit(_part_counts, p, x_cols, grid, pure=False) for p in parts]
    counts = np.zeros(len(todo) * grid.size, dtype=np.int64)
    for part_counts in _as_completed(dask_client, futures):  # any order: integer sums
        counts += part_counts
    plan = QuantilePlan.build(
        grid,
        counts,
        n=store.n_rows,
        bins=bins,
        max_bucket=outofcore.MAX_BUCKET_ROWS,  # read now, as quantile_cells reads them
        max_gathered=outofcore.MAX_GATHERED_ROWS,
    )
    futures = [dask_client.submit(_part_scan, p, x_cols, e_cols, plan, pure=False) for p in parts]
    scan = plan.empty_scan()
    for part_scan in _gather_in_order(dask_client, futures, None, ()):
        scan = scan.merge(part_scan)
    return plan.finish(scan, lo[todo], hi[todo])


def _part_counts(part: StoreFile, x_cols: list[int], grid: Any) -> np.ndarray:
    """On a worker: pass 1 over a store part, its values per bucket of ``grid``."""
    from ale_cli.estimators.dale_stream import _select

    counts = np.zeros(len(x_cols) * grid.size, dtype=np.int64)
    for chunk in part.chunks(("X",)):
        counts += grid.counts(_select(chunk["X"], x_cols))
    return counts


def _part_scan(part: StoreFile, x_cols: list[int], e_cols: list[int], plan: Any) -> Any:
    """On a worker: pass 2 over a store part (:meth:`~ale_cli.core.outofcore.QuantilePlan.
    scan` of each chunk, merged in order)."""
    from ale_cli.estimators.dale_stream import _select

    scan = plan.empty_scan()
    for chunk in part.chunks(("X", "local_effects")):
        X, E = _select(chunk["X"], x_cols), _select(chunk["local_effects"], e_cols)
        scan = scan.merge(plan.scan(X, E))
    return scan


def _part_pass(part: StoreFile, x_cols: list[int], groups: list[Any], roots: list[Any]) -> Any:
    """On a worker: one quantile pass over a store part's columns ``x_cols`` of X."""
    from ale_cli.core.outofcore import pass_accumulators

    def chunks() -> Iterator[np.ndarray]:
        for chunk in part.chunks(("X",)):
            yield chunk["X"][:, x_cols]

    out = pass_accumulators(chunks, groups, roots)
    # counts travel as uint32 when they fit (half the bytes: 65536 buckets per column)
    return [
        (c.astype(np.uint32) if c is not None and c.max(initial=0) < 2**32 else c, *rest)
        for c, *rest in out
    ]
