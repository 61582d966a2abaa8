"""The Dask engine: one task per part (:func:`~ale_cli.passes.engine.fold_part` on a
worker), the states folded here in part order, so the result equals the local engine's;
``shared`` (a model) is scattered to every worker once. When a part fails, the sink is told
to stop and the running tasks are waited for: no worker writes once the run is over. The
``scheduler`` option is checked here (an address or a scheduler file), with the packages of
the dask extra.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ale_cli.errors import InputError, RunError, first_line
from ale_cli.models.checks import NonFinite
from ale_cli.passes.engine import (
    Engine,
    Merge,
    Progress,
    Sink,
    Source,
    fold_part,
    fold_screened,
)

if TYPE_CHECKING:
    from distributed import Client

S = TypeVar("S")

#: seconds to wait for the tasks still running after a part failed
STOP_WAIT_S = 120
#: the protocols of Dask's comms a scheduler listens on
PROTOCOLS = ("tcp", "tls", "ws", "wss", "ucx", "inproc")
_HOST_PORT = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[^/:\[\]\s]+):(?P<port>[0-9]{1,5})/?")


def require_dask() -> None:
    """InputError (exit 2) saying how to install dask and distributed when they are missing."""
    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
    except ImportError:
        raise InputError(
            "{param} dask needs the optional packages dask and distributed: "
            "pip install ale-cli[dask]",
            param="engine",
        ) from None


def scheduler_address(scheduler: str) -> str:
    """The address of a scheduler given as an address (one of :data:`PROTOCOLS`, or
    ``host:port`` read as tcp) or as an existing scheduler file (its ``address``), else an
    InputError naming ``scheduler``. No connection is tried.

    >>> scheduler_address("tcp://10.0.0.5:8786"), scheduler_address("node7:8786")
    ('tcp://10.0.0.5:8786', 'node7:8786')
    >>> scheduler_address("http://node7:8787/status")
    Traceback (most recent call last):
    ale_cli.errors.InputError: scheduler must be a Dask scheduler address \
(tcp://host:port, tls://host:port, ws://host:port, host:port) or an existing scheduler \
file (JSON), got 'http://node7:8787/status' (http is not a Dask protocol)
    """
    if "://" not in scheduler and Path(scheduler).is_file():
        try:
            address = json.loads(Path(scheduler).read_text(encoding="utf-8")).get("address")
            found = isinstance(address, str) and "://" in address
            found = found and scheduler_address(address) == address
        except (OSError, ValueError, AttributeError, InputError):
            found = False
        if not found:
            raise InputError(
                f"{{param}} file '{scheduler}' is not a Dask scheduler file (a JSON object "
                "whose 'address' is tcp://host:port, as 'dask scheduler --scheduler-file' "
                "writes)",
                param="scheduler",
            )
        return str(address)
    scheme, sep, rest = scheduler.partition("://")
    if not sep:
        scheme, rest = "tcp", scheduler
    scheme = scheme.lower()
    host_port = _HOST_PORT.fullmatch(rest)
    if scheme not in PROTOCOLS:
        why = f" ({scheme} is not a Dask protocol)"
    elif scheme == "inproc":
        return scheduler
    elif host_port is None:
        why = " (no host:port)" if sep else " (neither host:port nor an existing file)"
    elif not 1 <= int(host_port.group("port")) <= 65535:
        why = f" (port {host_port.group('port')} is not between 1 and 65535)"
    else:
        return scheduler
    raise InputError(
        "{param} must be a Dask scheduler address (tcp://host:port, tls://host:port, "
        f"ws://host:port, host:port) or an existing scheduler file (JSON), got "
        f"'{scheduler}'{why}",
        param="scheduler",
    )


@contextmanager
def client(scheduler: str | None) -> Iterator[Client]:
    """A client of the cluster at ``scheduler``, or of a LocalCluster started for the run."""
    from distributed import Client, LocalCluster

    if scheduler is not None:
        address = scheduler_address(scheduler)
        try:
            connected = Client(address, timeout=30)
        except (OSError, TimeoutError) as exc:
            reason = first_line(exc)
            raise RunError(f"cannot reach the Dask scheduler at '{scheduler}': {reason}") from None
        with connected:
            yield connected
        return
    from unittest.mock import patch  # its dict patch: the same clear-and-update, tested

    # A terminal's Ctrl-C reaches the whole process group: the cluster's threads, and the
    # worker processes they start, block SIGINT (inherited); this process stops them. The
    # resource tracker is started first: starting it unblocks SIGINT in the calling thread.
    masked = hasattr(signal, "pthread_sigmask")  # not on Windows
    if masked:
        from multiprocessing import resource_tracker

        resource_tracker.ensure_running()
        before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        with (
            patch.dict(os.environ),  # given back as it was: a LocalCluster's nannies change it
            LocalCluster(
                threads_per_worker=1,
                processes=True,
                dashboard_address=":0",
                # a task's failure reaches the client; the worker's own record would repeat it
                silence_logs=logging.CRITICAL,
            ) as cluster,
            Client(cluster) as local,
        ):
            if masked:  # a Ctrl-C while the cluster started is raised here, inside the with
                signal.pthread_sigmask(signal.SIG_SETMASK, before)
            yield local
    finally:
        if masked:
            signal.pthread_sigmask(signal.SIG_SETMASK, before)


class DaskEngine(Engine):
    """Runs on the Dask cluster at ``scheduler`` (an address or a scheduler file; None: a
    LocalCluster of one-thread workers), reached on entering ``with`` (or per run)."""

    splits = True

    def __init__(self, scheduler: str | None = None) -> None:
        if scheduler is not None:
            scheduler_address(scheduler)
        require_dask()
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

    def fold(self, parts: list[Source], job: tuple[Any, ...], progress: Progress | None) -> Any:
        kernel, merge, empty, arrays, shared, sink = job
        if not parts:
            return empty
        with self:
            dask_client = self.client
            handle = (
                None if shared is None else dask_client.scatter(shared, broadcast=True, hash=False)
            )
            futures = [
                dask_client.submit(fold_part, part, i, *job[:4], handle, sink, pure=False)
                for i, part in enumerate(parts)
            ]
            try:
                return _fold_in_order(futures, merge, empty, progress)
            except BaseException:
                _stop(dask_client, futures, sink)
                raise


def _fold_in_order(futures: list[Any], merge: Merge[S], empty: S, progress: Progress | None) -> S:
    """The parts' states folded in part order as they finish; the first failure in part
    order is raised once the parts before it are done (a refusal of non-finite rows once
    every part is done, merged with theirs: :func:`~ale_cli.passes.engine.fold_screened`)."""
    from distributed import as_completed, wait

    index = {f.key: i for i, f in enumerate(futures)}
    waiting: dict[int, S] = {}
    acc, folded = empty, 0
    for future in as_completed(futures):
        i = index[future.key]
        if future.status == "error":
            before = [f for j, f in enumerate(futures[:i]) if j >= folded and j not in waiting]
            wait(before)
            first = next(f for f in [*before, future] if f.status == "error")
            if not isinstance(first.exception(), NonFinite):
                first.result()  # raises
            wait(futures)
            rest = (
                (waiting[j], 0) if j in waiting else _refused_or_state(futures[j])
                for j in range(folded, len(futures))
            )
            fold_screened(acc, rest, merge)  # raises
        state, rows = future.result()
        future.release()
        waiting[i] = state
        if progress is not None:
            progress(rows)
        while folded in waiting:
            acc = merge(acc, waiting.pop(folded))
            folded += 1
    return acc


def _refused_or_state(future: Any) -> tuple[Any, int]:
    """A finished part's (state, rows), or (its refusal of non-finite rows, 0); another
    failure is raised."""
    refused = future.exception()
    return (refused, 0) if isinstance(refused, NonFinite) else future.result()


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
