"""Text columns read chunk by chunk: their levels from a first pass, then their codes.

A scikit-learn pipeline given a text column streams the data: the results equal those
of the whole table read at once (to 1e-12), the whole-table reader is never called.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ale_cli.data.stream import text_levels
from ale_cli.data.table import to_float_matrix
from ale_cli.estimators.classic import ClassicRequest, classic
from ale_cli.estimators.inputs import ModelInputs
from ale_cli.estimators.interact import InteractRequest, interact
from ale_cli.estimators.local_effects import ComputeRequest, compute
from ale_cli.store.npz import read_store

COLORS = ["red", "green", "blue", "teal", "amber"]


@pytest.fixture(scope="module")
def text_case(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, PolynomialFeatures

    root = tmp_path_factory.mktemp("text")
    rng = np.random.default_rng(3)
    n = 160
    frame = pd.DataFrame(
        {
            "x1": rng.normal(size=n),
            "color": rng.choice(COLORS, size=n),
            "x2": rng.uniform(size=n),
        }
    )
    frame.loc[:20, "color"] = "red"  # the first chunks see fewer levels than the file
    frame.loc[n - 1, "color"] = "violet"  # a level in the last chunk only
    shift = frame["color"].map({c: i for i, c in enumerate([*COLORS, "violet"])})
    y = frame.x1 * 2 + frame.x2**2 + shift + frame.x1 * frame.x2 * (frame.color == "red")
    pipe = make_pipeline(
        ColumnTransformer([("oh", OneHotEncoder(), ["color"])], remainder=PolynomialFeatures(2)),
        Ridge(alpha=0.1),
    )
    pipe.fit(frame, y)
    frame.to_csv(root / "d.csv", index=False)
    with open(root / "m.pkl", "wb") as f:
        pickle.dump(pipe, f)
    return {"data": root / "d.csv", "model": root / "m.pkl", "root": root}


def _inputs(case: dict[str, Path], **kw: object) -> ModelInputs:
    return ModelInputs(model=case["model"], data=case["data"], trust_pickle=True, **kw)  # type: ignore[arg-type]


@pytest.fixture
def no_whole_table(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the whole-table reads (the streamed runs must make none)."""
    import ale_cli.data.table as table

    calls: list[int] = []
    real = table.load_table

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(table, "load_table", counted)
    monkeypatch.setattr("ale_cli.estimators.inputs.load_table", counted)  # its one caller
    return calls


def test_levels_of_the_chunks_are_those_of_the_whole_column() -> None:
    whole = pd.DataFrame({"a": [2.0, 1.0, 3.0, 4.0], "c": ["b", None, "a", "c"]})
    levels: dict[str, tuple[object, ...]] = {}
    X = to_float_matrix(whole, ["a", "c"], Path("d.csv"), levels=levels)
    found, again = text_levels([whole.iloc[:1], whole.iloc[1:3], whole.iloc[3:]], ["a", "c"])
    assert found == levels == {"c": ("a", "b", "c")}
    assert again == ()
    np.testing.assert_array_equal(X[:, 1], [1.0, np.nan, 0.0, 2.0])


def test_a_text_column_some_chunk_read_as_numbers_is_read_again_as_text() -> None:
    chunks = [pd.DataFrame({"c": [1, 2]}), pd.DataFrame({"c": ["x", "01"]})]
    assert text_levels(chunks, ["c"])[1] == ("c",)


def test_classic_streams_a_text_column_with_the_whole_tables_numbers(
    text_case: dict[str, Path], no_whole_table: list[int]
) -> None:
    inputs = _inputs(text_case)
    streamed = classic(ClassicRequest(inputs=inputs, chunk_rows=16, bins=6))
    assert no_whole_table == [] and streamed.notes == ()
    whole = classic(ClassicRequest(inputs=inputs, chunk_rows=None, bins=6))
    assert no_whole_table == [1]
    assert len(streamed.summary.features) == 3
    for a, b in zip(streamed.summary.features, whole.summary.features, strict=True):
        assert a.name == b.name and a.status == b.status == "ok"
        assert a.levels == b.levels
        np.testing.assert_array_equal(a.counts, b.counts)
        np.testing.assert_allclose(a.edges, b.edges, rtol=0, atol=1e-12)
        np.testing.assert_allclose(a.effect, b.effect, rtol=0, atol=1e-12)
        np.testing.assert_allclose(a.std, b.std, rtol=0, atol=1e-12)
    color = next(f for f in streamed.summary.features if f.name == "color")
    assert color.kind == "categorical" and sorted(color.levels) == sorted([*COLORS, "violet"])
    assert streamed.summary.store == whole.summary.store


def test_interact_streams_a_text_column(
    text_case: dict[str, Path], no_whole_table: list[int]
) -> None:
    request = InteractRequest(inputs=_inputs(text_case), pairs=(("x1", "x2"),), bins=4)
    streamed = interact(request)
    assert no_whole_table == []
    whole = interact(InteractRequest(inputs=_inputs(text_case), pairs=(("x1", "x2"),), bins=4,
                                     chunk_rows=None))  # fmt: skip
    (a,), (b,) = streamed.summary.interactions, whole.summary.interactions
    np.testing.assert_allclose(a.effect, b.effect, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(a.counts, b.counts)


def _streamed_and_whole(inputs: ModelInputs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """The stores compute writes streamed (checked to stream) and on the whole table."""
    import ale_cli.estimators.local_effects_plan as plan_module

    streamed_run = plan_module.streamed_run
    runs: list[bool] = []

    def spied(*args: object, **kwargs: object) -> object:
        run = streamed_run(*args, **kwargs)  # type: ignore[arg-type]
        runs.append(run is not None)
        return run

    monkeypatch.setattr("ale_cli.estimators.local_effects.streamed_run", spied)
    compute(ComputeRequest(inputs=inputs, out=tmp_path / "s.npz", chunk_rows=16), force=True)
    assert runs == [True]
    monkeypatch.setattr("ale_cli.estimators.local_effects.streamed_run", lambda *a, **k: None)
    compute(ComputeRequest(inputs=inputs, out=tmp_path / "w.npz", chunk_rows=16), force=True)
    return read_store(tmp_path / "s.npz"), read_store(tmp_path / "w.npz")


def test_compute_streams_a_text_column_it_does_not_explain(
    text_case: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inputs = _inputs(text_case, features=("x1", "x2"))
    streamed, whole = _streamed_and_whole(inputs, tmp_path, monkeypatch)
    np.testing.assert_array_equal(streamed.X, whole.X)
    np.testing.assert_allclose(streamed.local_effects, whole.local_effects, rtol=0, atol=1e-12)
    np.testing.assert_allclose(streamed.prediction, whole.prediction, rtol=0, atol=1e-12)
    for key in ("inputs", "features", "n_rows", "categorical_features", "categorical_levels"):
        assert streamed.meta[key] == whole.meta[key]
    for key in ("sha256", "rows_read", "rows_dropped", "dtypes"):
        assert streamed.meta["data"][key] == whole.meta["data"][key]


def test_compute_explaining_a_text_column_streams_as_the_whole_table_computes(
    text_case: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The text column's levels and their order come from passes over the chunks: the
    store equals the whole table's, the jumps to the adjacent levels included."""
    streamed, whole = _streamed_and_whole(_inputs(text_case), tmp_path, monkeypatch)
    assert streamed.meta["levels"] == whole.meta["levels"]
    assert [lv["feature"] for lv in streamed.meta["levels"]] == ["color"]
    np.testing.assert_allclose(streamed.local_effects, whole.local_effects, rtol=0, atol=1e-12)
    np.testing.assert_allclose(streamed.prediction, whole.prediction, rtol=0, atol=1e-12)
    for name in ("level_up", "level_down"):
        np.testing.assert_allclose(
            streamed.extra[name], whole.extra[name], rtol=0, atol=1e-12, err_msg=name
        )


def test_numerals_in_a_text_columns_first_chunks_keep_their_text(
    text_case: dict[str, Path], tmp_path: Path
) -> None:
    """The first chunks of the column read as numbers ("01" -> 1): it is read again as text,
    so "01" stays a level of its own, as in the whole column."""
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    frame = pd.read_csv(text_case["data"])
    frame["color"] = frame["color"].astype(object)
    frame.loc[:40, "color"] = "01"
    frame.to_csv(tmp_path / "d.csv", index=False)
    encode = ColumnTransformer([("oh", OneHotEncoder(), ["color"])], remainder="passthrough")
    pipe = make_pipeline(encode, Ridge()).fit(frame, frame.x1 * frame.x2)
    with open(tmp_path / "m.pkl", "wb") as f:
        pickle.dump(pipe, f)
    inputs = ModelInputs(model=tmp_path / "m.pkl", data=tmp_path / "d.csv", trust_pickle=True)
    streamed = classic(ClassicRequest(inputs=inputs, chunk_rows=16, bins=4))
    whole = classic(ClassicRequest(inputs=inputs, chunk_rows=None, bins=4))
    for a, b in zip(streamed.summary.features, whole.summary.features, strict=True):
        assert a.levels == b.levels
        np.testing.assert_allclose(a.effect, b.effect, rtol=0, atol=1e-12)
    color = next(f for f in streamed.summary.features if f.name == "color")
    assert "01" in color.levels
