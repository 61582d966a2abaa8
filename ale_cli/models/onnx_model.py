"""ONNX models: autodiff through a torch translation of the graph when every op is
supported and it agrees with onnxruntime on the profile's sample (256 rows at most)
(max |difference| <= rtol * max|output|, rtol 1e-4 for float32, 1e-9 for float64);
otherwise central finite differences through onnxruntime.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

import ale_cli.models.finite_diff as fd
from ale_cli.errors import ModelError, ModelFailed
from ale_cli.models.base import (
    Effects,
    Features,
    LoadRequest,
    Model,
    ProgressFn,
    batched_effects,
    chunks,
    failure_reason,
)
from ale_cli.models.mixed import mixed_partials
from ale_cli.models.onnx_graph import RTOL, OnnxGraph, check_graph
from ale_cli.models.onnx_torch import TorchGraph, UnsupportedGraph
from ale_cli.models.torchscript import DEFAULT_BATCH_SIZE


@dataclass(frozen=True)
class MethodChoice:
    """Autodiff through ``torch_graph`` when not None, else finite differences for
    ``fallback_reason``; ``check``: the comparison with onnxruntime, if made."""

    torch_graph: Any
    fallback_reason: str | None
    check: dict[str, Any] | None = None


def choose_method(graph: OnnxGraph, proto: Any, method: str, X: np.ndarray) -> MethodChoice:
    """Translate the graph to torch and check it against onnxruntime on rows X; fall
    back to finite differences (or, with ``method="autodiff"``, refuse) if either fails."""

    def fall_back(reason: str, check: dict[str, Any] | None = None) -> MethodChoice:
        if method == "autodiff":
            raise ModelError(
                f"{{param}} autodiff: ONNX model '{graph.path}': {reason}", param="method"
            )
        return MethodChoice(None, reason, check)

    if method == "finite-differences":
        return MethodChoice(None, "finite differences asked (method finite-differences)")
    if graph.per_column:
        return fall_back("the graph takes one input per column (the torch path takes one matrix)")
    try:
        torch_graph = TorchGraph(proto, graph.input_name)
    except UnsupportedGraph as exc:
        return fall_back(f"the graph cannot be run in torch: {exc}")
    rows = X  # the profile's sample
    reference = graph.run(rows)
    try:
        translated, _ = graph.torch_forward(torch_graph, rows)
    except ModelFailed as exc:
        return fall_back(f"the torch translation fails ({failure_reason(exc)})")
    rtol = RTOL[graph.dtype]
    scale = max(float(np.max(np.abs(reference))), 1e-12)
    diff = float(np.max(np.abs(translated - reference)))
    check = {"rows": len(rows), "max_abs_diff": diff, "rtol": rtol, "scale": scale}
    if not diff <= rtol * scale:
        return fall_back(
            f"the torch translation disagrees with onnxruntime on {len(rows)} rows "
            f"(max difference {diff:.3g} > {rtol:g} x max|output| {scale:.3g})",
            check,
        )
    return MethodChoice(torch_graph, None, check)


@dataclass(frozen=True, eq=False)
class OnnxModel(Model):
    """An ONNX graph run by onnxruntime, differentiated through torch when possible."""

    graph: OnnxGraph
    choice: MethodChoice
    batch_size: int | None
    fixed: np.ndarray
    row_shape: tuple[int, ...]
    plan: fd.FdPlan | None = None
    format: ClassVar[str] = "onnx"

    @property
    def method(self) -> str:
        return "autodiff" if self.plan is None else "finite-differences"

    @property
    def rows(self) -> int:
        """Rows per forward+backward call on the torch path."""
        return self.batch_size or DEFAULT_BATCH_SIZE

    def predict(self, X: np.ndarray) -> np.ndarray:
        """The selected output through onnxruntime, shape (N,)."""
        size = self.batch_size or fd.DEFAULT_EVAL_ROWS
        return np.concatenate([self.graph.run(X[sl]) for sl in chunks(len(X), size)])

    def effects(self, X: np.ndarray, features: Features, progress: ProgressFn | None) -> Effects:
        """Autodiff through the torch translation, or central differences via onnxruntime."""
        if self.plan is not None:
            label = f"ONNX model '{self.graph.path}'"
            return self.plan.effects(self.graph.run, X, features, progress=progress, label=label)
        return batched_effects(
            functools.partial(self.graph.torch_forward, self.choice.torch_graph),
            X,
            features,
            rows=self.rows,
            fixed=self.fixed,
            outputs=len(self.graph.columns),
            progress=progress,
        )

    def mixed_derivatives(
        self, X: np.ndarray, pairs: Sequence[tuple[int, int]], *, progress: ProgressFn | None = None
    ) -> np.ndarray:
        """``d2f / dx_a dx_b`` (P, N) for each pair (a, b), through the torch translation."""
        torch_graph, fixed = self.choice.torch_graph, self.graph.fixed_batch
        if torch_graph is None:
            raise ModelError(
                f"ONNX model '{self.graph.path}' has no mixed derivatives: it is evaluated by "
                f"finite differences ({self.choice.fallback_reason})"
            )
        forward = functools.partial(self.graph.torch_output, torch_graph)
        return mixed_partials(
            forward,
            X,
            pairs,
            dtype=self.graph.torch_dtype(),
            batch_size=fixed or self.rows,
            path=self.graph.path,
            pad=fixed is not None,
            progress=progress,
        )

    def describe(self) -> dict[str, Any]:
        graph, choice = self.graph, self.choice
        records = graph.output_records()
        details: dict[str, Any] = {
            **super().describe(),
            "dtype": graph.dtype.name,
            "input": {"name": graph.input_name, "shape": list(graph.input_shape)}
            | ({"per_column": [n for n, _ in graph.per_column]} if graph.per_column else {}),
            "batch": graph.fixed_batch or "dynamic",
            "ops": list(graph.ops),
            "threads": graph.threads,
            "output": (records[0] if records else {
                "selector": graph.selector, "name": graph.out_name, "column": graph.column
            }) | {"shape": ["n", *self.row_shape]},
        } | ({"outputs": records} if records else {})  # fmt: skip
        if self.plan is None:
            translation = {"engine": "onnx->torch", "check": choice.check}
            return details | {"translation": translation, "batch_size": self.rows}
        reason = choice.fallback_reason
        note = f"finite differences through onnxruntime: {reason}"
        return details | {"fallback_reason": reason} | self.plan.details(note)


def load(req: LoadRequest) -> OnnxModel:
    """Open the file, check the graph, choose method and steps from the profile."""
    profile, options = req.profile, req.options
    graph, proto = OnnxGraph.open(req.model, options.output)
    graph, row_shape = check_graph(graph, req.columns, profile.head, spread=profile.std)
    choice = choose_method(graph, proto, options.method, profile.sample)
    plan = None
    if choice.torch_graph is None:
        plan = fd.plan_steps(
            graph.run,
            req,
            piecewise_type=any(op.startswith("TreeEnsemble") for op in graph.ops),
            dtype=graph.dtype,
        )
    return OnnxModel(graph, choice, options.batch_size, req.columns.fixed_mask(), row_shape, plan)
