"""Per-level features: the level distances in K^2 memory equal the direct formula, and
a feature with more levels than the cap is refused in one line naming it and the cap."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ale_cli.core import discrete
from ale_cli.core.discrete import KS_POINTS, MAX_LEVELS, level_distances, mds_1d
from ale_cli.errors import InputError
from ale_cli.estimators import levels as categorical
from ale_cli.estimators.levels import plan_levels


def _direct(codes, k, numeric, categorical):
    """The distances as defined, every pair at once (K x K x points in memory)."""
    dist = np.zeros((k, k))
    for col in numeric:
        points = np.quantile(col, np.linspace(0.0, 1.0, KS_POINTS))
        F = np.stack(
            [
                np.searchsorted(np.sort(col[codes == j]), points, side="right")
                / max((codes == j).sum(), 1)
                for j in range(k)
            ]
        )
        dist += np.abs(F[:, None, :] - F[None, :, :]).max(axis=2)
    for col in categorical:
        table = np.zeros((k, int(col.max()) + 1))
        np.add.at(table, (codes, col), 1.0)
        p = table / table.sum(axis=1, keepdims=True)
        dist += np.abs(p[:, None, :] - p[None, :, :]).sum(axis=2) / 2.0
    return dist


@settings(max_examples=40, deadline=None)
@given(
    k=st.integers(2, 12),
    n=st.integers(12, 80),
    other_levels=st.integers(1, 9),
    seed=st.integers(0, 2**16),
    block=st.sampled_from([1, 64, 16 << 20]),
)
def test_level_distances_equal_the_direct_formula(k, n, other_levels, seed, block):
    rng = np.random.default_rng(seed)
    codes = np.concatenate([np.arange(k), rng.integers(0, k, size=n - k)])  # every level
    numeric = [rng.normal(size=n), np.round(rng.normal(size=n))]  # ties too
    categorical = [rng.integers(0, other_levels, size=n)]
    old = discrete._BLOCK_BYTES
    discrete._BLOCK_BYTES = block  # a block of one row, a few, all
    try:
        got = level_distances(codes, k, numeric=numeric, categorical=categorical)
    finally:
        discrete._BLOCK_BYTES = old
    np.testing.assert_allclose(got, _direct(codes, k, numeric, categorical), rtol=0, atol=1e-12)


def test_mds_equals_the_centering_matrix_form():
    rng = np.random.default_rng(2)
    points = rng.normal(size=(9, 2))
    d = np.sqrt(((points[:, None] - points[None]) ** 2).sum(-1))
    j = np.eye(9) - np.full((9, 9), 1 / 9)
    vals, vecs = np.linalg.eigh(-j @ (d * d) @ j / 2)
    expected = vecs[:, -1] * np.sqrt(vals[-1])
    expected = -expected if expected[0] > expected[-1] else expected
    np.testing.assert_allclose(mds_1d(d), expected, rtol=0, atol=1e-12)


def test_the_cap_on_levels_is_refused_naming_the_feature(monkeypatch):
    k = MAX_LEVELS + 1
    X = np.column_stack([np.arange(k, dtype=float), np.linspace(0, 1, k)])
    with pytest.raises(
        InputError,
        match=r"^categorical feature 'g' has more than 2,000 levels, the most ale estimates "
        r"an effect per level for; group its levels, or leave it out of features$",
    ):
        plan_levels(X, ["g", "x"], {"g": "categorical"}, categorical=["g"])
    monkeypatch.setattr(categorical, "MAX_LEVELS", 40)  # the cap itself is estimated
    plans = plan_levels(X[:40], ["g", "x"], {"g": "categorical"}, categorical=["g"])
    assert plans["g"].n_levels == 40
    with pytest.raises(InputError, match="has more than 40 levels, the most ale estimates"):
        plan_levels(X[:41], ["g", "x"], {"g": "categorical"}, categorical=["g"])


@pytest.mark.parametrize("command", ["compute", "classic"])
def test_a_column_over_the_cap_is_one_line_on_the_command_line(
    cli, command, tmp_path: Path, rhale_model: Path
):
    k = MAX_LEVELS + 5
    rng = np.random.default_rng(0)
    data = tmp_path / "ids.csv"
    frame = pd.DataFrame({"x1": np.arange(k) % (k - 4), "x2": rng.normal(size=k)})
    frame.assign(x3=rng.normal(size=k)).to_csv(data, index=False)
    out = tmp_path / ("s.npz" if command == "compute" else "s.json")
    result = cli(command, rhale_model, data, "--categorical", "x1", "-o", out, "-q")
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "error: categorical feature 'x1' has more than 2,000 levels, the most ale estimates "
        "an effect per level for; group its levels, or leave it out of --features"
    ]
    assert not out.exists()
