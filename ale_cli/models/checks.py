"""Every value a model gave, checked for NaN and infinity row by row.

A model can return NaN or infinity on a few rows anywhere in the data (a log of
a negative input, an overflow in an exponential); the checks made when the
model is loaded see only its first rows. :func:`screen_rows` looks at every
row of the values a run got from the model (predictions, local effects, the
evaluations at bin limits, mixed derivatives) and either refuses the run with
one line naming the rows (:class:`~ale_cli.errors.ModelFailed`, exit 1) or,
when asked to (``drop_nonfinite``), returns the rows to keep and a note that
counts the dropped ones. Nothing non-finite is ever averaged into a bin.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ale_cli.errors import ModelFailed

#: Row indices a message names before it says how many more there are.
SHOWN_ROWS = 5


def nonfinite_rows(values: np.ndarray, *, axis: int = 0) -> np.ndarray:
    """Indices along ``axis`` of the rows of ``values`` holding a NaN or an infinity.

    Parameters
    ----------
    values : ndarray
        Any shape; ``axis`` is the axis of the data rows (1 for (P, N) mixed
        derivatives or (B, N) evaluations, 0 for (N,) predictions and (N, F)
        local effects).

    Returns
    -------
    ndarray of intp, sorted

    >>> nonfinite_rows(np.array([[1.0, 2.0], [np.nan, 0.0], [0.0, np.inf]])).tolist()
    [1, 2]
    >>> nonfinite_rows(np.array([[1.0, np.nan, 3.0]]), axis=1).tolist()
    [1]
    """
    finite = np.isfinite(values)
    if finite.ndim > 1:
        others = tuple(a for a in range(finite.ndim) if a != axis % finite.ndim)
        finite = finite.all(axis=others)
    return np.flatnonzero(~finite)


def nothing_left(model: str | Path) -> ModelFailed:
    """The error of a run where every row gave the model NaN or infinite values (each row
    refused or dropped): nothing is left to explain."""
    return ModelFailed(
        f"model '{model}' gave NaN or infinite values on every row: nothing is left to explain"
    )


def dropped_note(path: object, rows: np.ndarray) -> str:
    """The note of :func:`screen_rows` for the ``rows`` left out (numbered in the whole table).

    >>> dropped_note("m.pt", np.array([4, 9]))
    "dropped 2 rows where model 'm.pt' gave NaN or infinite values (rows 4, 9)"
    """
    return (
        f"dropped {_count(rows)} where model '{path}' gave NaN or infinite values "
        f"({row_list(rows)})"
    )


def row_list(rows: np.ndarray, *, shown: int = SHOWN_ROWS) -> str:
    """``rows`` as a message names them: every index up to ``shown``, then a count.

    >>> row_list(np.array([3]))
    'row 3'
    >>> row_list(np.array([10, 57, 58, 301]))
    'rows 10, 57, 58, 301'
    >>> row_list(np.arange(8))
    'rows 0, 1, 2, 3, 4 and 3 more'
    """
    head = ", ".join(str(int(i)) for i in rows[:shown])
    more = f" and {len(rows) - shown} more" if len(rows) > shown else ""
    return f"{'row' if len(rows) == 1 else 'rows'} {head}{more}"


def _count(rows: np.ndarray) -> str:
    return f"{len(rows)} row{'' if len(rows) == 1 else 's'}"


@dataclass(frozen=True)
class Screened:
    """What :func:`screen_rows` found.

    Attributes
    ----------
    keep : ndarray of bool, shape (N,)
        True for the rows whose values are all finite.
    dropped : ndarray of intp, shape (R,)
        The other rows, sorted.
    note : str or None
        One line counting and naming the dropped rows (None when none were).
    """

    keep: np.ndarray
    dropped: np.ndarray
    note: str | None = None


def screen_rows(
    path: Path | str,
    n_rows: int,
    checks: Sequence[tuple[str, np.ndarray, int]],
    *,
    drop: bool,
    offset: int = 0,
    allow_empty: bool = False,
) -> Screened:
    """Check every row of the values a model gave; refuse or drop the non-finite ones.

    ``offset`` is added to the row numbers in messages (a chunk of a larger table);
    ``allow_empty`` lets every row be dropped (one chunk of several).

    Parameters
    ----------
    path : Path or str
        The model file, for the message.
    n_rows : int
        N, the number of data rows.
    checks : sequence of (label, values, axis)
        What the values are ("predictions", "local effects", ...), the array
        and its axis of data rows (of length N).
    drop : bool
        Drop the rows and say so in the note, rather than raise.

    Returns
    -------
    Screened
        Every row kept (and no note) when all values are finite.

    Raises
    ------
    ModelFailed
        When a value is not finite and ``drop`` is False: "model 'PATH' gave NaN
        or infinite predictions on 4 rows (rows 10, 57, 58, 301); ...", naming
        each kind of value that had some, with a hint at ``drop_nonfinite``.
        Also when every row would be dropped.

    >>> pred = np.array([0.0, np.nan, 1.0, 2.0])
    >>> grads = np.array([[1.0], [1.0], [np.inf], [1.0]])
    >>> checks = [("predictions", pred, 0), ("local effects", grads, 0)]
    >>> screen_rows("m.pt", 4, checks, drop=False)
    Traceback (most recent call last):
    ...
    ale_cli.errors.ModelFailed: model 'm.pt' gave NaN or infinite predictions on 1 row (row 1) \
and local effects on 1 row (row 2); pass drop_nonfinite to leave those rows out, or fix the \
model there
    >>> found = screen_rows("m.pt", 4, checks, drop=True)
    >>> found.keep.tolist(), found.note
    ([True, False, False, True], "dropped 2 rows where model 'm.pt' gave NaN or infinite \
values (rows 1, 2)")
    """
    found = [(label, nonfinite_rows(values, axis=axis)) for label, values, axis in checks]
    found = [(label, rows) for label, rows in found if len(rows)]
    keep = np.ones(n_rows, dtype=bool)
    if not found:
        return Screened(keep=keep, dropped=np.empty(0, dtype=np.intp))
    parts = " and ".join(
        f"{label} on {_count(rows)} ({row_list(rows + offset)})" for label, rows in found
    )
    message = f"model '{path}' gave NaN or infinite {parts}"
    if not drop:
        raise ModelFailed(
            message + "; pass {param} to leave those rows out, or fix the model there",
            param="drop_nonfinite",
        )
    dropped = np.unique(np.concatenate([rows for _, rows in found]))
    keep[dropped] = False
    if not keep.any() and not allow_empty:
        raise ModelFailed(f"{message}: that is every row, nothing is left to explain")
    return Screened(keep=keep, dropped=dropped, note=dropped_note(path, dropped + offset))


def screen_effects(
    path: Path | str,
    prediction: np.ndarray,
    local_effects: np.ndarray,
    mixed: np.ndarray | None = None,
    *,
    drop: bool,
    offset: int = 0,
    allow_empty: bool = False,
) -> Screened:
    """:func:`screen_rows` over what ``ale compute`` got from the model: predictions
    (N,), local effects (N, F) and the optional mixed derivatives (P, N).

    >>> screen_effects("m.pt", np.ones(3), np.array([[0.0], [np.nan], [0.0]]), drop=True).note
    "dropped 1 row where model 'm.pt' gave NaN or infinite values (row 1)"
    """
    checks = [("predictions", prediction, 0), ("local effects", local_effects, 0)]
    if mixed is not None:
        checks.append(("mixed derivatives", mixed, 1))
    return screen_rows(
        path, len(prediction), checks, drop=drop, offset=offset, allow_empty=allow_empty
    )
