"""The chunk kernel of ``ale interact``: every pair's
:class:`~ale_cli.core.second_order.PairCells` from a chunk of rows (the per-row values:
:mod:`ale_cli.core.second_order`), the rows with non-finite values screened."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ale_cli.core.binning import assign
from ale_cli.core.second_order import PairCells, pair_cells
from ale_cli.models.checks import screen_rows
from ale_cli.models.evaluate import Move, predict_moved
from ale_cli.store.npz import MIXED

if TYPE_CHECKING:
    from ale_cli.models.base import Model
    from ale_cli.passes.engine import Chunk


def second_differences(
    predict: Callable[[np.ndarray], np.ndarray],
    X: np.ndarray,
    cols: tuple[int, int],
    ea: np.ndarray,
    eb: np.ndarray,
    ia: np.ndarray,
    ib: np.ndarray,
) -> np.ndarray:
    """Per-row second-order finite differences at the corners (k, l), (k-1, l), (k, l-1),
    (k-1, l-1) of each row's cell (0-based ``ia``), (N,).

    >>> X = np.array([[0.5, 0.5], [1.5, 0.2]])
    >>> e = np.array([0.0, 1.0, 2.0])
    >>> second_differences(lambda a: a[:, 0] * a[:, 1], X, (0, 1), e, e,
    ...                    np.array([0, 1]), np.array([0, 0])).tolist()
    [1.0, 1.0]
    """
    hi_a, lo_a, hi_b, lo_b = ea[ia + 1], ea[ia], eb[ib + 1], eb[ib]  # z_k = ea[ia + 1]
    corners = ((hi_a, hi_b), (lo_a, hi_b), (hi_a, lo_b), (lo_a, lo_b))
    moves = [Move(cols, np.column_stack([za, wb])) for za, wb in corners]
    f = predict_moved(predict, X, moves)
    out: np.ndarray = (f[0] - f[1]) - (f[2] - f[3])
    return out


#: a chunk's rows inside a pair's grid and their cells: (rows, ia, ib)
Located = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class PairPlan:
    """One estimable pair: its columns, edges (K_a+1,), (K_b+1,), where its values come
    from ("corners", "autodiff", "stored") and its row of the store's mixed derivatives."""

    cols: tuple[int, int]
    edges_a: np.ndarray
    edges_b: np.ndarray
    values: str
    stored_row: int = -1

    @property
    def shape(self) -> tuple[int, int]:
        return self.edges_a.size - 1, self.edges_b.size - 1

    def locate(self, X: np.ndarray) -> Located:
        """The rows of X (n, D) inside the grid (indices) and their cells (0-based)."""
        ia = assign(X[:, self.cols[0]], self.edges_a).index
        ib = assign(X[:, self.cols[1]], self.edges_b).index
        rows = np.flatnonzero((ia >= 0) & (ib >= 0))
        return rows, ia[rows], ib[rows]


@dataclass(frozen=True)
class Passed:
    """A pass's state, mergeable in row order: every pair's cells, the rows dropped, the
    kept rows' predictions, the seconds on values."""

    pairs: tuple[PairCells, ...]
    dropped: tuple[np.ndarray, ...] = ()
    predictions: tuple[np.ndarray, ...] = ()
    model_s: float = 0.0

    @classmethod
    def empty(cls, plans: Sequence[PairPlan]) -> Passed:
        return cls(tuple(PairCells.empty(p.shape) for p in plans))

    def merge(self, other: Passed) -> Passed:
        return Passed(
            tuple(a.merge(b) for a, b in zip(self.pairs, other.pairs, strict=True)),
            self.dropped + other.dropped,
            self.predictions + other.predictions,
            self.model_s + other.model_s,
        )

    @property
    def kept(self) -> int:
        return int(sum(len(p) for p in self.predictions))

    def dropped_rows(self) -> np.ndarray:
        return np.concatenate(self.dropped) if self.dropped else np.empty(0, dtype=np.intp)

    def prediction(self) -> np.ndarray:
        return np.concatenate(self.predictions) if self.predictions else np.empty(0)


@dataclass(frozen=True)
class PairKernel:
    """``kernel(chunk, model) -> Passed`` of ``ale interact`` (``model`` None when no pair
    needs it and the chunks hold the predictions, ``stored_prediction``)."""

    plans: tuple[PairPlan, ...]
    estimator: str
    path: str
    drop: bool
    stored_prediction: bool = False

    @property
    def arrays(self) -> tuple[str, ...]:
        stored = any(p.values == "stored" for p in self.plans)
        return ("X", *(("prediction",) if self.stored_prediction else ()),
                *((MIXED,) if stored else ()))  # fmt: skip

    def __call__(self, chunk: Chunk, model: Model | None) -> Passed:
        X = np.asarray(chunk["X"], dtype=np.float64)
        if not len(X):  # a part's last chunk may hold no rows
            return Passed.empty(self.plans)
        if self.stored_prediction:
            prediction = np.asarray(chunk["prediction"], dtype=np.float64)
        else:
            prediction = _needs(model).predict(X)
        located = [plan.locate(X) for plan in self.plans]
        t = time.perf_counter()
        values = self._values(chunk, X, model, located)
        spent = time.perf_counter() - t
        checks = [("predictions", prediction, 0)]
        if located:  # every pair's values at their rows: row numbers of the data in the message
            full = np.zeros((len(located), len(X)))
            for p, ((rows, _, _), v) in enumerate(zip(located, values, strict=True)):
                full[p, rows] = v
            dale = self.estimator == "dale"
            label = "mixed derivatives" if dale else "evaluations at the cell corners"
            checks.append((label, full, 1))
        screened = screen_rows(
            self.path, len(X), checks, drop=self.drop, offset=chunk.offset, allow_empty=True
        )
        keep = screened.keep
        pairs = []
        for plan, (rows, ia, ib), v in zip(self.plans, located, values, strict=True):
            kept = keep[rows]
            cells = pair_cells(ia[kept], ib[kept], v[kept], shape=plan.shape)
            pairs.append(PairCells(cells, len(X) - len(rows), bool(np.any(v[kept]))))
        dropped = (screened.dropped + chunk.offset,) if len(screened.dropped) else ()
        return Passed(tuple(pairs), dropped, (prediction[keep],), spent)

    def _values(
        self, chunk: Chunk, X: np.ndarray, model: Model | None, located: list[Located]
    ) -> list[np.ndarray]:
        out: dict[int, np.ndarray] = {}
        autodiff = [p for p, plan in enumerate(self.plans) if plan.values == "autodiff"]
        if autodiff:
            mixed = _needs(model).mixed_derivatives  # the driver checked that the model has it
            found = mixed(X, [self.plans[p].cols for p in autodiff], progress=None)
            out |= {p: found[i][located[p][0]] for i, p in enumerate(autodiff)}
        for p, (plan, (rows, ia, ib)) in enumerate(zip(self.plans, located, strict=True)):
            if plan.values == "stored":
                out[p] = np.asarray(chunk[MIXED][plan.stored_row], dtype=np.float64)[rows]
            elif plan.values == "corners":
                out[p] = second_differences(
                    _needs(model).predict, X[rows], plan.cols, plan.edges_a, plan.edges_b, ia, ib
                )
        return [out[p] for p in range(len(self.plans))]


def _needs(model: Model | None) -> Model:
    if model is None:  # pragma: no cover - the driver shares a model whenever one is needed
        raise RuntimeError("internal error: the kernel needs the model and has none")
    return model
