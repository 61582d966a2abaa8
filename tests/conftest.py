"""Shared fixtures: sample models built once per session, a CLI runner."""

from __future__ import annotations

import os
from pathlib import Path
from unittest.mock import patch

import pytest
from typer.testing import CliRunner


@pytest.fixture(scope="session")
def sample_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Sample datasets and models, built by the same script as ``make demo``."""
    from ale_cli.sample import build

    root = tmp_path_factory.mktemp("sample_data")
    build(root)
    return root


@pytest.fixture(scope="session")
def rhale_model(sample_dir: Path) -> Path:
    return sample_dir / "models" / "rhale_synthetic.pt"


@pytest.fixture(scope="session")
def mlp_model(sample_dir: Path) -> Path:
    return sample_dir / "models" / "diabetes_mlp.pt"


@pytest.fixture()
def cli():  # type: ignore[no-untyped-def]
    """Run ``ale ARGS...`` in-process; returns the typer Result (exit_code, stdout, stderr)."""
    from ale_cli.cli import app

    runner = CliRunner()

    def run(*args: object):  # type: ignore[no-untyped-def]
        return runner.invoke(app, [str(a) for a in args])

    return run


@pytest.fixture(scope="module")
def cluster():  # type: ignore[no-untyped-def]
    """A local Dask cluster of 2 worker processes, one thread each: its scheduler address."""
    from distributed import LocalCluster

    with (
        patch.dict(os.environ),  # the nannies set MALLOC_TRIM_THRESHOLD_... in this process
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as local,
    ):
        yield local.scheduler_address
