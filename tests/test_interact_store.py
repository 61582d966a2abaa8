"""``ale interact --store`` read chunk by chunk: the summaries of the whole store read at
once (``chunk_rows=None``) to 1e-12 whatever the store's chunk sizes (hypothesis),
known cell means of the cached mixed derivatives, pairs the store lacks computed from
the model, the non-finite screen with the store's row numbers, and old stores."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pandas as pd
import pytest
import torch
from test_streaming_classic import assert_same  # tests/ is on sys.path (rootdir conftest)
from torch import nn

from ale_cli.errors import InputError
from ale_cli.estimators.inputs import ModelInputs
from ale_cli.estimators.interact import InteractRequest, interact
from ale_cli.estimators.local_effects import ComputeRequest, compute
from ale_cli.store.npz import MIXED, PAIRS, Store, StoreFile, StoreWriter, read_store
from ale_cli.store.npz import write_store as write_old_store
from ale_cli.summary.model import summary_json

N = 240
STORED = (("a", "b"), ("b", "c"), ("a", "d"))


class Smooth(nn.Module):
    """float64: f = sin(a) b + c^2 b / 2 + 0.3 a c + exp(b / 2) d (d constant).

    d2f/da db = cos(a), d2f/db dc = c, d2f/da dc = 0.3.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b, c, d = x[:, 0], x[:, 1], x[:, 2], x[:, 3]
        return torch.sin(a) * b + c**2 * b / 2 + 0.3 * a * c + torch.exp(b / 2) * d


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A CSV (normal, heavy-tailed, tied and constant columns), the model, an edges file
    and a store of the mixed derivatives of STORED in chunks of 50 rows."""
    root = tmp_path_factory.mktemp("istore")
    rng = np.random.default_rng(7)
    X = np.column_stack(
        [
            rng.normal(size=N),
            rng.standard_t(2, size=N),
            np.round(rng.uniform(-2, 2, size=N) * 2) / 2,  # 9 values: ties at the edges
            np.full(N, 1.5),
        ]
    )
    data = root / "d.csv"
    pd.DataFrame(X, columns=["a", "b", "c", "d"]).to_csv(data, index=False)
    model = root / "m.pt"
    torch.jit.save(torch.jit.script(Smooth()), str(model))
    edges = root / "edges.json"
    edges.write_text(
        json.dumps({"a": [-1.0, -0.2, 0.0, 0.7, 1.5], "b": [-2, 0, 1, 2.5], "c": [-1, 0, 1]})
    )
    store = root / "s.npz"
    inputs = ModelInputs(model=model, data=data)
    compute(ComputeRequest(inputs=inputs, out=store, pairs=STORED, chunk_rows=50))
    return {"root": root, "X": X, "inputs": inputs, "edges": edges, "store": store, "whole": {}}


OPTIONS: list[dict[str, Any]] = [
    {},  # 10 type-1 quantile bins, every pair from the store
    {"binning": "uniform", "bins": 4, "pairs": (("b", "a"), ("c", "b"))},  # reversed pairs
    {"edges": "edges", "pairs": (("a", "b"), ("a", "c"))},  # (a, c) from the model
    {"bins": 6, "pairs": (("a", "d"), ("c", "a"), ("b", "c"))},  # d constant, (c, a) computed
]


def _run(case: dict[str, Any], which: int, store: Path, chunk_rows: int | None) -> Any:
    options = dict(OPTIONS[which])
    options.setdefault("pairs", STORED[:2])
    if options.get("edges") == "edges":
        options["edges"] = case["edges"]
    request = InteractRequest(inputs=case["inputs"], store=store, chunk_rows=chunk_rows, **options)
    return interact(request)


def _numbers(result: Any) -> dict[str, Any]:
    return json.loads(summary_json(result.summary, timestamp=False))


def rechunk(source: Path, out: Path, cuts: list[int]) -> Path:
    """The store at ``source`` rewritten with chunks ending at the sorted ``cuts``."""
    whole = read_store(source)
    meta = {k: v for k, v in whole.meta.items() if k != "chunks"}
    bounds = [0, *sorted(set(cuts)), whole.n_rows]
    with StoreWriter(out) as writer:
        for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
            writer.add(
                {
                    "X": whole.X[lo:hi],
                    "local_effects": whole.local_effects[lo:hi],
                    "prediction": whole.prediction[lo:hi],
                    MIXED: whole.extra[MIXED][:, lo:hi],
                }
            )
        writer.add_array(PAIRS, whole.extra[PAIRS])
        writer.finish(feature_names=whole.feature_names, input_names=whole.input_names, meta=meta)
    return out


def _whole(case: dict[str, Any], which: int) -> Any:
    if which not in case["whole"]:
        case["whole"][which] = _run(case, which, case["store"], None)
    return case["whole"][which]


@pytest.mark.parametrize(
    ("which", "cuts"), [(0, []), (1, [1, 2, 3, 100, 239]), (2, [50, 51]), (3, [120])]
)
def test_the_summary_does_not_depend_on_the_chunks_of_the_store(case, which, cuts):
    """End to end (the kernel's own property is tests/test_interact_kernel.py): a store
    cut into other chunks gives the summary of the store written in chunks of 50."""
    store = rechunk(case["store"], case["root"] / f"r{which}.npz", cuts)
    whole = _whole(case, which)
    streamed = _run(case, which, store, 64)
    a, b = _numbers(streamed), _numbers(whole)
    for summary in (a, b):  # the same rows and numbers, in another file
        assert summary["store"].pop("path") and summary["store"].pop("sha256")
    assert_same(a, b)
    notes = tuple(n.replace(str(store), str(case["store"])) for n in streamed.notes)
    assert notes == whole.notes
    assert streamed.summary.n_rows == N


@pytest.mark.parametrize("chunk_rows", [7, 1000])
def test_compute_chunk_rows_do_not_change_the_streamed_summary(case, tmp_path, chunk_rows):
    """Stores written by ale compute itself, in chunks of 7 rows and in one chunk."""
    store = tmp_path / "c.npz"
    request = ComputeRequest(inputs=case["inputs"], out=store, pairs=STORED, chunk_rows=chunk_rows)
    compute(request)
    assert len(read_store(store).meta["chunks"]["rows"]) == -(-N // chunk_rows)
    for which in (0, 2):
        a, b = _numbers(_run(case, which, store, 64)), _numbers(_whole(case, which))
        for summary in (a, b):
            assert summary["store"].pop("path") and summary["store"].pop("sha256")
        assert_same(a, b)


def test_the_streamed_cells_hold_the_known_mixed_derivatives(case):
    """Not only equal to the whole store: d2f/da db = cos(a) and d2f/db dc = c, so each
    cell's count and mean are those of cos(a) (of c) over the data rows in it."""
    result = _run(case, 1, case["store"], 64)
    X = case["X"]
    assert result.summary.params["cached_pairs"] == [["b", "a"], ["c", "b"]]
    for item, (u, v, truth) in zip(
        result.summary.interactions,
        ((X[:, 1], X[:, 0], np.cos(X[:, 0])), (X[:, 2], X[:, 1], X[:, 2])),
        strict=True,
    ):
        za, zb = np.asarray(item.edges_a), np.asarray(item.edges_b)
        np.testing.assert_allclose(za, np.linspace(u.min(), u.max(), 5), rtol=1e-15)
        ia = np.clip(np.searchsorted(za, u, side="left") - 1, 0, len(za) - 2)
        ib = np.clip(np.searchsorted(zb, v, side="left") - 1, 0, len(zb) - 2)
        counts = np.zeros((len(za) - 1, len(zb) - 1), dtype=int)
        np.add.at(counts, (ia, ib), 1)
        np.testing.assert_array_equal(item.counts, counts)
        for k, m in zip(*np.nonzero(counts), strict=True):
            want = truth[(ia == k) & (ib == m)].mean()
            np.testing.assert_allclose(item.cell_effect[k, m], want, rtol=1e-12, atol=1e-12)


def test_the_streamed_path_reads_the_store_chunk_by_chunk(case, tmp_path):
    store = rechunk(case["store"], tmp_path / "r.npz", [30, 100, 101, 200])
    with (
        mock.patch("ale_cli.store.npz.read_store", side_effect=AssertionError("read whole")),
        mock.patch.object(
            StoreFile, "read_chunks", autospec=True, side_effect=StoreFile.read_chunks
        ) as spy,
    ):
        result = _run(case, 0, store, 64)
    # two passes for the quantile edges (the ranges are in the manifest), one for the cells
    # (one part: the store's 5 chunks)
    assert spy.call_count == 3
    assert result.summary.store["path"] == str(store)
    assert result.notes == ()


def test_an_edges_file_needs_no_pass_for_the_ranges_a_store_does_not_record(case):
    request = InteractRequest(
        inputs=case["inputs"], store=case["store"], pairs=(("a", "b"),), edges=case["edges"]
    )
    with (
        mock.patch.object(StoreFile, "x_range", return_value=None),  # as in schema 1-2
        mock.patch.object(
            StoreFile, "read_chunks", autospec=True, side_effect=StoreFile.read_chunks
        ) as spy,
    ):
        result = interact(request)
    assert spy.call_count == 1  # the cells alone
    assert_same(_numbers(result), _numbers(interact(request)))


def test_pairs_missing_from_the_store_are_computed_from_the_model(case):
    result = _run(case, 2, case["store"], 64)
    assert result.notes[0] == (
        f"store '{case['store']}' has no mixed derivatives of a,c; computing them "
        "(add them to the store with 'ale compute --pair')"
    )
    assert result.summary.params["cached_pairs"] == [["a", "b"]]
    ac = result.summary.interactions[1]
    occupied = np.asarray(ac.counts) > 0
    np.testing.assert_allclose(np.asarray(ac.cell_effect)[occupied], 0.3, rtol=1e-12)
    assert "mixed_derivatives_s" in result.timings


def test_a_store_the_estimator_does_not_use_streams_the_data_and_says_so(case):
    request = InteractRequest(
        inputs=case["inputs"], store=case["store"], pairs=(("a", "b"),), estimator="ale"
    )
    result = interact(request)
    assert result.notes[0] == (
        f"store '{case['store']}' is not used by the ale estimator (it needs the model)"
    )
    assert result.summary.store["path"] is None
    whole = interact(replace(request, chunk_rows=None))
    assert_same(_numbers(result), _numbers(whole))
    assert result.notes == whole.notes


def test_a_schema_2_store_is_read_as_one_chunk(case, tmp_path):
    whole = read_store(case["store"])
    old = tmp_path / "old.npz"
    meta = {k: v for k, v in whole.meta.items() if k != "chunks"} | {"schema_version": 2}
    write_old_store(
        old,
        Store(
            X=whole.X,
            local_effects=whole.local_effects,
            prediction=whole.prediction,
            feature_names=whole.feature_names,
            meta=meta,
            extra={PAIRS: whole.extra[PAIRS], MIXED: whole.extra[MIXED]},
            input_names=whole.input_names,
        ),
    )
    a, b = _numbers(_run(case, 0, old, 64)), _numbers(_whole(case, 0))
    assert a["store"].pop("path") == str(old)
    for key in ("path", "sha256"):
        b["store"].pop(key)
    assert a["store"].pop("sha256")
    assert_same(a, b)


@pytest.mark.parametrize("drop", [False, True])
def test_nonfinite_stored_values_are_refused_naming_the_member_and_row(case, tmp_path, drop):
    """A stored mixed derivative that is NaN (a store changed by hand: ale writes none,
    its writer refuses one) is refused naming the member and its row, with or without
    ``drop_nonfinite`` (which is about the model's values, not a damaged store's)."""
    whole = read_store(case["store"])
    bad = tmp_path / "bad.npz"
    meta = {k: v for k, v in whole.meta.items() if k != "chunks"}
    with StoreWriter(bad) as writer:
        for lo in range(0, N, 50):
            writer.add(
                {
                    "X": whole.X[lo : lo + 50],
                    "local_effects": whole.local_effects[lo : lo + 50],
                    "prediction": whole.prediction[lo : lo + 50],
                    MIXED: whole.extra[MIXED][:, lo : lo + 50],
                }
            )
        writer.add_array(PAIRS, whole.extra[PAIRS])
        writer.finish(feature_names=whole.feature_names, input_names=whole.input_names, meta=meta)
    with np.load(bad) as z:
        arrays = {name: z[name] for name in z.files}
    arrays[f"{MIXED}.00001"][0, [7, 8]] = np.nan  # rows 57 and 58 of the store
    with open(bad, "wb") as fh:
        np.savez(fh, **arrays)
    inputs = ModelInputs(model=case["inputs"].model, data=case["inputs"].data, drop_nonfinite=drop)
    for chunk_rows in (64, None):
        with pytest.raises(InputError) as info:
            interact(
                InteractRequest(inputs=inputs, store=bad, pairs=STORED[:2], chunk_rows=chunk_rows)
            )
        assert f"store '{bad}': array 'mixed_derivatives" in str(info.value)
        assert "has 2 NaN or infinite values (first: row 7" in str(info.value)


def test_a_model_matched_by_column_names_is_loaded_with_the_whole_table(case, tmp_path):
    """A pair the store lacks needs the model; a columns file matches the data's columns by
    name, which the streamed reader does not: the whole table is read, with a note."""
    model = tmp_path / "m.pt"
    model.write_bytes(case["inputs"].model.read_bytes())  # the same bytes: the store matches
    (tmp_path / "m.columns.json").write_text(json.dumps({"columns": ["a", "b", "c", "d"]}))
    inputs = ModelInputs(model=model, data=case["inputs"].data)
    request = InteractRequest(
        inputs=inputs, store=case["store"], pairs=(("a", "b"), ("a", "c")), chunk_rows=64
    )
    streamed, whole = interact(request), interact(replace(request, chunk_rows=None))
    assert streamed.notes[1].startswith("read the whole table: columns file ")
    assert streamed.notes[:1] + streamed.notes[2:] == whole.notes
    assert streamed.summary.params["cached_pairs"] == [["a", "b"]]
    assert_same(_numbers(streamed), _numbers(whole))


@pytest.fixture(scope="module")
def dask_engine() -> Any:
    pytest.importorskip("distributed")
    from ale_cli.engines import engine_for

    with engine_for("dask") as engine:  # one LocalCluster for the module
        yield engine


def test_the_dask_engine_gives_the_summary_of_the_local_engine(case, dask_engine):
    """The same kernel on the workers, the model shipped once per worker: from a store
    with a pair it lacks (autodiff on the workers; the store in parts of chunks) and from
    a data file (cell corners). The whole table is refused, as for every estimator."""
    runs = [
        InteractRequest(inputs=case["inputs"], store=case["store"], chunk_rows=64,
                        edges=case["edges"], pairs=(("a", "b"), ("a", "c"))),
        InteractRequest(inputs=case["inputs"], pairs=STORED, estimator="ale", chunk_rows=64),
    ]  # fmt: skip
    for request in runs:
        local, dask = interact(request), interact(request, engine=dask_engine)
        assert_same(_numbers(dask), _numbers(local))
        assert dask.notes == local.notes
        assert dask.summary.n_rows == N
    whole = InteractRequest(inputs=case["inputs"], pairs=STORED[:1], chunk_rows=None)
    with pytest.raises(InputError, match="engine dask evaluates the model on partitions"):
        interact(whole, engine=dask_engine)
