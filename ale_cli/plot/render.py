"""Render a summary's figures to files: names, store checks, reproducible atomic saves.

:func:`plot_files` is what ``ale plot`` runs: read the summary (and the store),
check that they belong together (:func:`check_store`), then
:func:`render_summary` writes ``<dir>/<feature>.<fmt>`` for each feature,
``<dir>/overview.<fmt>`` (when there are features) and ``<dir>/<a>__<b>.<fmt>``
for each second-order interaction. File names come from :func:`safe_stem`,
made unique (case-insensitively, and never ``overview``) by appending
``-<position>``.

The output directory is replaced as a whole or not at all: the figures are
drawn into a new directory beside it, which is then swapped into its place
(:func:`replacing_directory`); a failure or an interruption leaves the previous
figures as they were and no temporary file behind. The new directory lists its
files in a manifest (``.ale-plots.json``, :mod:`ale_cli.outputs.figures`); a
directory holding anything its manifest does not list is refused, so a mistyped
``-o`` never deletes other files (:func:`check_output_dir`).

Figures are independent, so ``jobs`` > 1 draws them in forked worker
processes (``ale plot`` uses one per core, at most 4); the files are the same
bytes either way. Workers ignore SIGINT and die on SIGTERM; the parent, when
interrupted, stops them before it removes the temporary directory.

Output is reproducible: SVG files are byte-identical for the same inputs
(fixed ``svg.hashsalt``, no date, creator ``ale``) and PNG files carry no
timestamp or software version, only the pixels, their DPI (pHYs chunk) and
``Software: ale`` (tEXt).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import signal
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ale_cli.errors import InputError, RunError
from ale_cli.outputs import figures

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.process import BaseProcess

    from matplotlib.figure import Figure

    from ale_cli.store.npz import Store
    from ale_cli.summary.model import Summary

FORMATS = ("png", "svg")
DEFAULT_DPI = 120
#: the resolutions a figure may have (``ale plot --dpi``, a job's ``plots.dpi``)
DPI_RANGE = (30, 1200)
OVERVIEW = "overview"
_MAX_STEM = 100
_WINDOWS_RESERVED = {"CON", "PRN", "AUX", "NUL"} | {
    f"{p}{i}" for p in ("COM", "LPT") for i in range(1, 10)
}


@dataclass(frozen=True)
class RenderResult:
    """What one render wrote.

    ``paths`` in the order written (per feature in summary order, then the
    overview, then the interactions; png before svg); ``features`` the features
    drawn; ``not_estimable`` those drawn as a not-estimable note;
    ``interactions`` the pairs drawn, as ``"a,b"``.
    """

    paths: tuple[Path, ...]
    features: tuple[str, ...]
    not_estimable: tuple[str, ...]
    interactions: tuple[str, ...] = ()


def safe_stem(name: str) -> str:
    """A file-name stem for ``name``: ASCII letters, digits, ``.``, ``_``, ``-`` only.

    Other runs of characters become one ``_``; leading dots, dashes and
    underscores go (no hidden files, no option-like names), the result is at
    most 100 characters, Windows device names get a trailing ``_`` and an
    empty result becomes ``feature``.

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
    """InputError unless ``store`` is the store ``summary`` was made from.

    The store must hold ``features`` (and both features of every interaction)
    and as many rows as the summary. A summary made from a store records that
    store's sha256: ``store_sha256`` (the hash of the file at ``store_path``,
    checked when given) must equal it. A summary made from the model and data
    directly (``ale classic``/``ale interact`` without a store: its
    ``store["path"]`` is None) records the model's and the data's sha256, which
    must equal those in the store's meta.
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
    if "path" in source and source["path"] is None:
        _check_inputs(source, store.meta, prefix)
        return
    want = source.get("sha256")
    if want and store_sha256 and want != store_sha256:
        raise InputError(
            f"{prefix}: the summary was made from store '{source.get('path')}' "
            f"(sha256 {_short(want)}), this store's sha256 is {_short(store_sha256)}"
        )


def _check_inputs(source: dict[str, Any], meta: dict[str, Any], prefix: str) -> None:
    """InputError when the model or the data the summary records is not the store's."""
    for part in ("model", "data"):
        want, have = source.get(part) or {}, meta.get(part) or {}
        if want.get("sha256") and have.get("sha256") and want["sha256"] != have["sha256"]:
            raise InputError(
                f"{prefix}: the summary was made from {part} '{want.get('path')}' "
                f"(sha256 {_short(want['sha256'])}), the store from {part} "
                f"'{have.get('path')}' (sha256 {_short(have['sha256'])})"
            )


def _short(digest: str) -> str:
    """The first 12 hex digits of a hash, for messages."""
    return f"{str(digest)[:12]}..."


def check_output_dir(out: Path) -> None:
    """InputError unless ``out`` is absent, or a directory holding only what ale wrote.

    Figures replace the whole directory, so anything in it that its manifest
    (:mod:`ale_cli.outputs.figures`) does not list -- a user's own picture, a
    subdirectory, a link, any file of a directory without a manifest -- means
    the path is not a figure directory of ours, and it is refused.
    """
    if not out.exists():
        return
    if not out.is_dir():
        raise InputError(f"output directory '{out}' is a file", param="out_dir")
    reason = figures.refusal(out)
    if reason is not None:
        raise InputError(reason, param="out_dir")


@contextlib.contextmanager
def figure_directory(out: Path) -> Iterator[Path]:
    """Yield a new directory to draw figures into; on success it replaces ``out`` with
    the manifest of its files written into it (:func:`check_output_dir` first)."""
    check_output_dir(out)
    with replacing_directory(out) as tmp:
        yield tmp
        drawn = sorted(p for p in tmp.iterdir() if p.is_file() and not p.is_symlink())
        figures.write_manifest(tmp, drawn)


@contextlib.contextmanager
def replacing_directory(target: Path) -> Iterator[Path]:
    """Yield a new empty directory beside ``target``; on success it replaces ``target``.

    The new directory is renamed into place (an existing ``target`` is renamed
    aside first and removed after; a symlink is followed, so the directory it
    points to is replaced). On any exception, KeyboardInterrupt included, the
    new directory is removed and ``target`` is untouched. SIGINT and SIGTERM are
    held back during the swap itself, so it is never left half done.
    """
    if target.is_symlink():
        target = target.resolve()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = _new_directory(target.parent, f".{target.name}.", ".tmp")
    except OSError as exc:
        raise RunError(f"cannot write '{target}': {exc.strerror or exc}") from exc
    try:
        yield tmp
        try:
            if target.exists():
                tmp.chmod(target.stat().st_mode & 0o7777)
            with _signals_held():
                _swap(tmp, target)
        except OSError as exc:
            raise RunError(f"cannot replace '{target}': {exc.strerror or exc}") from exc
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _new_directory(parent: Path, prefix: str, suffix: str) -> Path:
    """A new directory with a random name in ``parent`` (mode from the umask, unlike
    ``tempfile.mkdtemp``'s 0o700, so the final directory has the usual permissions)."""
    for _ in range(100):
        path = parent / f"{prefix}{secrets.token_hex(4)}{suffix}"
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"no free temporary name in '{parent}'")


def _swap(new: Path, target: Path) -> None:
    """Rename ``new`` to ``target``; an existing ``target`` is renamed aside, then removed."""
    if not target.exists():
        os.rename(new, target)
        return
    old = target.parent / f".{target.name}.{secrets.token_hex(4)}.old"
    os.rename(target, old)
    try:
        os.rename(new, target)
    except BaseException:
        os.rename(old, target)
        raise
    shutil.rmtree(old, ignore_errors=True)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Delay SIGINT and SIGTERM until the block is done (main thread on POSIX only)."""
    import threading

    held = {signal.SIGINT, signal.SIGTERM}
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not (
        threading.main_thread()
    ):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def save_figure(fig: Figure, path: Path, fmt: str, *, dpi: int) -> None:
    """Save ``fig`` atomically to ``path`` as ``fmt``, without dates or version strings."""
    import matplotlib

    from ale_cli.io.files import atomic_write
    from ale_cli.plot import style

    kwargs: dict[str, Any] = {"metadata": style.SVG_METADATA}
    if fmt == "png":
        # zlib level 3: 40% faster than the default 6 for 10% larger files
        kwargs = {"metadata": style.PNG_METADATA, "pil_kwargs": {"compress_level": 3}}
    with matplotlib.rc_context(style.RC), atomic_write(path) as fh:
        fig.savefig(fh, format=fmt, dpi=dpi, **kwargs)


@dataclass(frozen=True)
class _Job:
    """Everything a worker needs to draw and save figures (inherited by forked workers)."""

    summary: Summary
    store: Store | None
    names: tuple[str, ...]
    out: Path
    formats: tuple[str, ...]
    dpi: int
    ylabel: str | None = None


_JOB: _Job | None = None  # set in the parent just before forking the workers

#: A figure to draw: ("feature", name, stem), ("overview", None, stem) or
#: ("interaction", index into summary.interactions, stem).
_Task = tuple[str, str | int | None, str]


def _render_task(task: _Task) -> list[Path]:
    """Draw one figure and save it in every format."""
    from ale_cli.plot.first_order import feature_figure, overview_figure

    job = _JOB
    if job is None:  # pragma: no cover - set by render_summary before any task runs
        raise RuntimeError("no render job")
    kind, key, stem = task
    if kind == "overview":
        fig = overview_figure(job.summary, names=job.names, ylabel=job.ylabel)
    elif kind == "interaction":
        from ale_cli.plot.second_order import interaction_figure

        fig = interaction_figure(job.summary, int(key or 0), store=job.store, ylabel=job.ylabel)
    else:
        fig = feature_figure(job.summary, str(key), store=job.store, ylabel=job.ylabel)
    paths = []
    for fmt in job.formats:
        path = job.out / f"{stem}.{fmt}"
        save_figure(fig, path, fmt, dpi=job.dpi)
        paths.append(path)
    fig.clear()
    return paths


def _init_worker() -> None:
    """In a forked worker: SIGINT is the parent's to handle (it stops the workers and
    cleans up), SIGTERM (how the parent stops them) ends the worker at once."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _worker(tasks: list[_Task], mine: list[int], conn: Connection) -> None:
    """Draw ``tasks[i]`` for ``i`` in ``mine``, sending ``(i, paths, None)`` for each; on
    an error ``(i, None, error)`` and stop."""
    _init_worker()
    for i in mine:
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
    import multiprocessing

    if n_figures < 4 or "fork" not in multiprocessing.get_all_start_methods():
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(cores or 1, 4, n_figures // 2))


def _check_options(formats: Sequence[str], jobs: int) -> None:
    """InputError for an unknown figure format or fewer than one job."""
    for fmt in formats:
        if fmt not in FORMATS:
            raise InputError(
                f"{{param}} must be one of {', '.join(FORMATS)}, got '{fmt}'", param="formats"
            )
    if jobs < 1:
        raise InputError(f"{{param}} must be at least 1, got {jobs}", param="jobs")


def _tasks(summary: Summary, names: tuple[str, ...]) -> list[_Task]:
    """The figures to draw: the overview first (the biggest, so no worker is left with a
    long tail), then the features, then the interactions."""
    pairs = [f"{a}__{b}" for a, b in (item.features for item in summary.interactions)]
    stems = file_stems([*names, *pairs])
    tasks: list[_Task] = [("feature", n, s) for n, s in zip(names, stems, strict=False)]
    if names:
        tasks.insert(0, ("overview", None, OVERVIEW))
    tasks += [("interaction", i, s) for i, s in enumerate(stems[len(names) :])]
    return tasks


def _run_tasks(job: _Job, tasks: list[_Task], jobs: int) -> list[list[Path]]:
    """Draw ``tasks`` here or in ``jobs`` forked workers; the paths written per task."""
    global _JOB
    import multiprocessing

    _JOB = job
    try:
        if jobs > 1 and len(tasks) > 1 and "fork" in multiprocessing.get_all_start_methods():
            return _run_forked(tasks, min(jobs, len(tasks)))
        return [_render_task(task) for task in tasks]
    finally:
        _JOB = None


def _run_forked(tasks: list[_Task], jobs: int) -> list[list[Path]]:
    """Draw ``tasks`` in ``jobs`` forked workers, worker ``w`` taking ``tasks[w::jobs]``.

    Each worker reports every figure on its own pipe. A worker's error is raised
    here; a worker that dies before it reports all its figures is a RunError
    (a pool would wait for it forever). Whatever ends this function (an error,
    KeyboardInterrupt) first terminates the workers and waits for them, so none
    writes after the caller removes the directory.
    """
    import multiprocessing
    from multiprocessing.connection import wait

    context = multiprocessing.get_context("fork")
    workers: dict[Connection, tuple[BaseProcess, list[int]]] = {}
    worker: BaseProcess
    results: dict[int, list[Path]] = {}
    try:
        for w in range(jobs):
            mine = list(range(w, len(tasks), jobs))
            reader, writer = context.Pipe(duplex=False)
            worker = context.Process(target=_worker, args=(tasks, mine, writer), daemon=True)
            worker.start()
            writer.close()
            workers[reader] = (worker, mine)
        pending = dict(workers)
        while pending:
            for ready in wait(list(pending)):
                conn = cast("Connection", ready)
                try:
                    i, paths, error = conn.recv()
                except EOFError:  # the worker is done, or died
                    done, mine = pending.pop(conn)
                    done.join()
                    if not all(k in results for k in mine):
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
        for worker, _ in workers.values():
            if worker.is_alive():
                worker.terminate()
        for reader, (worker, _) in workers.items():
            worker.join()
            reader.close()


def render_summary(
    summary: Summary,
    out_dir: str | Path,
    *,
    store: Store | None = None,
    features: Sequence[str] | None = None,
    formats: Sequence[str] = ("png",),
    dpi: int = DEFAULT_DPI,
    jobs: int = 1,
    ylabel: str | None = None,
) -> RenderResult:
    """Write one figure per feature, the overview and one figure per interaction of
    ``summary`` into the directory ``out_dir``, replacing it as a whole (no overview
    when the summary has no features).

    ``features`` (default: all, in summary order) must be features of the
    summary; ``store`` must match it (see :func:`check_store`, which the caller
    runs); ``ylabel`` labels every effect axis (default: from the output the
    summary records). ``out_dir`` must be absent or hold only figures
    (:func:`check_output_dir`); the figures are drawn into a new directory that
    replaces it only when all are written (:func:`replacing_directory`). Each
    figure is released right after it is saved. With ``jobs`` > 1 the figures
    are drawn by that many forked worker processes (figures are independent,
    so the files are the same bytes as with ``jobs=1``); where ``fork`` is not
    available they are drawn in this process.
    """
    _check_options(formats, jobs)
    if features is None:
        features = [f.name for f in summary.features]
    names = tuple(dict.fromkeys(features))
    feats = [summary.feature(n) for n in names]
    out = Path(out_dir)
    tasks = _tasks(summary, names)
    with figure_directory(out) as tmp:
        job = _Job(summary, store, names, tmp, tuple(formats), dpi, ylabel)
        written = _run_tasks(job, tasks, jobs)
    if names:  # files are listed with the overview after the features
        written = [*written[1 : len(names) + 1], written[0], *written[len(names) + 1 :]]
    return RenderResult(
        paths=tuple(out / p.name for paths in written for p in paths),
        features=names,
        not_estimable=tuple(f.name for f in feats if f.status != "ok" or f.n_bins == 0),
        interactions=tuple(",".join(item.features) for item in summary.interactions),
    )


def select_features(summary: Summary, features: Sequence[str]) -> tuple[Summary, list[str]]:
    """The named first-order features, and the summary with only the interactions that
    involve at least one of the names (``ale plot --features``).

    InputError for a name that is neither a first-order feature nor in an interaction.

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
) -> RenderResult:
    """Read a summary (and its store), check them, and render every figure (``ale plot``).

    ``jobs=None`` picks :func:`default_jobs`.
    """
    from ale_cli.summary.model import read_summary

    summary = read_summary(summary_path)
    if features is None:
        names = [f.name for f in summary.features]
    else:
        summary, names = select_features(summary, features)
    store = None
    if store_path is not None:
        from ale_cli.store.npz import read_store, store_sha256

        store = read_store(store_path)
        check_store(
            summary,
            store,
            names,
            summary_path=summary_path,
            store_path=store_path,
            store_sha256=store_sha256(store_path),  # a file's, or a directory store's
        )
    if jobs is None:
        jobs = default_jobs(len(dict.fromkeys(names)) + 1 + len(summary.interactions))
    return render_summary(
        summary,
        out_dir,
        store=store,
        features=names,
        formats=formats,
        dpi=dpi,
        jobs=jobs,
        ylabel=ylabel,
    )
