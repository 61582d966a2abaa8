"""``statistics: r``: ALED, ALER, NALED and NALER as R's ``ale`` package defines them.

The oracle is :func:`r_calc_stats`, a line-by-line port of R ``ale``'s ``calc_stats``
(R/stats.R, ``aled_fun = 'mad'``) with its ``create_ale_y_norm_function``
(:func:`test_statistics.r_ale_norm`) and the centring of ``calc_ale`` (:func:`r_centred`),
checked itself on hand-computed cases and Okoli (2023)'s definitions.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_run import write_job  # tests/ is on sys.path (rootdir conftest)
from test_statistics import r_ale_norm

from ale_cli import api
from ale_cli.core.discrete import level_statistics
from ale_cli.core.statistics import ALE_CLI, R, aled, aler, effect_statistics
from ale_cli.errors import InputError
from ale_cli.store.npz import Store, write_store
from ale_cli.summary.compare import summary_statistics
from ale_cli.summary.model import SCHEMA_PATH, Summary, read_summary, summary_json

SCHEMA = json.loads(Path(SCHEMA_PATH).read_text())
KEYS = ("aled", "aler_min", "aler_max", "naled", "naler_min", "naler_max")


def r_centred(y: np.ndarray, interval_counts: np.ndarray) -> np.ndarray:
    """calc_ale's centring of a numeric feature: ``y`` less the count-weighted mean of the
    interval midpoints (``x_int_counts``)."""
    mids = (y[:-1] + y[1:]) / 2
    return y - np.sum(mids * interval_counts) / np.sum(interval_counts)


def r_calc_stats(
    y: np.ndarray, bin_n: np.ndarray, y_vals: np.ndarray, x_type: str = "numeric"
) -> dict[str, float]:
    """R ``ale``'s ``calc_stats``. For a numeric x, ``y`` (K+1) is the ALE at the bin
    ceilings and ``bin_n`` (K+1) the rows at each: the first the rows at the minimum."""
    y, bin_n = np.asarray(y, dtype=float), np.asarray(bin_n, dtype=float)
    y, bin_n = y[~np.isnan(y)], bin_n[~np.isnan(y)]

    def aled_score(v: np.ndarray, n: np.ndarray) -> float:
        return float(np.sum(np.abs(v * n)) / np.sum(n))

    def norm(v: np.ndarray) -> np.ndarray:
        return r_ale_norm(np.atleast_1d(v), y_vals)

    aler = (y.min(), y.max())
    norm_y = norm(y)
    naler = (norm_y.min(), norm_y.max())
    aled_y, aled_bin_n = y, bin_n.copy()
    if x_type == "numeric":
        aled_y = (aled_y[:-1] + aled_y[1:]) / 2
        aled_bin_n[1] = aled_bin_n[1] + aled_bin_n[0]
        aled_bin_n = aled_bin_n[1:]
    return {
        "aled": aled_score(aled_y, aled_bin_n),
        "aler_min": float(aler[0]),
        "aler_max": float(aler[1]),
        "naled": aled_score(norm(aled_y), aled_bin_n),
        "naler_min": float(naler[0]),
        "naler_max": float(naler[1]),
    }


def r_of_curve(effect: np.ndarray, counts: np.ndarray, y_vals: np.ndarray, at_min: int = 0):
    """The port on one of our curves: centred as calc_ale does, ``at_min`` of the first
    bin's rows at the minimum (R counts them apart, then merges them back)."""
    bin_n = np.concatenate([[at_min, counts[0] - at_min], counts[1:]])
    return r_calc_stats(r_centred(effect, counts), bin_n, y_vals)


def ours(effect: np.ndarray, counts: np.ndarray, reference: np.ndarray, definitions=R):
    s = effect_statistics(
        effect=effect,
        std=np.zeros_like(effect),
        counts=counts,
        quantiles=reference,
        definitions=definitions,
    )
    return {k: s[k] for k in KEYS}


def assert_stats(got: dict, want: dict, *, scale: float = 1.0, keys=KEYS) -> None:
    for key in keys:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-12, atol=1e-12 * scale, err_msg=key)


# -- the port against hand-computed numbers and the paper --------------------------------------


def test_port_and_ours_on_a_hand_computed_curve():
    """Midpoints -3, 0, 3 with counts 1, 2, 1 (already centred); reference 0..8 (c = -4..4).

    R: ALED (3 + 0 + 3) / 4 = 1.5; norm(-3) = -50 * 4/5 = -40 ({-3, -2, -1, 0} of the five
    values <= 0 reach -3), norm(3) = 40, so NALED (40 + 0 + 40) / 4 = 20, NALER -40, 40.
    ale-cli splits the middle bin (-3 to 3) at zero: (3 + 1.5 + 1.5 + 3) / 4 = 2.25.
    """
    effect, counts, ref = np.array([-3.0, -3.0, 3.0, 3.0]), np.array([1, 2, 1]), np.arange(9.0)
    want = {"aled": 1.5, "aler_min": -3.0, "aler_max": 3.0, "naled": 20.0}
    want |= {"naler_min": -40.0, "naler_max": 40.0}
    assert_stats(r_of_curve(effect, counts, ref, at_min=1), want)
    assert_stats(ours(effect, counts, ref), want)
    assert aled(effect=effect, counts=counts, definitions=ALE_CLI) == pytest.approx(2.25)


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 10, 11])
def test_linear_effect_on_equal_bins_known_answers(k: int):
    """f = x on uniform x over [0, 1], K equal bins of equal counts: the ALE is x - 1/2 and
    Okoli (2023)'s ALED, the mean |ALE| over the rows, is 1/4. R's midpoints give 1/4 for
    even K and (1 - 1/K^2) / 4 for odd K (the middle bin's midpoint is 0: a one-bin curve
    has ALED 0); splitting at zero gives 1/4 for every K."""
    edges, counts = np.linspace(0.0, 1.0, k + 1), np.full(k, 7)
    r_value = 0.25 * (1.0 - 1.0 / k**2) if k % 2 else 0.25
    ref = np.linspace(-1.0, 1.0, 41)
    assert r_of_curve(edges, counts, ref)["aled"] == pytest.approx(r_value, rel=1e-12)
    assert ours(edges, counts, ref)["aled"] == pytest.approx(r_value, rel=1e-12)
    assert ours(edges, counts, ref, ALE_CLI)["aled"] == pytest.approx(0.25, rel=1e-12)


# -- ours against the port ---------------------------------------------------------------------

curves = st.integers(1, 8).flatmap(
    lambda k: st.tuples(
        st.lists(st.floats(-50, 50), min_size=k + 1, max_size=k + 1),
        st.lists(st.integers(0, 40), min_size=k, max_size=k).filter(lambda c: c[0] > 0),
        st.lists(st.floats(-80, 80), min_size=1, max_size=60),
        st.floats(0, 1),
    )
)


@settings(max_examples=80, deadline=None)
@given(curves)
def test_r_definitions_equal_the_port_of_calc_stats(case):
    effect, counts, reference = (np.array(v) for v in case[:3])
    at_min = int(case[3] * counts[0])
    scale = float(np.abs(effect).max()) + 100.0  # NALED is at most 50
    # R's normalisation is a step function of the value (a step at every centred reference
    # value, the dead zone's ends included): a value within rounding of a step may land on
    # either side of it in two correct centrings (0 here, 4e-16 in the port), 50 apart
    centred = r_centred(effect, counts)
    values = np.concatenate([centred, (centred[:-1] + centred[1:]) / 2])
    steps = reference - np.median(reference)
    gaps = np.abs(np.abs(values)[:, None] - np.abs(np.append(steps, 0.0))[None, :])
    keys = KEYS if gaps.min() > 1e-9 * scale else KEYS[:3]
    assert_stats(ours(effect, counts, reference), r_of_curve(effect, counts, reference, at_min),
                 scale=scale, keys=keys)  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.floats(-20, 20), st.integers(1, 30)), min_size=1, max_size=6),
    st.lists(st.floats(-30, 30), min_size=1, max_size=40),
)
def test_r_definitions_per_level_equal_the_port_for_an_ordinal_x(levels, reference):
    effect = np.array([e for e, _ in levels])
    counts = np.array([n for _, n in levels])
    ref = np.array(reference)
    got = level_statistics(
        effect=effect, std=np.zeros_like(effect), counts=counts, quantiles=ref, definitions=R
    )
    assert_stats(got, r_calc_stats(effect, counts, ref, x_type="ordered"), scale=100.0)


def test_defaults_are_ale_cli_definitions():
    effect, counts, ref = np.array([-1.0, 1.0]), np.array([10]), np.arange(101.0)
    assert aled(effect=effect, counts=counts) == 0.5  # split at zero; R's midpoint gives 0
    assert aled(effect=effect, counts=counts, definitions=R) == 0.0
    assert aled(effect=effect, counts=counts, quantiles=ref) == pytest.approx(0.5)
    lo, hi = aler(effect=effect, counts=counts, quantiles=ref, definitions=R)
    assert (lo, hi) == (0.0, 0.0)  # |a| = 1 is inside R's dead zone around the median


# -- summaries, CLI and job --------------------------------------------------------------------


def _store(rows: int = 400) -> Store:
    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, size=(rows, 2))
    E = np.column_stack([3 * X[:, 0] ** 2, np.where(X[:, 0] > 0, 1.0, -1.0)])
    meta = {"schema_version": 1, "feature_names": ["a", "b"], "n_rows": rows}
    pred = X[:, 0] ** 3 + X[:, 1] + 0.1 * rng.normal(size=rows)
    return Store(X=X, local_effects=E, prediction=pred, feature_names=("a", "b"), meta=meta)


@pytest.mark.parametrize("estimator", ["rebin", "rhale"])
def test_summary_with_r_statistics_records_them_and_equals_the_port(estimator: str):
    store = _store()
    summary = getattr(api, estimator)(store, statistics="r")
    default = getattr(api, estimator)(store)
    assert summary.params["statistics"] == "r" and default.params["statistics"] == "ale-cli"
    assert "midpoints" in summary.params["statistics_note"]
    assert "statistics r" in default.params["statistics_note"]
    jsonschema.validate(json.loads(summary_json(summary)), SCHEMA)
    ref = np.asarray(summary.prediction["quantiles"])
    for feat in summary.features:
        want = r_of_curve(feat.effect, feat.counts, ref)
        assert_stats(feat.statistics, want, scale=100.0)
        assert {k: feat.statistics[k] for k in ("aler_min", "aler_max")} == {
            k: default.feature(feat.name).statistics[k] for k in ("aler_min", "aler_max")
        }


def test_classic_with_r_statistics_equals_the_port():
    import pandas as pd

    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"a": rng.uniform(-1, 1, 300), "b": rng.normal(size=300)})
    summary = api.classic(
        lambda X: np.asarray(X)[:, 0] ** 3 - np.asarray(X)[:, 1], frame, bins=4, statistics="r"
    )
    assert summary.params["statistics"] == "r"
    ref = np.asarray(summary.prediction["quantiles"])
    for feat in summary.features:
        assert_stats(feat.statistics, r_of_curve(feat.effect, feat.counts, ref), scale=100.0)


def test_audit_recomputes_missing_statistics_by_the_recorded_definitions(tmp_path: Path):
    summary = api.rebin(_store(), statistics="r", bins=5)
    data = json.loads(summary_json(summary))
    for feat in data["features"]:
        del feat["statistics"]
    recomputed = summary_statistics(Summary.from_dict(data))
    for feat in summary.features:
        assert_stats(recomputed[feat.name], feat.statistics, scale=100.0)


def test_old_summary_without_the_parameter_validates_reads_and_means_ale_cli(tmp_path: Path):
    summary = api.rebin(_store(), bins=5)
    data = json.loads(summary_json(summary))
    for key in ("statistics", "statistics_note"):
        del data["params"][key]
    for feat in data["features"]:
        del feat["statistics"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data))
    old = read_summary(path)
    assert "statistics" not in old.params
    recomputed = summary_statistics(old)
    for feat in summary.features:
        assert_stats(recomputed[feat.name], feat.statistics, scale=100.0)
    data["params"]["statistics"] = "python"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, SCHEMA)


def test_cli_statistics_option_and_its_error(cli, tmp_path: Path):
    store = tmp_path / "s.npz"
    write_store(store, _store())
    out = tmp_path / "r.json"
    for command in ("rebin", "rhale"):
        assert cli(command, store, "--statistics", "r", "-o", out, "-q").exit_code == 0
        assert json.loads(out.read_text())["params"]["statistics"] == "r"
    result = cli("rhale", store, "--statistics", "python", "-o", out)
    assert result.exit_code == 2
    assert result.stderr == "error: --statistics must be one of ale-cli, r, got 'python'\n"


def test_request_refuses_unknown_definitions_naming_the_parameter():
    with pytest.raises(InputError, match="statistics must be one of ale-cli, r"):
        api.rebin(_store(), statistics="R")


def test_job_key_statistics(cli, tmp_path: Path):
    from ale_cli.job.spec import read_job

    (tmp_path / "m.pt").write_bytes(b"")
    (tmp_path / "d.csv").write_text("a,b\n1,2\n")
    both = {"rebin": {"statistics": "r"}, "classic": {"statistics": "r"}}
    job = write_job(tmp_path / "job.yaml", model="m.pt", data="d.csv", estimators=both)
    spec = read_job(job)
    assert spec.estimators["rebin"]["statistics"] == "r"
    assert spec.estimators["classic"]["statistics"] == "r"
    bad = write_job(tmp_path / "bad.yaml", model="m.pt", data="d.csv",
                    estimators={"rhale": {"statistics": "python"}})  # fmt: skip
    result = cli("run", bad, "-o", tmp_path / "run")
    assert result.exit_code == 2
    assert "estimators.rhale.statistics must be one of ale-cli, r" in result.stderr


def test_drift_on_a_statistic_across_definitions_fails_naming_both(tmp_path: Path):
    from ale_cli.audit import audit_files
    from ale_cli.summary.model import write_summary

    store, paths = _store(), {}
    for name, kw in (("old", {}), ("ale-cli", {}), ("r", {"statistics": "r"})):
        summary = api.rebin(store, bins=5, **kw)
        if name == "old":  # written before params.statistics existed
            params = {k: v for k, v in summary.params.items() if not k.startswith("statistics")}
            summary = Summary.from_dict(json.loads(summary_json(summary)) | {"params": params})
        write_summary(paths.setdefault(name, tmp_path / f"{name}.json"), summary)
    rules = tmp_path / "rules.yaml"
    rules.write_text('rules:\n  - feature: "*"\n    drift: {statistic: naled, max_abs: 1}\n')
    same = audit_files([paths["ale-cli"]], rules, baseline=paths["old"]).checks
    assert {c.verdict for c in same} == {"pass"} and len(same) == 2
    mixed = audit_files([paths["r"]], rules, baseline=paths["ale-cli"]).checks
    assert [c.verdict for c in mixed] == ["fail", "fail"]
    assert mixed[0].observed == "statistics ale-cli in the baseline, r in the summary"
