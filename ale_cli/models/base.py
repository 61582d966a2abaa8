"""What every model adapter provides, whatever its format.

An adapter is built by :func:`ale_cli.models.load_model` and used as::

    model.check(X)                     # width, output, row independence; raises ModelError
    effects = model.local_effects(X)   # (N, D) derivatives and (N,) predictions
    model.describe()                   # how the effects were obtained, for the store's meta

Optional capability of the adapters with autodiff (TorchScript, the ONNX torch
path): ``model.mixed_derivatives(X, pairs)`` -> (P, N) second derivatives
d2f / dx_a dx_b (DALE second order); :func:`ale_cli.models.mixed.mixed_derivatives_of`
says whether a loaded model has it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

#: Called with the number of rows just finished; drives the progress bar.
ProgressFn = Callable[[int], None]


@dataclass(frozen=True)
class Effects:
    """Local effects of one model output at the rows of X.

    Attributes
    ----------
    local_effects : ndarray, shape (N, D), float64
        ``local_effects[i, j]`` = d f(x_i) / d x_j.
    prediction : ndarray, shape (N,), float64
        f(x_i), the output that was differentiated.
    """

    local_effects: np.ndarray
    prediction: np.ndarray


@dataclass(frozen=True)
class LoadOptions:
    """Options that decide how a model is loaded and which output is explained.

    Attributes
    ----------
    output : str or None
        Output selector (``--output``); None means "the model's only output".
    batch_size : int or None
        Rows per model call; None means the adapter's measured default.
    method : {"auto", "autodiff", "finite-differences"}
        How local effects are obtained; "auto" picks the best the format allows.
    step : float or None
        Finite-difference step as a fraction of each feature's std; None lets
        the adapter choose (small for smooth models, large for piecewise-constant).
    trust : tuple of str
        skops types the user trusts by name (``--trust``).
    trust_pickle : bool
        Allow loading pickles, which runs code stored in the file.
    """

    output: str | None = None
    batch_size: int | None = None
    method: str = "auto"
    step: float | None = None
    trust: tuple[str, ...] = ()
    trust_pickle: bool = False


METHODS = ("auto", "autodiff", "finite-differences")


@dataclass(frozen=True)
class Columns:
    """What an adapter needs to know about the feature columns of X.

    Attributes
    ----------
    names : tuple of str, length D
        Column names, in the order of the columns of X.
    fixed : tuple of str
        Categorical columns held fixed: never perturbed, local effect 0.
    levels : mapping of str to tuple
        For non-numeric columns encoded as integer codes in X: code -> original value.
    dtypes : mapping of str to str
        The pandas dtype each column had in the data file.
    """

    names: tuple[str, ...]
    fixed: tuple[str, ...] = ()
    levels: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    dtypes: Mapping[str, str] = field(default_factory=dict)

    def fixed_mask(self) -> np.ndarray:
        """Boolean (D,): True for the columns held fixed."""
        return np.array([name in self.fixed for name in self.names], dtype=bool)


class Model(Protocol):
    """A loaded model that can give predictions and local effects."""

    format: str
    method: str

    def check(self, X: np.ndarray) -> None:
        """Refuse, with a ModelError, a model that cannot be explained on X."""

    def predict(self, X: np.ndarray) -> np.ndarray:
        """The selected output at every row, shape (N,)."""

    def local_effects(self, X: np.ndarray, *, progress: ProgressFn | None = None) -> Effects:
        """Derivatives of the selected output with respect to every column of X."""

    def describe(self) -> dict[str, Any]:
        """Method, output and settings used, recorded in the store's meta."""


def first_line(exc: BaseException) -> str:
    """The first non-empty line of an exception's message (its type name if empty).

    >>> first_line(ValueError("bad width\\nmore detail"))
    'bad width'
    """
    lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    return lines[0] if lines else type(exc).__name__


#: Rows of X that :func:`other_batch` takes the columns' spread from.
_SPREAD_ROWS = 4096


def other_batch(rows: np.ndarray, X: np.ndarray) -> tuple[np.ndarray, int]:
    """A copy of ``rows`` with its second half moved by each column's spread + 1, and
    the size of the unchanged first half.

    For the row-independence checks: the outputs of the first half must not
    change when the rest of the batch does. The spread (std) is that of a
    systematic sample of at most 4096 rows of X: the whole column costs more
    than the check it serves (5 ms for 100k x 10).

    >>> other, half = other_batch(np.zeros((4, 1)), np.array([[0.0], [2.0]]))
    >>> other.ravel().tolist(), half
    ([0.0, 0.0, 2.0, 2.0], 2)
    """
    half = max(1, len(rows) // 2)
    sample = X[:: max(1, len(X) // _SPREAD_ROWS)]
    other = rows.copy()
    other[half:] = rows[half:] + sample.std(axis=0) + 1.0
    return other, half


def chunks(n_rows: int, size: int) -> Iterator[slice]:
    """As few consecutive slices of at most ``size`` rows as cover ``range(n_rows)``,
    of equal lengths (within one row).

    Equal lengths rather than full chunks and a short remainder: a model call
    on a few hundred rows costs nearly as much as one on thousands.

    >>> list(chunks(5, 2))
    [slice(0, 1, None), slice(1, 3, None), slice(3, 5, None)]
    >>> [sl.stop - sl.start for sl in chunks(50_000, 8192)]
    [7142, 7143, 7143, 7143, 7143, 7143, 7143]
    """
    count = -(-n_rows // size)
    for i in range(count):
        yield slice(i * n_rows // count, (i + 1) * n_rows // count)


def stacked_chunks(X: np.ndarray, blocks: int, rows: int) -> Iterator[tuple[slice, np.ndarray]]:
    """Chunks of at most ``rows`` rows of X, each with ``blocks`` copies of it stacked.

    Yields ``(sl, stack)`` with ``stack`` of shape (blocks * m, D) holding
    ``X[sl]`` in each of its ``blocks`` blocks of m rows, for the caller to
    perturb block by block and evaluate in one model call. ``stack`` lives in
    one buffer reused for every chunk (a fresh array per chunk pays its page
    faults again, about as much as the copying): use it before the next chunk.

    >>> [(sl.start, s.tolist()) for sl, s in stacked_chunks(np.array([[1.0], [2.0]]), 2, 1)]
    [(0, [[1.0], [1.0]]), (1, [[2.0], [2.0]])]
    """
    n = len(X)
    buffer = np.empty((blocks * min(rows, n), X.shape[1]), dtype=X.dtype)
    for sl in chunks(n, rows):
        m = sl.stop - sl.start
        stack = buffer[: blocks * m]
        stack.reshape(blocks, m, -1)[...] = X[sl]
        yield sl, stack
