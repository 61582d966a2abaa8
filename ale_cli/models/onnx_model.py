"""ONNX models: autodiff through a torch translation of the graph when every op
is a standard differentiable one and its forward pass agrees with onnxruntime;
otherwise central finite differences through onnxruntime.

The translated forward pass is compared with onnxruntime on up to
:data:`CHECK_ROWS` rows of the data before it is trusted: the largest absolute
difference must stay within ``rtol * max|output|``, rtol = 1e-4 for float32
graphs (float32 kernels differ in summation order) and 1e-9 for float64 ones.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ale_cli.errors import ModelError, RunError
from ale_cli.models import finite_diff as fd
from ale_cli.models.base import Columns, Effects, LoadOptions, ProgressFn, chunks, first_line

#: Rows per forward+backward call on the torch path (as for TorchScript).
TORCH_BATCH_SIZE = 8192
CHECK_ROWS = 256
RTOL = {np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-9}
_ELEM_DTYPES = {1: np.float32, 11: np.float64}  # onnx.TensorProto.FLOAT / DOUBLE
_FLOAT_OUTPUTS = ("tensor(float)", "tensor(double)")
_PROBA_NAMES = ("probabilities", "output_probability")


def available_cores() -> int:
    """CPU cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _dims(value_info: Any) -> list[int | str]:
    shape = value_info.type.tensor_type.shape
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in shape.dim]


class OnnxModel:
    """An ONNX graph run by onnxruntime, differentiated through torch when possible."""

    format = "onnx"

    def __init__(
        self, path: Path, proto: Any, session: Any, options: LoadOptions, columns: Columns
    ):
        self.path = path
        self.options = options
        self.columns = columns
        self.session = session
        graph = proto.graph
        init_names = {t.name for t in graph.initializer}
        inputs = [i for i in graph.input if i.name not in init_names]
        if len(inputs) != 1:
            names = ", ".join(i.name for i in inputs)
            raise ModelError(
                f"ONNX model '{path}' has {len(inputs)} inputs ({names}); ale explains models "
                "with one input tensor of shape (N, D)"
            )
        inp = inputs[0]
        self.input_name = inp.name
        elem = inp.type.tensor_type.elem_type
        if elem not in _ELEM_DTYPES:
            from onnx.helper import tensor_dtype_to_np_dtype

            raise ModelError(
                f"ONNX model '{path}' input '{inp.name}' has element type "
                f"{np.dtype(tensor_dtype_to_np_dtype(elem)).name}; ale feeds float32 or float64"
            )
        self.dtype = np.dtype(_ELEM_DTYPES[elem])
        self.input_shape = _dims(inp)
        if len(self.input_shape) != 2:
            raise ModelError(
                f"ONNX model '{path}' input '{inp.name}' has shape {self.input_shape}; "
                "ale explains models with one input of shape (N, D)"
            )
        batch = self.input_shape[0]
        self.fixed_batch = batch if isinstance(batch, int) and batch > 0 else None
        self.ops = sorted({n.op_type for n in graph.node})
        self.tree_ensemble = any(op.startswith("TreeEnsemble") for op in self.ops)
        self.outputs = [(o.name, o.type, o.shape) for o in session.get_outputs()]
        self.labels = self._class_labels(graph)
        self.out_name, self.column = self._parse_output(options.output)
        self.batch_size = options.batch_size
        self.torch_graph: Any = None
        self.fallback_reason: str | None = None
        self.check_result: dict[str, Any] | None = None
        self.step: fd.StepChoice | None = None
        self.steps: np.ndarray | None = None
        self._out_shape: list[int] = []
        self._init_method(proto)

    @classmethod
    def load(cls, path: Path, options: LoadOptions, columns: Columns) -> OnnxModel:
        import onnx
        import onnxruntime as ort

        try:
            proto = onnx.load(str(path))
        except Exception as exc:  # protobuf DecodeError and friends
            raise ModelError(
                f"model file '{path}' is not an ONNX model: {first_line(exc)}"
            ) from None
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
        so.intra_op_num_threads = available_cores()
        so.inter_op_num_threads = 1
        so.log_severity_level = 3
        # idle onnxruntime threads otherwise spin for a while after each run and starve
        # torch (the autodiff path) and the other processes on a small machine
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            session = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise ModelError(
                f"onnxruntime cannot load ONNX model '{path}': {first_line(exc)}"
            ) from None
        return cls(path, proto, session, options, columns)

    # -- output selection ----------------------------------------------------------------

    @staticmethod
    def _class_labels(graph: Any) -> list[str]:
        for node in graph.node:
            if node.op_type.endswith("Classifier"):
                for at in node.attribute:
                    if at.name in ("classlabels_int64s", "classlabels_ints"):
                        return [str(v) for v in at.ints]
                    if at.name == "classlabels_strings":
                        return [v.decode() for v in at.strings]
        return []

    def _listing(self) -> str:
        return ", ".join(f"{name}: {kind} {shape}" for name, kind, shape in self.outputs)

    def _parse_output(self, spec: str | None) -> tuple[str, int | None]:
        names = [name for name, _, _ in self.outputs]
        if spec is None:
            if len(names) == 1:
                return self._float_output(names[0], spec), None
            proba = next((n for n in names if n in _PROBA_NAMES), None)
            hint = f" (e.g. --output proba:1 or {proba}:1)" if proba else ""
            raise ModelError(
                f"ONNX model '{self.path}' has {len(names)} outputs ({self._listing()}); choose "
                f"one with --output NAME, NAME:INDEX or INDEX{hint}"
            )
        head, sep, tail = spec.rpartition(":") if ":" in spec else (spec, "", "")
        if head == "proba" and sep:
            proba = next((n for n in names if n in _PROBA_NAMES), None)
            if proba is None:
                raise ModelError(
                    f"--output {spec}: ONNX model '{self.path}' has no probabilities output "
                    f"(outputs: {self._listing()})"
                )
            if tail in self.labels:
                return self._float_output(proba, spec), self.labels.index(tail)
            if tail.isdigit():
                return self._float_output(proba, spec), int(tail)
            raise ModelError(
                f"--output {spec}: ONNX model '{self.path}' has no class '{tail}' "
                f"(classes: {', '.join(self.labels) or 'unknown'})"
            )
        if sep and tail.isdigit() and head in names:
            return self._float_output(head, spec), int(tail)
        if not sep and spec in names:
            return self._float_output(spec, spec), None
        if not sep and spec.isdigit():
            if len(names) == 1:
                return self._float_output(names[0], spec), int(spec)
            if int(spec) < len(names):
                return self._float_output(names[int(spec)], spec), None
        raise ModelError(
            f"--output '{spec}': ONNX model '{self.path}' has no such output "
            f"(outputs: {self._listing()}); use NAME, NAME:INDEX or INDEX"
        )

    def _float_output(self, name: str, spec: str | None) -> str:
        kind = next(k for n, k, _ in self.outputs if n == name)
        if kind not in _FLOAT_OUTPUTS:
            raise ModelError(
                f"output '{name}' of ONNX model '{self.path}' is {kind}, not a float tensor; "
                f"choose a float output with --output (outputs: {self._listing()})"
            )
        return name

    def _select(self, out: Any, n_rows: int) -> Any:
        """Column ``self.column`` of an (n,), (n, 1) or (n, K) array or tensor."""
        self._out_shape = list(out.shape)
        if out.ndim == 0 or out.shape[0] != n_rows:
            raise ModelError(
                f"ONNX model '{self.path}' output '{self.out_name}' has shape {tuple(out.shape)} "
                f"for {n_rows} rows; expected one prediction per row"
            )
        flat = out.reshape(n_rows, -1)
        width = flat.shape[1]
        if self.column is None:
            if width != 1:
                raise ModelError(
                    f"ONNX model '{self.path}' output '{self.out_name}' has {width} columns; "
                    f"choose one with --output {self.out_name}:INDEX (0..{width - 1})"
                )
            return flat[:, 0]
        if self.column >= width:
            raise ModelError(
                f"--output {self.options.output} is out of range: ONNX model '{self.path}' "
                f"output '{self.out_name}' has columns 0..{width - 1}"
            )
        return flat[:, self.column]

    # -- the two ways of running the graph ----------------------------------------------------

    def _padded(self, X: np.ndarray) -> list[tuple[np.ndarray, int]]:
        """Pieces of X of exactly ``fixed_batch`` rows (the last padded), with their real length."""
        if self.fixed_batch is None:
            return [(X, len(X))]
        b = self.fixed_batch
        pieces = []
        for sl in chunks(len(X), b):
            piece = X[sl]
            n = len(piece)
            if n < b:
                piece = np.concatenate([piece, np.repeat(piece[-1:], b - n, axis=0)])
            pieces.append((piece, n))
        return pieces

    def ort_predict(self, X: np.ndarray) -> np.ndarray:
        """The selected output through onnxruntime, (M,) float64."""
        parts = []
        for piece, n in self._padded(X):
            (out,) = self.session.run([self.out_name], {self.input_name: piece.astype(self.dtype)})
            parts.append(np.asarray(self._select(np.asarray(out), len(piece)))[:n])
        return np.concatenate(parts).astype(np.float64)

    def _torch_dtype(self) -> Any:
        import torch

        return torch.float32 if self.dtype == np.float32 else torch.float64

    def _torch_forward(self, X: np.ndarray, grad: bool) -> tuple[np.ndarray, np.ndarray | None]:
        import torch

        preds, grads = [], []
        for piece, n in self._padded(X):
            x = torch.from_numpy(np.ascontiguousarray(piece)).to(self._torch_dtype())
            x.requires_grad_(grad)
            y = self._select(self.torch_graph(x)[self.out_name], len(piece))
            if grad:
                (g,) = torch.autograd.grad(y.sum(), x, allow_unused=True)
                g = torch.zeros_like(x) if g is None else g
                grads.append(g.detach().numpy()[:n])
            preds.append(y.detach().numpy()[:n])
        pred = np.concatenate(preds).astype(np.float64)
        return pred, (np.concatenate(grads).astype(np.float64) if grad else None)

    # -- choosing the method ------------------------------------------------------------------

    def _init_method(self, proto: Any) -> None:
        from ale_cli.models.onnx_torch import UnsupportedGraph, translate

        if self.options.method == "finite-differences":
            self.fallback_reason = "finite differences asked with --method finite-differences"
            return
        try:
            self.torch_graph = translate(proto, self.input_name)
        except UnsupportedGraph as exc:
            self._fall_back(f"the graph cannot be run in torch: {exc}")

    def _fall_back(self, reason: str) -> None:
        if self.options.method == "autodiff":
            raise ModelError(f"--method autodiff: ONNX model '{self.path}': {reason}")
        self.torch_graph = None
        self.fallback_reason = reason

    @property
    def method(self) -> str:
        return "autodiff" if self.torch_graph is not None else "finite-differences"

    # -- the adapter interface ---------------------------------------------------------------

    def check(self, X: np.ndarray) -> None:
        """Width, output and row independence through onnxruntime; then the torch
        translation's forward pass against onnxruntime on a sample of rows."""
        width = self.input_shape[1]
        if isinstance(width, int) and width > 0 and width != X.shape[1]:
            raise ModelError(
                f"ONNX model '{self.path}' input '{self.input_name}' has shape "
                f"{self.input_shape}, but {X.shape[1]} features are selected "
                f"({', '.join(self.columns.names)}); select the model's inputs with "
                "--features or --exclude"
            )
        try:
            self.ort_predict(X[:8])
        except ModelError:
            raise
        except Exception as exc:
            raise ModelError(
                f"ONNX model '{self.path}' fails on rows of {X.shape[1]} features "
                f"({first_line(exc)}); select the model's inputs with --features or --exclude"
            ) from None
        if not fd.rows_independent(self.ort_predict, X, rtol=RTOL[self.dtype]):
            raise ModelError(
                f"ONNX model '{self.path}' mixes rows: a row's output changes when other rows "
                "of the batch change; local effects need each output row to depend on its own "
                "input row only (export the model in eval mode)"
            )
        if self.torch_graph is not None:
            self._check_translation(X)

    def _check_translation(self, X: np.ndarray) -> None:
        rows = X
        if len(X) > CHECK_ROWS:
            rows = X[np.linspace(0, len(X) - 1, CHECK_ROWS).astype(int)]
        reference = self.ort_predict(rows)
        try:
            translated, _ = self._torch_forward(rows, grad=False)
        except ModelError:
            raise
        except Exception as exc:
            self._fall_back(f"the torch translation fails ({first_line(exc)})")
            return
        rtol = RTOL[self.dtype]
        scale = max(float(np.max(np.abs(reference))), 1e-12)
        diff = float(np.max(np.abs(translated - reference)))
        self.check_result = {"rows": len(rows), "max_abs_diff": diff, "rtol": rtol, "scale": scale}
        if not diff <= rtol * scale:
            self._fall_back(
                f"the torch translation disagrees with onnxruntime on {len(rows)} rows "
                f"(max difference {diff:.3g} > {rtol:g} x max|output| {scale:.3g})"
            )

    def predict(self, X: np.ndarray) -> np.ndarray:
        """The selected output through onnxruntime, shape (N,)."""
        size = self.batch_size or fd.DEFAULT_EVAL_ROWS
        return np.concatenate([self.ort_predict(X[sl]) for sl in chunks(len(X), size)])

    def local_effects(self, X: np.ndarray, *, progress: ProgressFn | None = None) -> Effects:
        """Autodiff through the torch translation, or central differences via onnxruntime."""
        try:
            if self.torch_graph is not None:
                return self._autodiff(X, progress)
            return self._finite_differences(X, progress)
        except (ModelError, RunError):
            raise
        except Exception as exc:
            raise RunError(f"ONNX model '{self.path}' failed: {first_line(exc)}") from None

    def _autodiff(self, X: np.ndarray, progress: ProgressFn | None) -> Effects:
        n, d = X.shape
        grads = np.empty((n, d), dtype=np.float64)
        preds = np.empty(n, dtype=np.float64)
        for sl in chunks(n, self.batch_size or TORCH_BATCH_SIZE):
            preds[sl], g = self._torch_forward(X[sl], grad=True)
            grads[sl] = g
            if progress is not None:
                progress(sl.stop - sl.start)
        return Effects(local_effects=grads, prediction=preds)

    def _finite_differences(self, X: np.ndarray, progress: ProgressFn | None) -> Effects:
        fixed = self.columns.fixed_mask() if self.columns.names else np.zeros(X.shape[1], bool)
        if self.steps is None:
            self.step, self.steps = fd.plan_steps(
                self.ort_predict,
                X,
                user_step=self.options.step,
                piecewise_type=self.tree_ensemble,
                smooth_step=fd.FLOAT32_STEP if self.dtype == np.float32 else fd.SMALL_STEP,
                fixed=fixed,
                dtype=self.dtype,
            )
        return fd.central_differences(
            self.ort_predict,
            X,
            self.steps,
            fixed=fixed,
            dtype=self.dtype,
            eval_rows=self.batch_size or fd.DEFAULT_EVAL_ROWS,
            progress=progress,
            label=f"ONNX model '{self.path}'",
        )

    def mixed_derivatives(
        self,
        X: np.ndarray,
        pairs: Sequence[tuple[int, int]],
        *,
        progress: ProgressFn | None = None,
    ) -> np.ndarray:
        """``d2f / dx_a dx_b`` at every row for each pair (a, b), shape (P, N), through the
        torch translation (see :func:`ale_cli.models.mixed.mixed_partials`)."""
        from ale_cli.models.mixed import mixed_partials

        if self.torch_graph is None:
            raise ModelError(
                f"ONNX model '{self.path}' has no mixed derivatives: it is evaluated by "
                f"finite differences ({self.fallback_reason})"
            )

        def forward(x: Any) -> Any:
            return self._select(self.torch_graph(x)[self.out_name], len(x))

        label = f"ONNX model '{self.path}'"
        if self.fixed_batch is None:
            return mixed_partials(
                forward,
                X,
                pairs,
                dtype=self._torch_dtype(),
                batch_size=self.batch_size or TORCH_BATCH_SIZE,
                label=label,
                progress=progress,
            )
        parts = []
        for piece, n in self._padded(X):  # a graph with a fixed batch size: padded pieces
            part = mixed_partials(
                forward, piece, pairs, dtype=self._torch_dtype(), batch_size=len(piece), label=label
            )
            parts.append(part[:, :n])
            if progress is not None:
                progress(n)
        return np.concatenate(parts, axis=1) if parts else np.empty((len(pairs), 0))

    def describe(self) -> dict[str, Any]:
        details: dict[str, Any] = {
            "method": self.method,
            "format": self.format,
            "dtype": self.dtype.name,
            "input": {"name": self.input_name, "shape": self.input_shape},
            "batch": self.fixed_batch or "dynamic",
            "ops": self.ops,
            "threads": available_cores(),
            "output": {
                "selector": self.options.output,
                "name": self.out_name,
                "column": self.column,
                "shape": self._out_shape,
            },
        }
        if self.torch_graph is not None:
            details["translation"] = {"engine": "onnx->torch", "check": self.check_result}
            details["batch_size"] = self.batch_size or TORCH_BATCH_SIZE
        else:
            details["fallback_reason"] = self.fallback_reason
            details["eval_rows_per_call"] = self.batch_size or fd.DEFAULT_EVAL_ROWS
            details["notes"] = [f"finite differences through onnxruntime: {self.fallback_reason}"]
        if self.step is not None and self.steps is not None:
            details["step"] = self.step.to_dict() | {"absolute": self.steps.tolist()}
            details["notes"].append(fd.describe_step(self.step))
        return details
