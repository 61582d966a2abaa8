"""Render a summary's figures to files (``ale plot``), here or in forked workers (same
bytes), replacing the directory as a whole. Workers ignore SIGINT and die on SIGTERM; the
parent stops them before cleaning up.
"""

from __future__ import annotations

import multiprocessing
import re
import signal
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from multiprocessing.connection import wait
from pathlib import Path
from typing import TYPE_CHECKING, cast

from ale_cli.checks import check_choice
from ale_cli.errors import InputError, RunError
from ale_cli.io.threads import available_cpus
from ale_cli.plot.directory import figure_directory, save_figure
from ale_cli.plot.first_order import feature_figure, overview_figure, release
from ale_cli.plot.layout import new_figure
from ale_cli.plot.outputs import outputs_figure
from ale_cli.plot.regional import regional_figure
from ale_cli.plot.second_order import interaction_figure
from ale_cli.store.npz import Store, read_store, store_sha256
from ale_cli.summary.model import Summary, read_summary
from ale_cli.summary.regional import REGIONAL, RegionalSummary, read_regional

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.process import BaseProcess
    from multiprocessing.sharedctypes import Synchronized

FORMATS = ("png", "svg")
DEFAULT_DPI = 120
#: the resolutions a figure may have (``ale plot --dpi``, a job's ``plots.dpi``)
DPI_RANGE = (30, 1200)
OVERVIEW = "overview"
_MAX_STEM = 100
_WINDOWS_RESERVED = {"CON", "PRN", "AUX", "NUL"} | {
    f"{p}{i}" for p in ("COM", "LPT") for i in range(1, 10)
}


#: A figure to draw: ("feature", name, stem), ("overview", None, stem),
#: ("interaction", index into summary.interactions, stem) or ("regional", name, stem).
Task = tuple[str, str | int | None, str]
Draw = Callable[[Task], list[Path]]  # draws a task, returns the files written


@dataclass(frozen=True)
class RenderResult:
    """What one render wrote: ``paths`` (features, overview, interactions; png before
    svg), the features drawn, those not estimable, the pairs drawn as ``"a,b"``."""

    paths: tuple[Path, ...]
    features: tuple[str, ...]
    not_estimable: tuple[str, ...]
    interactions: tuple[str, ...] = ()


def safe_stem(name: str) -> str:
    """A file-name stem of ASCII letters, digits, ``._-``: other runs become ``_``, no
    leading ``._-``, at most 100 characters, Windows device names get ``_``.

    >>> safe_stem("BMI (kg/m²)"), safe_stem("../etc/passwd"), safe_stem("  "), safe_stem("con")
    ('BMI_kg_m2', 'etc_passwd', 'feature', 'con_')
    """
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", ascii_name)
    stem = stem.lstrip("._-")[:_MAX_STEM].rstrip("._")
    if not stem:
        return "feature"
    if stem.split(".")[0].upper() in _WINDOWS_RESERVED:
        stem += "_"
    return stem


def file_stems(names: Sequence[str]) -> list[str]:
    """Unique stems for ``names`` (case-insensitively, ``overview`` reserved).

    >>> file_stems(["a/b", "a_b", "A_B", "overview"])
    ['a_b', 'a_b-2', 'A_B-3', 'overview-4']
    """
    used = {OVERVIEW}
    stems = []
    for i, name in enumerate(names, start=1):
        stem = safe_stem(name)
        if stem.casefold() in used:
            stem = f"{stem}-{i}"
            while stem.casefold() in used:
                stem += "_"
        used.add(stem.casefold())
        stems.append(stem)
    return stems


def check_store(
    summary: Summary,
    store: Store,
    features: Sequence[str],
    *,
    summary_path: str | Path = "summary",
    store_path: str | Path = "store",
    store_sha256: str | None = None,
) -> None:
    """InputError unless ``store`` is the store ``summary`` was made from: it holds
    ``features`` and the interactions' features, as many rows, and the recorded sha256
    (``store_sha256``), or, for a summary made without a store, the same model and data.
    """
    paired = [n for item in summary.interactions for n in item.features]
    prefix = f"store '{store_path}' does not match summary '{summary_path}'"
    missing = [f for f in features if f not in store.feature_names]
    missing += [f for f in dict.fromkeys(paired) if f not in store.input_names]
    if missing:
        raise InputError(
            f"{prefix}: the store has no feature(s) {', '.join(missing)} "
            f"(store features: {', '.join(store.feature_names)})"
        )
    n_store = store.X.shape[0]
    if n_store != summary.n_rows:
        raise InputError(
            f"{prefix}: the store has {n_store} rows, the summary was made from {summary.n_rows}"
        )
    source = summary.store
    if "path" in source and source["path"] is None:  # made without a store: model and data
        for part in ("model", "data"):
            want, have = source.get(part) or {}, store.meta.get(part) or {}
            if want.get("sha256") and have.get("sha256") and want["sha256"] != have["sha256"]:
                raise InputError(
                    f"{prefix}: the summary was made from {part} '{want.get('path')}' "
                    f"(sha256 {_short(want['sha256'])}), the store from {part} "
                    f"'{have.get('path')}' (sha256 {_short(have['sha256'])})"
                )
        return
    want = source.get("sha256")
    if want and store_sha256 and want != store_sha256:
        raise InputError(
            f"{prefix}: the summary was made from store '{source.get('path')}' "
            f"(sha256 {_short(want)}), this store's sha256 is {_short(store_sha256)}"
        )


def matching_store(
    store_path: str | Path | None, summaries: Sequence[tuple[str | Path, Summary, Sequence[str]]]
) -> Store | None:
    """The store at ``store_path`` (None: none), checked against each ``(summary_path,
    summary, features)`` by :func:`check_store`."""
    if store_path is None:
        return None
    store, sha = read_store(store_path), store_sha256(store_path)  # a file's or a directory's
    for path, summary, names in summaries:
        kw = {"summary_path": path, "store_path": store_path, "store_sha256": sha}
        check_store(summary, store, names, **kw)
    return store


def _short(digest: str) -> str:
    return f"{str(digest)[:12]}..."


def render_summary(
    summary: Summary,
    out_dir: str | Path,
    *,
    store: Store | None = None,
    features: Sequence[str] | None = None,
    formats: Sequence[str] = ("png",),
    dpi: int = DEFAULT_DPI,
    jobs: int | None = 1,
    ylabel: str | None = None,
    regions: RegionalSummary | None = None,
    overview_only: bool = False,
) -> RenderResult:
    """Write the figures of ``summary`` (or of ``regions``, a regional summary) named by
    :func:`figure_tasks` into ``out_dir``, replacing it when all are written
    (``overview_only``: no figure per feature; ``jobs`` None: :func:`default_jobs`).
    ``store`` must match (:func:`check_store`).
    """
    for fmt in formats:
        check_choice(str(fmt), FORMATS, "formats")
    if jobs is not None and jobs < 1:
        raise InputError(f"{{param}} must be at least 1, got {jobs}", param="jobs")
    if features is None:
        features = [f.name for f in summary.features]
    names = tuple(dict.fromkeys(features))
    feats = [summary.feature(n) for n in names]
    if summary.outputs:  # every output's record of the names
        feats = [f for f in summary.features if f.name in names]
    out = Path(out_dir)
    tasks = figure_tasks(summary, names, regions, overview_only=overview_only)
    first = sorted(tasks, key=lambda task: task[0] != "overview")  # the biggest first
    jobs = default_jobs(len(tasks)) if jobs is None else jobs

    def draw(task: Task) -> list[Path]:
        """Draw one figure and save it in every format (in a worker: forked, not pickled)."""
        kind, key, stem = task
        if kind == "overview":
            fig = overview_figure(summary, names=names, ylabel=ylabel)
        elif kind == "feature" and summary.outputs:  # small multiples
            fig = outputs_figure(summary, (str(key),), ylabel=ylabel)
        elif kind == "regional" and regions is not None:
            fig = regional_figure(regions, str(key), ylabel=ylabel)
        elif kind == "interaction":
            fig = interaction_figure(summary, int(key or 0), store=store, ylabel=ylabel)
        else:
            fig = feature_figure(summary, str(key), store=store, ylabel=ylabel, reuse=True)
        for fmt in formats:
            save_figure(fig, tmp / f"{stem}.{fmt}", fmt, dpi=dpi)
        return [tmp / f"{stem}.{fmt}" for fmt in formats]

    with figure_directory(out) as tmp:
        written = dict(zip(first, run_tasks(draw, first, jobs), strict=True))
    return RenderResult(
        paths=tuple(out / p.name for task in tasks for p in written[task]),
        features=names,
        not_estimable=tuple(dict.fromkeys(f.name for f in feats if not f.estimable)),
        interactions=tuple(",".join(item.features) for item in summary.interactions),
    )


def figure_tasks(
    summary: Summary,
    names: Sequence[str],
    regions: RegionalSummary | None = None,
    *,
    overview_only: bool = False,
) -> list[Task]:
    """The figures of features ``names`` (unique), in file order: ``<feature>``, ``overview``
    (when there are features), ``<a>__<b>`` per interaction, stems from :func:`file_stems`;
    of ``regions``, only ``<feature>__regions`` per feature with a kept split."""
    pairs = [f"{a}__{b}" for a, b in (item.features for item in summary.interactions)]
    stems = file_stems([*names, *pairs])
    if regions is not None:
        split = zip(names, stems, strict=False)
        return [
            ("regional", n, f"{s}__regions")
            for n, s in split
            if regions.feature(n).status == "split"
        ]
    tasks: list[Task] = []
    if not overview_only:
        tasks = [("feature", n, s) for n, s in zip(names, stems, strict=False)]
    if names:
        tasks.append(("overview", None, OVERVIEW))
    return tasks + [("interaction", i, s) for i, s in enumerate(stems[len(names) :])]


def select_features(summary: Summary, features: Sequence[str]) -> tuple[Summary, list[str]]:
    """The named first-order features, and the summary with only the interactions that
    involve one of the names; InputError for a name in neither.

    >>> from ale_cli.summary.model import InteractionSummary, Summary
    >>> s = Summary(estimator="dale", params={}, store={}, n_rows=0, features=(), interactions=(
    ...     InteractionSummary(features=("a", "b"), estimator="dale", status="not_estimable",
    ...                        reason="r"),
    ...     InteractionSummary(features=("c", "d"), estimator="dale", status="not_estimable",
    ...                        reason="r")))
    >>> kept, names = select_features(s, ["b"])
    >>> [i.name for i in kept.interactions], names
    (['a,b'], [])
    """
    first = [f.name for f in summary.features]
    paired = [n for item in summary.interactions for n in item.features]
    for name in features:
        if name not in first and name not in paired:
            known = ", ".join(dict.fromkeys([*first, *paired]))
            raise InputError(f"summary has no feature '{name}' (features: {known})")
    chosen = set(features)
    kept = tuple(i for i in summary.interactions if chosen.intersection(i.features))
    return replace(summary, interactions=kept), [n for n in features if n in first]


def plot_files(
    summary_path: str | Path,
    out_dir: str | Path,
    *,
    store_path: str | Path | None = None,
    features: Sequence[str] | None = None,
    formats: Sequence[str] = ("png",),
    dpi: int = DEFAULT_DPI,
    jobs: int | None = 1,
    ylabel: str | None = None,
    overview_only: bool = False,
) -> RenderResult:
    """Read a summary (and its store), check them and render (``jobs=None``: default)."""
    summary = read_summary(summary_path)
    regions = read_regional(summary_path) if summary.estimator == REGIONAL else None
    if features is None:
        names = [f.name for f in summary.features]
    else:
        summary, names = select_features(summary, features)
    store = matching_store(store_path, [(summary_path, summary, names)])
    kw = {"formats": formats, "dpi": dpi, "jobs": jobs, "ylabel": ylabel, "regions": regions}
    kw["overview_only"] = overview_only
    return render_summary(summary, out_dir, store=store, features=names, **kw)


def _worker(draw: Draw, tasks: list[Task], claimed: Synchronized[int], conn: Connection) -> None:
    """Draw unclaimed tasks until none is left, sending ``(i, paths, error)`` for each."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent's to handle
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # how the parent stops us
    while True:
        with claimed.get_lock():
            i = claimed.value
            claimed.value += 1
        if i >= len(tasks):
            break
        try:
            paths = draw(tasks[i])
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
    return max(1, min(available_cpus(), 4, n_figures // 2))


def run_tasks(draw: Draw, tasks: list[Task], jobs: int) -> list[list[Path]]:
    """``draw`` each task here or in ``jobs`` forked workers; the paths written per task."""
    try:
        if jobs > 1 and len(tasks) > 1 and "fork" in multiprocessing.get_all_start_methods():
            return _run_forked(draw, tasks, min(jobs, len(tasks)))
        return [draw(task) for task in tasks]
    finally:
        release()


def _run_forked(draw: Draw, tasks: list[Task], jobs: int) -> list[list[Path]]:
    """Draw ``tasks`` in ``jobs`` forked workers; an early death is a RunError (a Pool hangs)."""
    new_figure((1.0, 1.0))  # matplotlib imported here, once: the workers inherit it
    context = multiprocessing.get_context("fork")
    claimed = context.Value("i", 0)
    workers: dict[Connection, BaseProcess] = {}
    worker: BaseProcess
    results: dict[int, list[Path]] = {}
    try:
        for _ in range(jobs):
            reader, writer = context.Pipe(duplex=False)
            worker = context.Process(
                target=_worker, args=(draw, tasks, claimed, writer), daemon=True
            )
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
