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


def same_records(many, one, output: str) -> None:  # type: ignore[no-untyped-def]
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
        same_records(
            many["rebin"], _summary(cli, summaries, "rebin", one, "--bins", "6"), f"proba:{k}"
        )
        same_records(many["rhale"], _summary(cli, summaries, "rhale", one), f"proba:{k}")
        single = _summary(cli, summaries, "classic", *common, "--output", f"proba:{k}", "--bins", 6)
        same_records(many["classic"], single, f"proba:{k}")
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
        ("proba:1,proba:1", "error: --output proba:1,proba:1 names column proba:1 twice; list "),
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
    assert not (tmp_path / "x.npz").exists()


def test_a_class_named_by_label_and_by_index_is_one_column(cli, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A summary of one column twice could not be read back (its features repeat)."""
    import skops.io as sio
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(1)
    frame = pd.DataFrame(rng.normal(size=(60, 2)), columns=["a", "b"])
    labels = np.where(frame.a > 0, "hi", "lo")  # classes_ ['hi', 'lo']: hi is proba:0
    sio.dump(LogisticRegression().fit(frame, labels), tmp_path / "clf.skops")
    frame.to_csv(tmp_path / "data.csv", index=False)
    result = cli(
        "classic", tmp_path / "clf.skops", tmp_path / "data.csv",
        "--output", "proba:hi,proba:0", "--out", tmp_path / "x.json",
    )  # fmt: skip
    assert result.exit_code == 2
    assert result.stderr == (
        "error: --output proba:hi,proba:0 names column proba:0 twice; list each column once\n"
    )
    assert not (tmp_path / "x.json").exists()


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


@pytest.fixture(scope="module")
def multi_summary(three_class, tmp_path_factory):  # type: ignore[no-untyped-def]
    """A rebin summary of every class (written), and the summary of class 1 alone."""
    from ale_cli import api
    from ale_cli.summary.model import write_summary

    model, data = three_class
    root = tmp_path_factory.mktemp("multi")
    frame = pd.read_csv(data).drop(columns="target")
    import skops.io as sio

    est = sio.load(model, trusted=sio.get_untrusted_types(file=model))
    api.compute(est, frame, out=root / "all.npz", output="all")
    api.compute(est, frame, out=root / "one.npz", output="proba:1")
    many, one = api.rebin(root / "all.npz", bins=5), api.rebin(root / "one.npz", bins=5)
    write_summary(root / "all.json", many)
    write_summary(root / "one.json", one)
    return root, many, one


def test_export_has_an_output_column(multi_summary) -> None:  # type: ignore[no-untyped-def]
    from ale_cli.summary.export import export_table

    root, _, _ = multi_summary
    many, one = export_table(root / "all.json").frame, export_table(root / "one.json").frame
    assert list(many.columns[:4]) == ["estimator", "feature", "kind", "output"]
    assert list(dict.fromkeys(many["output"])) == ["proba:0", "proba:1", "proba:2"]
    mine = many[many["output"] == "proba:1"].drop(columns="output").reset_index(drop=True)
    pd.testing.assert_frame_equal(mine[one.columns], one, check_exact=False, rtol=1e-12)


def test_diff_and_audit_name_each_output(multi_summary, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from ale_cli.audit.evaluate import evaluate
    from ale_cli.audit.rules import read_rules
    from ale_cli.summary.compare import compare_summaries

    _, many, one = multi_summary
    found = compare_summaries(one, many)
    assert [c.name for c in found][:4] == ["a", "b", "s", "a [proba:0]"]
    assert all(c.status == "missing_in_base" for c in found[3:])
    same = compare_summaries(many, many, features=["a"])
    assert [c.name for c in same] == ["a [proba:0]", "a [proba:1]", "a [proba:2]"]
    assert all(c.difference is not None and c.difference.max_abs == 0 for c in same)
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - feature: '*'\n    output: proba:2\n    max_aled: 1000\n")
    result = evaluate([("all", many)], read_rules(rules))
    assert [c.feature for c in result.checks] == ["a [proba:2]", "b [proba:2]", "s [proba:2]"]
    rules.write_text("rules:\n  - feature: a\n    output: proba:9\n    max_aled: 1\n")
    with pytest.raises(InputError, match=r"no summary has output 'proba:9' \(outputs: proba:0"):
        evaluate([("all", many)], read_rules(rules))


def test_small_multiples_plot_each_outputs_curve(multi_summary) -> None:  # type: ignore[no-untyped-def]
    from ale_cli.plot.outputs import outputs_figure

    _, many, _ = multi_summary
    fig = outputs_figure(many, ["a", "s"])
    lines = {ln.get_gid(): ln for ax in fig.axes for ln in ax.lines if ln.get_gid()}
    for k, output in enumerate(("proba:0", "proba:1", "proba:2")):
        a = next(f for f in many.features if (f.name, f.output) == ("a", output))
        np.testing.assert_array_equal(lines[f"r0.o{k}.effect"].get_xdata(), a.edges)
        np.testing.assert_array_equal(lines[f"r0.o{k}.effect"].get_ydata(), a.effect)
        s = next(f for f in many.features if (f.name, f.output) == ("s", output))
        np.testing.assert_array_equal(lines[f"r1.o{k}.effect"].get_ydata(), s.effect)
    assert len(fig.axes) == 6


def test_the_api_plots_several_outputs_as_small_multiples(multi_summary) -> None:  # type: ignore[no-untyped-def]
    """``api.plot`` as ``ale plot`` draws them: a panel per output for a feature, a row of
    them per feature for the overview; an unknown name is refused."""
    from ale_cli import api
    from ale_cli.plot import overview_figure

    _, many, _ = multi_summary
    assert len(api.plot(many, "s").axes) == 3
    assert len(api.plot(many).axes) == 3 * 3  # features a, b, s
    assert [ax.get_title(loc="left") for ax in overview_figure(many, names=["s"]).axes] == [
        "s [proba:0]", "s [proba:1]", "s [proba:2]"
    ]  # fmt: skip
    with pytest.raises(InputError, match="summary has no feature 'nosuch'"):
        overview_figure(many, names=["nosuch"])


def test_interact_refuses_several_outputs(cli, three_class, multi_summary, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """From the model (``--output all``) or from a store of several outputs: one line, exit 2."""
    model, data = three_class
    root, _, _ = multi_summary
    common = ("interact", model, data, "--exclude", "target", "--pair", "a,b", "-o")
    for extra, message in [
        (("--output", "all"), f"error: model '{model}' with --output all holds 3 outputs "
         "(proba:0, proba:1, proba:2); ale interact explains one: pass one --output NAME"),
        (("--output", "proba:1", "--store", root / "all.npz"), f"error: store "
         f"'{root / 'all.npz'}' holds 3 outputs (proba:0, proba:1, proba:2); ale interact "
         "explains one: compute a store of that output with --output NAME"),
    ]:  # fmt: skip
        result = cli(*common, tmp_path / "i.json", *extra)
        assert (result.exit_code, result.stderr.strip()) == (2, message)
        assert not (tmp_path / "i.json").exists()


def test_regional_refuses_a_store_of_several_outputs(multi_summary) -> None:  # type: ignore[no-untyped-def]
    from ale_cli import api

    root, _, _ = multi_summary
    with pytest.raises(InputError, match=r"holds 3 outputs \(proba:0, proba:1, proba:2\)"):
        api.regional(root / "all.npz")


def test_torch_outputs_in_one_backward_graph(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A 3-output TorchScript net: every column at once equals each column alone (the same
    float32 gradients), in compute + rhale and in classic with a list."""
    torch = pytest.importorskip("torch")
    from ale_cli import api

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    torch.jit.script(net.eval()).save(str(tmp_path / "net.pt"))
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(200, 3)).astype("float32"), columns=["a", "b", "c"])
    api.compute(tmp_path / "net.pt", frame, out=tmp_path / "all.npz", output="all")
    many = api.rhale(tmp_path / "all.npz")
    both = api.classic(tmp_path / "net.pt", frame, output="0,2", bins=5)
    assert [o["selector"] for o in both.store["outputs"]] == ["0", "2"]
    for k in ("0", "1", "2"):
        api.compute(tmp_path / "net.pt", frame, out=tmp_path / f"{k}.npz", output=k)
        same_records(many, api.rhale(tmp_path / f"{k}.npz"), k)
    same_records(both, api.classic(tmp_path / "net.pt", frame, output="2", bins=5), "2")
    with pytest.raises(InputError, match="selects an element of a tuple"):
        api.compute(tmp_path / "net.pt", frame, out=tmp_path / "x.npz", output="0,1:0")
    with pytest.raises(InputError, match="^output 2,0,2 names column 2 twice; list each column"):
        api.classic(tmp_path / "net.pt", frame, output="2,0,2")
    with pytest.raises(InputError, match=r"pairs needs the mixed second derivatives of one out"):
        api.compute(tmp_path / "net.pt", frame, out=tmp_path / "x.npz", output="all", pairs=["a,b"])
    with pytest.raises(InputError, match=r"with output all holds 3 outputs \(0, 1, 2\)"):
        api.interact(tmp_path / "net.pt", frame, output="all", pairs=["a,b"], estimator="dale")


def test_a_records_figure_draws_its_outputs_rows(multi_summary) -> None:  # type: ignore[no-untyped-def]
    """The report's figure of (a, proba:1) gets output 1's rows of the store: its violins
    and mean-prediction line are those of the run of proba:1 alone."""
    from ale_cli.plot.first_order import feature_figure
    from ale_cli.plot.outputs import output_store

    root, many, one = multi_summary
    whole, single = read_store(root / "all.npz"), read_store(root / "one.npz")
    assert output_store(whole, None) is whole
    picked = output_store(whole, "proba:1")
    for name in ("local_effects", "prediction"):
        np.testing.assert_allclose(getattr(picked, name), getattr(single, name), **EXACT)
    figures = (feature_figure(many.of_output("proba:1"), "a", store=picked),
               feature_figure(one, "a", store=single))  # fmt: skip
    got, want = ({a.get_gid(): a for ax in f.axes for a in ax.get_children()} for f in figures)
    violins = sorted(g for g in want if g and g.startswith("violin_"))
    assert violins and violins == sorted(g for g in got if g and g.startswith("violin_"))
    for gid in violins:
        np.testing.assert_allclose(
            got[gid].get_paths()[0].vertices, want[gid].get_paths()[0].vertices, **EXACT
        )
    mean = (got["mean_prediction"].get_ydata(), want["mean_prediction"].get_ydata())
    np.testing.assert_allclose(*mean, **EXACT)
