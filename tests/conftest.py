"""Shared fixtures: sample models built once per session into a temporary folder."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def sample_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Sample datasets and models, built by the same script as ``make demo``."""
    from ale_cli.sample import build

    root = tmp_path_factory.mktemp("sample_data")
    build(root)
    return root
