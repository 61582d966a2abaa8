"""What every model adapter provides, whatever its format.

An adapter is built by :func:`ale_cli.models.load_model`, which loads the file
*and checks the model on the data* (input width, the output to explain, row
independence, the ONNX torch translation against onnxruntime, the
piecewise-constant detection and the finite-difference step of every feature).
The adapter it returns is final: its ``method``, steps and :meth:`Model.describe`
never change afterwards. It is used as::

    effects = model.local_effects(X)                  # (N, D) derivatives, (N,) predictions
    effects = model.local_effects(X, features=[2, 3]) # (N, 2): only columns 2 and 3
    model.predict(X)                                  # (N,) the explained output
    model.describe()                                  # how the effects are obtained (store meta)

Optional capability of the adapters with autodiff (TorchScript, the ONNX torch
path): ``model.mixed_derivatives(X, pairs)`` -> (P, N) second derivatives
d2f / dx_a dx_b (DALE second order); :func:`ale_cli.models.mixed.mixed_derivatives_of`
says whether a loaded model has it.

Every call into the user's model code goes through :func:`call_model`, which
turns whatever the model raises into one :class:`~ale_cli.errors.ModelFailed`
line; our own code around those calls is not wrapped, so its bugs keep their
traceback.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ParamSpec, Protocol, TypeVar

import numpy as np

from ale_cli.errors import AleError, InputError, ModelFailed

#: Called with the number of rows just finished; drives the progress bar.
ProgressFn = Callable[[int], None]


@dataclass(frozen=True)
class Effects:
    """Local effects of one model output at the rows of X.

    Attributes
    ----------
    local_effects : ndarray, shape (N, F), float64
        ``local_effects[i, k]`` = d f(x_i) / d x_j for the k-th explained column j
        (every column of X unless ``features`` were given; 0 for held-fixed columns).
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
        Output selector; None means "the model's only output".
    batch_size : int or None
        Rows per model call; None means the adapter's measured default.
    method : {"auto", "autodiff", "finite-differences"}
        How local effects are obtained; "auto" picks the best the format allows.
    step : float or None
        Finite-difference step as a fraction of each feature's std; None lets
        the adapter choose (small for smooth models, large for piecewise-constant).
    trust : tuple of str
        skops types the user trusts by name.
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
    """A loaded and checked model that gives predictions and local effects.

    Built only by :func:`ale_cli.models.load_model`, which has already checked
    it on the data and decided everything: ``format``, ``method`` and
    :meth:`describe` are the same before and after any call.
    """

    @property
    def format(self) -> str:
        """The file format: torchscript, onnx, skops or pickle."""

    @property
    def method(self) -> str:
        """autodiff or finite-differences, decided when the model was loaded."""

    def predict(self, X: np.ndarray) -> np.ndarray:
        """The selected output at every row, shape (N,)."""

    def local_effects(
        self,
        X: np.ndarray,
        *,
        features: Sequence[int] | None = None,
        progress: ProgressFn | None = None,
    ) -> Effects:
        """Derivatives of the selected output with respect to the columns ``features``
        of X (column indices; None: every column), shape (N, F) in that order."""

    def describe(self) -> dict[str, Any]:
        """Method, output and settings used, recorded in the store's meta."""


_P = ParamSpec("_P")
#: numpy's floating-point warnings (np.errstate's "warn" messages).
_FP_WARNINGS = r"(invalid value|overflow|divide by zero|underflow) encountered"

_T = TypeVar("_T")


def call_model(path: Path | str, fn: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
    """``fn(*args, **kwargs)``, a call into the user's model code, with whatever it
    raises (but an :class:`~ale_cli.errors.AleError`) turned into one
    :class:`~ale_cli.errors.ModelFailed` line: "model 'PATH' failed: REASON".

    The original exception stays the ``__cause__``. Only the model call is
    wrapped: our own code around it keeps its tracebacks. numpy's floating-point
    RuntimeWarnings inside the call (invalid value, overflow, divide by zero) are
    silenced: the NaN and infinite values they announce are found row by row
    afterwards and reported in one line (:mod:`ale_cli.models.checks`).

    >>> call_model("m.pt", lambda x: 1 / x, 0)
    Traceback (most recent call last):
    ...
    ale_cli.errors.ModelFailed: model 'm.pt' failed: division by zero
    """
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=RuntimeWarning, message=_FP_WARNINGS)
            return fn(*args, **kwargs)
    except AleError:
        raise
    except Exception as exc:
        raise ModelFailed(f"model '{path}' failed: {first_line(exc)}") from exc


def integer_output_message(path: Path, dtype: str) -> str:
    """Why an integer-valued output cannot have local effects, and what to do instead."""
    return (
        f"model '{path}' returns integer values ({dtype}): an integer-valued output has no "
        "gradient, so it has no local effects; explain a probability instead "
        "({param} proba:CLASS for a scikit-learn classifier, or the column of a "
        "probability output) or use 'ale classic', which needs no gradient"
    )


def failure_reason(exc: ModelFailed) -> str:
    """The model's own reason inside a :class:`ModelFailed` of :func:`call_model`."""
    return first_line(exc.__cause__) if exc.__cause__ is not None else str(exc)


def feature_indices(features: Sequence[int] | None, width: int) -> np.ndarray:
    """``features`` as an index array into the ``width`` columns of X (all if None).

    >>> feature_indices([2, 0], 3).tolist(), feature_indices(None, 2).tolist()
    ([2, 0], [0, 1])
    """
    if features is None:
        return np.arange(width)
    index = np.asarray(features)
    if index.ndim != 1 or (index.size and not np.issubdtype(index.dtype, np.integer)):
        raise InputError("{param} must be a sequence of column indices", param="features")
    bad = [int(j) for j in index if not 0 <= j < width]
    if bad:
        raise InputError(
            f"{{param}} index {bad[0]} is out of range for X with {width} columns",
            param="features",
        )
    return index.astype(np.intp)


_TORCHSCRIPT_PREAMBLE = "The following operation failed in the TorchScript interpreter"


def first_line(exc: BaseException) -> str:
    """The first non-empty line of an exception's message (its type name if empty).

    For an error raised inside TorchScript, whose message starts with the
    interpreter's tracebacks, the line after them that holds the reason
    (without its ``builtins.ValueError:`` prefix).

    >>> first_line(ValueError("bad width\\nmore detail"))
    'bad width'
    >>> first_line(RuntimeError(_TORCHSCRIPT_PREAMBLE + ".\\nTraceback of TorchScript:\\n"
    ...                         "  File x\\nbuiltins.ValueError: negative input\\nmore"))
    'negative input'
    """
    lines = [ln.rstrip() for ln in str(exc).strip().splitlines() if ln.strip()]
    if lines and lines[0].startswith(_TORCHSCRIPT_PREAMBLE):
        last = max((i for i, ln in enumerate(lines) if ln.startswith("Traceback")), default=0)
        reason = next((ln for ln in lines[last + 1 :] if not ln[0].isspace()), lines[-1])
        head, sep, tail = reason.partition(": ")
        return tail if sep and head.rpartition(".")[2].endswith(("Error", "Exception")) else reason
    return lines[0].strip() if lines else type(exc).__name__


def close_with_nonfinite(a: np.ndarray, b: np.ndarray, *, rtol: float) -> bool:
    """True when ``a`` and ``b`` have one shape, their NaN and infinite values in the
    same places (infinities of the same sign), and their finite values within
    ``rtol`` of the largest finite magnitude of either.

    For the determinism and row-independence checks: a model that gives NaN on
    a row gives it every time, which is not a sign of randomness.

    >>> a = np.array([1.0, np.nan, np.inf])
    >>> close_with_nonfinite(a, a.copy(), rtol=1e-9)
    True
    >>> close_with_nonfinite(a, np.array([1.0, 2.0, np.inf]), rtol=1e-9)
    False
    """
    if a.shape != b.shape:
        return False
    fa, fb = np.isfinite(a), np.isfinite(b)
    if not np.array_equal(fa, fb) or not np.array_equal(a[~fa], b[~fb], equal_nan=True):
        return False
    a, b = a[fa], b[fb]
    scale = max(float(np.max(np.abs(a), initial=0.0)), float(np.max(np.abs(b), initial=0.0)))
    return bool(np.all(np.abs(a - b) <= rtol * max(scale, 1e-12)))


#: Rows of X that :func:`other_batch` takes the columns' spread from.
_SPREAD_ROWS = 4096


def other_batch(
    rows: np.ndarray, X: np.ndarray, *, spread: np.ndarray | None = None
) -> tuple[np.ndarray, int]:
    """A copy of ``rows`` with its second half moved by each column's spread + 1, and
    the size of the unchanged first half.

    For the row-independence checks: the outputs of the first half must not
    change when the rest of the batch does. The spread (std) is ``spread`` (D,) when
    the caller knows it (a :class:`~ale_cli.models.profile.DataProfile`'s std), else
    that of a systematic sample of at most 4096 rows of X: the whole column costs
    more than the check it serves.

    >>> other, half = other_batch(np.zeros((4, 1)), np.array([[0.0], [2.0]]))
    >>> other.ravel().tolist(), half
    ([0.0, 0.0, 2.0, 2.0], 2)
    >>> other_batch(np.zeros((2, 1)), np.array([[0.0], [1.7e308]]))[0].ravel().tolist()
    [0.0, 1.0]
    """
    half = max(1, len(rows) // 2)
    if spread is None:
        with np.errstate(over="ignore", invalid="ignore"):  # near-max floats: an inf spread
            spread = X[:: max(1, len(X) // _SPREAD_ROWS)].std(axis=0)
    spread = np.where(np.isfinite(spread), spread, 0.0)
    other = rows.copy()
    other[half:] = rows[half:] + spread + 1.0
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
