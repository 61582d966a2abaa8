"""Per-level features: the level distances in K^2 memory equal the direct formula, the
levels' order from passes over any cut of the rows equals the whole table's, and a
feature with more levels than the cap is refused in one line naming it and the cap."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ale_cli.core import discrete
from ale_cli.core.discrete import KS_POINTS, MAX_LEVELS, mds_1d
from ale_cli.errors import InputError
from ale_cli.estimators import level_plans as planner
from ale_cli.estimators.level_plans import level_orders
from ale_cli.estimators.rows import ROWS, Rows
from ale_cli.passes.engine import ArraySource


def _ecdfs(codes, k, col):
    """Each level's ECDF of ``col`` at the column's KS_POINTS type-7 quantiles, (k, points)."""
    points = np.quantile(col, np.linspace(0.0, 1.0, KS_POINTS))
    return np.stack(
        [
            np.searchsorted(np.sort(col[codes == j]), points, side="right")
            / max((codes == j).sum(), 1)
            for j in range(k)
        ]
    )


def _direct(codes, k, numeric, categorical):
    """The distances as defined, every pair at once (K x K x points in memory)."""
    dist = np.zeros((k, k))
    for col in numeric:
        F = _ecdfs(codes, k, col)
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
def test_ks_and_total_variation_equal_the_direct_formula(k, n, other_levels, seed, block):
    """KS in blocks of rows (max_abs_differences) and total variation from the counts of
    the (level, value) pairs present, K^2 memory, equal the definitions."""
    rng = np.random.default_rng(seed)
    codes = np.concatenate([np.arange(k), rng.integers(0, k, size=n - k)])  # every level
    numeric = [rng.normal(size=n), np.round(rng.normal(size=n))]  # ties too
    other = rng.integers(0, other_levels, size=n)
    old = discrete._BLOCK_BYTES
    discrete._BLOCK_BYTES = block  # a block of one row, a few, all
    try:
        got = sum(discrete.max_abs_differences(_ecdfs(codes, k, col)) for col in numeric)
    finally:
        discrete._BLOCK_BYTES = old
    keys, counts = np.unique(codes * other_levels + other, return_counts=True)
    got = got + discrete.total_variation(keys // other_levels, keys % other_levels, counts, k)
    np.testing.assert_allclose(got, _direct(codes, k, numeric, [other]), rtol=0, atol=1e-12)


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
        planner.level_plans(Rows.of(X, "gx"), "g", categorical="g")
    monkeypatch.setattr(planner, "MAX_LEVELS", 40)  # the cap itself is estimated
    plans = planner.level_plans(Rows.of(X[:40], "gx"), "g", categorical="g")
    assert plans["g"].n_levels == 40
    with pytest.raises(InputError, match="has more than 40 levels, the most ale estimates"):
        planner.level_plans(Rows.of(X[:41], "gx"), "g", categorical="g")


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


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 400), seed=st.integers(0, 2**16))
def test_ks_points_interpolate_as_numpy_quantile(n, seed):
    x = np.random.default_rng(seed).standard_t(2, size=n)
    below, above, gamma = discrete.ks_points(n)
    s = np.sort(x)
    np.testing.assert_array_equal(
        discrete.lerp(s[below], s[above], gamma), np.quantile(x, discrete.QS)
    )


@dataclass(frozen=True)
class _Cut:
    """Rows in memory as parts of one chunk each, cut at ``at``."""

    X: np.ndarray
    at: tuple[int, ...]

    def parts(self):  # type: ignore[no-untyped-def]
        bounds = [0, *sorted(set(self.at)), len(self.X)]
        return [
            ArraySource({ROWS: self.X[a:b]}, offset=a)
            for a, b in zip(bounds, bounds[1:], strict=False)
            if b > a
        ]

    def chunks(self, arrays):  # type: ignore[no-untyped-def]
        for part in self.parts():
            yield from part.chunks(arrays)


@settings(max_examples=25, deadline=None)
@given(
    k=st.integers(2, 9),
    n=st.integers(30, 200),
    seed=st.integers(0, 2**16),
    at=st.lists(st.integers(1, 199), max_size=5),
)
def test_level_orders_from_passes_equal_the_whole_table(k, n, seed, at):
    """The levels' order from mergeable counts over any cut of the rows is the order the
    whole table gives (numeric columns by KS, with ties and a constant one; categorical
    ones by total variation)."""
    rng = np.random.default_rng(seed)
    codes = np.arange(n) % k
    rng.shuffle(codes)
    g = rng.normal(size=k)
    X = np.column_stack(
        [
            codes * 10.0 + 3,  # the feature: levels 3, 13, ...
            g[codes] + rng.normal(size=n),
            np.round(rng.normal(size=n) + g[codes]),  # ties
            np.full(n, 2.5),  # constant
            (codes + rng.integers(0, 2, n)) % 3 * 1.5,  # categorical
        ]
    )
    lo, hi = X.min(axis=0), X.max(axis=0)
    rows = Rows(_Cut(X, tuple(a for a in at if a < n)), tuple("fabcd"), n, lo, hi)
    values = np.unique(X[:, 0])
    (order,) = level_orders(rows, [(0, values)], [0, 4])
    direct = _direct(
        codes, k, [X[:, 1], X[:, 2], X[:, 3]], [np.unique(X[:, 4], return_inverse=True)[1]]
    )
    # the order sorts the levels' MDS coordinates of the distances as defined (the input
    # order when all are 0); levels whose coordinates tie to rounding come in either order
    coord = mds_1d(direct) if np.any(direct > 0) else np.arange(k, dtype=float)
    np.testing.assert_array_equal(np.sort(order), np.arange(k))
    assert np.all(np.diff(coord[order]) >= -1e-9 * (np.abs(coord).max() + 1.0)), (order, coord)
