"""Run a standard-op ONNX graph as torch operations, so it can be differentiated:
:class:`TorchGraph` evaluates the (topologically sorted) nodes in order, integer shape
arithmetic included, or raises :class:`UnsupportedGraph` naming the op it does not cover.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import onnx
    import torch

Tensor = Any  # torch.Tensor, imported lazily
#: an op: (inputs, attributes, opset) -> outputs
OpFn = Callable[[Sequence[Tensor | None], dict[str, Any], int], list[Tensor]]


class UnsupportedGraph(Exception):
    """The graph holds an op (or an op setting) the translation does not cover."""


def _t(value: Any) -> Tensor:
    import torch

    return torch.from_numpy(np.array(value, copy=True))


def _ints(t: Tensor | None) -> list[int] | None:
    return None if t is None else [int(v) for v in t.reshape(-1).tolist()]


def _axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def _gemm(x: Sequence[Tensor | None], a: dict[str, Any], opset: int) -> list[Tensor]:
    A, B = x[0], x[1]
    if a.get("transA", 0):
        A = A.transpose(0, 1)
    if a.get("transB", 0):
        B = B.transpose(0, 1)
    y = A @ B
    if a.get("alpha", 1.0) != 1.0:
        y = y * a["alpha"]
    if len(x) > 2 and x[2] is not None:
        y = y + a.get("beta", 1.0) * x[2]
    return [y]


def _unary(fn: Callable[..., Tensor]) -> OpFn:
    return lambda x, a, opset: [fn(x[0])]


def _softmax(log: bool) -> OpFn:
    def run(x: Sequence[Tensor | None], a: dict[str, Any], opset: int) -> list[Tensor]:
        import torch

        fn = torch.log_softmax if log else torch.softmax
        t = x[0]
        if opset >= 13:
            return [fn(t, dim=a.get("axis", -1))]
        axis = _axis(a.get("axis", 1), t.ndim)  # opset < 13: coerce to 2-D at axis
        flat = t.reshape(math.prod(t.shape[:axis]), -1)
        return [fn(flat, dim=1).reshape(t.shape)]

    return run


def _clip(x: Sequence[Tensor | None], a: dict[str, Any], opset: int) -> list[Tensor]:
    import torch

    t = x[0]
    if opset < 11:
        lo, hi = a.get("min"), a.get("max")
    else:
        lo = x[1] if len(x) > 1 else None
        hi = x[2] if len(x) > 2 else None
    if lo is not None:
        t = torch.maximum(t, torch.as_tensor(lo, dtype=t.dtype))
    if hi is not None:
        t = torch.minimum(t, torch.as_tensor(hi, dtype=t.dtype))
    return [t]


def _fold(fn: Callable[[Tensor, Tensor], Tensor]) -> OpFn:
    """``fn`` folded over the inputs (a binary op, or Max/Min/Sum of any count)."""
    return lambda x, a, opset: [functools.reduce(fn, x)]


def _reshape(x: Sequence[Tensor | None], a: dict[str, Any], opset: int) -> list[Tensor]:
    t = x[0]
    shape = list(a["shape"]) if opset < 5 else _ints(x[1]) or []
    if not a.get("allowzero", 0):
        shape = [t.shape[i] if s == 0 else s for i, s in enumerate(shape)]
    return [t.reshape(shape)]


def _squeeze(x: Sequence[Tensor | None], a: dict[str, Any], opset: int) -> list[Tensor]:
    t = x[0]
    axes = a.get("axes") if opset < 13 else _ints(x[1] if len(x) > 1 else None)
    if axes is None:
        return [t.squeeze()]
    return [t.squeeze(tuple(_axis(ax, t.ndim) for ax in axes))]


def _unsqueeze(x: Sequence[Tensor | None], a: dict[str, Any], opset: int) -> list[Tensor]:
    t = x[0]
    axes = a.get("axes") if opset < 13 else _ints(x[1])
    rank = t.ndim + len(axes or [])
    for ax in sorted(_axis(ax, rank) for ax in axes or []):
        t = t.unsqueeze(ax)
    return [t]


def _gather(x: Sequence[Tensor | None], a: dict[str, Any], opset: int) -> list[Tensor]:
    import torch

    t, idx = x[0], x[1].long()
    axis = _axis(a.get("axis", 0), t.ndim)
    idx = torch.where(idx < 0, idx + t.shape[axis], idx)
    out = torch.index_select(t, axis, idx.reshape(-1))
    return [out.reshape((*t.shape[:axis], *idx.shape, *t.shape[axis + 1 :]))]


def _slice(x: Sequence[Tensor | None], a: dict[str, Any], opset: int) -> list[Tensor]:
    import torch

    t = x[0]
    if opset < 10:
        starts, ends, axes, steps = a["starts"], a["ends"], a.get("axes"), None
    else:
        starts, ends = _ints(x[1]) or [], _ints(x[2]) or []
        axes = _ints(x[3]) if len(x) > 3 else None
        steps = _ints(x[4]) if len(x) > 4 else None
    axes = axes or list(range(len(starts)))
    steps = steps or [1] * len(starts)
    for start, end, ax, step in zip(starts, ends, axes, steps, strict=True):
        ax = _axis(ax, t.ndim)
        index = range(*slice(start, end, step).indices(t.shape[ax]))
        t = torch.index_select(t, ax, torch.tensor(list(index), dtype=torch.long))
    return [t]


def _constant(x: Sequence[Tensor | None], a: dict[str, Any], opset: int) -> list[Tensor]:
    for key in ("value", "value_float", "value_floats", "value_int", "value_ints"):
        if key in a:
            value = a[key]
            if key in ("value_float", "value_floats"):
                value = np.asarray(value, dtype=np.float32)
            elif key in ("value_int", "value_ints"):
                value = np.asarray(value, dtype=np.int64)
            return [_t(value)]
    raise UnsupportedGraph(f"Constant with attribute {', '.join(a)} is not supported")


def _ops() -> dict[str, OpFn]:
    import torch
    import torch.nn.functional as F
    from onnx.helper import tensor_dtype_to_np_dtype as np_dtype

    return {
        "MatMul": _fold(torch.matmul),
        "Gemm": _gemm,
        "Add": _fold(torch.add),
        "Sub": _fold(torch.sub),
        "Mul": _fold(torch.mul),
        "Div": lambda x, a, o: [
            x[0] / x[1]
            if x[0].is_floating_point() or x[1].is_floating_point()
            else torch.div(x[0], x[1], rounding_mode="trunc")
        ],
        "Pow": _fold(torch.pow),
        "Neg": _unary(torch.neg),
        "Relu": _unary(torch.relu),
        "LeakyRelu": lambda x, a, o: [F.leaky_relu(x[0], a.get("alpha", 0.01))],
        "Elu": lambda x, a, o: [F.elu(x[0], a.get("alpha", 1.0))],
        "Selu": lambda x, a, o: [
            a.get("gamma", 1.05070102214813232421875)
            * F.elu(x[0], a.get("alpha", 1.67326319217681884765625))
        ],
        "Sigmoid": _unary(torch.sigmoid),
        "Tanh": _unary(torch.tanh),
        "Softplus": _unary(F.softplus),
        "Softmax": _softmax(log=False),
        "LogSoftmax": _softmax(log=True),
        "Exp": _unary(torch.exp),
        "Log": _unary(torch.log),
        "Sqrt": _unary(torch.sqrt),
        "Abs": _unary(torch.abs),
        "Clip": _clip,
        "Max": _fold(torch.maximum),
        "Min": _fold(torch.minimum),
        "Sum": _fold(torch.add),
        "Concat": lambda x, a, o: [torch.cat(list(x), dim=a["axis"])],
        "Reshape": _reshape,
        "Flatten": lambda x, a, o: [
            x[0].reshape(math.prod(x[0].shape[: _axis(a.get("axis", 1), x[0].ndim)]), -1)
        ],
        "Squeeze": _squeeze,
        "Unsqueeze": _unsqueeze,
        "Transpose": lambda x, a, o: [x[0].permute(*(a.get("perm") or range(x[0].ndim)[::-1]))],
        "Gather": _gather,
        "Slice": _slice,
        "Identity": lambda x, a, o: [x[0]],
        "Cast": lambda x, a, o: [x[0].to(_t(np.zeros(0, np_dtype(a["to"]))).dtype)],
        "Constant": _constant,
        "BatchNormalization": lambda x, a, o: [
            F.batch_norm(x[0], x[3], x[4], x[1], x[2], eps=a.get("epsilon", 1e-5))
        ],
        "Dropout": lambda x, a, o: [x[0], torch.ones_like(x[0], dtype=torch.bool)],
        "Shape": lambda x, a, o: [
            torch.tensor(list(x[0].shape)[a.get("start", 0) : a.get("end")], dtype=torch.long)
        ],
    }


class TorchGraph:
    """An ONNX graph evaluated with torch operations (differentiable w.r.t. its input)."""

    def __init__(self, model: onnx.ModelProto, input_name: str) -> None:
        from onnx import helper, numpy_helper

        self.opset = next(
            (o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 13
        )
        graph = model.graph
        self.input_name = input_name
        self.constants = {t.name: _t(numpy_helper.to_array(t)) for t in graph.initializer}
        self.outputs = [o.name for o in graph.output]
        ops = _ops()
        self.nodes: list[tuple[OpFn, list[str], list[str], dict[str, Any]]] = []
        for node in graph.node:
            if node.domain not in ("", "ai.onnx") or node.op_type not in ops:
                where = f" (domain {node.domain})" if node.domain else ""
                raise UnsupportedGraph(f"op {node.op_type}{where} has no torch translation")
            attrs = {at.name: helper.get_attribute_value(at) for at in node.attribute}
            if "value" in attrs and not isinstance(attrs["value"], int | float | list):
                attrs["value"] = numpy_helper.to_array(attrs["value"])
            self.nodes.append((ops[node.op_type], list(node.input), list(node.output), attrs))
            if node.op_type == "BatchNormalization" and attrs.get("training_mode", 0):
                raise UnsupportedGraph("BatchNormalization in training mode mixes rows")

    def __call__(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        values: dict[str, Tensor | None] = {**self.constants, self.input_name: x, "": None}
        for fn, inputs, outputs, attrs in self.nodes:
            args = [values[name] for name in inputs]
            results = fn(args, attrs, self.opset)
            for name, value in zip(outputs, results, strict=False):
                values[name] = value
        return {name: values[name] for name in self.outputs}
