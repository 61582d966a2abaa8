"""``ale regional`` against effector 0.6.0's ``RHALE.find_regions`` (``space_partitioning.Best``)
on effector's own synthetic examples and the same local effects (its models' Jacobians):
the same first split, and on the same leaf rows and bins the same bin effects and
variances. effector is a test-only reference: skipped when it is not installed.

Conventions that differ (docs/estimators.md, "Regional effects"): effector's thresholds
are a uniform grid of each input's range (``x < t`` / ``x >= t``), ours its quantiles
(``x <= t`` / ``x > t``), so the thresholds agree within one candidate step; its
heterogeneity is sqrt(mean over rows of the bin variance, ddof 0) times the feature's
std, with bins chosen again per region, ours sqrt(sum dz^2 s^2) (ddof 1) on the
feature's global bins; it picks the split by (n + 1)-weighted child heterogeneity.
"""

from __future__ import annotations

import numpy as np
import pytest

from ale_cli.estimators.regional import RegionalRequest, regional
from ale_cli.store.npz import Store

effector = pytest.importorskip("effector")
ap = pytest.importorskip("effector.axis_partitioning")

N = 5000
EXAMPLES = [  # effector model, dimension, feature of interest
    ("ConditionalInteraction", 3, 0),
    ("DoubleConditionalInteraction", 3, 0),
    ("ConditionalInteraction4Regions", 4, 0),
    ("GeneralInteraction", 3, 0),
]


def fitted(name: str, dim: int) -> tuple[np.ndarray, np.ndarray, object]:
    X = effector.datasets.IndependentUniform(dim=dim, low=-1, high=1).generate_data(N, seed=1)
    model = getattr(effector.models, name)()
    J = model.jacobian(X)
    rh = effector.RHALE(X, model.predict, model.jacobian, nof_instances="all")
    return X, J, rh


def ours(X: np.ndarray, J: np.ndarray, **options):  # type: ignore[no-untyped-def]
    names = tuple(f"x_{j}" for j in range(X.shape[1]))
    store = Store(X=X, local_effects=J, prediction=J.sum(1), feature_names=names, meta={})
    return regional(RegionalRequest(store, max_depth=1, min_drop=0.05, min_rows=10, **options))


@pytest.mark.parametrize(("name", "dim", "foi"), EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_the_first_split_is_effectors(name: str, dim: int, foi: int):
    X, J, rh = fitted(name, dim)
    part = rh.find_regions(foi, finder=effector.space_partitioning.Best(max_depth=1))
    theirs = [r for r in part.regions if r.level == 1]
    mine = ours(X, J).summary.feature(f"x_{foi}")
    if not theirs:
        assert mine.status == "no_split"
        return
    (cond,) = theirs[0].rule.to_dict()["conditions"]
    t_theirs = cond["hi"] if cond["hi"] is not None else cond["lo"]
    split = mine.nodes[0].split
    assert split is not None, f"effector splits x_{foi} on x_{cond['feature']}, ale does not"
    assert split.input == f"x_{cond['feature']}"
    span = X[:, cond["feature"]].max() - X[:, cond["feature"]].min()
    assert abs(split.value - t_theirs) <= span / 20  # one candidate step (20 candidates)


def test_leaf_bins_equal_effectors_on_the_same_rows_and_bins():
    """effector's fixed-bin summary of a mask is over the feature's whole range, as our
    ``bins`` leaf records: same rows, same edges, so the same bin means and variances."""
    X, J, rh = fitted("ConditionalInteraction", 3)
    mine = ours(X, J, bins=8).summary.feature("x_0")
    assert len(mine.leaves) == 2
    for leaf in mine.leaves:
        mask = np.ones(N, dtype=bool)
        for c in leaf.conditions:
            mask &= c.holds(X)
        rh._ensure_local(0)  # the cached local effects (a private step of effector)
        s = rh._summarize_cont(0, mask, binning_method=ap.Fixed(nof_bins=8))
        r = leaf.record
        np.testing.assert_allclose(r.edges, s["limits"], rtol=1e-12)
        np.testing.assert_array_equal(r.counts, s["points_per_bin"])
        np.testing.assert_allclose(r.bin_effect, s["bin_effect"], rtol=1e-9, atol=1e-12)
        n = r.counts.astype(float)
        np.testing.assert_allclose(
            r.bin_std**2 * (n - 1) / n, s["bin_variance"], rtol=1e-9, atol=1e-12
        )
