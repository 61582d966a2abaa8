"""Every value a model gave, checked for NaN and infinity row by row (:func:`screen_rows`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ale_cli.errors import ModelFailed

#: Row indices a message names before it says how many more there are.
SHOWN_ROWS = 5


def nonfinite_rows(values: np.ndarray, *, axis: int = 0) -> np.ndarray:
    """Sorted indices along ``axis`` (the data rows) of the rows of ``values``
    holding a NaN or an infinity.

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
    """The error of a run where every row gave NaN or infinite values."""
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


def _gave(path: Path | str, found: Sequence[tuple[str, np.ndarray]]) -> str:
    """The refusal's words for the rows each check ``found`` (a check with none left out)."""
    parts = " and ".join(
        f"{label} on {_count(rows)} ({row_list(rows)})" for label, rows in found if len(rows)
    )
    return f"model '{path}' gave NaN or infinite {parts}"


class NonFinite(ModelFailed):
    """The refusal of :func:`screen_rows`: ``found`` (label, rows numbered in the table) per
    check, in the checks' order; :meth:`after` merges a later chunk's, so a run refusing
    its rows counts every one (:mod:`ale_cli.passes.engine`)."""

    def __init__(self, path: Path | str, found: Sequence[tuple[str, np.ndarray]]) -> None:
        self.path, self.found = path, tuple(found)
        super().__init__(
            f"{_gave(path, found)}; pass {{param}} to leave those rows out, or fix the model there",
            param="drop_nonfinite",
        )

    def __reduce__(self) -> tuple[object, ...]:
        return (NonFinite, (self.path, self.found))

    def after(self, earlier: NonFinite | None) -> NonFinite:
        """The refusal of ``earlier``'s rows followed by these."""
        if earlier is None:
            return self
        rows = {label: [rows] for label, rows in earlier.found}
        for label, found in self.found:
            rows.setdefault(label, []).append(found)
        return NonFinite(self.path, [(k, np.concatenate(v)) for k, v in rows.items()])


@dataclass(frozen=True)
class Screened:
    """What :func:`screen_rows` found: ``keep`` (N,) bool, ``dropped`` (R,) sorted,
    ``note`` naming the dropped rows (None when none were)."""

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
    """Check every row of the values a model gave; refuse or ``drop`` the non-finite ones.

    ``checks``: (label, values, axis of the N data rows); ``offset`` is added to the
    row numbers in messages (a chunk); ``allow_empty`` lets every row be dropped.

    >>> pred = np.array([0.0, np.nan, 1.0, 2.0])
    >>> grads = np.array([[1.0], [1.0], [np.inf], [1.0]])
    >>> checks = [("predictions", pred, 0), ("local effects", grads, 0)]
    >>> screen_rows("m.pt", 4, checks, drop=False)
    Traceback (most recent call last):
    ...
    ale_cli.models.checks.NonFinite: model 'm.pt' gave NaN or infinite predictions on 1 row \
(row 1) and local effects on 1 row (row 2); pass drop_nonfinite to leave those rows out, or fix \
the model there
    >>> found = screen_rows("m.pt", 4, checks, drop=True)
    >>> found.keep.tolist(), found.note
    ([True, False, False, True], "dropped 2 rows where model 'm.pt' gave NaN or infinite \
values (rows 1, 2)")
    """
    every = [(label, nonfinite_rows(values, axis=axis)) for label, values, axis in checks]
    found = [(label, rows) for label, rows in every if len(rows)]
    keep = np.ones(n_rows, dtype=bool)
    if not found:
        return Screened(keep=keep, dropped=np.empty(0, dtype=np.intp))
    if not drop:
        raise NonFinite(path, [(label, rows + offset) for label, rows in every])
    message = _gave(path, [(label, rows + offset) for label, rows in found])
    dropped = np.unique(np.concatenate([rows for _, rows in found]))
    keep[dropped] = False
    if not keep.any() and not allow_empty:
        raise ModelFailed(f"{message}: that is every row, nothing is left to explain")
    return Screened(keep=keep, dropped=dropped, note=dropped_note(path, dropped + offset))
