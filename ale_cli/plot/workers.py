"""Drawing a summary's figures, here or in forked workers (same bytes either way).

Workers ignore SIGINT and die on SIGTERM; the parent stops them before cleaning up.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from dataclasses import dataclass
from multiprocessing.connection import wait
from pathlib import Path
from typing import TYPE_CHECKING, cast

from ale_cli.errors import RunError
from ale_cli.plot.directory import save_figure
from ale_cli.plot.first_order import feature_figure, overview_figure, release
from ale_cli.plot.layout import new_figure
from ale_cli.plot.outputs import outputs_figure, summary_outputs
from ale_cli.plot.regional import regional_figure
from ale_cli.plot.second_order import interaction_figure

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.process import BaseProcess
    from multiprocessing.sharedctypes import Synchronized

    from ale_cli.store.npz import Store
    from ale_cli.summary.model import Summary
    from ale_cli.summary.regional import RegionalSummary


@dataclass(frozen=True)
class Job:
    """Everything a worker needs to draw and save figures (inherited by forked workers)."""

    summary: Summary
    store: Store | None
    names: tuple[str, ...]
    out: Path
    formats: tuple[str, ...]
    dpi: int
    ylabel: str | None = None
    regions: RegionalSummary | None = None  # a regional summary's regions


_JOB: Job | None = None  # set in the parent just before forking the workers
#: A figure to draw: ("feature", name, stem), ("overview", None, stem),
#: ("interaction", index into summary.interactions, stem) or ("regional", name, stem).
Task = tuple[str, str | int | None, str]


def _render_task(task: Task) -> list[Path]:
    """Draw one figure and save it in every format."""
    job = _JOB
    if job is None:  # pragma: no cover - set by render_summary before any task runs
        raise RuntimeError("no render job")
    kind, key, stem = task
    if summary_outputs(job.summary) and kind in ("overview", "feature"):  # small multiples
        names = job.names if kind == "overview" else (str(key),)
        fig = outputs_figure(job.summary, names, ylabel=job.ylabel)
    elif kind == "overview":
        fig = overview_figure(job.summary, names=job.names, ylabel=job.ylabel)
    elif kind == "regional" and job.regions is not None:
        fig = regional_figure(job.regions, str(key), ylabel=job.ylabel)
    elif kind == "interaction":
        fig = interaction_figure(job.summary, int(key or 0), store=job.store, ylabel=job.ylabel)
    else:
        fig = feature_figure(job.summary, str(key), store=job.store, ylabel=job.ylabel, reuse=True)
    paths = []
    for fmt in job.formats:
        path = job.out / f"{stem}.{fmt}"
        save_figure(fig, path, fmt, dpi=job.dpi)
        paths.append(path)
    return paths


def _worker(tasks: list[Task], claimed: Synchronized[int], conn: Connection) -> None:
    """Draw the next task not yet claimed (``claimed`` counts them) until none is left,
    sending ``(i, paths, None)`` for each; on an error ``(i, None, error)`` and stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent's to handle
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # how the parent stops us
    while True:
        with claimed.get_lock():
            i = claimed.value
            claimed.value += 1
        if i >= len(tasks):
            break
        try:
            paths = _render_task(tasks[i])
        except Exception as exc:
            try:
                conn.send((i, None, exc))
            except Exception:  # an exception that does not pickle
                conn.send((i, None, RunError(f"{type(exc).__name__}: {exc}")))
            break
        conn.send((i, paths, None))
    conn.close()


def default_jobs(n_figures: int) -> int:
    """Worker processes for ``n_figures``: one per usable core, at most 4; 1 for a few figures."""
    if n_figures < 4 or "fork" not in multiprocessing.get_all_start_methods():
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(cores or 1, 4, n_figures // 2))


def run_tasks(job: Job, tasks: list[Task], jobs: int) -> list[list[Path]]:
    """Draw ``tasks`` here or in ``jobs`` forked workers; the paths written per task."""
    global _JOB
    _JOB = job
    try:
        if jobs > 1 and len(tasks) > 1 and "fork" in multiprocessing.get_all_start_methods():
            return _run_forked(tasks, min(jobs, len(tasks)))
        return [_render_task(task) for task in tasks]
    finally:
        _JOB = None
        release()


def _run_forked(tasks: list[Task], jobs: int) -> list[list[Path]]:
    """Draw ``tasks`` in ``jobs`` forked workers, each taking the next task not yet taken
    (the overview costs several features).

    A worker's error is raised here; one that dies early is a RunError (a pool would
    wait forever). On any exit the workers are terminated and joined first.
    """
    new_figure((1.0, 1.0))  # matplotlib imported here, once: the workers inherit it
    context = multiprocessing.get_context("fork")
    claimed = context.Value("i", 0)
    workers: dict[Connection, BaseProcess] = {}
    worker: BaseProcess
    results: dict[int, list[Path]] = {}
    try:
        for _ in range(jobs):
            reader, writer = context.Pipe(duplex=False)
            worker = context.Process(target=_worker, args=(tasks, claimed, writer), daemon=True)
            worker.start()
            writer.close()
            workers[reader] = worker
        pending = dict(workers)
        while pending:
            for ready in wait(list(pending)):
                conn = cast("Connection", ready)
                try:
                    i, paths, error = conn.recv()
                except EOFError:  # the worker is done, or died
                    done = pending.pop(conn)
                    done.join()
                    if done.exitcode != 0 or (not pending and len(results) < len(tasks)):
                        raise RunError(
                            f"a process drawing figures ended (exit code {done.exitcode}) "
                            "before it drew all of its figures"
                        ) from None
                    continue
                if error is not None:
                    raise error
                results[i] = paths
        return [results[i] for i in range(len(tasks))]
    finally:
        for worker in workers.values():
            if worker.is_alive():
                worker.terminate()
        for reader, worker in workers.items():
            worker.join()
            reader.close()
