"""Every result equals the golden one, written before the estimators were rearranged.

``tests/data/golden/make.py`` wrote one JSON file per case of
``tests/data/golden/cases.py`` (the one table of API calls); each case is recomputed here
with the current code and every number compared to 1e-12 (relative, and absolute on the
scale of its array). Results that are not numbers (feature names, statuses, reasons, K,
methods, levels, parameters) must be equal. Provenance is not compared: times, tool and
schema versions, paths, hashes, and the wording of notes.

The Dask case starts a cluster (half a minute on two cores): it runs only with
``ALE_GOLDEN_DASK=1``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "data" / "golden"))

from cases import CASES, GOLDEN, MODELS, SAMPLE, Workspace  # noqa: E402

RTOL = 1e-12
#: keys whose values are provenance, not results
IGNORED = frozenset(
    {"created", "tool", "schema_version", "path", "sha256", "timings", "notes", "note"}
    | {"statistics_note"}  # the wording of params.statistics' note
)
SLOW = {"compute_dask": "ALE_GOLDEN_DASK"}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Any:
    """The sample models of ``make samples`` (built here if absent) and a scratch dir."""
    models = SAMPLE / "models"
    if not all((models / name).exists() for name in MODELS):
        models = request.getfixturevalue("sample_dir") / "models"
    return Workspace(models, tmp_path_factory.mktemp("golden"))


@pytest.mark.parametrize("name", list(CASES))
def test_case_equals_its_golden_file(name: str, workspace: Any) -> None:
    if name in SLOW and os.environ.get(SLOW[name]) != "1":
        pytest.skip(f"starts a Dask cluster; run with {SLOW[name]}=1")
    golden = json.loads((GOLDEN / f"{name}.json").read_text())
    assert golden["case"] == name
    assert_same(CASES[name](workspace), golden["results"], name)


def test_every_case_has_a_golden_file_and_no_file_is_stale() -> None:
    files = {p.stem for p in GOLDEN.glob("*.json")}
    assert files == set(CASES)


def assert_same(actual: Any, golden: Any, where: str) -> None:
    """Equal structure; numbers (lists of numbers as arrays) to :data:`RTOL`, with an
    absolute tolerance of RTOL times the largest magnitude in the golden array."""
    if isinstance(golden, dict):
        assert isinstance(actual, dict), where
        keys = set(golden) - IGNORED
        assert set(actual) - IGNORED == keys, f"{where}: keys differ"
        for key in sorted(keys):
            assert_same(actual[key], golden[key], f"{where}.{key}")
    elif _numeric(golden):
        assert _numeric(actual), f"{where}: {actual!r} is not numeric like {golden!r}"
        want, got = _array(golden), _array(actual)
        assert got.shape == want.shape, f"{where}: shape {got.shape} != {want.shape}"
        finite = want[np.isfinite(want)]
        scale = float(np.max(np.abs(finite))) if finite.size else 0.0
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=RTOL * scale, err_msg=where)
    elif isinstance(golden, list):
        assert isinstance(actual, list) and len(actual) == len(golden), where
        for index, (a, g) in enumerate(zip(actual, golden, strict=True)):
            assert_same(a, g, f"{where}[{index}]")
    else:
        assert actual == golden, where


def _numeric(value: Any) -> bool:
    """A number, or a (nested) list of numbers and nulls with at least one number."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return True
    if not isinstance(value, list):
        return False
    leaves = list(_leaves(value))
    return any(v is not None for v in leaves) and all(
        v is None or (isinstance(v, int | float) and not isinstance(v, bool)) for v in leaves
    )


def _leaves(value: Any) -> Any:
    for item in value:
        if isinstance(item, list):
            yield from _leaves(item)
        else:
            yield item


def _array(value: Any) -> np.ndarray:
    """Numbers as float64 (null: NaN, which assert_allclose matches with NaN)."""
    if isinstance(value, list):
        return np.array([_array(v) for v in value], dtype=np.float64)
    return np.array(np.nan if value is None else value, dtype=np.float64)
