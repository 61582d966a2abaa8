"""Streaming `ale compute` for ONNX and scikit-learn models: a first pass for the data
profile their steps come from, then the local effects chunk by chunk; the store equals
the whole-table path's for any chunk size. Piecewise-constant models and pipelines
reading text columns stay on the whole-table path."""

from __future__ import annotations

from pathlib import Path

import joblib
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ale_cli.estimators.local_effects as compute_module
import ale_cli.estimators.local_effects_plan as plan_module
from ale_cli.errors import RunError
from ale_cli.estimators.inputs import ModelInputs
from ale_cli.estimators.local_effects import ComputeRequest, compute
from ale_cli.models.profile import BLOCK, SAMPLE_ROWS, DataProfile, ProfileBuilder, row_keys
from ale_cli.store.npz import read_store

#: meta entries that differ between two runs of the same computation (the content digest
#: lists the members, which the chunk layout changes)
_RUN_META = ("timings", "created", "chunks", "content_sha256")


# --- the profile -------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=3 * BLOCK + 50),
    cuts=st.lists(st.integers(min_value=0, max_value=3 * BLOCK + 50), max_size=6),
    width=st.integers(min_value=1, max_value=3),
)
def test_profile_does_not_depend_on_the_chunks(n, cuts, width):
    rng = np.random.default_rng(n)
    X = rng.normal(loc=1e3, scale=2.0, size=(n, width))
    whole = DataProfile.of(X)
    builder = ProfileBuilder(width)
    bounds = [0, *sorted(c for c in cuts if c < n), n]
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        builder.add(X[a:b])
    chunked = builder.finish()
    for name in ("mean", "std", "head", "sample", "sample_keys"):
        np.testing.assert_array_equal(getattr(chunked, name), getattr(whole, name))
    assert chunked.n_rows == whole.n_rows == n
    # the known answers: numpy's mean and std, the first rows, the smallest keys
    np.testing.assert_allclose(whole.mean, X.mean(axis=0), rtol=1e-13)
    np.testing.assert_allclose(whole.std, X.std(axis=0), rtol=1e-10)
    np.testing.assert_array_equal(whole.head, X[:8])
    smallest = np.sort(np.argsort(row_keys(np.arange(n)))[:SAMPLE_ROWS])
    np.testing.assert_array_equal(whole.sample, X[smallest])
    k = min(200, n)
    np.testing.assert_array_equal(
        whole.rows(200), X[np.sort(np.argsort(row_keys(np.arange(n)))[:k])]
    )


def test_constant_column_scale_is_its_magnitude():
    X = np.column_stack([np.full(10, -7.0), np.arange(10.0)])
    profile = DataProfile.of(X)
    assert profile.std[0] == 0.0
    np.testing.assert_allclose(profile.scale(), [7.0, np.arange(10.0).std()], rtol=1e-14)


# --- models and data ---------------------------------------------------------------------


def _frame(n: int, seed: int = 0, nan_rows: tuple[int, ...] = ()) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "a": rng.normal(size=n),
            "b": rng.uniform(1, 3, size=n),
            "c": rng.integers(0, 3, size=n),  # integer-coded category, held fixed
            "d": rng.normal(size=n) * 10,
        }
    )
    frame["y"] = 2 * frame["a"] - frame["b"] ** 2 + frame["c"] + 0.1 * frame["d"]
    for i in nan_rows:
        frame.loc[i, "a"] = np.nan
    return frame


@pytest.fixture(scope="module")
def smooth_pickle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """sqrt(ridge(x)): NaN predictions where the linear part is negative, fitted on a
    DataFrame (feature_names_in_), not piecewise constant."""
    from sklearn.compose import TransformedTargetRegressor
    from sklearn.linear_model import Ridge

    frame = _frame(300, seed=1)
    est = TransformedTargetRegressor(
        regressor=Ridge(alpha=1.0), func=np.square, inverse_func=np.sqrt, check_inverse=False
    )
    est.fit(frame[["a", "b", "c", "d"]], frame["y"].abs() ** 0.5)
    path = tmp_path_factory.mktemp("m") / "smooth.pkl"
    joblib.dump(est, path)
    return path


@pytest.fixture(scope="module")
def tree_pickle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from sklearn.tree import DecisionTreeRegressor

    frame = _frame(300, seed=2)
    est = DecisionTreeRegressor(max_depth=3, random_state=0).fit(frame[["a", "b"]], frame["y"])
    path = tmp_path_factory.mktemp("m") / "tree.pkl"
    joblib.dump(est, path)
    return path


@pytest.fixture(scope="module")
def onnx_mlp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A float32 MLP graph of 4 inputs (differentiated by autodiff unless told otherwise)."""
    import torch

    from ale_cli.sample import save_onnx

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    return save_onnx(net.eval(), 4, tmp_path_factory.mktemp("m") / "mlp.onnx")


#: rows per chunk of the reference whole-table store: the whole table in one chunk
_ONE_CHUNK = 100_000
#: relative agreement of finite-difference quotients computed in other batch shapes:
#: BLAS may round a prediction 1 ulp apart in another batch shape, and the quotient
#: carries that as eps |f| / h (h = 1e-5 std): about 1e-10 measured
FD_RTOL = 1e-9


def _whole_store(request: ComputeRequest, out: Path, chunk: int) -> None:
    from dataclasses import replace
    from unittest import mock

    # compute's one switch to the whole table: no streamed run
    with mock.patch("ale_cli.estimators.local_effects.streamed_run", return_value=None):
        compute(replace(request, out=out, chunk_rows=chunk), force=True)


def _stores(model: Path, data: Path, tmp: Path, chunk: int, tag: str, pairs=(), **kw):  # type: ignore[no-untyped-def]
    """The stores streamed and read whole in chunks of ``chunk`` rows, and the
    whole-table store computed in one chunk (once per data file)."""
    inputs = ModelInputs(model=model, data=data, exclude=("y",), **kw)
    streamed, whole, one = (tmp / f"{tag}-{name}.npz" for name in (f"s{chunk}", f"w{chunk}", "1"))
    request = ComputeRequest(inputs=inputs, out=streamed, chunk_rows=chunk, pairs=pairs)
    compute(request, force=True)
    _whole_store(request, whole, chunk)
    if not one.exists():
        _whole_store(request, one, _ONE_CHUNK)
    return read_store(streamed), read_store(whole), read_store(one)


def _assert_same(streamed, whole, *, rtol: float = 0.0) -> None:  # type: ignore[no-untyped-def]
    """The same X, meta (but for the timings and the chunk layout: the same method,
    steps, notes), and local effects and predictions equal to ``rtol``."""
    np.testing.assert_array_equal(streamed.X, whole.X)
    assert streamed.X.dtype == whole.X.dtype
    for name in ("local_effects", "prediction"):
        np.testing.assert_allclose(getattr(streamed, name), getattr(whole, name), rtol=rtol)
    mixed = streamed.mixed_derivatives()
    assert mixed.keys() == whole.mixed_derivatives().keys()
    for pair, values in mixed.items():
        np.testing.assert_allclose(values, whole.mixed_derivatives()[pair], rtol=rtol)
    a, b = ({k: v for k, v in s.meta.items() if k not in _RUN_META} for s in (streamed, whole))
    for meta in (a, b):
        meta["options"] = {k: v for k, v in meta["options"].items() if k != "chunk_rows"}
    assert a == b


# --- the same store as the whole table ---------------------------------------------------


@settings(
    max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(chunk=st.integers(min_value=9, max_value=260), kind=st.sampled_from(["csv", "parquet"]))
def test_scikit_learn_store_equals_the_whole_table_for_any_chunk_size(
    smooth_pickle, tmp_path: Path, chunk, kind
):
    data = tmp_path / f"d.{kind}"
    if not data.exists():
        frame = _frame(230, seed=3, nan_rows=(5, 117))
        frame.loc[40:44, "b"] = -30.0  # the linear part is negative: NaN predictions
        frame.to_csv(data, index=False) if kind == "csv" else frame.to_parquet(data)
    streamed, whole, one = _stores(
        smooth_pickle,
        data,
        tmp_path,
        chunk,
        kind,
        trust_pickle=True,
        dropna=True,
        drop_nonfinite=True,
        categorical=("c",),
        features=("a", "b", "d"),
    )
    _assert_same(streamed, whole)  # bit for bit with the same chunks
    _assert_same(streamed, one, rtol=FD_RTOL)  # any chunks: the same steps and rows
    meta = streamed.meta
    assert meta["method_details"]["step"]["rule"] == "smooth default"
    # the rows the model gives NaN on (a negative linear part), counted after dropna
    est = joblib.load(smooth_pickle)
    kept = pd.read_csv(data) if kind == "csv" else pd.read_parquet(data)
    kept = kept.dropna()[["a", "b", "c", "d"]]
    negative = np.flatnonzero(est.regressor_.predict(kept) < 0)
    assert {40, 41, 42} <= set(negative)
    assert meta["data"]["rows_dropped"] == 2
    assert meta["data"]["rows_nonfinite"] == len(negative)
    np.testing.assert_array_equal(streamed.X, kept.drop(kept.index[negative]).to_numpy())
    # the known answer: d sqrt(g) / d a = w_a / (2 sqrt(g)), g the linear part
    w = dict(zip(["a", "b", "c", "d"], est.regressor_.coef_, strict=True))
    expected = w["a"] / (2 * streamed.prediction)
    np.testing.assert_allclose(streamed.local_effects[:, 0], expected, rtol=1e-5)


@settings(
    max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(chunk=st.integers(min_value=2, max_value=300))
def test_onnx_finite_difference_store_equals_the_whole_table(onnx_mlp, tmp_path: Path, chunk):
    data = tmp_path / "d.parquet"
    if not data.exists():
        frame = _frame(250, seed=4)
        frame[["a", "b", "c", "d"]] = frame[["a", "b", "c", "d"]].astype("float32")
        frame.to_parquet(data, row_group_size=64)
    streamed, whole, one = _stores(
        onnx_mlp, data, tmp_path, chunk, "fd", method="finite-differences"
    )
    _assert_same(streamed, whole)
    _assert_same(streamed, one, rtol=FD_RTOL)
    assert streamed.X.dtype == np.float64  # read as float64; stored as float32 numbers
    assert streamed.meta["method"] == "finite-differences"
    assert streamed.meta["method_details"]["step"]["rel_step"] == 1e-2  # float32 graph


def test_onnx_autodiff_streams_and_equals_the_whole_table(onnx_mlp, tmp_path: Path):
    data = tmp_path / "d.csv"
    _frame(150, seed=5).to_csv(data, index=False)
    streamed, whole, one = _stores(onnx_mlp, data, tmp_path, 37, "ad", pairs=(("a", "b"),))
    assert len(streamed.mixed_derivatives()[("a", "b")]) == 150
    _assert_same(streamed, whole)
    _assert_same(streamed, one, rtol=1e-6)  # float32 autodiff in other batch shapes
    assert streamed.meta["method"] == "autodiff"
    assert streamed.meta["notes"][-1] == "columns taken by position: a, b, c, d"


def _paths_taken(monkeypatch) -> list[str]:  # type: ignore[no-untyped-def]
    taken: list[str] = []
    real_stream, real_whole = compute_module.streamed_run, compute_module.whole_run

    def stream(*args, **kw):  # type: ignore[no-untyped-def]
        out = real_stream(*args, **kw)
        taken.append("stream" if out is not None else "stream declined")
        return out

    def whole(*args, **kw):  # type: ignore[no-untyped-def]
        taken.append("whole")
        return real_whole(*args, **kw)

    monkeypatch.setattr(compute_module, "streamed_run", stream)
    monkeypatch.setattr(compute_module, "whole_run", whole)
    return taken


def test_smooth_models_stream(smooth_pickle, onnx_mlp, tmp_path: Path, monkeypatch):
    taken = _paths_taken(monkeypatch)
    data = tmp_path / "d.csv"
    _frame(60).to_csv(data, index=False)
    for model in (smooth_pickle, onnx_mlp):
        inputs = ModelInputs(
            model=model, data=data, exclude=("y",), trust_pickle=True, drop_nonfinite=True
        )
        compute(ComputeRequest(inputs=inputs, out=tmp_path / "s.npz", chunk_rows=16), force=True)
    assert taken == ["stream", "stream"]


def test_piecewise_constant_models_keep_the_whole_table_path(
    tree_pickle, tmp_path: Path, monkeypatch
):
    taken = _paths_taken(monkeypatch)
    data = tmp_path / "d.csv"
    _frame(60).to_csv(data, index=False)
    inputs = ModelInputs(model=tree_pickle, data=data, inputs=("a", "b"), trust_pickle=True)
    compute(ComputeRequest(inputs=inputs, out=tmp_path / "s.npz", chunk_rows=16), force=True)
    assert taken == ["stream declined", "whole"]
    meta = read_store(tmp_path / "s.npz").meta
    assert meta["method_details"]["step"]["rule"] == "piecewise-constant model type"


def test_an_onnx_tree_ensemble_keeps_the_whole_table_path_without_a_first_pass(
    tmp_path: Path, monkeypatch
):
    skl2onnx = pytest.importorskip("skl2onnx")
    from sklearn.tree import DecisionTreeRegressor

    frame = _frame(60, seed=7)
    X = frame[["a", "b"]].to_numpy(np.float32)
    tree = DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, frame["y"])
    model = tmp_path / "tree.onnx"
    model.write_bytes(skl2onnx.to_onnx(tree, X[:1]).SerializeToString())
    data = tmp_path / "d.csv"
    frame.to_csv(data, index=False)
    taken = _paths_taken(monkeypatch)
    inputs = ModelInputs(model=model, data=data, inputs=("a", "b"))
    out = tmp_path / "s.npz"
    compute(ComputeRequest(inputs=inputs, out=out, chunk_rows=16), force=True)
    assert taken == ["whole"]  # decided before any read
    meta = read_store(out).meta
    assert meta["method_details"]["step"]["rule"] == "piecewise-constant model type"
    assert "first_pass_s" not in meta["timings"]


def test_a_pipeline_explaining_a_text_column_streams_as_the_whole_table_computes(
    tmp_path: Path, monkeypatch
):
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    frame = _frame(80, seed=6)
    frame["region"] = np.where(frame["c"] == 0, "north", "south")
    frame.loc[70:, "region"] = "east"  # text first seen after the first chunks
    features = ["a", "b", "region"]
    pipe = make_pipeline(
        make_column_transformer((OneHotEncoder(), ["region"]), remainder="passthrough"),
        Ridge(),
    ).fit(frame[features], frame["y"])
    model = joblib.dump(pipe, tmp_path / "pipe.pkl")[0]
    data = tmp_path / "d.csv"
    frame[[*features, "y"]].to_csv(data, index=False)
    taken = _paths_taken(monkeypatch)
    inputs = ModelInputs(model=Path(model), data=data, exclude=("y",), trust_pickle=True)
    out = tmp_path / "s.npz"
    compute(ComputeRequest(inputs=inputs, out=out, chunk_rows=16), force=True)
    assert taken == ["stream"]  # the levels and their order from passes over the chunks
    streamed = read_store(out)
    assert streamed.meta["categorical_levels"]["region"] == ["east", "north", "south"]
    monkeypatch.setattr(compute_module, "streamed_run", lambda *a, **k: None)
    compute(ComputeRequest(inputs=inputs, out=tmp_path / "w.npz", chunk_rows=16), force=True)
    whole = read_store(tmp_path / "w.npz")
    assert streamed.meta["levels"] == whole.meta["levels"]
    np.testing.assert_allclose(streamed.local_effects, whole.local_effects, rtol=0, atol=1e-12)
    for name in ("level_up", "level_down"):
        np.testing.assert_allclose(streamed.extra[name], whole.extra[name], rtol=0, atol=1e-12)


def test_data_changed_between_the_two_reads_is_refused(smooth_pickle, tmp_path: Path, monkeypatch):
    import ale_cli.passes.spool as profiling

    data = tmp_path / "d.csv"
    frame = _frame(40)
    frame.to_csv(data, index=False)
    real = profiling.first_pass

    def then_rewrite(*args, **kw):  # type: ignore[no-untyped-def]
        found = real(*args, **kw)
        frame.to_csv(data, index=False, float_format="%.17g")  # the same rows, other bytes
        return found

    monkeypatch.setattr(plan_module, "first_pass", then_rewrite)
    inputs = ModelInputs(
        model=smooth_pickle, data=data, exclude=("y",), trust_pickle=True, drop_nonfinite=True
    )
    out = tmp_path / "s.npz"
    with pytest.raises(RunError, match=r"data file '.*d\.csv' changed while it was read"):
        compute(ComputeRequest(inputs=inputs, out=out, chunk_rows=16), force=True)
    assert not out.exists()


def test_data_changed_after_the_stale_store_check_is_refused(
    smooth_pickle, tmp_path: Path, monkeypatch
):
    """A stale store at the output makes compute hash the data before the run; if the file
    changes before it is streamed, the store must not name the bytes hashed first."""
    import ale_cli.estimators.local_effects as cache_module

    data = tmp_path / "d.csv"
    frame = _frame(40)
    frame.to_csv(data, index=False)
    inputs = ModelInputs(
        model=smooth_pickle, data=data, exclude=("y",), trust_pickle=True, drop_nonfinite=True
    )
    out = tmp_path / "s.npz"
    compute(ComputeRequest(inputs=inputs, out=out, chunk_rows=16), force=True)
    before = out.read_bytes()
    frame.to_csv(data, index=False, float_format="%.17g")  # the same rows, other bytes: stale
    real = cache_module.inputs_sha256

    def then_rewrite(path):  # type: ignore[no-untyped-def]
        found = real(path)
        frame.to_csv(data, index=False)  # back to the first bytes before the stream reads them
        return found

    monkeypatch.setattr(cache_module, "inputs_sha256", then_rewrite)
    with pytest.raises(RunError, match=r"data file '.*d\.csv' changed while it was read"):
        compute(ComputeRequest(inputs=inputs, out=out, chunk_rows=16))
    assert out.read_bytes() == before  # the old store is left as it was
