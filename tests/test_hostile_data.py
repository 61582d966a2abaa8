"""Hostile cases on the data surfaces: partitioned Parquet datasets, categorical columns,
the Dask options, models that fail, the bootstrap's limits.

Each case runs one command in-process on a fresh copy of a workspace (the good files of
:mod:`test_hostile`, plus datasets, models and data files made here) and asserts what
:func:`test_hostile.check_one_line` does (the exit code, one ``error: `` line holding the
expected text, no traceback) and that every file of the workspace is byte-identical
(names, sizes, times, modes): nothing written, nothing half-written.
"""

from __future__ import annotations

import json
import pickle
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_hostile import Case, base, check_one_line, copy_workspace, snapshot

from ale_cli.core.discrete import MAX_LEVELS

__all__ = ["base"]  # the good store and summary every case starts from

N = 40


def _frame(n: int = N, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.normal(size=(n, 3)), columns=["x1", "x2", "x3"])
    return frame.assign(y=frame.sum(axis=1))


def _parts(root: Path, *parts: pd.DataFrame) -> None:
    root.mkdir()
    for k, part in enumerate(parts):
        part.to_parquet(root / f"part-{k}.parquet", index=False)


def _torch_models(root: Path) -> None:
    import torch
    from torch import nn

    class RaisesAlways(nn.Module):  # no layer tells its width
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if bool((x[:, 0] > -1e9).any()):
                raise ValueError("no rows please")
            return x.sum(dim=1)

    class RaisesLater(nn.Module):  # fine on the first rows, raises on a later one
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if bool((x[:, 1] < -5.0).any()):
                raise ValueError("x2 below -5")
            return torch.tanh(x).sum(dim=1)

    torch.jit.script(RaisesAlways()).save(str(root / "raises.pt"))
    torch.jit.script(RaisesLater()).save(str(root / "later.pt"))


def _sklearn_model(root: Path) -> None:
    """A pipeline whose first step raises on every call (``int`` of an array)."""
    from sklearn.linear_model import LinearRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    frame = _frame()
    pipe = make_pipeline(FunctionTransformer(), LinearRegression())
    pipe.fit(frame[["x1", "x2", "x3"]].to_numpy(), frame.y.to_numpy())
    pipe.steps[0][1].func = int
    (root / "raises.pkl").write_bytes(pickle.dumps(pipe))


@pytest.fixture(scope="session")
def data_base(base: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The good files plus this suite's datasets, data files and models."""
    root = tmp_path_factory.mktemp("hostile-data")
    shutil.copytree(base, root / "ws", symlinks=True)
    ws = root / "ws"
    frame = _frame()
    frame.to_csv(ws / "data.csv", index=False)
    _parts(ws / "gap", frame.iloc[:20], frame.iloc[20:].drop(columns="x3"))
    _parts(ws / "gap0", frame.iloc[:20].drop(columns="x2"), frame.iloc[20:])
    _parts(ws / "typed", frame.iloc[:20], frame.iloc[20:].assign(x3="n/a"))
    _parts(ws / "twice", frame.iloc[:20], frame.iloc[20:])
    twice = ws / "twice" / "part-1.parquet"  # a column given twice in the second part
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols = [pa.array(frame.iloc[20:][c].to_numpy()) for c in ("x1", "x2", "x3", "x3")]
    pq.write_table(pa.Table.from_arrays(cols, names=["x1", "x2", "x3", "x3"]), twice)
    _parts(ws / "broken", frame.iloc[:20], frame.iloc[20:])
    (ws / "broken" / "part-1.parquet").write_bytes(b"PAR1 this is not a parquet file PAR1")
    (ws / "nothing").mkdir()
    (ws / "nothing" / "readme.txt").write_text("no parquet here\n")
    late = _frame(60, seed=4)
    late.loc[:30, "x2"] = late.loc[:30, "x2"].abs()
    late.loc[45, "x2"] = -9.0  # the row the later-raising model fails on
    late.to_csv(ws / "late.csv", index=False)
    k = MAX_LEVELS + 1  # one level more than the cap: a level per row
    rng = np.random.default_rng(3)
    ids = pd.DataFrame({"x1": np.arange(k), "x2": rng.normal(size=k), "x3": rng.normal(size=k)})
    ids.assign(y=0.0).to_csv(ws / "ids.csv", index=False)
    (ws / "scheduler.json").write_text(json.dumps({"type": "Scheduler", "id": "x"}))
    (ws / "scheduler-bad.json").write_text(json.dumps({"address": "http://node7:8787"}))
    _torch_models(ws)
    _sklearn_model(ws)
    return ws


@pytest.fixture()
def dws(data_base: Path, tmp_path: Path) -> Path:
    return copy_workspace(data_base, tmp_path)


def _compute(data: str, *extra: str, model: str = "{model}") -> tuple[str, ...]:
    return ("compute", model, data, "--exclude", "y", "-o", "{ws}/out.npz", "-q", *extra)


def _classic(data: str, *extra: str, model: str = "{model}") -> tuple[str, ...]:
    return ("classic", model, data, "--exclude", "y", "-o", "{ws}/out.json", "-q", *extra)


def _interact(data: str, *extra: str, model: str = "{model}") -> tuple[str, ...]:
    argv = ("interact", model, data, "--exclude", "y", "--pair", "x1,x2")
    return (*argv, "-o", "{ws}/out.json", "-q", *extra)


def _store(command: str, *extra: str) -> tuple[str, ...]:
    return (command, "{ws}/good.npz", "-o", "{ws}/o.json", *extra)


GAP = "data file '{ws}/gap/part-1.parquet' has no column 'x3' (columns: x1, x2, y)"
DASK = ("--engine", "dask")
SCHEDULER_FORMS = (
    "must be a Dask scheduler address (tcp://host:port, tls://host:port, ws://host:port, "
    "host:port) or an existing scheduler file (JSON), got"
)

PARTITIONED = [
    Case("gap-compute", _compute("{ws}/gap"), 2, GAP),
    Case("gap-classic", _classic("{ws}/gap"), 2, GAP),
    Case("gap-classic-whole", _classic("{ws}/gap", "--bootstrap", "5"), 2, GAP),
    Case("gap-interact", _interact("{ws}/gap"), 2, GAP),
    Case("gap-compute-dask", _compute("{ws}/gap", *DASK), 2, GAP),
    Case("gap-classic-dask", _classic("{ws}/gap", *DASK), 2, GAP),
    Case("gap-glob", _compute("{ws}/gap/part-*.parquet"), 2, GAP),
    Case(
        "gap-compute-sklearn",
        _compute("{ws}/gap", "--trust-pickle", model="{ws}/raises.pkl"),
        2,
        GAP,
    ),
    Case(
        "gap-first-part",
        _compute("{ws}/gap0", "--inputs", "x1,x2,x3"),
        2,
        "data file '{ws}/gap0' has no column 'x2' (columns: x1, x3, y)",
    ),
    Case(
        "text-in-a-part",
        _compute("{ws}/typed"),
        2,
        "column 'x3' in data file '{ws}/typed' is not numeric (example value: 'n/a')",
    ),
    Case(
        "column-twice-in-a-part",
        _compute("{ws}/twice"),
        2,
        "data file '{ws}/twice/part-1.parquet' has two columns named 'x3'",
    ),
    Case(
        "unreadable-part",
        _classic("{ws}/broken"),
        2,
        "cannot read data file '{ws}/broken/part-1.parquet' as PARQUET",
    ),
    Case(
        "directory-without-parquet",
        _compute("{ws}/nothing"),
        2,
        "data '{ws}/nothing' is a directory holding no .parquet files",
    ),
    Case("glob-matching-nothing", _compute("{ws}/gap/*.csv"), 2, "matches no files"),
]

OVER = f"has more than {MAX_LEVELS:,} levels, the most ale estimates"
CATEGORICAL = [
    Case(
        "levels-over-cap-compute",
        _compute("{ws}/ids.csv", "--categorical", "x1"),
        2,
        f"categorical feature 'x1' {OVER}",
    ),
    Case(
        "levels-over-cap-classic",
        _classic("{ws}/ids.csv", "--categorical", "x1"),
        2,
        f"categorical feature 'x1' {OVER}",
    ),
    Case(
        "discrete-over-cap-classic",
        _classic("{ws}/ids.csv", "--discrete", "x1"),
        2,
        f"discrete feature 'x1' {OVER}",
    ),
    Case(
        "discrete-over-cap-compute",
        _compute("{ws}/ids.csv", "--discrete", "x1", "--features", "x1"),
        2,
        f"discrete feature 'x1' {OVER}",
    ),
    Case(
        "categorical-unknown-column",
        _compute("{ws}/data.csv", "--categorical", "colour"),
        2,
        "--categorical names 'colour', which is not an input column",
    ),
]

SCHEDULERS = [  # (id, argv, message): every command that takes --scheduler
    ("bogus", _compute("{ws}/data.csv", *DASK, "--scheduler", "bogus"), SCHEDULER_FORMS),
    (
        "http",
        _classic("{ws}/data.csv", *DASK, "--scheduler", "http://node7:8787/status"),
        f"{SCHEDULER_FORMS} 'http://node7:8787/status' (http is not a Dask protocol)",
    ),
    (
        "port-out-of-range",
        _store("rebin", *DASK, "--scheduler", "tcp://h:99999"),
        f"{SCHEDULER_FORMS} 'tcp://h:99999' (port 99999 is not between 1 and 65535)",
    ),
    (
        "without-port",
        _store("rhale", *DASK, "--scheduler", "tcp://node7"),
        f"{SCHEDULER_FORMS} 'tcp://node7' (no host:port)",
    ),
    ("empty", _interact("{ws}/data.csv", *DASK, "--scheduler", ""), SCHEDULER_FORMS),
    (
        "file-without-address",
        _compute("{ws}/data.csv", *DASK, "--scheduler", "{ws}/scheduler.json"),
        "file '{ws}/scheduler.json' is not a Dask scheduler file",
    ),
    (
        "file-of-notes",
        _compute("{ws}/data.csv", *DASK, "--scheduler", "{ws}/notes.txt"),
        "file '{ws}/notes.txt' is not a Dask scheduler file",
    ),
    (
        "file-with-http",
        _compute("{ws}/data.csv", *DASK, "--scheduler", "{ws}/scheduler-bad.json"),
        "file '{ws}/scheduler-bad.json' is not a Dask scheduler file",
    ),
    (
        "without-dask-engine",
        _compute("{ws}/data.csv", "--scheduler", "tcp://node7:8786"),
        "is the address of a Dask scheduler: it needs --engine dask",
    ),
]
DASK_OPTIONS = [
    *(Case(f"scheduler-{name}", argv, 2, f"--scheduler {m}") for name, argv, m in SCHEDULERS),
    Case(
        "engine-unknown",
        _compute("{ws}/data.csv", "--engine", "spark"),
        2,
        "--engine must be one of local, dask, got 'spark'",
    ),
]

FIRST_ROWS = "failed on the first rows of the data, which have 3 features (no rows please)"
MODEL_FAILURES = [
    Case("raises-compute", _compute("{ws}/data.csv", model="{ws}/raises.pt"), 1, FIRST_ROWS),
    Case("raises-classic", _classic("{ws}/data.csv", model="{ws}/raises.pt"), 1, FIRST_ROWS),
    Case("raises-interact", _interact("{ws}/data.csv", model="{ws}/raises.pt"), 1, FIRST_ROWS),
    Case(
        "raises-later-compute",
        _compute("{ws}/late.csv", model="{ws}/later.pt"),
        1,
        "model '{ws}/later.pt' failed: ",
    ),
    Case(
        "raises-later-classic",
        _classic("{ws}/late.csv", model="{ws}/later.pt"),
        1,
        "model '{ws}/later.pt' failed: ",
    ),
    Case(  # the worker's own log of the failed task is not a second report
        "raises-later-compute-dask",
        _compute("{ws}/late.csv", *DASK, model="{ws}/later.pt"),
        1,
        "model '{ws}/later.pt' failed: x2 below -5",
    ),
    Case(
        "sklearn-raises-compute",
        _compute("{ws}/data.csv", "--trust-pickle", model="{ws}/raises.pkl"),
        1,
        "model '{ws}/raises.pkl' failed on the first rows of the data: ",
    ),
    Case(
        "sklearn-raises-classic",
        _classic("{ws}/data.csv", "--trust-pickle", model="{ws}/raises.pkl"),
        1,
        "model '{ws}/raises.pkl' failed on the first rows of the data: ",
    ),
]

CAP = "--bootstrap must be at most 10,000 replicates"
WHY = "(each one is a curve per feature, held in memory and in the summary)"
BOOTSTRAP = [
    Case(f"bootstrap-{name}", argv, 2, message)
    for name, argv, message in [
        (
            "huge-rebin",
            _store("rebin", "--bootstrap", "100000000"),
            f"{CAP} {WHY}, got 100,000,000",
        ),
        (
            "over-rhale",
            _store("rhale", "--bootstrap", "10001"),
            f"{CAP} {WHY}, got 10,001",
        ),
        ("huge-classic", _classic("{ws}/data.csv", "--bootstrap", "100000000"), CAP),
        ("20-digits", _store("rebin", "--bootstrap", "9" * 20), CAP),
        ("one", _store("rebin", "--bootstrap", "1"), "a whole number of at least 2, got 1"),
        ("negative", _store("rebin", "--bootstrap", "-3"), "Invalid value for '--bootstrap'"),
    ]
]

DATA_CASES = PARTITIONED + CATEGORICAL + DASK_OPTIONS + MODEL_FAILURES + BOOTSTRAP


def test_there_are_enough_cases_with_distinct_names():
    assert len(DATA_CASES) >= 30
    assert len({c.id for c in DATA_CASES}) == len(DATA_CASES)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in DATA_CASES])
def test_hostile_data_surfaces(cli, dws: Path, rhale_model: Path, case: Case):
    before = snapshot(dws)
    argv = [a.format(ws=dws, model=rhale_model) for a in case.argv]
    result = cli(*argv)
    check_one_line(result, case.message.format(ws=dws), case.code)
    assert snapshot(dws) == before
