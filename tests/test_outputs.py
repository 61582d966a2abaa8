"""Every output at once (``--output all`` or a list): one compute, a store holding each
output's local effects, a record per (feature, output) equal to the single-output runs."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ale_cli.errors import InputError
from ale_cli.store.format import Store, output_entry, split_outputs
from ale_cli.store.npz import open_store, read_store, write_store
from ale_cli.summary.model import read_summary

EXACT = {"rtol": 0, "atol": 1e-12}
ARRAYS = ("edges", "counts", "bin_effect", "bin_std", "effect", "std", "stderr")


@pytest.fixture(scope="module")
def three_class(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A 3-class logistic regression (skops) and its data: 240 rows, a binary column."""
    import skops.io as sio
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(3)
    X = rng.normal(size=(240, 3))
    X[:, 2] = rng.integers(0, 2, 240)  # binary: held per level by default
    y = (X[:, 0] + 0.7 * X[:, 1] > 0).astype(int) + (X[:, 0] - X[:, 2] > 0.8)
    frame = pd.DataFrame(X, columns=["a", "b", "s"])
    root = tmp_path_factory.mktemp("outputs")
    sio.dump(LogisticRegression().fit(frame, y), root / "clf.skops")
    frame.assign(target=y).to_csv(root / "data.csv", index=False)
    return root / "clf.skops", root / "data.csv"


def _summary(cli, tmp: Path, *args: object) -> object:  # type: ignore[no-untyped-def]
    out = tmp / f"s{len(list(tmp.iterdir()))}.json"
    result = cli(*args, "--out", out)
    assert result.exit_code == 0, result.output
    return read_summary(out)


def _same(many, one, output: str) -> None:  # type: ignore[no-untyped-def]
    """The records of ``output`` in ``many`` equal the records of the run ``one``."""
    mine = [f for f in many.features if f.output == output]
    assert [f.name for f in mine] == [f.name for f in one.features]
    for got, want in zip(mine, one.features, strict=True):
        assert (got.status, got.kind, want.output) == (want.status, want.kind, None)
        for name in ARRAYS:
            np.testing.assert_allclose(getattr(got, name), getattr(want, name), **EXACT)
        assert got.statistics == want.statistics


def test_all_classes_equal_three_single_class_runs(cli, three_class, tmp_path) -> None:  # type: ignore[no-untyped-def]
    model, data = three_class
    common = (model, data, "--exclude", "target")
    assert cli("compute", *common, "--output", "all", "--out", tmp_path / "all.npz").exit_code == 0
    store = open_store(tmp_path / "all.npz")
    assert [o["name"] for o in store.meta["outputs"]] == ["proba:0", "proba:1", "proba:2"]
    whole = read_store(tmp_path / "all.npz")
    proba = np.stack([whole.select_output(k).prediction for k in range(3)], axis=1)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)  # three distinct columns
    sums = sum(whole.select_output(k).local_effects for k in range(3))
    np.testing.assert_allclose(sums, 0.0, atol=1e-8)  # probabilities sum to one
    summaries = tmp_path / "summaries"
    summaries.mkdir()
    many = {
        cmd: _summary(cli, summaries, cmd, tmp_path / "all.npz", *extra)
        for cmd, extra in (("rebin", ("--bins", "6")), ("rhale", ()))
    }
    many["classic"] = _summary(cli, summaries, "classic", *common, "--output", "all", "--bins", "6")
    for k in range(3):
        one = tmp_path / f"p{k}.npz"
        result = cli("compute", *common, "--output", f"proba:{k}", "--out", one)
        assert result.exit_code == 0, result.output
        _same(many["rebin"], _summary(cli, summaries, "rebin", one, "--bins", "6"), f"proba:{k}")
        _same(many["rhale"], _summary(cli, summaries, "rhale", one), f"proba:{k}")
        single = _summary(cli, summaries, "classic", *common, "--output", f"proba:{k}", "--bins", 6)
        _same(many["classic"], single, f"proba:{k}")
    assert {f.kind for f in many["classic"].features if f.name == "s"} == {"discrete"}


def test_a_list_of_two_outputs(cli, three_class, tmp_path) -> None:  # type: ignore[no-untyped-def]
    model, data = three_class
    common = (model, data, "--exclude", "target")
    out = tmp_path / "two.npz"
    assert cli("compute", *common, "--output", "proba:0,proba:2", "--out", out).exit_code == 0
    with zipfile.ZipFile(out) as zf:
        names = {n.removesuffix(".npy").rsplit(".", 1)[0] for n in zf.namelist()}
    assert {"local_effects.out1", "prediction.out1", "level_up.out1"} <= names
    assert not any(".out2" in n for n in names)
    summary = _summary(cli, tmp_path, "rebin", out, "--bins", "4")
    assert [(f.name, f.output) for f in summary.features] == [
        (n, o) for o in ("proba:0", "proba:2") for n in ("a", "b", "s")
    ]
    assert [o["class"] for o in summary.store["outputs"]] == ["0", "2"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("proba:0,decision", "a list names columns of one output"),
        ("proba:0,proba:7", "has no class '7'"),
    ],
)
def test_bad_output_lists(cli, three_class, tmp_path, spec, message) -> None:  # type: ignore[no-untyped-def]
    model, data = three_class
    result = cli(
        "compute", model, data, "--exclude", "target",
        "--output", spec, "--out", tmp_path / "x.npz",
    )  # fmt: skip
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output


def _single(n: int = 30) -> Store:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 2))
    meta = {"output": {"name": "predict"}, "method": "autodiff"}
    return Store(X=X, local_effects=X * 2, prediction=X.sum(1), feature_names=("u", "v"), meta=meta)


def test_a_store_of_one_output_reads_as_before(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "one.npz"
    write_store(path, _single())
    handle, whole = open_store(path), read_store(path)
    assert handle.outputs == 1 and "outputs" not in whole.meta
    assert whole.select_output(0) is whole
    chunk = next(handle.select_output(0).chunks())
    np.testing.assert_array_equal(chunk["local_effects"], whole.local_effects)


def test_split_outputs_and_damaged_stores(tmp_path) -> None:  # type: ignore[no-untyped-def]
    e = np.arange(24.0).reshape(4, 3, 2)  # (n, K, F)
    parts = split_outputs({"X": np.zeros((4, 2)), "local_effects": e, "prediction": e[..., 0]})
    np.testing.assert_array_equal(parts[output_entry("local_effects", 2)], e[:, 2])
    np.testing.assert_array_equal(parts["prediction"], e[:, 0, 0])
    base = _single()
    outputs = [{"name": "predict:0"}, {"name": "predict:1"}]
    good = Store(
        X=base.X, local_effects=base.local_effects, prediction=base.prediction,
        feature_names=base.feature_names, meta=base.meta | {"outputs": outputs},
        extra={"local_effects.out1": -base.local_effects, "prediction.out1": -base.prediction},
    )  # fmt: skip
    write_store(tmp_path / "good.npz", good)
    second = read_store(tmp_path / "good.npz").select_output(1)
    np.testing.assert_array_equal(second.local_effects, -base.local_effects)
    assert second.meta["output"] == {"name": "predict:1"}
    lacking = Store(**{**good.__dict__, "extra": {"prediction.out1": -base.prediction}})
    write_store(tmp_path / "bad.npz", lacking)
    with pytest.raises(InputError, match=r"array 'local_effects.out1' is missing"):
        read_store(tmp_path / "bad.npz")
    stray = Store(**{**base.__dict__, "extra": {"prediction.out1": -base.prediction}})
    write_store(tmp_path / "stray.npz", stray)
    with pytest.raises(InputError, match="is not an array of one of its outputs"):
        open_store(tmp_path / "stray.npz")
    json.dumps(outputs)  # the records are plain JSON
