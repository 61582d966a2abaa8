"""TorchScript modules and ``torch.export`` programs (``.pt2``): local effects by autodiff.

Row i of the output depends on row i of the input only (checked when loaded), so the
gradient of the summed output holds every row's gradient: one forward and one backward
pass per chunk of rows. A program must be exported with a dynamic first dimension
(``docs/models.md``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ale_cli.errors import ModelError, ModelFailed, first_line
from ale_cli.models.base import (
    CHECK_ROWS,
    INPUTS_HINT,
    Effects,
    Features,
    LoadRequest,
    Model,
    ProgressFn,
    batched_effects,
    call_model,
    chunks,
    close_with_nonfinite,
    failure_reason,
    first_rows_failed,
    integer_output_message,
    rows_independent,
    unique_columns,
)
from ale_cli.models.columns import columns_file
from ale_cli.models.mixed import gradient_of, mixed_partials
from ale_cli.models.objects import ModelObject, torch_module_of

if TYPE_CHECKING:
    import torch

FLAT_NOTE = (
    "every gradient on the first rows is exactly 0 while the predictions vary: the "
    "model is a step function (torch.round, a comparison), whose local effects by autodiff "
    "are 0; use 'ale classic'"
)
#: Rows per forward+backward call, chosen with bench/bench_compute.py.
DEFAULT_BATCH_SIZE = 8192
EXPORT_HINT = (
    "export it with a dynamic first dimension: torch.export.export(model, (x,), "
    'dynamic_shapes=({0: torch.export.Dim("batch", min=1)},))'
)


def parse_output(spec: str | None) -> tuple[int | None, int | None]:
    """``None`` -> (None, None); ``"K"`` -> (None, K); ``"I:K"`` -> (I, K).

    >>> parse_output("2"), parse_output("1:0"), parse_output(None)
    ((None, 2), (1, 0), (None, None))
    """
    if spec is None:
        return None, None
    try:
        numbers = [int(p) for p in spec.split(":")]
    except ValueError:
        numbers = []
    if len(numbers) not in (1, 2) or min(numbers) < 0:
        raise ModelError(
            f"{{param}} '{spec}' is not valid for a TorchScript model; "
            "expected an output column INDEX or ELEMENT:INDEX for a tuple output",
            param="output",
        )
    return (None, numbers[0]) if len(numbers) == 1 else (numbers[0], numbers[1])


@dataclass(frozen=True)
class OutputPick:
    """Which part of the module's output is explained: ``element`` of a tuple output
    (None: a tensor), ``column`` of it flattened to (n, -1), its ``row_shape`` and dtype."""

    element: int | None
    column: int
    row_shape: tuple[int, ...]
    dtype: str = "float32"
    #: the columns of several outputs explained at once (``all`` or a list); calls give (n, K)
    columns: tuple[int, ...] = ()

    @property
    def integer(self) -> bool:
        """True when the output holds integers (or booleans): no gradient."""
        return not self.dtype.startswith(("float", "bfloat", "complex"))


def pick_outputs(out: Any, n_rows: int, spec: str | None, path: Path) -> OutputPick:
    """:func:`pick_output`, or for ``all`` (every column of a tensor output) or a list
    (``0,2``; ``1:0,1:2``: columns of one element) the pick of several columns."""
    if spec is None or (spec != "all" and "," not in spec):
        return pick_output(out, n_rows, spec, path)
    if spec == "all" and isinstance(out, tuple | list) and len(out) > 1:
        raise ModelError(
            f"{{param}} all: model '{path}' returns {len(out)} outputs; list the columns "
            "of one (e.g. {param} 1:0,1:1)",
            param="output",
        )
    specs = ("0" if spec == "all" else spec).split(",")
    picks = [pick_output(out, n_rows, s.strip(), path) for s in specs]
    width = int(np.prod(picks[0].row_shape, dtype=np.int64))
    columns = tuple(range(width)) if spec == "all" else tuple(p.column for p in picks)
    if len({p.element for p in picks}) > 1 or len(columns) < 2:
        raise ModelError(
            f"{{param}} {spec}: model '{path}' has "
            + ("one output column" if len(columns) < 2 else "a list of one element's columns"),
            param="output",
        )
    unique_columns(spec, [f"{p.element}:{p.column}".removeprefix("None:") for p in picks])
    return replace(picks[0], columns=columns)


def pick_output(out: Any, n_rows: int, spec: str | None, path: Path) -> OutputPick:
    """The :class:`OutputPick` for ``spec`` given the module's output for ``n_rows`` rows."""
    import torch

    element, column = parse_output(spec)
    prefix = ""  # how a column of the picked tuple element is named
    if isinstance(out, tuple | list):
        if element is None and len(out) == 1:
            element = 0
        elif element is None and column is not None:
            element, column = column, None  # a single number picks the tuple element
            prefix = f"{element}:"
        elif element is None:
            shapes = ", ".join(str(tuple(o.shape)) for o in out if isinstance(o, torch.Tensor))
            raise ModelError(
                f"model '{path}' returns {len(out)} outputs with shapes {shapes}; "
                "choose one with {param} ELEMENT or ELEMENT:INDEX",
                param="output",
            )
        if element >= len(out):
            raise ModelError(
                f"{{param}} {spec} is out of range: model '{path}' returns "
                f"{len(out)} outputs (0..{len(out) - 1})",
                param="output",
            )
        out = out[element]
    elif element is not None:
        raise ModelError(
            f"{{param}} {spec} selects an element of a tuple, but model '{path}' returns "
            "one tensor; choose a column with INDEX",
            param="output",
        )
    if not isinstance(out, torch.Tensor):
        raise ModelError(
            f"model '{path}' returns {type(out).__name__}, expected a tensor of predictions"
        )
    if out.ndim == 0 or out.shape[0] != n_rows:
        raise ModelError(
            f"model '{path}' returned shape {tuple(out.shape)} for {n_rows} rows; "
            "expected one prediction per row along the first dimension"
        )
    width = out.reshape(n_rows, -1).shape[1]
    if column is None and width != 1:
        raise ModelError(
            f"model '{path}' output has shape {tuple(out.shape)}; "
            f"choose one column with {{param}} {prefix}INDEX (0..{width - 1})",
            param="output",
        )
    if column is not None and column >= width:
        raise ModelError(
            f"{{param}} {spec} is out of range: model '{path}' output has "
            f"shape {tuple(out.shape)}, columns 0..{width - 1}",
            param="output",
        )
    return OutputPick(
        element=element,
        column=column or 0,
        row_shape=tuple(out.shape[1:]),
        dtype=str(out.dtype).removeprefix("torch."),
    )


#: the most widths a model with no 2-D first layer is tried on (a forward pass of a few rows
#: each) to tell a width mismatch from its own failure
MAX_WIDTH_TRIED = 64


def _first_call_error(
    module: Any, path: Path, rows: np.ndarray, dtype: Any, exc: ModelFailed
) -> Exception:
    """A width mismatch (exit 2) if the first layer says so or the model runs on rows of
    another width (tried up to twice the data's, at most :data:`MAX_WIDTH_TRIED`), else the
    model's failure."""
    reason, width = failure_reason(exc), rows.shape[1]
    listed = columns_file(path) if isinstance(path, Path) else None
    where = f"columns file '{listed}'" if listed is not None and listed.exists() else None
    expected = next((p.shape[1] for p in module.parameters() if p.ndim == 2), None)
    what = f"its first layer takes {expected} features"
    if expected is None:
        widths = (w for w in range(1, min(2 * width + 9, MAX_WIDTH_TRIED + 1)) if w != width)
        expected = next(
            (w for w in widths if _runs(module, rows[:, np.arange(w) % width], dtype)), None
        )
        what = f"it runs on rows of {expected} features"
    if expected is not None and expected != width:
        return ModelError(
            f"model '{path}' does not accept rows of {width} features ({reason}); {what}; "
            + (INPUTS_HINT if where is None else f"list the model's inputs in {where}"),
            param="features",
        )
    if expected is not None:  # the width is right: the model itself fails
        return first_rows_failed(path, exc)
    return ModelFailed(
        f"model '{path}' failed on the first rows of the data, which have {width} "
        f"feature{'' if width == 1 else 's'} ({reason}); if it takes other columns, "
        + (
            "select them with {param:inputs} or {param:exclude}"
            if where is None
            else f"list them in {where}"
        ),
        param="features",
    )


def _runs(module: Any, rows: np.ndarray, dtype: Any) -> bool:
    """True when ``module`` returns on ``rows`` without raising."""
    import torch

    try:
        with torch.inference_mode(), torch.jit.optimized_execution(False):
            module(torch.from_numpy(rows).to(dtype))
    except Exception:  # any failure: not a width it takes
        return False
    return True


_RANDOM_OPS = ("dropout", "bernoulli", "rand", "randn", "randint", "normal", "multinomial")


def fixed_batch(program: Any) -> int | None:
    """The number of rows the program's first input is fixed to (None: dynamic)."""
    user_inputs = set(program.graph_signature.user_inputs)
    for node in program.graph.nodes:
        if node.op == "placeholder" and node.name in user_inputs:
            shape = getattr(node.meta.get("val"), "shape", None)
            if shape is not None and len(shape) and isinstance(shape[0], int):
                return int(shape[0])
            return None
    return None


def load(req: LoadRequest) -> TorchScriptModel:
    """Load a TorchScript archive (``torch.jit.load`` on the CPU), a ``.pt2`` program
    (``torch.export.load``) or a torch model object and check it
    (:meth:`TorchScriptModel.from_module`)."""
    import torch

    path, fmt = req.model, req.format
    if isinstance(path, ModelObject):
        return TorchScriptModel.from_module(
            path.obj if fmt == "torch-export" else torch_module_of(path), req
        )
    what = "a torch.export program" if fmt == "torch-export" else "TorchScript"
    try:
        if fmt == "torch-export":
            module = torch.export.load(str(path))
        else:
            module = torch.jit.load(str(path), map_location="cpu")
    except Exception as exc:  # torch raises RuntimeError/KeyError/... for foreign archives
        raise ModelError(f"cannot load model file '{path}' as {what}: {first_line(exc)}") from None
    return TorchScriptModel.from_module(module, req)


@dataclass(frozen=True, eq=False)
class TorchScriptModel(Model):
    """A torch module (``torch.jit``, an exported program's, or an ``nn.Module``) in eval
    mode with frozen parameters, checked on the data (:func:`load`, :meth:`from_module`)."""

    module: Any
    path: Path
    dtype: Any  # torch.dtype
    batch_size: int
    selector: str | None
    pick: OutputPick
    fixed: np.ndarray
    #: torchscript (a file), torch-export (a .pt2 file or program), torch-module (an object)
    format: str = "torchscript"
    #: every gradient on the first rows is 0 while the predictions vary (a step: torch.round)
    flat: bool = False
    method: ClassVar[str] = "autodiff"

    @classmethod
    def from_module(cls, module: Any, req: LoadRequest) -> TorchScriptModel:
        """Put ``module`` (or an exported program's, which has no train mode to leave) in
        eval mode with frozen parameters, pick the output on the first rows of X and check
        that rows are independent."""
        import torch

        path, fmt, X, output = req.model, req.format, req.X, req.options.output

        if fmt == "torch-export":
            rows = fixed_batch(module)
            if rows is not None:
                raise ModelError(
                    f"model '{path}' was exported for batches of exactly {rows} rows; "
                    f"local effects need any number of rows: {EXPORT_HINT}"
                )
            module = module.module()
        else:
            module.eval()
        for param in module.parameters():
            param.requires_grad_(False)
        tensors = itertools.chain(module.parameters(), module.buffers())
        dtype = next((t.dtype for t in tensors if t.is_floating_point()), torch.float64)
        rows = X[:CHECK_ROWS]
        try:
            with torch.inference_mode(), torch.jit.optimized_execution(False):
                first = call_model(path, module, torch.from_numpy(rows).to(dtype))
        except ModelFailed as exc:
            raise _first_call_error(module, path, rows, dtype, exc) from None
        model = cls(
            module=module,
            path=path,
            dtype=dtype,
            batch_size=req.options.batch_size or DEFAULT_BATCH_SIZE,
            selector=output,
            pick=pick_outputs(first, len(rows), output, path),
            fixed=req.columns.fixed_mask(),
            format=fmt,
        )
        prediction, gradient = model._check_rows(rows, X)
        flat = not model.pick.integer and not gradient.any() and np.ptp(prediction, axis=0).any()
        return replace(model, flat=True) if flat else model

    def _select(self, out: Any, n_rows: int) -> torch.Tensor:
        if self.pick.element is not None:
            out = out[self.pick.element]
        if tuple(out.shape) != (n_rows, *self.pick.row_shape):
            raise ModelError(
                f"model '{self.path}' returned shape {tuple(out.shape)} for {n_rows} rows; "
                f"it gave shape {('n', *self.pick.row_shape)} when it was checked"
            )
        if self.pick.columns:
            return out.reshape(n_rows, -1)[:, list(self.pick.columns)]
        return out.reshape(n_rows, -1)[:, self.pick.column]

    def _forward(self, x: torch.Tensor) -> torch.Tensor:
        """The selected output at ``x``, (n,), without the graph executor's profiling."""
        import torch

        with torch.jit.optimized_execution(False):
            out = self.module(x)
        return self._select(out, len(x))

    def _forward_backward(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        import torch

        x = torch.from_numpy(X).to(self.dtype).requires_grad_(True)
        y = call_model(self.path, self._forward, x)
        if not y.is_floating_point():
            raise ModelError(integer_output_message(self.path, self.pick.dtype), param="output")
        return y.detach().numpy(), call_model(self.path, gradient_of, y, x).detach().numpy()

    def _evaluate(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Predictions and gradients (zeros for an integer output, which has none)."""
        if not self.pick.integer:
            return self._forward_backward(X)
        return self.predict(X), np.zeros_like(X)

    def _check_rows(self, rows: np.ndarray, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Refuse a model that is not deterministic or whose rows are not independent;
        the predictions and gradients at ``rows``."""
        import torch

        rtol = 1e-4 if self.dtype != torch.float64 else 1e-9
        first, again = self._evaluate(rows), self._evaluate(rows)
        same = [close_with_nonfinite(a, b, rtol=rtol) for a, b in zip(first, again, strict=True)]
        if not all(same):
            try:
                graph = str(self.module.inlined_graph)
            except Exception:  # not every ScriptModule exposes a graph (e.g. methods only)
                graph = ""
            found = [op for op in _RANDOM_OPS if re.search(rf"aten::{op}_?\(", graph)]
            cause = (
                f"its graph calls {', '.join('aten::' + op for op in found)}, still active "
                "in the saved model; save it after model.eval()"
                if found
                else "it must give the same output for the same input"
            )
            raise ModelError(
                f"model '{self.path}' is not deterministic: the same rows give different "
                f"outputs on two calls ({cause})"
            )
        try:  # predictions, then gradients
            same_rows = rows_independent(self._evaluate, X, rtol=rtol, first=first)
        except ModelFailed as exc:
            raise ModelError(
                f"model '{self.path}' fails on a batch of other size or content "
                f"({failure_reason(exc)}); it must treat every row on its own"
            ) from None
        if not same_rows:
            raise ModelError(
                f"model '{self.path}' mixes rows: a row's output or gradient changes when "
                "other rows of the batch change (BatchNorm in training mode, or a trace made "
                "in training mode?); local effects need each output row to depend on its own "
                "input row only, so export the model after model.eval()"
            )
        return first

    def predict(self, X: np.ndarray) -> np.ndarray:
        """The selected output, computed under ``torch.inference_mode``."""
        import torch

        many = (len(self.pick.columns),) if self.pick.columns else ()  # K outputs: (N, K)
        out = np.empty((len(X), *many), dtype=np.float64)
        with torch.inference_mode():
            for sl in chunks(len(X), self.batch_size):
                x = torch.from_numpy(X[sl]).to(self.dtype)
                out[sl] = call_model(self.path, self._forward, x).numpy()
        return out

    def effects(self, X: np.ndarray, features: Features, progress: ProgressFn | None) -> Effects:
        """Gradients of the selected output, one forward+backward pass per chunk."""
        return batched_effects(
            self._forward_backward,
            X,
            features,
            rows=self.batch_size,
            fixed=self.fixed,
            outputs=len(self.pick.columns),
            progress=progress,
        )

    def mixed_derivatives(
        self, X: np.ndarray, pairs: Sequence[tuple[int, int]], *, progress: ProgressFn | None = None
    ) -> np.ndarray:
        """``d2f / dx_a dx_b`` (P, N) for each pair (a, b)."""
        return mixed_partials(
            self._forward,
            X,
            pairs,
            dtype=self.dtype,
            batch_size=self.batch_size,
            path=self.path,
            progress=progress,
        )

    def describe(self) -> dict[str, Any]:
        shape = ["n", *self.pick.row_shape]
        element = "" if self.pick.element is None else f"{self.pick.element}:"
        outputs = [{"selector": f"{element}{c}", "shape": shape} for c in self.pick.columns]
        return {
            **super().describe(),
            "dtype": str(self.dtype).removeprefix("torch."),
            "batch_size": self.batch_size,
            "output": outputs[0] if outputs else {"selector": self.selector, "shape": shape},
            **({"notes": [FLAT_NOTE]} if self.flat else {}),
        } | ({"outputs": outputs} if outputs else {})
