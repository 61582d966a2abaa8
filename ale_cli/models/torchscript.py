"""TorchScript models: local effects by autodiff.

Because row i of the output depends on row i of the input only, the gradient
of the *summed* output with respect to the input batch holds every row's
gradient: one forward and one backward pass per chunk of rows. :meth:`check`
makes sure that premise holds before any effect is computed.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ale_cli.errors import ModelError, RunError
from ale_cli.models.base import Effects, LoadOptions, ProgressFn, chunks, other_batch

if TYPE_CHECKING:
    import torch

#: Rows per forward+backward call; measured with bench/bench_compute.py (see README).
DEFAULT_BATCH_SIZE = 8192
_CHECK_ROWS = 8


def _first_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    # TorchScript errors start with a "The following operation failed..." preamble;
    # the last line holds the actual reason.
    return lines[-1] if lines else type(exc).__name__


def parse_output(spec: str | None) -> tuple[int | None, int | None]:
    """``None`` -> (None, None); ``"K"`` -> (None, K); ``"I:K"`` -> (I, K).

    >>> parse_output("2"), parse_output("1:0"), parse_output(None)
    ((None, 2), (1, 0), (None, None))
    """
    if spec is None:
        return None, None
    parts = spec.split(":")
    try:
        numbers = [int(p) for p in parts]
    except ValueError:
        numbers = []
    if len(parts) not in (1, 2) or len(numbers) != len(parts) or min(numbers) < 0:
        raise ModelError(
            f"--output '{spec}' is not valid for a TorchScript model; "
            "expected an output column INDEX or ELEMENT:INDEX for a tuple output"
        )
    return (None, numbers[0]) if len(numbers) == 1 else (numbers[0], numbers[1])


class TorchScriptModel:
    """A ``torch.jit`` module in eval mode with frozen parameters."""

    format = "torchscript"
    method = "autodiff"

    def __init__(self, module: Any, path: Path, options: LoadOptions, dtype: torch.dtype) -> None:
        self.module = module
        self.path = path
        self.output = options.output
        self._element, self._column = parse_output(options.output)
        self.batch_size = options.batch_size or DEFAULT_BATCH_SIZE
        self.dtype = dtype
        self._output_shape: tuple[int, ...] | None = None
        # (shape of one output row, column) once an output tensor has been checked
        self._picked: tuple[Any, int] | None = None

    @classmethod
    def load(cls, path: Path, options: LoadOptions) -> TorchScriptModel:
        """Load with ``torch.jit.load`` on the CPU, switch to eval mode, freeze parameters."""
        import torch

        try:
            module = torch.jit.load(str(path), map_location="cpu")
        except Exception as exc:  # torch raises RuntimeError/ValueError/... for bad archives
            raise ModelError(
                f"cannot load model file '{path}' as TorchScript: {_first_line(exc)}"
            ) from None
        module.eval()
        for param in module.parameters():
            param.requires_grad_(False)
        tensors = itertools.chain(module.parameters(), module.buffers())
        dtype = next((t.dtype for t in tensors if t.is_floating_point()), torch.float64)
        return cls(module, path, options, dtype)

    # -- the one forward pass everything goes through --------------------------------------

    def _select(self, out: Any, n_rows: int) -> torch.Tensor:
        import torch

        picked = self._picked
        if (
            picked is not None
            and isinstance(out, torch.Tensor)
            and out.shape[1:] == picked[0]
            and out.shape[0] == n_rows
        ):  # the same kind of output as checked before: skip the checks
            return out.reshape(n_rows, -1)[:, picked[1]]
        element, column = self._element, self._column
        if isinstance(out, tuple | list):
            if element is None and len(out) == 1:
                element = 0
            elif element is None and column is not None:
                element, column = column, None  # a single number picks the tuple element
            elif element is None:
                shapes = ", ".join(str(tuple(o.shape)) for o in out if isinstance(o, torch.Tensor))
                raise ModelError(
                    f"model '{self.path}' returns {len(out)} outputs with shapes {shapes}; "
                    "choose one with --output ELEMENT or ELEMENT:INDEX"
                )
            if element >= len(out):
                raise ModelError(
                    f"--output {self.output} is out of range: model '{self.path}' returns "
                    f"{len(out)} outputs (0..{len(out) - 1})"
                )
            out = out[element]
        if not isinstance(out, torch.Tensor):
            raise ModelError(
                f"model '{self.path}' returns {type(out).__name__}, "
                "expected a tensor of predictions"
            )
        self._output_shape = tuple(out.shape)
        if out.ndim == 0 or out.shape[0] != n_rows:
            raise ModelError(
                f"model '{self.path}' returned shape {tuple(out.shape)} for {n_rows} rows; "
                "expected one prediction per row along the first dimension"
            )
        flat = out.reshape(n_rows, -1)
        width = flat.shape[1]
        if column is None:
            if width != 1:
                raise ModelError(
                    f"model '{self.path}' output has shape {tuple(out.shape)}; "
                    f"choose one column with --output INDEX (0..{width - 1})"
                )
            self._picked = (out.shape[1:], 0) if self._element is None else None
            return flat[:, 0]
        if column >= width:
            raise ModelError(
                f"--output {self.output} is out of range: model '{self.path}' output has "
                f"shape {tuple(out.shape)}, columns 0..{width - 1}"
            )
        self._picked = (out.shape[1:], column) if self._element is None else None
        return flat[:, column]

    def _forward_backward(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        import torch

        x = torch.from_numpy(X).to(self.dtype).requires_grad_(True)
        y = self._select(self.module(x), len(X))
        (grad,) = torch.autograd.grad(y.sum(), x, allow_unused=True)
        if grad is None:  # the output does not depend on the input at all
            grad = torch.zeros_like(x)
        return y.detach().numpy(), grad.detach().numpy()

    # -- the adapter interface ---------------------------------------------------------

    def check(self, X: np.ndarray) -> None:
        """Refuse a model that does not take D inputs or whose rows are not independent."""
        rows = X[:_CHECK_ROWS]
        try:
            pred, grad = self._forward_backward(rows)
        except ModelError:
            raise
        except Exception as exc:
            raise ModelError(self._width_message(X.shape[1], exc)) from None
        again = self._forward_backward(rows)
        if not (self._close(pred, again[0]) and self._close(grad, again[1])):
            raise ModelError(
                f"model '{self.path}' is not deterministic: the same rows give different "
                "outputs on two calls (dropout or another random layer is active); "
                "save the model after model.eval()"
            )
        other, half = other_batch(rows, X)
        try:
            p_other, g_other = self._forward_backward(other)
            p_one, g_one = self._forward_backward(rows[:1])
        except Exception as exc:
            raise ModelError(
                f"model '{self.path}' fails on a batch of other size or content "
                f"({_first_line(exc)}); it must treat every row on its own"
            ) from None
        same_rows = (
            self._close(pred[:half], p_other[:half])
            and self._close(grad[:half], g_other[:half])
            and self._close(pred[:1], p_one)
            and self._close(grad[:1], g_one)
        )
        if not same_rows:
            raise ModelError(
                f"model '{self.path}' mixes rows: a row's output or gradient changes when "
                "other rows of the batch change (BatchNorm in training mode, or a trace made "
                "in training mode?); local effects need each output row to depend on its own "
                "input row only, so export the model after model.eval()"
            )

    def _close(self, a: np.ndarray, b: np.ndarray) -> bool:
        import torch

        rtol = 1e-4 if self.dtype != torch.float64 else 1e-9
        scale = max(float(np.max(np.abs(a), initial=0.0)), float(np.max(np.abs(b), initial=0.0)))
        return a.shape == b.shape and bool(np.all(np.abs(a - b) <= rtol * max(scale, 1e-12)))

    def _width_message(self, width: int, exc: BaseException) -> str:
        expected = next(
            (p.shape[1] for p in self.module.parameters() if p.ndim == 2),
            None,
        )
        hint = ""
        if expected is not None and expected != width:
            hint = f"; its first layer takes {expected} features"
        return (
            f"model '{self.path}' does not accept rows of {width} features "
            f"({_first_line(exc)}){hint}; select the model's inputs with --features or --exclude"
        )

    def predict(self, X: np.ndarray) -> np.ndarray:
        """The selected output, computed under ``torch.inference_mode``."""
        import torch

        out = np.empty(len(X), dtype=np.float64)
        with torch.inference_mode():
            for sl in chunks(len(X), self.batch_size):
                x = torch.from_numpy(X[sl])
                if x.dtype != self.dtype:
                    x = x.to(self.dtype)
                out[sl] = self._select(self.module(x), sl.stop - sl.start).numpy()
        return out

    def local_effects(self, X: np.ndarray, *, progress: ProgressFn | None = None) -> Effects:
        """Gradients of the selected output, one forward+backward pass per chunk."""
        n, d = X.shape
        grads = np.empty((n, d), dtype=np.float64)
        preds = np.empty(n, dtype=np.float64)
        for sl in chunks(n, self.batch_size):
            try:
                preds[sl], grads[sl] = self._forward_backward(X[sl])
            except ModelError:
                raise
            except Exception as exc:
                raise RunError(
                    f"model '{self.path}' failed on rows {sl.start}..{sl.stop - 1}: "
                    f"{_first_line(exc)}"
                ) from None
            if progress is not None:
                progress(sl.stop - sl.start)
        return Effects(local_effects=grads, prediction=preds)

    def mixed_derivatives(
        self,
        X: np.ndarray,
        pairs: Sequence[tuple[int, int]],
        *,
        progress: ProgressFn | None = None,
    ) -> np.ndarray:
        """``d2f / dx_a dx_b`` at every row for each pair (a, b), shape (P, N); see
        :func:`ale_cli.models.mixed.mixed_partials`."""
        from ale_cli.models.mixed import mixed_partials

        return mixed_partials(
            lambda x: self._select(self.module(x), len(x)),
            X,
            pairs,
            dtype=self.dtype,
            batch_size=self.batch_size,
            label=f"model '{self.path}'",
            progress=progress,
        )

    def describe(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "format": self.format,
            "dtype": str(self.dtype).removeprefix("torch."),
            "batch_size": self.batch_size,
            "output": {"selector": self.output, "shape": list(self._output_shape or ())},
        }
