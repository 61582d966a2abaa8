"""What every model adapter provides, whatever its format: the adapter
:func:`ale_cli.models.load_model` returns is final (``describe()`` never changes);
autodiff adapters also give ``mixed_derivatives(X, pairs)`` -> (P, N). Every call into
the user's model code goes through :func:`call_model`.
"""

from __future__ import annotations

import functools
import importlib
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import numpy as np

from ale_cli.errors import AleError, InputError, ModelError, ModelFailed, first_line
from ale_cli.models.profile import DataProfile

#: Called with the number of rows just finished; drives the progress bar.
ProgressFn = Callable[[int], None]
#: Column indices into X (None: all).
Features = Sequence[int] | None
#: Rows a model is first called on when it is loaded (width, output, row independence).
CHECK_ROWS = 8


@dataclass(frozen=True)
class Effects:
    """``local_effects`` (N, F): d f(x_i) / d x_j for the k-th explained column j (0 for
    held-fixed columns); ``prediction`` (N,): f(x_i)."""

    local_effects: np.ndarray
    prediction: np.ndarray


@dataclass(frozen=True)
class LoadOptions:
    """How a model is loaded and which output is explained (None: the default); ``step``
    is a fraction of each feature's std, ``trust`` skops type names."""

    output: str | None = None
    batch_size: int | None = None
    method: str = "auto"
    step: float | None = None
    trust: tuple[str, ...] = ()
    trust_pickle: bool = False


METHODS = ("auto", "autodiff", "finite-differences")


@dataclass(frozen=True)
class Columns:
    """The feature columns of X: ``names`` (D,), ``fixed`` (held fixed, effect 0),
    ``levels`` (code -> original value of text columns), ``dtypes`` (pandas dtypes)."""

    names: tuple[str, ...]
    fixed: tuple[str, ...] = ()
    levels: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    dtypes: Mapping[str, str] = field(default_factory=dict)

    def fixed_mask(self) -> np.ndarray:
        """Boolean (D,): True for the columns held fixed."""
        return np.array([name in self.fixed for name in self.names], dtype=bool)


@dataclass(frozen=True)
class LoadRequest:
    """A model to load (a file path, or a :class:`~ale_cli.models.objects.ModelObject`)
    in ``format``, with the ``options``, ``columns`` and rows X (N, D) it is checked on;
    ``all_rows``: the profile of all rows (None: X's is :attr:`profile`)."""

    model: Any
    format: str
    options: LoadOptions
    columns: Columns
    X: np.ndarray
    all_rows: DataProfile | None = None

    @functools.cached_property
    def profile(self) -> DataProfile:
        """The profile of all rows if given, else of X (computed once)."""
        return DataProfile.of(self.X) if self.all_rows is None else self.all_rows


class Model:
    """A loaded and checked model (built only by :func:`ale_cli.models.load_model`); each
    adapter computes :meth:`effects`, which :meth:`local_effects` calls."""

    #: The file format: torchscript, onnx, skops, pickle...
    format: str
    #: autodiff, finite-differences..., decided when the model was loaded.
    method: str

    def predict(self, X: np.ndarray) -> np.ndarray:
        """The selected output at every row, shape (N,)."""
        raise NotImplementedError

    def effects(self, X: np.ndarray, features: Features, progress: ProgressFn | None) -> Effects:
        """:meth:`local_effects` as the adapter computes them."""
        raise NotImplementedError

    def local_effects(
        self, X: np.ndarray, *, features: Features = None, progress: ProgressFn | None = None
    ) -> Effects:
        """Derivatives (N, F) of the output in the columns ``features`` (None: all)."""
        return self.effects(X, features, progress)

    def describe(self) -> dict[str, Any]:
        """Method, output and settings used, recorded in the store's meta (an adapter's
        entries follow the method and format)."""
        return {"method": self.method, "format": self.format}


_P = ParamSpec("_P")
_FP_WARNINGS = r"(invalid value|overflow|divide by zero|underflow) encountered"

_T = TypeVar("_T")


def call_model(path: Path | str, fn: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
    """``fn(*args, **kwargs)`` with whatever it raises (but an AleError) turned into
    one :class:`~ale_cli.errors.ModelFailed` line, the original as ``__cause__``; numpy's
    floating-point warnings silenced (:mod:`ale_cli.models.checks` reports the values).

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


#: How a message about the model's inputs ends.
INPUTS_HINT = "select the model's inputs with {param:inputs} or {param:exclude}"


def first_rows_failed(path: object, exc: ModelFailed) -> ModelFailed:
    """The error of a model that fails on the first rows of the data."""
    reason = failure_reason(exc)
    return ModelFailed(f"model '{path}' failed on the first rows of the data: {reason}")


def width_error(what: str, width: int, names: Sequence[str]) -> ModelError:
    """The error of a model (``what``) that takes ``width`` features when ``names`` are selected."""
    return ModelError(
        f"{what} takes {width} features but {len(names)} are selected ({', '.join(names)}); "
        + INPUTS_HINT,
        param="features",
    )


def unique_columns(spec: str, columns: Sequence[str]) -> None:
    """Refuse an ``--output`` list ``spec`` two of whose selectors resolve to one column
    (``columns``: each one's column, labels resolved).

    >>> unique_columns("proba:1,proba:b", ["proba:1", "proba:1"])
    Traceback (most recent call last):
    ...
    ale_cli.errors.ModelError: output proba:1,proba:b names column proba:1 twice; list each ...
    """
    repeated = next((c for i, c in enumerate(columns) if c in columns[:i]), None)
    if repeated is not None:
        raise ModelError(
            f"{{param}} {spec} names column {repeated} twice; list each column once",
            param="output",
        )


def extra(module: str, what: str) -> Any:
    """The optional ``module``, or a one-line ModelError: ``what`` needs the extra of it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ModelError(
            f"{what} needs the {module} extra: pip install 'ale-cli[{module}]'"
        ) from None


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


def close_with_nonfinite(a: np.ndarray, b: np.ndarray, *, rtol: float) -> bool:
    """True when ``a`` and ``b`` have one shape, the same non-finite values in the
    same places, and finite values within ``rtol`` of the largest finite magnitude.

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


_SPREAD_ROWS = 4096


def rows_independent(
    f: Callable[[np.ndarray], Any],
    X: np.ndarray,
    *,
    rtol: float,
    first: Any = None,
    spread: np.ndarray | None = None,
) -> bool:
    """True when the outputs of the first rows do not change if they are evaluated alone,
    or if the second half of the batch moves by each column's spread + 1 (``spread`` (D,),
    else the std of a systematic sample of X; an infinite one: 0); ``first``:
    ``f(X[:CHECK_ROWS])`` if known; ``f`` may give a tuple of arrays, each compared.

    >>> X = np.arange(20.0).reshape(10, 2)
    >>> rows_independent(lambda Z: Z.sum(axis=1), X, rtol=1e-9)
    True
    >>> rows_independent(lambda Z: (Z[:, 0], Z.sum(axis=1) - Z.mean()), X, rtol=1e-9)
    False
    >>> all_finite = lambda Z: np.full(len(Z), float(np.isfinite(Z).all()))
    >>> rows_independent(all_finite, np.array([[0.0], [1.7e308]]), rtol=1e-9)
    True
    """
    rows = X[:CHECK_ROWS]
    half = max(1, len(rows) // 2)
    if spread is None:
        with np.errstate(over="ignore", invalid="ignore"):  # near-max floats: an inf spread
            spread = X[:: max(1, len(X) // _SPREAD_ROWS)].std(axis=0)
    other = rows.copy()
    other[half:] = rows[half:] + np.where(np.isfinite(spread), spread, 0.0) + 1.0
    a = f(rows) if first is None else first
    b, c = f(other), f(rows[:1])
    return all(
        close_with_nonfinite(x[:half], y[:half], rtol=rtol)
        and close_with_nonfinite(x[:1], z, rtol=rtol)
        for x, y, z in zip(*((v if isinstance(v, tuple) else (v,)) for v in (a, b, c)), strict=True)
    )


def chunks(n_rows: int, size: int) -> Iterator[slice]:
    """As few consecutive slices of at most ``size`` rows as cover ``range(n_rows)``,
    of equal lengths (within one row).

    >>> list(chunks(5, 2))
    [slice(0, 1, None), slice(1, 3, None), slice(3, 5, None)]
    >>> [sl.stop - sl.start for sl in chunks(50_000, 8192)]
    [7142, 7143, 7143, 7143, 7143, 7143, 7143]
    """
    count = -(-n_rows // size)
    for i in range(count):
        yield slice(i * n_rows // count, (i + 1) * n_rows // count)


def pad_rows(rows: np.ndarray, size: int) -> np.ndarray:
    """``rows`` with its last row repeated up to ``size`` rows (a graph's fixed batch)."""
    return np.concatenate([rows, np.repeat(rows[-1:], size - len(rows), axis=0)])


def stacked_chunks(X: np.ndarray, blocks: int, rows: int) -> Iterator[tuple[slice, np.ndarray]]:
    """``(sl, stack)`` per chunk of at most ``rows`` rows of X: ``stack`` (blocks * m, D)
    holds ``blocks`` copies of ``X[sl]``, in one buffer reused for every chunk.

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


def batched_effects(
    step: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
    X: np.ndarray,
    features: Sequence[int] | None,
    *,
    rows: int,
    fixed: np.ndarray,
    outputs: int = 0,
    progress: ProgressFn | None = None,
) -> Effects:
    """``step(chunk) -> (predictions, gradients (m, [K,] D))`` per chunk of at most ``rows``
    rows: Effects of the columns ``features``, 0 for held-fixed ones; (N, K, F) and (N, K)
    for ``outputs`` K > 0."""
    index = feature_indices(features, X.shape[1])
    many = (outputs,) if outputs else ()
    grads = np.empty((len(X), *many, len(index)), dtype=np.float64)
    preds = np.empty((len(X), *many), dtype=np.float64)
    for sl in chunks(len(X), rows):
        preds[sl], full = step(X[sl])
        grads[sl] = full[..., index]
        if progress is not None:
            progress(sl.stop - sl.start)
    grads[..., fixed[index]] = 0.0
    return Effects(local_effects=grads, prediction=preds)
