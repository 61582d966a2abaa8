"""``ale plot`` and its files: the store must be the summary's, the figure directory is
replaced as a whole or not at all (errors, Ctrl-C, SIGTERM, worker processes).

Summaries here come from the real commands (``ale compute`` + ``ale rebin`` on a
pickled scikit-learn classifier, ``ale classic`` from the model directly, ``ale
rebin`` on a synthetic 40-feature store), so the store identity they record is
what users' summaries hold.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ale_cli.cli import app
from ale_cli.io.files import sha256_file
from ale_cli.store.npz import Store, store_sha256, write_store
from ale_cli.summary.model import read_summary

runner = CliRunner()


@pytest.fixture(autouse=True)
def agg():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    yield
    plt.close("all")


def ale(*args: object):
    result = runner.invoke(app, [str(a) for a in args])
    return result


def ok(*args: object):
    result = ale(*args)
    assert result.exit_code == 0, result.output
    return result


# ---------------------------------------------------------------- a real classifier run


def _data(path: Path, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(300, 3))
    y = (X @ [1.5, -1.0, 0.5] + rng.normal(0, 0.5, 300) > 0).astype(int)
    pd.DataFrame({"x0": X[:, 0], "x1": X[:, 1], "x2": X[:, 2], "y": y}).to_csv(path, index=False)
    return path


def _model(path: Path, data: Path, c: float) -> Path:
    import joblib
    from sklearn.linear_model import LogisticRegression

    frame = pd.read_csv(data)
    joblib.dump(LogisticRegression(C=c).fit(frame[["x0", "x1", "x2"]].to_numpy(), frame.y), path)
    return path


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> dict[str, Path]:
    """Two data files, two models; stores of (model, data), (model, other data),
    (other model, data); a DALE summary of the first store; a classic summary made
    from the model and the data directly."""
    root = tmp_path_factory.mktemp("plot_run")
    data, other_data = _data(root / "d.csv", 0), _data(root / "other.csv", 1)
    model, other_model = _model(root / "m.pkl", data, 1.0), _model(root / "o.pkl", data, 0.1)
    common = ["--exclude", "y", "--trust-pickle", "--output", "proba:1"]
    paths = {"data": data, "model": model}
    for key, (m, d) in {
        "store": (model, data),
        "other_data_store": (model, other_data),
        "other_model_store": (other_model, data),
    }.items():
        paths[key] = root / f"{key}.npz"
        ok("compute", m, d, *common, "-o", paths[key])
    paths["dale"] = root / "dale.json"
    ok("rebin", paths["store"], "-o", paths["dale"], "--bins", 5)
    paths["classic"] = root / "classic.json"
    ok("classic", model, data, *common, "-o", paths["classic"], "--bins", 5)
    return paths


def test_summary_with_its_own_store_plots_and_names_the_output(run, tmp_path):
    from ale_cli.plot import feature_figure
    from ale_cli.store.npz import read_store

    ok("plot", run["dale"], "--store", run["store"], "-o", tmp_path / "a", "-j", 1)
    ok("plot", run["classic"], "--store", run["store"], "-o", tmp_path / "b", "-j", 1)
    summary = read_summary(run["dale"])
    assert summary.store["sha256"] == store_sha256(run["store"])
    fig = feature_figure(summary, "x0", store=read_store(run["store"]))
    top = fig.findobj(lambda a: a.get_gid() == "effect_axes")[0]
    assert top.get_ylabel() == "centered effect on probability of class 1"


def test_summary_refuses_another_store_by_its_sha256(run, tmp_path):
    other = run["other_data_store"]
    result = ale("plot", run["dale"], "--store", other, "-o", tmp_path / "x", "-j", 1)
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: store '{other}' does not match summary '{run['dale']}': the summary was made "
        f"from store '{run['store']}' (sha256 {store_sha256(run['store'])[:12]}...), this "
        f"store's sha256 is {store_sha256(other)[:12]}...\n"
    )
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize(
    ("part", "store_key"), [("data", "other_data_store"), ("model", "other_model_store")]
)
def test_summary_made_from_the_model_refuses_a_store_of_other_inputs(
    run, tmp_path, part, store_key
):
    other = run[store_key]
    source = run["data"] if part == "data" else run["model"]
    foreign = run["data"].parent / ("other.csv" if part == "data" else "o.pkl")
    result = ale("plot", run["classic"], "--store", other, "-o", tmp_path / "x", "-j", 1)
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: store '{other}' does not match summary '{run['classic']}': the summary was "
        f"made from {part} '{source}' (sha256 {sha256_file(source)[:12]}...), the store from "
        f"{part} '{foreign}' (sha256 {sha256_file(foreign)[:12]}...)\n"
    )


# ---------------------------------------------------------------- the figure directory


def _small(tmp_path: Path, n_features: int = 3, n_rows: int = 400) -> tuple[Path, Path]:
    """A synthetic store of ``n_features`` features and its DALE summary (real ``ale rebin``)."""
    rng = np.random.default_rng(4)
    X = rng.uniform(-1.0, 1.0, (n_rows, n_features))
    coef = np.linspace(-2.0, 2.0, n_features)
    store = tmp_path / "store.npz"
    write_store(
        store,
        Store(
            X=X,
            local_effects=coef * np.cos(3 * X) + rng.normal(0.0, 0.3, X.shape),
            prediction=X @ coef,
            feature_names=tuple(f"feature_{j:02d}" for j in range(n_features)),
            meta={"schema_version": 1, "output": {"selector": None, "name": "score"}},
        ),
    )
    summary = tmp_path / "summary.json"
    ok("rebin", store, "-o", summary, "--bins", 20, "--no-timestamp")
    return summary, store


def _old_figures(out: Path) -> dict[str, bytes]:
    out.mkdir()
    old = {"feature_00.png": b"old png", "stale.svg": b"<svg/>", "overview.png": b"old"}
    for name, data in old.items():
        (out / name).write_bytes(data)
    from ale_cli.outputs.figures import MANIFEST, write_manifest

    write_manifest(out, [out / name for name in old])  # as an earlier 'ale plot' left it
    return {**old, MANIFEST: (out / MANIFEST).read_bytes()}


def _listing(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in out.iterdir()}


def _hidden(root: Path) -> list[str]:
    """Temporary files or directories left anywhere under ``root``."""
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.name.startswith(".") and p.name != ".ale-plots.json"  # the manifest is ours
    )


def test_an_existing_figure_directory_is_replaced_as_a_whole(tmp_path):
    summary, store = _small(tmp_path)
    out = tmp_path / "figs"
    _old_figures(out)
    out.chmod(0o751)
    result = ok("plot", summary, "--store", store, "-o", out, "-j", 1)
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        ".ale-plots.json",
        "feature_00.png",
        "feature_01.png",
        "feature_02.png",
        "overview.png",
    ]
    assert sorted(Path(p).name for p in result.stdout.splitlines()) == names[1:]
    assert (out / "feature_00.png").read_bytes()[:4] == b"\x89PNG"
    assert out.stat().st_mode & 0o777 == 0o751
    assert _hidden(tmp_path) == []


@pytest.mark.parametrize("what", ["file", "subdirectory", "hidden"])
def test_a_directory_that_is_not_a_figure_directory_is_refused(tmp_path, what):
    summary, _ = _small(tmp_path)
    out = tmp_path / "figs"
    out.mkdir()
    (out / "a.png").write_bytes(b"x")
    name = {"file": "notes.txt", "subdirectory": "sub", "hidden": ".DS_Store"}[what]
    if what == "subdirectory":
        (out / name).mkdir()
    else:
        (out / name).write_text("keep me")
    result = ale("plot", summary, "-o", out, "-j", 1, "--force")  # --force cannot lose them
    first = min("a.png", name)
    assert (result.exit_code, result.stderr) == (
        2,
        f"error: output directory '{out}' holds '{first}' and 1 more, which ale did not write "
        "there (not in its .ale-plots.json); the figures replace the whole directory, so "
        "choose a new or empty one\n",
    )
    assert sorted(p.name for p in out.iterdir()) == sorted(["a.png", name])


def test_an_empty_directory_is_used(tmp_path):
    summary, _ = _small(tmp_path)
    (tmp_path / "figs").mkdir()
    ok("plot", summary, "-o", tmp_path / "figs", "-j", 1)
    assert len(list((tmp_path / "figs").iterdir())) == 5  # the figures and the manifest


@pytest.mark.parametrize("error", [OSError("disk full"), KeyboardInterrupt()])
@pytest.mark.parametrize("jobs", [1, 2])
def test_a_failure_or_interrupt_midway_leaves_the_previous_figures(
    tmp_path, monkeypatch, error, jobs
):
    """The third feature's figure fails (in a worker with ``jobs=2``): nothing changes.

    A worker's error is raised in the parent; a worker that dies (here of a
    KeyboardInterrupt raised inside it) is a RunError, not a wait for ever.
    """
    from ale_cli.errors import RunError
    from ale_cli.plot import render as workers
    from ale_cli.plot.render import render_summary

    summary, _ = _small(tmp_path, n_features=6)
    out = tmp_path / "figs"
    old = _old_figures(out)
    save = workers.save_figure

    def failing(fig, path, fmt, *, dpi):
        if path.stem == "feature_02":
            raise error
        save(fig, path, fmt, dpi=dpi)

    monkeypatch.setattr(workers, "save_figure", failing)
    expected = RunError if jobs > 1 and isinstance(error, KeyboardInterrupt) else type(error)
    with pytest.raises(expected) as exc:
        render_summary(read_summary(summary), out, jobs=jobs)
    if expected is RunError:
        assert str(exc.value) == (
            "a process drawing figures ended (exit code 1) before it drew all of its figures"
        )
    assert _listing(out) == old
    assert _hidden(tmp_path) == []


def test_interrupted_plot_leaves_no_temporary_files_and_the_old_figures(tmp_path):
    """``ale plot -j 2`` on 40 features, SIGINT or SIGTERM while the workers draw: the
    previous figure directory is intact byte for byte (or, if the run won the race,
    fully replaced), no temporary file or directory remains and no worker survives."""
    summary, store = _small(tmp_path, n_features=40, n_rows=3000)
    out = tmp_path / "figs"
    old = _old_figures(out)
    expected = {f"feature_{j:02d}.{fmt}" for j in range(40) for fmt in ("png", "svg")}
    expected |= {"overview.png", "overview.svg", ".ale-plots.json"}
    interrupted = 0
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGINT, signal.SIGTERM):
        code, workers = _plot_and_signal(summary, store, out, sig)
        assert _hidden(tmp_path) == []
        if code == 0:  # finished before the signal arrived: replaced as a whole
            assert set(_listing(out)) == expected
            break
        assert code == (130 if sig == signal.SIGINT else 143)
        assert _listing(out) == old
        for pid in workers:
            assert not _alive(pid), f"worker {pid} outlived the interrupted run"
        interrupted += 1
        if interrupted == 2:
            break
    assert interrupted >= 1


def _plot_and_signal(
    summary: Path, store: Path, out: Path, sig: signal.Signals
) -> tuple[int, list[int]]:
    """Start ``ale plot -j 2`` in a new process, send ``sig`` once its workers have written
    a file into the temporary directory; the exit code and the worker pids seen."""
    # SIGINT raises KeyboardInterrupt even where the test runner's parent ignores it
    code = (
        "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "from ale_cli.cli import main; main()"
    )
    args = ["plot", str(summary), "--store", str(store), "-o", str(out), "-j", "2"]
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *args, "--format", "both"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    workers: list[int] = []
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        temp = [p for p in out.parent.iterdir() if p.name.startswith(".figs.") and p.is_dir()]
        if temp and any(True for _ in temp[0].iterdir()):
            workers = _children(proc.pid)
            proc.send_signal(sig)
            break
        time.sleep(0.02)
    _, err = proc.communicate(timeout=120)
    if proc.returncode not in (0, 130, 143):
        raise AssertionError(err.decode())
    if proc.returncode in (130, 143):
        said = "interrupted" if proc.returncode == 130 else "terminated"
        assert err.decode().strip().endswith(f"error: {said}")
    return proc.returncode, workers


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie left to a non-reaping init counts as gone)."""
    for _ in range(100):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return False
        if state == "Z":
            return False
        time.sleep(0.05)
    return True


def test_sigterm_handler_is_restored_after_plot(tmp_path):
    summary, _ = _small(tmp_path)
    before = signal.getsignal(signal.SIGTERM)
    ok("plot", summary, "-o", tmp_path / "figs", "-j", 1)
    assert signal.getsignal(signal.SIGTERM) is before
