"""The columns of ``ale export``'s long table (:mod:`ale_cli.summary.export` builds it),
and the header rows of its CSV: the mark the output guard recognises an export by.

The header row is ``estimator,feature,kind`` (and ``region`` for a regional summary,
``output`` for a summary of several model outputs)
followed by the columns of the kinds present, in the order of :data:`KIND_COLUMNS`
(each column once). That exact row is the mark of a CSV written by ``ale export``: a
CSV whose first line is anything else is not ours (:data:`HEADERS`).
"""

from __future__ import annotations

BASE_COLUMNS = ("estimator", "feature", "kind")
KIND_COLUMNS: dict[str, tuple[str, ...]] = {
    "edge": ("index", "x", "effect", "std", "stderr", "lower", "upper"),
    "bin": ("index", "left", "right", "count", "bin_effect", "bin_std", "bin_stderr", "filled"),
    "cell": (
        "index_a",
        "index_b",
        "x_a_left",
        "x_a_right",
        "x_b_left",
        "x_b_right",
        "count",
        "cell_effect",
        "cell_std",
        "filled",
    ),
    "corner": ("index_a", "index_b", "x_a", "x_b", "effect"),
    "stat": ("statistic", "value"),
}


#: the column of a regional summary's table (``ale regional``): the region of each row
REGION = "region"
#: the column of a summary of several model outputs: the output of each row
OUTPUT = "output"


def table_columns(kinds: list[str], *, region: bool = False, output: bool = False) -> list[str]:
    """The columns of a table holding rows of ``kinds``, in the order written (``region``:
    a regional summary's, with the ``region`` column after ``kind``).

    >>> table_columns(["edge", "stat"])[:5]
    ['estimator', 'feature', 'kind', 'index', 'x']
    >>> table_columns(["edge"], region=True)[:5]
    ['estimator', 'feature', 'kind', 'region', 'index']
    """
    names = [*BASE_COLUMNS, *([REGION] if region else []), *([OUTPUT] if output else [])]
    for kind in KIND_COLUMNS:
        if kind in kinds:
            names += [c for c in KIND_COLUMNS[kind] if c not in names]
    return names


def _headers() -> set[str]:
    """Every header row ``ale export`` can write (one per non-empty set of kinds)."""
    kinds = list(KIND_COLUMNS)
    rows = set()
    for mask in range(1, 1 << len(kinds)):
        chosen = [k for i, k in enumerate(kinds) if mask >> i & 1]
        for extra in ({}, {"region": True}, {"output": True}):
            rows.add(",".join(table_columns(chosen, **extra)))
    return rows


#: every header row ``ale export`` can write
HEADERS = frozenset(_headers())
