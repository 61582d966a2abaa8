"""The Dask engine (``--engine dask``): the same stores and summaries as the local engine on
a partitioned Parquet dataset and on one file cut into row-group ranges, directory stores
(layout, checks on read, atomic writes), and a local path that never imports dask.

One LocalCluster of 2 worker processes serves the module; the library calls and the CLI
are given its address (the ``--scheduler`` path).
"""

from __future__ import annotations

import json
import pickle
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_outputs import ARRAYS, EXACT  # tests/ is on sys.path (rootdir conftest)

from ale_cli.data.sources import Partition, plan_partitions, split_row_groups
from ale_cli.data.table import data_sha256
from ale_cli.engines import engine_for
from ale_cli.engines.cluster import DaskEngine
from ale_cli.errors import InputError
from ale_cli.estimators.dale import RebinRequest, RhaleRequest, rebin, rhale
from ale_cli.estimators.inputs import ModelInputs
from ale_cli.estimators.local_effects import ComputeRequest, compute
from ale_cli.store.npz import open_store, read_meta, read_store
from ale_cli.store.parts import MANIFEST, PartStoreWriter, open_part_store, store_sha256

pytest.importorskip("distributed", reason="the dask extra is not installed")

NAMES = ["a", "b", "c", "d"]
W = np.array([-1.0, 0.0, 1.0, 2.0])


def _model(path: Path) -> Path:
    """f(x) = sum_j w_j tanh(x_j) + x_a x_b in float64 (known gradients)."""
    import torch
    from torch import nn

    class F(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("w", torch.tensor(W, dtype=torch.float64))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return (torch.tanh(x) * self.w).sum(1) + x[:, 0] * x[:, 1]

    torch.jit.save(torch.jit.script(F().eval()), str(path))
    return path


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, np.ndarray]:
    """A model and 4 partitions of 3000 rows (row groups of 700), and all rows in order."""
    root = tmp_path_factory.mktemp("dask")
    model = _model(root / "f.pt")
    rng = np.random.default_rng(1)
    parts = []
    for k in range(4):
        X = rng.normal(size=(3000, 4))
        X[:, 3] = rng.exponential(size=3000)  # a skewed column for the quantile passes
        folder = root / "data" / f"day={k}"
        folder.mkdir(parents=True)
        pd.DataFrame(X, columns=NAMES).to_parquet(
            folder / "part.parquet", row_group_size=700, index=False
        )
        parts.append(X)
    return model, root / "data", np.concatenate(parts)


@pytest.fixture(scope="module")
def stores(
    dataset: tuple[Path, Path, np.ndarray], cluster: str, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path]:
    """The local engine's file store and the Dask engine's directory store."""
    model, data, _ = dataset
    root = tmp_path_factory.mktemp("stores")
    inputs = ModelInputs(model=model, data=data)
    local = compute(ComputeRequest(inputs=inputs, out=root / "local.npz", chunk_rows=1000))
    dask = compute(
        ComputeRequest(inputs=inputs, out=root / "dask", chunk_rows=1000),
        engine=DaskEngine(cluster),
    )
    assert not local.cache_hit and not dask.cache_hit
    return local.out, dask.out


def test_dask_store_holds_the_local_rows_and_known_gradients(stores, dataset):
    local, dask = stores
    _, _, X = dataset
    a, b = read_store(local), read_store(dask)
    np.testing.assert_array_equal(b.X, X)  # partition order, rows in file order
    np.testing.assert_array_equal(b.X, a.X)
    np.testing.assert_array_equal(b.local_effects, a.local_effects)
    expected = W / np.cosh(X) ** 2 + np.column_stack([X[:, 1], X[:, 0], 0 * X[:, :2]])
    np.testing.assert_allclose(b.local_effects, expected, rtol=1e-12, atol=1e-12)
    assert read_meta(dask)["cache_key"] == read_meta(local)["cache_key"]


def test_directory_store_layout(stores, dataset):
    _, dask = stores
    _, data, _ = dataset
    manifest = json.loads((dask / MANIFEST).read_text())
    assert manifest["layout"] == "parts"
    assert [p["file"] for p in manifest["parts"]] == [f"part-0000{i}.npz" for i in range(4)]
    assert manifest["chunks"]["rows"] == [3000] * 4 and manifest["n_rows"] == 12000
    assert manifest["engine"]["name"] == "dask" and manifest["engine"]["partitions"] == 4
    assert manifest["data"]["sha256"] == data_sha256(data)
    assert sorted(p.name for p in dask.iterdir()) == sorted(
        [MANIFEST] + [p["file"] for p in manifest["parts"]]
    )
    part = open_store(dask / "part-00002.npz")  # each part is a store file of its own
    assert part.rows == (1000, 1000, 1000)
    assert not [p for p in dask.parent.iterdir() if p.name.startswith(".")]  # no leftovers


def _numbers(summary) -> list[tuple[str, str, np.ndarray]]:  # type: ignore[no-untyped-def]
    keys = ("edges", "counts", "bin_effect", "bin_std", "bin_stderr", "effect", "std", "stderr")
    return [
        (f.name, k, np.asarray(getattr(f, k), dtype=np.float64))
        for f in summary.features
        for k in keys
    ]


def _assert_same(one, other) -> None:  # type: ignore[no-untyped-def]
    a, b = _numbers(one), _numbers(other)
    assert [(n, k, v.shape) for n, k, v in a] == [(n, k, v.shape) for n, k, v in b]
    for (name, key, x), (_, _, y) in zip(a, b, strict=True):
        np.testing.assert_allclose(y, x, rtol=1e-12, atol=1e-12, err_msg=f"{name} {key}")


@pytest.mark.parametrize(
    "make",
    [
        lambda store, **kw: rebin(RebinRequest(store=store, bins=12, **kw)),
        lambda store, **kw: rebin(RebinRequest(store=store, bins=12, binning="quantile", **kw)),
        lambda store, **kw: rhale(RhaleRequest(store=store, max_bins=30, **kw)),
        lambda store, **kw: rhale(RhaleRequest(store=store, max_bins=30, grid="quantile", **kw)),
    ],
    ids=["rebin-uniform", "rebin-quantile", "rhale-uniform", "rhale-quantile"],
)
def test_estimators_equal_between_engines(stores, cluster, make, monkeypatch):
    local, dask = stores
    reference = make(local).summary
    on_dask = make(dask, engine=engine_for("dask", cluster)).summary
    _assert_same(reference, on_dask)
    _assert_same(reference, make(dask).summary)  # the local engine reads a directory store
    monkeypatch.setattr("ale_cli.store.reader.CHUNKS_PER_PART", 5)  # a file store: 3 ranges
    _assert_same(reference, make(local, engine=engine_for("dask", cluster)).summary)
    assert on_dask.store["sha256"] == store_sha256(dask)


def test_quantile_edges_are_the_exact_type1_quantiles(stores, cluster, dataset):
    _, dask = stores
    _, _, X = dataset
    summary = rebin(
        RebinRequest(store=dask, bins=7, binning="quantile", engine=engine_for("dask", cluster))
    ).summary
    n = len(X)
    for j, f in enumerate(summary.features):
        s = np.sort(X[:, j])
        k = np.arange(8)
        expected = np.unique(s[np.maximum(-(-n * k // 7) - 1, 0)])
        np.testing.assert_array_equal(np.asarray(f.edges), expected)


def test_glob_reads_the_same_dataset(dataset, tmp_path: Path):
    model, data, X = dataset
    glob = data / "day=*" / "*.parquet"
    assert data_sha256(glob) == data_sha256(data)
    out = compute(
        ComputeRequest(inputs=ModelInputs(model=model, data=glob), out=tmp_path / "g.npz")
    ).out
    np.testing.assert_array_equal(read_store(out).X, X)
    with pytest.raises(InputError, match="matches no files"):
        data_sha256(data / "nothing-*.parquet")


def test_cache_hit_and_a_failed_run_leaves_the_older_store(dataset, cluster, tmp_path: Path):
    model, data, _ = dataset
    out = tmp_path / "s"

    def run(inputs: ModelInputs, force: bool = False):  # type: ignore[no-untyped-def]
        request = ComputeRequest(inputs=inputs, out=out)
        return compute(request, engine=DaskEngine(cluster), force=force)

    run(ModelInputs(model=model, data=data))
    assert run(ModelInputs(model=model, data=data)).cache_hit
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    bad = tmp_path / "bad"
    shutil.copytree(data, bad)
    frame = pd.read_parquet(bad / "day=2" / "part.parquet")
    frame.iloc[5, 1] = np.nan
    frame.to_parquet(bad / "day=2" / "part.parquet", index=False)
    with pytest.raises(InputError, match=r"day=2/part.parquet' has 1 row with NaN.*dropna"):
        run(ModelInputs(model=model, data=bad), force=True)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad", "s"]  # no hidden leftovers
    dropped = run(ModelInputs(model=model, data=bad, dropna=True), force=True)
    assert dropped.n_rows == 11999 and dropped.rows_dropped == 1


def test_tiny_and_empty_partitions_as_the_local_engine(dataset, cluster, tmp_path: Path):
    model, _, _ = dataset
    data = tmp_path / "data"
    data.mkdir()
    X = np.random.default_rng(2).normal(size=(401, 4))
    for name, rows in (("p0", X[:1]), ("p1", X[:0]), ("p2", X[1:])):
        pd.DataFrame(rows, columns=NAMES).to_parquet(data / f"{name}.parquet", index=False)
    inputs = ModelInputs(model=model, data=data)
    local = compute(ComputeRequest(inputs=inputs, out=tmp_path / "l.npz")).out
    dask = compute(
        ComputeRequest(inputs=inputs, out=tmp_path / "d"), engine=DaskEngine(cluster)
    ).out
    np.testing.assert_array_equal(read_store(dask).X, X)
    np.testing.assert_array_equal(read_store(dask).local_effects, read_store(local).local_effects)
    assert [p["rows"] for p in read_meta(dask)["parts"]] == [1, 400]  # no part for p1
    single = tmp_path / "one"
    single.mkdir()
    pd.DataFrame(X[:1], columns=NAMES).to_parquet(single / "p.parquet", index=False)
    with pytest.raises(InputError, match=r"has 1 row; at least 2 are needed"):
        compute(
            ComputeRequest(inputs=ModelInputs(model=model, data=single), out=tmp_path / "e"),
            engine=DaskEngine(cluster),
        )


def test_part_store_writer_is_atomic(tmp_path: Path):
    out = tmp_path / "store"
    out.mkdir()
    (out / MANIFEST).write_text("old")
    with pytest.raises(RuntimeError, match="boom"), PartStoreWriter(out) as writer:
        (writer.part_path(0)).write_bytes(b"x")
        raise RuntimeError("boom")
    assert [p.name for p in tmp_path.iterdir()] == ["store"]
    assert (out / MANIFEST).read_text() == "old"


def test_damaged_directory_stores_are_refused(stores, tmp_path: Path):
    _, dask = stores
    copy = tmp_path / "copy"
    shutil.copytree(dask, copy)
    assert open_part_store(copy).n_rows == 12000
    (copy / "part-00001.npz").unlink()
    with pytest.raises(InputError, match=r"lacks its part 'part-00001.npz'"):
        open_store(copy)
    shutil.rmtree(copy)
    shutil.copytree(dask, copy)
    manifest = json.loads((copy / MANIFEST).read_text())
    manifest["parts"][0]["rows"] = 2999
    manifest["chunks"]["rows"][0] = 2999
    manifest["n_rows"] = 11999
    (copy / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(InputError, match=r"part 'part-00000.npz' has 3000 rows, its manifest"):
        read_meta(copy)
    shutil.rmtree(copy)
    shutil.copytree(dask, copy)
    shutil.copy(dask / "part-00000.npz", copy / "part-00003.npz")  # same shape, other bytes
    with pytest.raises(InputError, match=r"part 'part-00003.npz' changed since"):
        store_sha256(copy)
    (copy / MANIFEST).write_text("{")
    with pytest.raises(InputError, match="unreadable manifest.json"):
        open_store(copy)


def test_cli_engine_options(stores, dataset, cluster, cli, tmp_path: Path):
    model, data, _ = dataset
    _, dask = stores
    out = tmp_path / "cli"
    r = cli("compute", model, data, "-o", out, "--engine", "dask", "--scheduler", cluster)
    assert r.exit_code == 0, r.output
    assert "computed local effects: 12000 rows x 4 features" in r.stdout
    r = cli("rhale", out, "-o", tmp_path / "r.json", "--engine", "dask", "--scheduler", cluster)
    assert r.exit_code == 0, r.output
    r = cli("info", out)
    assert r.exit_code == 0 and "12000 rows x 4 features" in r.stdout
    part = read_meta(out)["parts"][1]  # a part alone: its meta has no feature_names
    r = cli("info", out / part["file"])
    assert r.exit_code == 0 and f"{part['rows']} rows x 4 features" in r.stdout
    r = cli("plot", tmp_path / "r.json", "--store", out, "-o", tmp_path / "plots")
    assert r.exit_code == 0, r.output  # the rug and violins read the directory store
    assert json.loads((tmp_path / "r.json").read_text())["store"]["sha256"] == store_sha256(out)
    r = cli("rebin", dask, "-o", tmp_path / "x.json", "--scheduler", cluster)
    assert r.exit_code == 2
    assert "--scheduler is the address of a Dask scheduler: it needs --engine dask" in r.stderr
    r = cli("rebin", dask, "-o", tmp_path / "x.json", "--engine", "spark")
    assert r.exit_code == 2 and "--engine must be one of local, dask, got 'spark'" in r.stderr
    r = cli("rebin", dask, "-o", tmp_path / "x.json", "--engine", "dask", "--bootstrap", "5")
    assert r.exit_code == 2 and "--bootstrap resamples the rows in memory" in r.stderr
    from sklearn.ensemble import GradientBoostingRegressor

    gb = tmp_path / "gb.pkl"
    _, _, X = dataset
    gb.write_bytes(pickle.dumps(GradientBoostingRegressor(n_estimators=5).fit(X, X[:, 0])))
    r = cli(
        "compute",
        gb,
        data,
        "-o",
        tmp_path / "p",
        "--engine",
        "dask",
        "--trust-pickle",
        "--scheduler",
        cluster,
    )
    assert r.exit_code == 2
    assert (
        "--engine dask evaluates the model on partitions of a data file, but the model is "
        "piecewise constant" in r.stderr
    )
    assert not (tmp_path / "p").exists()
    onnx_trees = Path(__file__).resolve().parent.parent / "sample_data/models/diabetes_gbr.onnx"
    r = cli("compute", onnx_trees, data, "-o", tmp_path / "p", "--engine", "dask")
    assert r.exit_code == 2
    assert "but a tree-ensemble ONNX model is piecewise constant" in r.stderr
    r = cli("compute", model, data, "-o", tmp_path / "p", "--engine", "dask", "--discrete", "a")
    assert r.exit_code == 2  # its levels are found by passes on the workers: too many
    assert "discrete feature 'a' has more than 2,000 levels" in r.stderr
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "keep.txt").write_text("mine")
    r = cli("compute", model, data, "-o", tmp_path / "plain", "--engine", "dask", "--force")
    assert r.exit_code == 2 and "is a directory that is not an ale directory store" in r.stderr


def test_engine_dask_without_the_extra_is_one_line_exit_2(stores, tmp_path: Path):
    _, dask = stores
    code = f"""
import sys
sys.modules["distributed"] = None  # as if the extra were not installed
from ale_cli.cli import app
app(["rhale", {str(dask)!r}, "-o", {str(tmp_path / "r.json")!r}, "--engine", "dask"])
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: --engine dask needs the optional packages dask and distributed: "
        "pip install ale-cli[dask]"
    ]


def test_a_local_cluster_leaves_the_environment_as_it_was(stores, dataset, tmp_path: Path):
    import os

    _, dask = stores
    before = dict(os.environ)
    rhale(
        RhaleRequest(store=dask, engine=engine_for("dask"))
    )  # no scheduler: a LocalCluster of its own
    assert dict(os.environ) == before


def test_ctrl_c_on_a_local_cluster_stops_it_without_a_worker_traceback():
    """A terminal's Ctrl-C is sent to the whole process group: the workers ignore it (they
    block SIGINT) and this process stops them, so nothing but its own error is printed."""
    import os
    import signal

    code = """
import sys, time
from ale_cli.engines.cluster import client
try:
    with client(None) as dask_client:
        running = dask_client.submit(time.sleep, 60, pure=False)
        while not any(dask_client.processing().values()):
            time.sleep(0.1)
        print("running", flush=True)
        time.sleep(60)
except KeyboardInterrupt:
    print("error: interrupted", file=sys.stderr)
    sys.exit(130)
"""
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "running\n"
        time.sleep(1)  # the workers in their task
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert (proc.returncode, err) == (130, "error: interrupted\n")


def test_the_local_engine_never_imports_dask(dataset, stores, tmp_path: Path):
    model, data, _ = dataset
    _, dask = stores
    code = f"""
import sys
from typer.testing import CliRunner
from ale_cli.cli import app
runs = (
    ["compute", {str(model)!r}, {str(data)!r}, "-o", {str(tmp_path / "s.npz")!r}],
    ["rebin", {str(tmp_path / "s.npz")!r}, "--binning", "quantile", "-o",
     {str(tmp_path / "a.json")!r}],
    ["rhale", {str(dask)!r}, "-o", {str(tmp_path / "b.json")!r}],
)
for args in runs:
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
print(sorted(m for m in sys.modules if m.split(".")[0] in ("dask", "distributed")))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def _mlp(path: Path, X: np.ndarray) -> Path:
    """A smooth scikit-learn model (tanh MLP) as a pickle: finite differences."""
    from sklearn.neural_network import MLPRegressor

    est = MLPRegressor(hidden_layer_sizes=(8,), activation="tanh", max_iter=200, random_state=0)
    with warnings.catch_warnings():  # not converged in 200 iterations: smooth all the same
        warnings.simplefilter("ignore")
        est.fit(X[:2000], np.tanh(X[:2000]) @ W + X[:2000, 0] * X[:2000, 1])
    path.write_bytes(pickle.dumps(est))
    return path


def test_a_scikit_learn_model_on_dask_gives_the_local_store(dataset, cluster, tmp_path: Path):
    """Its steps come from a profile of all rows, read once by the client and sent with the
    model: every worker loads the model the local engine loads, and the stores agree."""
    _, data, X = dataset
    model = _mlp(tmp_path / "mlp.pkl", X)
    inputs = ModelInputs(model=model, data=data, trust_pickle=True)
    local = compute(ComputeRequest(inputs=inputs, out=tmp_path / "l.npz", chunk_rows=1000))
    dask = compute(
        ComputeRequest(inputs=inputs, out=tmp_path / "d", chunk_rows=1000),
        engine=DaskEngine(cluster),
    )
    a, b = read_store(local.out), read_store(dask.out)
    assert local.method == dask.method == "finite-differences"
    np.testing.assert_array_equal(b.X, a.X)
    np.testing.assert_allclose(b.local_effects, a.local_effects, rtol=1e-12, atol=0)
    np.testing.assert_allclose(b.prediction, a.prediction, rtol=1e-12, atol=1e-12)
    ma, mb = read_meta(local.out), read_meta(dask.out)
    assert mb["cache_key"] == ma["cache_key"]
    assert mb["method_details"] == ma["method_details"]  # the same steps on every worker
    one, other = (rhale(RhaleRequest(store=s)).summary for s in (local.out, dask.out))
    _assert_same(one, other)


@pytest.mark.parametrize("estimator", ["ale", "dale"])
def test_interact_on_dask_equals_the_local_engine(dataset, cluster, estimator):
    """The second-order pass on the workers (corners, or mixed derivatives by autodiff):
    the summary is the local engine's; the TorchScript model's x_a x_b term shows."""
    from ale_cli.estimators.interact import InteractRequest, interact

    model, data, _ = dataset
    inputs = ModelInputs(model=model, data=data)
    request = InteractRequest(
        inputs=inputs, pairs=(("a", "b"), ("c", "d")), bins=6, estimator=estimator,
        chunk_rows=1000,
    )  # fmt: skip
    runs = [interact(request, **kw).summary for kw in ({}, {"engine": DaskEngine(cluster)})]
    local, dask = runs
    assert local.n_rows == dask.n_rows == 12000
    for a, b in zip(local.interactions, dask.interactions, strict=True):
        assert (a.features, a.status) == (b.features, b.status)
        for key in ("effect", "cell_effect", "counts", "edges_a", "edges_b"):
            np.testing.assert_allclose(
                np.asarray(getattr(b, key), dtype=float),
                np.asarray(getattr(a, key), dtype=float),
                rtol=1e-12,
                atol=1e-12,
                err_msg=key,
            )
    np.testing.assert_allclose(
        dask.prediction["quantiles"], local.prediction["quantiles"], rtol=1e-12, atol=0
    )
    ab = np.asarray(dask.interactions[0].effect)
    assert np.ptp(ab) > 0.5  # f has x_a x_b: a real surface


def test_interact_on_dask_reads_a_store_in_parts(dataset, cluster, stores, cli, tmp_path: Path):
    """A store's rows on the workers (the directory store's part files), the pair it lacks
    computed there by the model shipped to them: the summary of the local engine."""
    model, data, _ = dataset
    _, parts = stores
    outs = []
    for engine in (("--engine", "local"), ("--engine", "dask", "--scheduler", cluster)):
        out = tmp_path / f"i-{engine[1]}.json"
        r = cli(
            "interact", model, data, "--pair", "a,b", "--store", parts, "--bins", "5",
            "-o", out, *engine,
        )  # fmt: skip
        assert r.exit_code == 0, r.output
        assert "has no mixed derivatives of a,b; computing them" in r.stderr
        outs.append(json.loads(out.read_text())["interactions"][0])
    np.testing.assert_allclose(outs[1]["effect"], outs[0]["effect"], rtol=1e-12, atol=1e-12)
    assert outs[1]["counts"] == outs[0]["counts"]


def test_pairs_on_dask_store_the_local_mixed_derivatives(dataset, cluster, tmp_path: Path):
    """compute --pairs on the workers: every part holds the mixed derivatives of its rows
    (d2f/da db = 1 for f's x_a x_b term, 0 for c, d), and interact --store reads the
    directory store as the file store."""
    from ale_cli.estimators.interact import InteractRequest, interact

    model, data, _ = dataset
    inputs = ModelInputs(model=model, data=data)
    pairs = (("a", "b"), ("c", "d"))
    local, dask = (
        compute(
            ComputeRequest(inputs=inputs, out=tmp_path / out, pairs=pairs, chunk_rows=1000),
            **kw,
        )
        for out, kw in (("l.npz", {}), ("d", {"engine": DaskEngine(cluster)}))
    )
    a, b = read_store(local.out), read_store(dask.out)
    mixed = b.mixed_derivatives()
    np.testing.assert_array_equal(mixed[("a", "b")], a.mixed_derivatives()[("a", "b")])
    np.testing.assert_allclose(mixed[("a", "b")], 1.0, rtol=1e-12)
    np.testing.assert_allclose(mixed[("c", "d")], 0.0, atol=1e-12)
    assert open_part_store(dask.out).pairs() == pairs
    runs = [
        interact(InteractRequest(inputs=inputs, pairs=pairs, bins=5, store=s, chunk_rows=1000))
        for s in (local.out, dask.out)
    ]
    for x, y in zip(runs[0].summary.interactions, runs[1].summary.interactions, strict=True):
        np.testing.assert_allclose(y.effect, x.effect, rtol=1e-12, atol=1e-12)
    assert not [n for n in runs[1].notes if "not used" in n]  # the store's derivatives were read


# -- row-group partitions of a large Parquet file ---------------------------------------------


@given(
    sizes=st.lists(st.integers(0, 5000), max_size=60),
    target=st.integers(1, 40000),
)
@settings(max_examples=300, deadline=None)
def test_row_group_ranges_cover_every_row_group_once_in_order(sizes: list[int], target: int):
    ranges = split_row_groups(sizes, target=target)
    bounds = [b for r in ranges for b in r]
    assert bounds == sorted(bounds) and all(a < b for a, b in ranges)  # in order, not empty
    covered = [i for a, b in ranges for i in range(a, b)]
    assert covered == list(range(len(sizes)))  # every row group exactly once
    total = sum(sizes)
    k = max(1, -(-total // target))
    assert len(ranges) <= k
    for a, b in ranges:  # each range holds about T / k <= target rows
        assert sum(sizes[a:b]) * k <= total + k * max(sizes)
    if sizes and total <= target:
        assert ranges == [(0, len(sizes))]


def test_partitions_are_files_then_row_group_ranges(dataset, tmp_path: Path, monkeypatch):
    _, data, X = dataset
    files = sorted(data.rglob("*.parquet"))
    default = plan_partitions(files, fmt="parquet", slots=2)  # 12000 rows: no file is cut
    assert [(p.file, p.row_groups, p.rows, p.offset) for p in default] == [
        (f, None, 3000, 3000 * i) for i, f in enumerate(files)
    ]
    monkeypatch.setattr("ale_cli.data.sources.MIN_PARTITION_ROWS", 1)
    parts = plan_partitions(files, fmt="parquet", slots=2)  # about 12000 / 8 rows a task
    sizes = [700, 700, 700, 700, 200]  # each file's row groups
    assert [p.file_index for p in parts] == sorted(p.file_index for p in parts)
    for i, f in enumerate(files):
        mine = [p for p in parts if p.file == f]
        assert len(mine) > 1 and [p.file_index for p in mine] == [i] * len(mine)
        assert [g for p in mine for g in range(*p.row_groups)] == list(range(5))
        assert [p.rows for p in mine] == [sum(sizes[slice(*p.row_groups)]) for p in mine]
    assert [p.offset for p in parts] == list(np.cumsum([0] + [p.rows for p in parts])[:-1])
    assert max(p.rows for p in parts) <= 12000 / 8 + 700
    csv = tmp_path / "d.csv"
    pd.DataFrame(X, columns=NAMES).to_csv(csv, index=False)
    assert plan_partitions([csv], fmt="csv", slots=2) == (Partition(csv, 0, None, 0, 0),)


def test_a_dataset_of_files_cut_into_ranges_hashes_as_the_local_engine(
    stores, dataset, cluster, tmp_path: Path, monkeypatch
):
    """Every file cut in two ranges: the files are hashed by tasks of their own, and the
    dataset's hash, cache key and rows are the local engine's."""
    local, _ = stores
    model, data, X = dataset
    monkeypatch.setattr("ale_cli.data.sources.MIN_PARTITION_ROWS", 1)
    request = ComputeRequest(
        inputs=ModelInputs(model=model, data=data),
        out=tmp_path / "d",
        chunk_rows=1000,
    )
    dask = compute(request, engine=DaskEngine(cluster)).out
    meta = read_meta(dask)
    assert [p["row_groups"] for p in meta["parts"]] == [[0, 3], [3, 5]] * 4
    assert [p["rows"] for p in meta["parts"]] == [2100, 900] * 4
    assert meta["data"]["sha256"] == data_sha256(data)
    assert meta["cache_key"] == read_meta(local)["cache_key"]
    np.testing.assert_array_equal(read_store(dask).X, X)
    np.testing.assert_allclose(
        read_store(dask).local_effects, read_store(local).local_effects, rtol=1e-12, atol=1e-12
    )


@pytest.fixture(scope="module")
def one_file(dataset, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    """One Parquet file of 5000 rows in 17 row groups (16 of 300, one of 200), NaN in b at
    rows 1234 and 4500, and its rows without them."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(5000, 4))
    X[[1234, 4500], 1] = np.nan
    path = tmp_path_factory.mktemp("one") / "big.parquet"
    pd.DataFrame(X, columns=NAMES).to_parquet(path, row_group_size=300, index=False)
    return path, X[np.isfinite(X).all(axis=1)]


def test_one_parquet_file_is_split_into_row_group_partitions(
    dataset, one_file, cluster, tmp_path: Path, monkeypatch
):
    import pyarrow.parquet as pq

    model, _, _ = dataset
    path, kept = one_file
    monkeypatch.setattr("ale_cli.data.sources.MIN_PARTITION_ROWS", 1)  # ~5000/8 a task
    inputs = ModelInputs(model=model, data=path, dropna=True)
    local = compute(ComputeRequest(inputs=inputs, out=tmp_path / "l.npz", chunk_rows=256)).out
    request = ComputeRequest(inputs=inputs, out=tmp_path / "d", chunk_rows=256)
    dask = compute(request, engine=DaskEngine(cluster)).out
    a, b = read_store(local), read_store(dask)
    np.testing.assert_array_equal(b.X, kept)
    np.testing.assert_array_equal(b.X, a.X)
    np.testing.assert_allclose(b.local_effects, a.local_effects, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(b.prediction, a.prediction, rtol=1e-12, atol=1e-12)
    expected = W / np.cosh(kept) ** 2 + np.column_stack([kept[:, 1], kept[:, 0], 0 * kept[:, :2]])
    np.testing.assert_allclose(b.local_effects, expected, rtol=1e-12, atol=1e-12)
    ma, mb = read_meta(local), read_meta(dask)
    assert mb["cache_key"] == ma["cache_key"]
    assert mb["data"]["sha256"] == ma["data"]["sha256"] == data_sha256(path)
    assert mb["data"]["rows_dropped"] == ma["data"]["rows_dropped"] == 2
    parts = mb["parts"]
    assert len(parts) > 2 and mb["engine"]["partitions"] == len(parts)
    assert {p["source"] for p in parts} == {path.as_posix()}
    assert [g for p in parts for g in range(*p["row_groups"])] == list(range(17))
    footer = pq.ParquetFile(path).metadata
    sizes = [footer.row_group(i).num_rows for i in range(footer.num_row_groups)]
    starts = np.cumsum([0, *sizes])
    for p in parts:  # the footer's rows of its row groups, less the NaN rows among them
        first, last = starts[p["row_groups"][0]], starts[p["row_groups"][1]]
        nan_rows = sum(first <= r < last for r in (1234, 4500))
        assert p["rows"] == last - first - nan_rows
    refused = ComputeRequest(inputs=ModelInputs(model=model, data=path), out=tmp_path / "e")
    with pytest.raises(InputError, match=r"big.parquet' \(row groups \d+-\d+\) has 1 row with"):
        compute(refused, engine=DaskEngine(cluster))
    assert not (tmp_path / "e").exists()


def test_interact_on_dask_splits_one_file_into_row_groups(dataset, one_file, cluster, monkeypatch):
    from ale_cli.estimators.interact import InteractRequest, interact

    model, _, _ = dataset
    path, kept = one_file
    monkeypatch.setattr("ale_cli.data.sources.MIN_PARTITION_ROWS", 1)
    inputs = ModelInputs(model=model, data=path, dropna=True)
    request = InteractRequest(inputs=inputs, pairs=(("a", "b"),), bins=5, chunk_rows=256)
    local, dask = (interact(request, **kw).summary for kw in ({}, {"engine": DaskEngine(cluster)}))
    assert local.n_rows == dask.n_rows == len(kept)
    np.testing.assert_allclose(
        dask.interactions[0].effect, local.interactions[0].effect, rtol=1e-12, atol=1e-12
    )


def test_dask_quantiles_past_the_gather_limit_take_the_slower_path(stores, cluster, monkeypatch):
    """A bucket limit of 2 rows leaves every column to the slower passes on the workers;
    the summaries still equal the local engine's (which takes its own slower path)."""
    import ale_cli.core.quantile_cells as quantile_cells

    local, dask = stores
    monkeypatch.setattr(quantile_cells, "MAX_BUCKET_ROWS", 2)
    for make in (
        lambda s, **kw: rebin(RebinRequest(store=s, bins=12, binning="quantile", **kw)),
        lambda s, **kw: rhale(RhaleRequest(store=s, max_bins=30, grid="quantile", **kw)),
    ):
        _assert_same(make(local).summary, make(dask, engine=engine_for("dask", cluster)).summary)


def test_the_python_api_runs_classic_and_interact_on_dask(dataset, cluster):
    from ale_cli import api

    model, data, _ = dataset
    for run, kw in ((api.classic, {"bins": 8}), (api.interact, {"pairs": ["a,b"], "bins": 4})):
        local = run(model, data, chunk_rows=1000, **kw)
        dask = run(model, data, chunk_rows=1000, engine="dask", scheduler=cluster, **kw)
        assert dask.n_rows == local.n_rows == 12000
        one, other = (s.features or s.interactions for s in (local, dask))
        assert len(one) == len(other) > 0
        for a, b in zip(one, other, strict=True):
            np.testing.assert_allclose(b.effect, a.effect, rtol=1e-12, atol=1e-12)


def test_the_python_api_replaces_a_store_file_with_a_directory_store(dataset, cluster, tmp_path):
    """As ``ale compute --engine dask --force``: a store file at the output is ale's own."""
    from ale_cli import api

    model, data, _ = dataset
    out = tmp_path / "s.npz"
    api.compute(model, data, out=out)
    api.compute(model, data, out=out, engine="dask", scheduler=cluster, force=True)
    assert (out / "manifest.json").is_file()


def test_every_output_on_dask_equals_local(cluster, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A net of 3 outputs on two partitions: the directory store holds each output's rows
    (and the binary column's level jumps), and rhale, rebin and classic on it equal the
    local run's."""
    import torch

    from ale_cli import api

    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    model = tmp_path / "net.pt"
    torch.jit.script(net.double().eval()).save(str(model))
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(240, 3)), columns=["a", "b", "s"])
    frame["s"] = rng.integers(0, 2, 240).astype(float)  # binary: held per level by default
    (tmp_path / "data").mkdir()
    for i, half in enumerate((frame[:120], frame[120:])):
        half.to_parquet(tmp_path / "data" / f"p{i}.parquet")
    dask = {"engine": "dask", "scheduler": cluster}
    args = (model, tmp_path / "data")
    api.compute(*args, out=tmp_path / "local.npz", output="all")
    api.compute(*args, out=tmp_path / "dask", output="all", **dask)
    local, parts = read_store(tmp_path / "local.npz"), read_store(tmp_path / "dask")
    assert parts.meta["outputs"] == local.meta["outputs"]
    for k in range(3):
        one, other = local.select_output(k), parts.select_output(k)
        assert sorted(other.extra) == sorted(one.extra) == ["level_down", "level_up"]
        for name in ("X", "local_effects", "prediction"):
            np.testing.assert_allclose(getattr(other, name), getattr(one, name), **EXACT)
        for name in one.extra:
            np.testing.assert_allclose(other.extra[name], one.extra[name], **EXACT)
    pairs = [
        (run(tmp_path / "local.npz", **kw), run(tmp_path / "dask", **dask, **kw))
        for run, kw in ((api.rhale, {}), (api.rebin, {"bins": 5}))
    ]
    pairs.append(tuple(api.classic(*args, output="all", bins=5, **w) for w in ({}, dask)))
    for one, other in pairs:
        assert [(f.name, f.output) for f in other.features] == [
            (n, str(k)) for k in range(3) for n in ("a", "b", "s")
        ]
        for got, want in zip(other.features, one.features, strict=True):
            assert (got.name, got.output, got.kind) == (want.name, want.output, want.kind)
            for name in ARRAYS:
                np.testing.assert_allclose(getattr(got, name), getattr(want, name), **EXACT)
