"""Mixed second derivatives d2f / dx_a dx_b at the data points, by autodiff: per chunk
the gradient g (n, D) with ``create_graph=True``, then one backward pass of
``g[:, a].sum()`` per distinct first feature a gives d2f / dx_a dx_b for every b.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ale_cli.errors import ModelError
from ale_cli.models.base import ProgressFn, call_model, chunks, pad_rows

if TYPE_CHECKING:
    from pathlib import Path

    import torch

    from ale_cli.models.base import Model

#: ``pairs`` are (a, b) column indices; the result is (P, N).
MixedFn = Callable[..., np.ndarray]


def require_mixed_derivatives(
    model: Model, path: object, *, param: str, hint: str, value: str | None = None
) -> MixedFn:
    """``model.mixed_derivatives`` (autodiff models), or a ModelError saying that ``param``
    needs it."""
    fn: MixedFn | None = None
    if getattr(model, "method", None) == "autodiff":
        fn = getattr(model, "mixed_derivatives", None)
    option = "{param}" if value is None else "{param} " + value
    if fn is not None and "outputs" in model.describe():
        raise ModelError(
            f"{option} needs the mixed second derivatives of one output; model '{path}' "
            "explains several at once: pass one {param:output} NAME",
            param=param,
        )
    if fn is None:
        raise ModelError(
            f"{option} needs mixed second derivatives (autodiff), which {model.format} model "
            f"'{path}' does not have (it is evaluated by finite differences); {hint}",
            param=param,
        )
    return fn


def gradient_of(y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """d sum(y) / dx, the rows' gradients (zeros where y does not depend on x); for y
    (n, K) of K outputs, (n, K, D): a backward pass per output on one forward graph."""
    import torch

    if y.ndim == 2:
        last = y.shape[1] - 1
        return torch.stack([_grad(y[:, k], x, keep=k < last) for k in range(last + 1)], 1)
    return _grad(y, x, keep=False)


def _grad(y: torch.Tensor, x: torch.Tensor, *, keep: bool) -> torch.Tensor:
    import torch

    if not y.requires_grad:
        return torch.zeros_like(x)
    (grad,) = torch.autograd.grad(y.sum(), x, allow_unused=True, retain_graph=keep)
    return torch.zeros_like(x) if grad is None else grad


def _hessian_rows(
    forward: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, firsts: Sequence[int]
) -> list[torch.Tensor | None]:
    """``d grad_a / dx`` (n, D) for every a in ``firsts`` (None where it is 0)."""
    import torch

    y = forward(x)
    if not y.requires_grad:  # a constant model: every derivative is 0
        return [None] * len(firsts)
    (g,) = torch.autograd.grad(y.sum(), x, create_graph=True, allow_unused=True)
    if g is None or not g.requires_grad:
        return [None] * len(firsts)
    return [
        torch.autograd.grad(g[:, a].sum(), x, retain_graph=True, allow_unused=True)[0]
        for a in firsts
    ]


def mixed_partials(
    forward: Callable[[torch.Tensor], torch.Tensor],
    X: np.ndarray,
    pairs: Sequence[tuple[int, int]],
    *,
    dtype: Any,
    batch_size: int,
    path: Path | str,
    progress: ProgressFn | None = None,
    pad: bool = False,
) -> np.ndarray:
    """``out[p, i] = d2 f(x_i) / dx_a dx_b`` for ``pairs[p] = (a, b)``, shape (P, N) float64.

    ``forward``: tensor (n, D) -> (n,), differentiable; ``dtype``: the model's torch dtype;
    ``pad``: every chunk padded to ``batch_size`` rows (a graph's fixed batch).

    >>> import torch
    >>> X = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])
    >>> f = lambda x: x[:, 0] ** 2 * x[:, 1] + x[:, 2]  # d2f/dx0dx1 = 2 x0, d2f/dx1dx2 = 0
    >>> mixed_partials(f, X, [(0, 1), (1, 2)], dtype=torch.float64, batch_size=8,
    ...                path="f.pt").tolist()
    [[2.0, 1.0], [0.0, 0.0]]
    """
    import torch

    n = len(X)
    out = np.empty((len(pairs), n), dtype=np.float64)
    by_first: dict[int, list[int]] = {}
    for p, (a, _) in enumerate(pairs):
        by_first.setdefault(a, []).append(p)
    for sl in chunks(n, batch_size):
        m = sl.stop - sl.start
        rows = pad_rows(X[sl], batch_size) if pad else np.ascontiguousarray(X[sl])
        x = torch.from_numpy(rows).to(dtype).requires_grad_(True)
        hessian = call_model(path, _hessian_rows, forward, x, list(by_first))
        for h, ps in zip(hessian, by_first.values(), strict=True):
            for p in ps:
                out[p, sl] = 0.0 if h is None else h[:m, pairs[p][1]].detach().numpy()
        if progress is not None:
            progress(m)
    return out
