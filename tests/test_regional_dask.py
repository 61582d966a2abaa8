"""``ale regional`` on the Dask engine: the same regions and numbers as the local engine
(to 1e-12) on a store read in parts by the workers of a cluster."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_regional import same_regions

from ale_cli.estimators.regional import RegionalRequest, regional
from ale_cli.store.format import StoreWriter

pytest.importorskip("distributed")

NAMES = ("x1", "x2", "x3")


def test_dask_equals_local_on_a_store_in_parts(cluster, tmp_path: Path):  # type: ignore[no-untyped-def]
    from ale_cli.engines.cluster import DaskEngine
    from ale_cli.store.reader import CHUNKS_PER_PART

    rng = np.random.default_rng(4)
    n = 200 * CHUNKS_PER_PART * 3  # three parts of CHUNKS_PER_PART chunks of 200 rows
    X = rng.uniform(-1, 1, (n, 3))
    e1 = np.where(X[:, 2] <= 0, -3.0, np.where(X[:, 1] > 0, 5.0, 1.0))
    E = np.column_stack([e1, np.zeros(n), np.ones(n)]) + rng.normal(scale=0.1, size=(n, 3))
    path = tmp_path / "s.npz"
    with StoreWriter(path) as w:
        for a in range(0, n, 200):
            w.add(
                {
                    "X": X[a : a + 200],
                    "local_effects": E[a : a + 200],
                    "prediction": E[a : a + 200].sum(1),
                }
            )
        w.finish(
            feature_names=NAMES,
            input_names=NAMES,
            meta={"schema_version": 3, "n_rows": n, "categorical_features": []},
        )
    for rows in ("all", n // 3):  # every row, and a search sample (chosen by row index)
        local = regional(RegionalRequest(path, search_rows=rows)).summary
        dask = regional(RegionalRequest(path, search_rows=rows, engine=DaskEngine(cluster)))
        assert local.summary.params == dask.summary.summary.params
        same_regions(local, dask.summary, 1e-12)
        assert local.feature("x1").status == "split"


def test_dask_equals_local_for_a_feature_held_per_level(cluster, tmp_path: Path):  # type: ignore[no-untyped-def]
    from test_regional_levels import NAMES as LEVEL_NAMES
    from test_regional_levels import jump_rows, meta

    from ale_cli.engines.cluster import DaskEngine
    from ale_cli.estimators.levels import LEVEL_DOWN, LEVEL_UP
    from ale_cli.store.reader import CHUNKS_PER_PART

    n = 200 * CHUNKS_PER_PART * 3
    X, E, up, down = jump_rows(n, seed=3, levels=3)
    path = tmp_path / "levels.npz"
    with StoreWriter(path) as w:
        for a in range(0, n, 200):
            z = a + 200
            rows = {"X": X[a:z], "local_effects": E[a:z], "prediction": E[a:z].sum(1)}
            w.add({**rows, LEVEL_UP: up[a:z], LEVEL_DOWN: down[a:z]})
        w.finish(feature_names=LEVEL_NAMES, input_names=LEVEL_NAMES, meta=meta(n, 3))
    local = regional(RegionalRequest(path, features=("b",))).summary.feature("b")
    dask = regional(RegionalRequest(path, features=("b",), engine=DaskEngine(cluster)))
    other = dask.summary.feature("b")
    assert local.status == "split" and [x.label for x in local.nodes] == [
        x.label for x in other.nodes
    ]
    np.testing.assert_allclose(
        [x.heterogeneity for x in local.nodes], [x.heterogeneity for x in other.nodes], rtol=1e-12
    )
    for la, lb in zip(local.leaves, other.leaves, strict=True):
        np.testing.assert_allclose(la.record.effect, lb.record.effect, rtol=1e-12, atol=1e-12)
