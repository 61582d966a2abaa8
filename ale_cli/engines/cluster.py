"""The Dask engine: one task per part (:func:`~ale_cli.passes.engine.fold_part` on a
worker), the states folded here in part order, so the result equals the local engine's;
``shared`` (a model) is scattered to every worker once. When a part fails, the sink is told
to stop and the running tasks are waited for: no worker writes once the run is over.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from ale_cli.engines.options import require_dask, scheduler_address
from ale_cli.errors import RunError
from ale_cli.passes.engine import Engine, Kernel, Merge, Progress, Shared, Sink, Source, fold_part

if TYPE_CHECKING:
    from distributed import Client

S = TypeVar("S")

#: seconds to wait for the tasks still running after a part failed
STOP_WAIT_S = 120


@contextmanager
def client(scheduler: str | None) -> Iterator[Client]:
    """A client of the cluster at ``scheduler``, or of a LocalCluster started for the run."""
    require_dask()
    from distributed import Client, LocalCluster

    if scheduler is not None:
        address = scheduler_address(scheduler)
        try:
            connected = Client(address, timeout=30)
        except (OSError, TimeoutError) as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise RunError(f"cannot reach the Dask scheduler at '{scheduler}': {reason}") from None
        with connected:
            yield connected
        return
    with (
        environ_kept(),
        LocalCluster(
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            # a task's failure reaches the client; the worker's own record would repeat it
            silence_logs=logging.CRITICAL,
        ) as cluster,
        Client(cluster) as local,
    ):
        yield local


@contextmanager
def environ_kept() -> Iterator[None]:
    """Give ``os.environ`` back as it was (a LocalCluster's nannies change it)."""
    saved = dict(os.environ)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


class DaskEngine(Engine):
    """Runs on the Dask cluster at ``scheduler`` (an address or a scheduler file; None: a
    LocalCluster of one-thread workers), reached on entering ``with`` (or per run)."""

    splits = True

    def __init__(self, scheduler: str | None = None) -> None:
        self.scheduler = scheduler
        self._client: Client | None = None
        self._stack: ExitStack | None = None
        self._depth = 0

    def __repr__(self) -> str:
        return f"DaskEngine(scheduler={self.scheduler!r})"

    def __enter__(self) -> DaskEngine:
        if self._depth == 0:
            stack = ExitStack()
            self._client = stack.enter_context(client(self.scheduler))
            self._stack = stack
        self._depth += 1
        return self

    def __exit__(self, *exc: object) -> None:
        self._depth -= 1
        if self._depth == 0 and self._stack is not None:
            stack, self._stack, self._client = self._stack, None, None
            stack.close()

    @property
    def client(self) -> Client:
        if self._client is None:
            raise RuntimeError("the Dask engine is used outside its 'with' block")
        return self._client

    @property
    def slots(self) -> int:
        with self:
            return max(1, sum(self.client.nthreads().values()))

    def describe(self) -> dict[str, Any]:
        with self:
            return {"name": "dask", "workers": len(self.client.scheduler_info().get("workers", {}))}

    def run(
        self,
        source: Source,
        kernel: Kernel[S],
        merge: Merge[S],
        empty: S,
        *,
        arrays: Sequence[str],
        shared: Shared | None = None,
        sink: Sink[S] | None = None,
        progress: Progress | None = None,
    ) -> S:
        with self:
            dask_client = self.client
            parts = list(source.parts())
            if not parts:
                return empty
            handle = (
                None if shared is None else dask_client.scatter(shared, broadcast=True, hash=False)
            )
            job = (kernel, merge, empty, tuple(arrays), handle, sink)
            futures = [
                dask_client.submit(fold_part, part, i, *job, pure=False)
                for i, part in enumerate(parts)
            ]
            try:
                return _fold_in_order(futures, merge, empty, progress)
            except BaseException:
                _stop(dask_client, futures, sink)
                raise


def _fold_in_order(futures: list[Any], merge: Merge[S], empty: S, progress: Progress | None) -> S:
    """The parts' states folded in part order as they finish; the first failure in part
    order is raised once the parts before it are done."""
    from distributed import as_completed, wait

    index = {f.key: i for i, f in enumerate(futures)}
    waiting: dict[int, S] = {}
    acc, folded = empty, 0
    for future in as_completed(futures):
        i = index[future.key]
        if future.status == "error":
            before = [f for j, f in enumerate(futures[:i]) if j >= folded and j not in waiting]
            wait(before)
            next(f for f in [*before, future] if f.status == "error").result()  # raises
        state, rows = future.result()
        future.release()
        waiting[i] = state
        if progress is not None:
            progress(rows)
        while folded in waiting:
            acc = merge(acc, waiting.pop(folded))
            folded += 1
    return acc


def _stop(dask_client: Client, futures: list[Any], sink: Sink[Any] | None) -> None:
    """After a failed part: the sink stops the running parts, waited for (a cancelled task
    would go on writing), then cancelled."""
    from distributed import wait

    if sink is not None:
        sink.stop()
        try:
            wait(futures, timeout=STOP_WAIT_S)
        except Exception:  # a timeout: the run fails anyway
            pass
    dask_client.cancel(futures)
