"""The golden cases: one table of Python API calls shared by ``make.py`` (which wrote the
golden files) and ``tests/test_golden.py`` (which recomputes them and compares).

Each case is a function of a :class:`Workspace` returning a plain JSON-ready record: the
summaries it made (:func:`summary_record`) and the stores it wrote
(:func:`store_record`). Stores used by several cases are computed once per workspace.

The calls use today's API names; when the API changes, change the calls here (not the
golden files) and the numbers must stay the same.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ale_cli import api
from ale_cli.estimators.inputs import ModelInputs
from ale_cli.estimators.local_effects import ComputeRequest
from ale_cli.estimators.local_effects import compute as compute_request
from ale_cli.store.npz import MIXED, PAIRS
from ale_cli.summary.model import Summary, summary_json

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "sample_data"
GOLDEN = Path(__file__).resolve().parent
#: the sample models the cases load (``make samples`` builds them)
MODELS = (
    "diabetes_mlp.pt",
    "diabetes_mlp.onnx",
    "rhale_synthetic.pt",
    "diabetes_hgb.skops",
    "credit_logreg.skops",
    "diabetes_gbr.onnx",
)
HGB_TRUST = ("sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",)
#: rows sampled from each store array (first, last and five between)
SAMPLED_ROWS = 7


class Workspace:
    """The sample models, a scratch directory, and the stores computed so far."""

    def __init__(self, models: Path, tmp: Path) -> None:
        self.models = models
        self.tmp = tmp
        self._stores: dict[str, Path] = {}

    def model(self, name: str) -> Path:
        return self.models / name

    def store(self, name: str) -> Path:
        """The store ``name`` of :data:`STORES`, computed on first use."""
        if name not in self._stores:
            self._stores[name] = STORES[name](self, self.tmp / f"{name}.npz")
        return self._stores[name]


# -- stores ------------------------------------------------------------------------------


def _mlp_frame(ws: Workspace, out: Path) -> Path:
    """The float64 MLP on the diabetes data as a DataFrame (in memory, one chunk)."""
    frame = pd.read_csv(SAMPLE / "diabetes.csv")
    api.compute(ws.model("diabetes_mlp.pt"), frame, out=out, exclude="target", force=True)
    return out


def _synthetic_streamed(ws: Workspace, out: Path) -> Path:
    """The RHALE example read 256 rows at a time (4 chunks) with the mixed derivative of
    (x2, x3) cached. ``api.compute`` has no chunk size, so the request is built here."""
    inputs = ModelInputs(
        model=ws.model("rhale_synthetic.pt"), data=SAMPLE / "rhale_synthetic.csv", exclude="y"
    )
    request = ComputeRequest(inputs=inputs, out=out, pairs=(("x2", "x3"),), chunk_rows=256)
    compute_request(request, force=True)
    return out


def _onnx_streamed(ws: Workspace, out: Path) -> Path:
    """The MLP as an ONNX graph (translated to torch) on the diabetes file, 100 rows at a
    time (5 chunks, the file read twice)."""
    inputs = ModelInputs(
        model=ws.model("diabetes_mlp.onnx"), data=SAMPLE / "diabetes.csv", exclude="target"
    )
    compute_request(ComputeRequest(inputs=inputs, out=out, chunk_rows=100), force=True)
    return out


def _hgb_secant(ws: Workspace, out: Path) -> Path:
    """A tree model (secants on a fine grid) with ``sex`` stored per level, on the diabetes
    rows repeated 12 times (5304 rows: enough per fine bin for the secants to be used)."""
    frame = pd.read_csv(SAMPLE / "diabetes.csv")
    api.compute(
        ws.model("diabetes_hgb.skops"),
        pd.concat([frame] * 12, ignore_index=True),
        out=out,
        exclude="target",
        features=("bmi", "bp", "s5", "sex"),
        discrete="sex",
        trust=HGB_TRUST,
        force=True,
    )
    return out


def _synthetic_dask(ws: Workspace, out: Path) -> Path:
    """The RHALE example on a local Dask cluster: a directory store."""
    out = out.with_suffix("")
    api.compute(
        ws.model("rhale_synthetic.pt"),
        SAMPLE / "rhale_synthetic.parquet",
        out=out,
        exclude="y",
        engine="dask",
        force=True,
    )
    return out


STORES: dict[str, Callable[[Workspace, Path], Path]] = {
    "mlp_frame": _mlp_frame,
    "synthetic_streamed": _synthetic_streamed,
    "onnx_streamed": _onnx_streamed,
    "hgb_secant": _hgb_secant,
    "synthetic_dask": _synthetic_dask,
}


# -- cases -------------------------------------------------------------------------------


def compute_frame(ws: Workspace) -> dict[str, Any]:
    """compute in memory; rebin on 10 uniform bins."""
    store = ws.store("mlp_frame")
    return {
        "store": store_record(store),
        "rebin": summary_record(api.rebin(store, bins=10, binning="uniform")),
    }


def compute_streamed(ws: Workspace) -> dict[str, Any]:
    """compute streamed in 4 chunks with a cached pair; rhale with its defaults."""
    store = ws.store("synthetic_streamed")
    return {"store": store_record(store), "rhale": summary_record(api.rhale(store))}


def compute_onnx_streamed(ws: Workspace) -> dict[str, Any]:
    """compute of an ONNX graph streamed in 5 chunks; rebin on 8 quantile bins."""
    store = ws.store("onnx_streamed")
    return {
        "store": store_record(store),
        "rebin": summary_record(api.rebin(store, bins=8, binning="quantile")),
    }


def compute_dask(ws: Workspace) -> dict[str, Any]:
    """compute on a local Dask cluster (a directory store); rhale on it."""
    store = ws.store("synthetic_dask")
    return {
        "store": store_record(store),
        "rhale": summary_record(api.rhale(store, max_bins=20, features="x1,x2")),
    }


def rebin_edges(ws: Workspace) -> dict[str, Any]:
    """rebin on edges given per feature (some rows outside them)."""
    edges = ws.tmp / "edges.json"
    edges.write_text(
        json.dumps({"bmi": [20.0, 24.5, 27.0, 31.0, 40.0], "s5": [3.5, 4.2, 4.6, 5.0, 5.5, 6.0]})
    )
    summary = api.rebin(ws.store("mlp_frame"), edges=edges, features="bmi,s5", center="start")
    return {"rebin": summary_record(summary)}


def bootstrap(ws: Workspace) -> dict[str, Any]:
    """Bootstrap bands with a seed: rebin on quantile bins and rhale on its chosen bins."""
    rebin = api.rebin(
        ws.store("mlp_frame"), bins=6, binning="quantile", bootstrap=25, ci=0.9, seed=3
    )
    rhale = api.rhale(ws.store("synthetic_streamed"), bootstrap=20, seed=1, features="x2,x3")
    return {"rebin": summary_record(rebin), "rhale": summary_record(rhale)}


def classic_numeric(ws: Workspace) -> dict[str, Any]:
    """classic of the TorchScript MLP on numeric features, the file read 100 rows at a
    time, ``sex`` (two values) per level."""
    summary = api.classic(
        ws.model("diabetes_mlp.pt"),
        SAMPLE / "diabetes.csv",
        exclude="target",
        features="age,bmi,s5,sex",
        discrete="sex",
        bins=10,
        chunk_rows=100,
    )
    return {"classic": summary_record(summary)}


def classic_categorical(ws: Workspace) -> dict[str, Any]:
    """classic of a scikit-learn pipeline with a text column and a discrete numeric one."""
    summary = api.classic(
        ws.model("credit_logreg.skops"),
        SAMPLE / "credit.csv",
        exclude="approved",
        output="proba:1",
        discrete="age",
        bins=8,
        chunk_rows=128,
        trust=_untrusted(ws.model("credit_logreg.skops")),
    )
    return {"classic": summary_record(summary)}


def classic_onnx_trees(ws: Workspace) -> dict[str, Any]:
    """classic of a tree-ensemble ONNX graph on a DataFrame (in memory), uniform bins,
    bootstrap bands with a seed."""
    frame = pd.read_csv(SAMPLE / "diabetes.csv")
    summary = api.classic(
        ws.model("diabetes_gbr.onnx"),
        frame,
        exclude="target",
        features="bmi,bp",
        bins=6,
        binning="uniform",
        bootstrap=10,
        seed=2,
        center="start",
    )
    return {"classic": summary_record(summary)}


def interact_data(ws: Workspace) -> dict[str, Any]:
    """interact from the model on the data file, read 100 rows at a time (classic ALE)."""
    summary = api.interact(
        ws.model("diabetes_mlp.pt"),
        SAMPLE / "diabetes.csv",
        exclude="target",
        pairs=[("bmi", "bp"), ("s5", "age")],
        bins=5,
        chunk_rows=100,
    )
    return {"interact": summary_record(summary)}


def interact_store(ws: Workspace) -> dict[str, Any]:
    """interact from a store's cached mixed derivatives (DALE), read by its chunks."""
    summary = api.interact(
        ws.model("rhale_synthetic.pt"),
        SAMPLE / "rhale_synthetic.csv",
        exclude="y",
        pairs=[("x2", "x3")],
        estimator="dale",
        store=ws.store("synthetic_streamed"),
        bins=6,
    )
    return {"interact": summary_record(summary)}


def secant_store(ws: Workspace) -> dict[str, Any]:
    """A tree model's secant store: rebin on 20 quantile bins and rhale (``sex`` per
    level)."""
    store = ws.store("hgb_secant")
    return {
        "store": store_record(store),
        "rebin": summary_record(api.rebin(store, bins=20, binning="quantile")),
        "rhale": summary_record(api.rhale(store)),
    }


CASES: dict[str, Callable[[Workspace], dict[str, Any]]] = {
    f.__name__: f
    for f in (
        compute_frame,
        compute_streamed,
        compute_onnx_streamed,
        compute_dask,
        rebin_edges,
        bootstrap,
        classic_numeric,
        classic_categorical,
        classic_onnx_trees,
        interact_data,
        interact_store,
        secant_store,
    )
}


# -- records -----------------------------------------------------------------------------


def _untrusted(path: Path) -> tuple[str, ...]:
    import skops.io as sio

    return tuple(sio.get_untrusted_types(file=path))


def summary_record(summary: Summary) -> dict[str, Any]:
    """The summary as its JSON (NaN as null), without its creation time."""
    return json.loads(summary_json(summary, timestamp=False))


def store_record(path: Path) -> dict[str, Any]:
    """What a store holds, in a few kilobytes: names, method, levels, and per array (the
    mixed derivatives per pair) its shape, exact column sums (``math.fsum``), minima,
    maxima and :data:`SAMPLED_ROWS` rows."""
    store = api.read_store(path)
    arrays = {"X": store.X, "local_effects": store.local_effects, "prediction": store.prediction}
    arrays |= {f"mixed {a},{b}": v for (a, b), v in store.mixed_derivatives().items()}
    arrays |= {n: store.extra[n] for n in sorted(store.extra) if n not in (MIXED, PAIRS)}
    meta = store.meta
    return {
        "feature_names": list(store.feature_names),
        "input_names": list(store.input_names),
        "n_rows": store.n_rows,
        "method": meta.get("method"),
        "levels": meta.get("levels"),
        "categorical_levels": meta.get("categorical_levels"),
        "arrays": {name: _array_record(a) for name, a in arrays.items()},
    }


def _array_record(array: np.ndarray) -> dict[str, Any]:
    if array.dtype.kind not in "fiub":
        return {"shape": list(array.shape), "values": array.tolist()}
    a = np.atleast_1d(array).astype(np.float64)
    a = a.reshape(len(a), -1)
    rows = np.unique(np.linspace(0, len(a) - 1, SAMPLED_ROWS).astype(int)) if len(a) else []
    finite = np.where(np.isfinite(a), a, 0.0)
    return {
        "shape": list(array.shape),
        "dtype": array.dtype.str,
        "sum": [math.fsum(column) for column in finite.T],
        "nonfinite": np.count_nonzero(~np.isfinite(a), axis=0).tolist(),
        "min": np.nanmin(a, axis=0).tolist() if len(a) else [],
        "max": np.nanmax(a, axis=0).tolist() if len(a) else [],
        "rows": _nulls(a[rows]).tolist(),
    }


def _nulls(a: np.ndarray) -> np.ndarray:
    """NaN and infinities as None, so that the record is plain JSON."""
    out = a.astype(object)
    out[~np.isfinite(a)] = None
    return out
