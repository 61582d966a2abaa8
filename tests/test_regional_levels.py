"""``ale regional`` on features the store holds per level: their stored jumps are their
local effects, the levels their bins, and their regions are searched like any other's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ale_cli.estimators.levels import LEVEL_DOWN, LEVEL_UP, LevelPlan
from ale_cli.estimators.regional import RegionalRequest, regional
from ale_cli.store.format import StoreWriter
from ale_cli.store.npz import Store
from ale_cli.summary.regional import read_regional, write_regional

NAMES = ("x1", "b", "x3")


def jump_rows(
    n: int, seed: int = 0, levels: int = 2, noise: float = 0.1
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """x1, x3 ~ U(-1, 1) (x3 symmetric: as many rows at -v as at v, so the median
    threshold separates the signs exactly), b uniform on ``0 .. levels-1``; moving b one
    level up changes the prediction by +2 where x3 > 0 and by -2 elsewhere (plus noise):
    the jumps up and down as ``compute`` stores them (0 where there is no next or previous
    level)."""
    rng = np.random.default_rng(seed)
    half = rng.uniform(0, 1, n // 2)
    x3 = rng.permutation(np.concatenate([half, -half]))
    X = np.column_stack([rng.uniform(-1, 1, n), rng.integers(0, levels, n).astype(float), x3])
    E = np.column_stack([np.ones(n), np.zeros(n), np.zeros(n)]) + rng.normal(0, noise, (n, 3))
    step = np.where(X[:, 2] > 0, 2.0, -2.0)
    up = np.where(X[:, 1] < levels - 1, step + rng.normal(0, noise, n), 0.0)
    down = np.where(X[:, 1] > 0, step + rng.normal(0, noise, n), 0.0)
    return X, E, up[:, None], down[:, None]


def meta(n: int, levels: int) -> dict:  # type: ignore[type-arg]
    values = np.arange(float(levels))
    plan = LevelPlan("b", "discrete", values, np.arange(levels))
    return {
        "schema_version": 3,
        "n_rows": n,
        "categorical_features": [],
        "levels": [plan.to_meta()],
    }


def in_memory(n: int, levels: int = 2, seed: int = 0) -> tuple[np.ndarray, Store]:
    X, E, up, down = jump_rows(n, seed, levels)
    extra = {LEVEL_UP: up, LEVEL_DOWN: down}
    store = Store(X, E, E.sum(1), NAMES, meta(n, levels), extra=extra)
    return X, store


def test_a_binary_feature_whose_jump_flips_with_x3_splits_on_x3_at_zero():
    X, store = in_memory(40_000)
    out = regional(RegionalRequest(store, max_depth=1)).summary
    b = out.feature("b")
    assert b.status == "split"
    split = b.nodes[0].split
    assert split is not None and split.input == "x3"
    assert -0.1 <= split.value < 0 and not ((X[:, 2] > split.value) & (X[:, 2] < 0)).any()
    assert split.drop > 0.9
    for leaf, inside, sign in zip(
        b.leaves, (X[:, 2] <= split.value, X[:, 2] > split.value), (-1, 1), strict=True
    ):
        assert leaf.rows == inside.sum() and leaf.record.counts.sum() == leaf.rows
        assert leaf.record.kind == "discrete"
        jump, se = leaf.record.bin_effect[0], leaf.record.bin_stderr[0]
        assert 0 < se < 0.01 and abs(jump - sign * 2.0) <= 2 * se
    # its record is still the per-level one over every row, as rhale gives it
    assert out.summary.feature("b").kind == "discrete"
    assert out.summary.feature("b").counts.sum() == len(X)
    assert out.feature("x1").status == "no_split"


def test_three_levels_count_rows_once_and_score_the_jumps_directly(tmp_path: Path):
    """A middle-level row adds a jump to two cells but is one row: the children's rows add
    up to the node's; H = sqrt(sum_k s_k^2) over the K - 1 jumps (ddof 1), the per-level
    record's std at the last level. The summary
    with per-level leaves passes the schema."""
    X, store = in_memory(9000, levels=3, seed=1)
    _, _, up, down = jump_rows(9000, 1, 3)
    out = regional(RegionalRequest(store, features=("b",), max_depth=2)).summary
    write_regional(tmp_path / "r.json", out)
    b = read_regional(tmp_path / "r.json").feature("b")
    lv = X[:, 1]
    cells = [np.concatenate([up[lv == k, 0], down[lv == k + 1, 0]]) for k in range(2)]
    want = np.sqrt(sum(np.var(c, ddof=1) for c in cells))
    np.testing.assert_allclose(b.heterogeneity, want, rtol=1e-9)
    # the global per-level record's accumulated std at its last level, as rhale reports it
    np.testing.assert_allclose(out.summary.feature("b").std[-1], want, rtol=1e-9)
    assert b.nodes[0].split is not None and b.nodes[0].split.input == "x3"
    for node in b.nodes:
        if node.split is not None:
            kids = [b.nodes[i] for i in node.split.children]
            assert sum(k.rows for k in kids) == node.rows == sum(node.split.rows)
    assert sum(leaf.rows for leaf in b.leaves) == len(X)
    for leaf in b.leaves:
        assert leaf.record.counts.sum() == leaf.rows


@pytest.mark.parametrize("cuts", [[], [1000], [313, 2000, 2001]])
def test_a_store_file_in_chunks_equals_the_store_in_memory(tmp_path: Path, cuts: list[int]):
    n = 3000
    X, E, up, down = jump_rows(n, seed=2, levels=3)
    whole = regional(RegionalRequest(in_memory(n, 3, seed=2)[1], max_depth=2)).summary
    path = tmp_path / "s.npz"
    bounds = [0, *cuts, n]
    with StoreWriter(path) as w:
        for a, z in zip(bounds[:-1], bounds[1:], strict=True):
            rows = {"X": X[a:z], "local_effects": E[a:z], "prediction": E[a:z].sum(1)}
            w.add({**rows, LEVEL_UP: up[a:z], LEVEL_DOWN: down[a:z]})
        w.finish(feature_names=NAMES, input_names=NAMES, meta=meta(n, 3))
    streamed = regional(RegionalRequest(path, max_depth=2)).summary
    for a, b in zip(whole.regions, streamed.regions, strict=True):
        assert a.status == b.status and [x.label for x in a.nodes] == [x.label for x in b.nodes]
        np.testing.assert_allclose(
            [x.heterogeneity for x in a.nodes], [x.heterogeneity for x in b.nodes], rtol=1e-9
        )
        for la, lb in zip(a.leaves, b.leaves, strict=True):
            np.testing.assert_allclose(la.record.effect, lb.record.effect, rtol=1e-9, atol=1e-12)
    assert whole.feature("b").status == "split"


def test_a_split_on_a_text_input_is_worded_by_its_text():
    """x1's effect is +2 where the text input b is "red" (code 1) and -2 where it is
    "blue" (code 0): x1 splits on b, and its conditions name the text, not the code."""
    rng = np.random.default_rng(7)
    n = 20_000
    b = rng.integers(0, 2, n).astype(float)
    X = np.column_stack([rng.uniform(-1, 1, n), b, rng.uniform(-1, 1, n)])
    E = np.column_stack([np.where(b == 1, 2.0, -2.0), np.zeros(n), np.zeros(n)])
    E += rng.normal(0, 0.1, E.shape)
    plan = LevelPlan("b", "categorical", np.array([0.0, 1.0]), np.array([0, 1]), ("blue", "red"))
    held = {
        "schema_version": 3,
        "n_rows": n,
        "categorical_features": [],
        "levels": [plan.to_meta()],
    }
    jumps = {LEVEL_UP: np.zeros((n, 1)), LEVEL_DOWN: np.zeros((n, 1))}
    store = Store(X, E, E.sum(1), NAMES, held, extra=jumps)
    split = regional(RegionalRequest(store, max_depth=1)).summary.feature("x1").nodes[0].split
    assert split is not None and split.input == "b" and split.kind == "level"
    word = ("blue", "red")[int(split.value)]
    assert [c.text for c in split.conditions] == [f"b == {word}", f"b != {word}"]
