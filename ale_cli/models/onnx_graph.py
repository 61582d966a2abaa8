"""An ONNX graph as ``ale`` runs it: opened with onnxruntime, its input and output
found, run on rows of any count (padded for a fixed batch size), through onnxruntime
or its torch translation, and checked on the first rows of the data."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ale_cli.errors import ModelError, ModelFailed, first_line
from ale_cli.io.threads import available_cpus
from ale_cli.models.base import (
    CHECK_ROWS,
    INPUTS_HINT,
    Columns,
    call_model,
    chunks,
    failure_reason,
    pad_rows,
    rows_independent,
    unique_columns,
)
from ale_cli.models.mixed import gradient_of

#: how closely the torch translation must agree with onnxruntime (times max|output|)
RTOL = {np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-9}
_ELEM_DTYPES = {1: np.float32, 11: np.float64}  # onnx.TensorProto.FLOAT / DOUBLE
_FLOAT_OUTPUTS = ("tensor(float)", "tensor(double)")
_PROBA_NAMES = ("probabilities", "output_probability")


def _dims(value_info: Any) -> list[int | str]:
    shape = value_info.type.tensor_type.shape
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in shape.dim]


def _class_labels(graph: Any) -> tuple[str, ...]:
    for node in graph.node:
        if node.op_type.endswith("Classifier"):
            for at in node.attribute:
                if at.name in ("classlabels_int64s", "classlabels_ints"):
                    return tuple(str(v) for v in at.ints)
                if at.name == "classlabels_strings":
                    return tuple(v.decode() for v in at.strings)
    return ()


Outputs = tuple[tuple[str, str, Any], ...]  # (name, type, shape) of every graph output


def _listing(outputs: Outputs) -> str:
    return ", ".join(f"{name}: {kind} {shape}" for name, kind, shape in outputs)


def _float_output(name: str, outputs: Outputs, path: Path) -> str:
    kind = next(k for n, k, _ in outputs if n == name)
    if kind not in _FLOAT_OUTPUTS:
        raise ModelError(
            f"output '{name}' of ONNX model '{path}' is {kind}, not a float tensor; "
            f"choose a float output with {{param}} (outputs: {_listing(outputs)})",
            param="output",
        )
    return name


def parse_output(
    spec: str | None, outputs: Outputs, labels: Sequence[str], path: Path
) -> tuple[str, int | None]:
    """(output name, column or None) of the selector ``spec``: NAME, NAME:INDEX, INDEX
    (an output, or a column of the only output) or proba:CLASS."""
    names = [name for name, _, _ in outputs]
    proba = next((n for n in names if n in _PROBA_NAMES), None)
    if spec is None:
        if len(names) == 1:
            return _float_output(names[0], outputs, path), None
        hint = f" (e.g. {{param}} proba:1 or {proba}:1)" if proba else ""
        raise ModelError(
            f"ONNX model '{path}' has {len(names)} outputs ({_listing(outputs)}); choose "
            f"one with {{param}} NAME, NAME:INDEX or INDEX{hint}",
            param="output",
        )
    head, sep, tail = spec.rpartition(":") if ":" in spec else (spec, "", "")
    if head == "proba" and sep:
        if proba is None:
            raise ModelError(
                f"{{param}} {spec}: ONNX model '{path}' has no probabilities output "
                f"(outputs: {_listing(outputs)})",
                param="output",
            )
        if tail in labels:
            return _float_output(proba, outputs, path), list(labels).index(tail)
        if tail.isdigit():
            return _float_output(proba, outputs, path), int(tail)
        raise ModelError(
            f"{{param}} {spec}: ONNX model '{path}' has no class '{tail}' "
            f"(classes: {', '.join(labels) or 'unknown'})",
            param="output",
        )
    if sep and tail.isdigit() and head in names:
        return _float_output(head, outputs, path), int(tail)
    if not sep and spec in names:
        return _float_output(spec, outputs, path), None
    if not sep and spec.isdigit():
        if len(names) == 1:
            return _float_output(names[0], outputs, path), int(spec)
        if int(spec) < len(names):
            return _float_output(names[int(spec)], outputs, path), None
    raise ModelError(
        f"{{param}} '{spec}': ONNX model '{path}' has no such output "
        f"(outputs: {_listing(outputs)}); use NAME, NAME:INDEX or INDEX",
        param="output",
    )


def parse_outputs(
    spec: str | None, outputs: Outputs, labels: Sequence[str], path: Path
) -> tuple[str, int | None, tuple[int, ...]]:
    """(output name, column, columns) of ``spec``: :func:`parse_output` of one selector
    (columns ``()``), of each in a list of one output's columns (``proba:0,proba:2``,
    ``0,2``), or ``all``: the probabilities output, else the only float output (its
    columns are counted by :func:`check_graph`)."""
    if spec == "all":
        floats = [n for n, kind, _ in outputs if kind in _FLOAT_OUTPUTS]
        proba = [n for n in floats if n in _PROBA_NAMES]
        if len(proba or floats) != 1:
            raise ModelError(
                f"{{param}} all: ONNX model '{path}' has {len(floats)} float outputs "
                f"({_listing(outputs)}); list one's columns (e.g. {{param}} NAME:0,NAME:1)",
                param="output",
            )
        return (proba or floats)[0], None, ()
    if spec is None or "," not in spec:
        return (*parse_output(spec, outputs, labels, path), ())
    parsed = [parse_output(s.strip(), outputs, labels, path) for s in spec.split(",")]
    if len({name for name, _ in parsed}) > 1 or any(c is None for _, c in parsed):
        raise ModelError(
            f"{{param}} {spec}: a list names columns of one output (e.g. proba:0,proba:2)",
            param="output",
        )
    unique_columns(spec, [f"{name}:{c}" for name, c in parsed])
    return parsed[0][0], parsed[0][1], tuple(c for _, c in parsed if c is not None)


def _open_session(path: Path, threads: int) -> tuple[Any, Any]:
    """(ModelProto, onnxruntime session) of the file, or a ModelError saying why not."""
    import onnx
    import onnxruntime as ort

    try:
        proto = onnx.load(str(path))
    except Exception as exc:  # protobuf DecodeError and friends
        raise ModelError(f"model file '{path}' is not an ONNX model: {first_line(exc)}") from None
    if proto.ir_version <= 0 or len(proto.graph.output) == 0:
        raise ModelError(f"model file '{path}' is not an ONNX model: it holds no graph")
    zipmap = [n for n in proto.graph.node if n.op_type == "ZipMap"]
    if zipmap:
        raise ModelError(
            f"ONNX model '{path}' has a ZipMap output ('{zipmap[0].output[0]}'), which gives "
            "dictionaries, not tensors; export the classifier with skl2onnx option "
            "zipmap=False: to_onnx(model, X, options={id(model): {'zipmap': False}})"
        )
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    # idle spinning threads would starve torch and other processes
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        session = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise ModelError(
            f"onnxruntime cannot load ONNX model '{path}': {first_line(exc)}"
        ) from None
    return proto, session


def read_graph(path: Path) -> Any | None:
    """The ModelProto of ONNX file ``path`` without external data (None if unreadable)."""
    import onnx

    try:
        return onnx.load(str(path), load_external_data=False)
    except Exception:  # protobuf DecodeError and friends: reported by the adapter
        return None


def tree_ensemble_file(path: Path) -> bool:
    """True when ONNX file ``path`` holds a TreeEnsemble op (False if unreadable)."""
    proto = read_graph(path)
    return proto is not None and any(n.op_type.startswith("TreeEnsemble") for n in proto.graph.node)


def _graph_inputs(proto: Any) -> list[Any]:
    """The graph's inputs that are not initializers (the ones a caller feeds)."""
    init_names = {t.name for t in proto.graph.initializer}
    return [i for i in proto.graph.input if i.name not in init_names]


def column_inputs(proto: Any) -> tuple[str, ...] | None:
    """The input names of a graph that takes one tensor per column (several inputs, each
    of shape (N, 1) or (N,)), in the graph's order; None for any other graph."""
    inputs = _graph_inputs(proto)
    if len(inputs) < 2:
        return None
    for inp in inputs:
        shape = _dims(inp)
        if not (len(shape) == 1 or (len(shape) == 2 and shape[1] == 1)):
            return None
    return tuple(i.name for i in inputs)


def _graph_input(
    proto: Any, path: Path
) -> tuple[str, np.dtype, list[int | str], tuple[tuple[str, int], ...]]:
    """(name, dtype, shape, per-column (name, rank) or ()) of the (N, D) float input."""
    inputs = _graph_inputs(proto)
    per_column = column_inputs(proto)
    if len(inputs) != 1 and per_column is None:
        names = ", ".join(i.name for i in inputs)
        raise ModelError(
            f"ONNX model '{path}' has {len(inputs)} inputs ({names}); ale explains models "
            "with one input tensor of shape (N, D), or one input of shape (N, 1) per column"
        )
    elems = {i.type.tensor_type.elem_type for i in inputs}
    for inp in inputs:
        elem = inp.type.tensor_type.elem_type
        if elem not in _ELEM_DTYPES:
            from onnx.helper import tensor_dtype_to_np_dtype

            raise ModelError(
                f"ONNX model '{path}' input '{inp.name}' has element type "
                f"{np.dtype(tensor_dtype_to_np_dtype(elem)).name}; ale feeds float32 or float64"
            )
    if len(elems) > 1:
        raise ModelError(
            f"ONNX model '{path}' inputs mix float32 and float64; ale feeds one float type"
        )
    inp = inputs[0]
    dtype = np.dtype(_ELEM_DTYPES[inp.type.tensor_type.elem_type])
    if per_column is not None:
        ranks = tuple((i.name, len(_dims(i))) for i in inputs)
        return inp.name, dtype, [_dims(inp)[0], len(inputs)], ranks
    shape = _dims(inp)
    if len(shape) != 2:
        raise ModelError(
            f"ONNX model '{path}' input '{inp.name}' has shape {shape}; "
            "ale explains models with one input of shape (N, D)"
        )
    return inp.name, dtype, shape, ()


@dataclass(frozen=True, eq=False)
class OnnxGraph:
    """An ONNX file opened in onnxruntime, run there or through a torch translation;
    ``fixed_batch``: N for a graph that takes batches of exactly N rows."""

    path: Path
    session: Any
    input_name: str
    dtype: np.dtype
    input_shape: list[int | str]
    fixed_batch: int | None
    ops: tuple[str, ...]
    labels: tuple[str, ...]
    selector: str | None
    out_name: str
    column: int | None
    threads: int
    per_column: tuple[tuple[str, int], ...] = ()
    #: the columns of several outputs explained at once (``all`` or a list); runs give (M, K)
    columns: tuple[int, ...] = ()

    @classmethod
    def open(cls, path: Path, selector: str | None) -> tuple[OnnxGraph, Any]:
        """The graph of the file and its ModelProto."""
        threads = available_cpus()
        proto, session = _open_session(path, threads)
        input_name, dtype, input_shape, per_column = _graph_input(proto, path)
        batch = input_shape[0]
        outputs = tuple((o.name, o.type, o.shape) for o in session.get_outputs())
        labels = _class_labels(proto.graph)
        out_name, column, columns = parse_outputs(selector, outputs, labels, path)
        graph = cls(
            path=path,
            session=session,
            input_name=input_name,
            dtype=dtype,
            input_shape=input_shape,
            fixed_batch=batch if isinstance(batch, int) and batch > 0 else None,
            ops=tuple(sorted({n.op_type for n in proto.graph.node})),
            labels=labels,
            selector=selector,
            out_name=out_name,
            column=column,
            threads=threads,
            per_column=per_column,
            columns=columns,
        )
        return graph, proto

    def select(self, out: Any, n_rows: int) -> Any:
        """Column ``self.column`` of an (n,), (n, 1) or (n, K) array or tensor; the
        ``columns`` (n, C) of several outputs."""
        if out.ndim == 0 or out.shape[0] != n_rows:
            raise ModelError(
                f"ONNX model '{self.path}' output '{self.out_name}' has shape "
                f"{tuple(out.shape)} for {n_rows} rows; expected one prediction per row"
            )
        flat = out.reshape(n_rows, -1)
        width = flat.shape[1]
        if self.column is None:
            if width != 1:
                raise ModelError(
                    f"ONNX model '{self.path}' output '{self.out_name}' has {width} columns; "
                    f"choose one with {{param}} {self.out_name}:INDEX (0..{width - 1})",
                    param="output",
                )
            return flat[:, 0]
        if max((self.column, *self.columns)) >= width:
            raise ModelError(
                f"{{param}} {self.selector} is out of range: ONNX model '{self.path}' "
                f"output '{self.out_name}' has columns 0..{width - 1}",
                param="output",
            )
        return flat[:, list(self.columns)] if self.columns else flat[:, self.column]

    def output_records(self) -> list[dict[str, Any]]:
        """The meta's record of each output explained at once (``proba:K`` for a column of
        the probabilities output, with its class; ``NAME:K`` otherwise)."""
        proba = self.out_name in _PROBA_NAMES
        return [
            {"selector": name, "name": name, "column": c,
             "class": self.labels[c] if proba and c < len(self.labels) else None}
            for c in self.columns
            for name in [f"{'proba' if proba else self.out_name}:{c}"]
        ]  # fmt: skip

    def padded(self, X: np.ndarray) -> list[tuple[np.ndarray, int]]:
        """Pieces of X of exactly ``fixed_batch`` rows (the last padded), with their real length."""
        if self.fixed_batch is None:
            return [(X, len(X))]
        b = self.fixed_batch
        return [(pad_rows(X[sl], b), sl.stop - sl.start) for sl in chunks(len(X), b)]

    def raw(self, X: np.ndarray) -> list[tuple[np.ndarray, int, int]]:
        """(output, piece length, real rows) of each padded piece of X via onnxruntime."""
        run = functools.partial(call_model, self.path, self.session.run, [self.out_name])
        return [(np.asarray(run(self.feed(p))[0]), len(p), n) for p, n in self.padded(X)]

    def feed(self, X: np.ndarray) -> dict[str, np.ndarray]:
        """onnxruntime's inputs for the rows X: X itself, or one column per input."""
        X = X.astype(self.dtype, copy=False)
        if not self.per_column:
            return {self.input_name: X}
        return {
            name: np.ascontiguousarray(X[:, j : j + 1] if rank == 2 else X[:, j])
            for j, (name, rank) in enumerate(self.per_column)
        }

    def selected(self, pieces: list[tuple[np.ndarray, int, int]]) -> np.ndarray:
        """The selected output of :meth:`raw`'s pieces, (M,) float64."""
        parts = [np.asarray(self.select(out, m))[:n] for out, m, n in pieces]
        return np.concatenate(parts).astype(np.float64)

    def run(self, X: np.ndarray) -> np.ndarray:
        """The selected output through onnxruntime, (M,) float64."""
        return self.selected(self.raw(X))

    def torch_dtype(self) -> Any:
        import torch

        return torch.float32 if self.dtype == np.float32 else torch.float64

    def torch_output(self, torch_graph: Any, x: Any) -> Any:
        """The selected output of the translated graph at the tensor ``x``, (n,)."""
        return self.select(torch_graph(x)[self.out_name], len(x))

    def torch_forward(self, torch_graph: Any, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Predictions (M,) and gradients (M, D) through the translation."""
        import torch

        preds, grads = [], []
        for piece, n in self.padded(X):
            x = torch.from_numpy(np.ascontiguousarray(piece)).to(self.torch_dtype())
            x.requires_grad_(True)
            y = call_model(self.path, self.torch_output, torch_graph, x)
            grads.append(call_model(self.path, gradient_of, y, x).detach().numpy()[:n])
            preds.append(y.detach().numpy()[:n])
        return np.concatenate(preds).astype(np.float64), np.concatenate(grads).astype(np.float64)


def check_graph(
    graph: OnnxGraph, columns: Columns, X: np.ndarray, *, spread: np.ndarray | None = None
) -> tuple[OnnxGraph, tuple[int, ...]]:
    """Check width, output and row independence; the graph (``all``: every column of its
    output) and the shape of one output row."""
    width = graph.input_shape[1]
    if isinstance(width, int) and width > 0 and width != X.shape[1]:
        raise ModelError(
            f"ONNX model '{graph.path}' input '{graph.input_name}' has shape "
            f"{graph.input_shape}, but {X.shape[1]} features are selected "
            f"({', '.join(columns.names)}); {INPUTS_HINT}",
            param="features",
        )
    rows = X[:CHECK_ROWS]
    try:
        pieces = graph.raw(rows)
    except ModelFailed as exc:  # the width was checked above when the graph tells it
        raise ModelFailed(
            f"ONNX model '{graph.path}' failed on rows of {X.shape[1]} features "
            f"({failure_reason(exc)}); {INPUTS_HINT}",
            param="features",
        ) from None
    if graph.selector == "all":
        width = int(np.prod(pieces[0][0].shape[1:], dtype=np.int64))
        if width < 2:
            raise ModelError(
                f"{{param}} all: output '{graph.out_name}' of ONNX model '{graph.path}' has "
                "one column",
                param="output",
            )
        graph = replace(graph, column=0, columns=tuple(range(width)))
    first = graph.selected(pieces)
    if not rows_independent(graph.run, X, rtol=RTOL[graph.dtype], first=first, spread=spread):
        raise ModelError(
            f"ONNX model '{graph.path}' mixes rows: a row's output changes when other rows "
            "of the batch change; local effects need each output row to depend on its own "
            "input row only (export the model in eval mode)"
        )
    return graph, tuple(pieces[0][0].shape[1:])
