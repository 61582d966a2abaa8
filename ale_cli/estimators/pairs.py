"""Feature pairs of second-order effects: ``--pair a,b`` (interact), ``--pairs a,b`` (compute),
their columns and their grids of cells."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ale_cli.errors import InputError
from ale_cli.estimators.bins import FixedBins
from ale_cli.estimators.rows import Rows
from ale_cli.summary.build import CATEGORICAL_REASON, CONSTANT_REASON

Pair = tuple[str, str]


def parse_pairs(texts: Sequence[str] | str | None, param: str = "pairs") -> tuple[Pair, ...]:
    """Every ``"a,b"`` or ``("a", "b")`` parsed, duplicates (in either order) removed; a
    one-line InputError for anything else.

    >>> parse_pairs(["a,b", "b,a", ("a", "c"), " s1, s2 "])
    (('a', 'b'), ('a', 'c'), ('s1', 's2'))
    """
    out: list[Pair] = []
    seen: set[frozenset[str]] = set()
    for item in [texts] if isinstance(texts, str) else list(texts or ()):
        text = item if isinstance(item, str) else ",".join(map(str, item))
        parts = [p.strip() for p in text.split(",")]
        if len(parts) != 2 or not all(parts):
            raise InputError(
                f"{{param}} expects two comma-separated feature names A,B, got '{text}'",
                param=param,
            )
        if parts[0] == parts[1]:
            raise InputError(
                f"{{param}} {text.strip()} names feature '{parts[0]}' twice; "
                "a pair needs two different features",
                param=param,
            )
        if frozenset(parts) not in seen:
            seen.add(frozenset(parts))
            out.append((parts[0], parts[1]))
    return tuple(out)


def pair_columns(
    pairs: Sequence[Pair], names: Sequence[str], *, param: str, where: str
) -> list[tuple[int, int]]:
    """Column indices of every pair in ``names``; InputError naming the unknown feature.

    >>> pair_columns([("b", "a")], ["a", "b"], param="pairs", where="the data")
    [(1, 0)]
    """
    index = {name: j for j, name in enumerate(names)}
    out = []
    for a, b in pairs:
        for name in (a, b):
            if name not in index:
                raise InputError(
                    f"{{param}} {a},{b}: {where} has no feature '{name}' "
                    f"(features: {', '.join(names)})",
                    param=param,
                )
        out.append((index[a], index[b]))
    return out


Grids = dict[int, tuple[np.ndarray, np.ndarray]]


def pair_grids(
    pairs: Sequence[Pair], cols: Sequence[tuple[int, int]], rows: Rows, binning: FixedBins
) -> tuple[Grids, dict[int, str]]:
    """Per pair (by position): its two edge arrays, or why it is not estimable (a
    categorical or constant feature); the edges file's, uniform, or type-1 quantiles.

    >>> X = np.array([[0.0, 5.0, 1.0], [1.0, 4.0, 1.0], [2.0, 3.0, 1.0], [3.0, 2.0, 1.0]])
    >>> rows = Rows.of(X, ("a", "b", "c"))
    >>> grids, why = pair_grids([("a", "b"), ("a", "c")], [(0, 1), (0, 2)], rows,
    ...                         FixedBins(bins=2, binning="quantile"))
    >>> [z.tolist() for z in grids[0]], why
    ([[0.0, 1.0, 3.0], [2.0, 3.0, 5.0]], {1: "'c': single distinct value"})
    """
    given = binning.edges_file
    reasons: dict[int, str] = {}
    for p, (pair, pc) in enumerate(zip(pairs, cols, strict=True)):
        cat = next((n for n in pair if n in rows.categorical), None)
        if cat is not None:
            reasons[p] = f"'{cat}': {CATEGORICAL_REASON}"
            continue
        for name, c in zip(pair, pc, strict=True):
            if given is not None:
                if name not in given.edges:
                    raise InputError(f"edges file '{given.path}' has no edges for feature '{name}'")
            elif not rows.hi[c] > rows.lo[c]:
                reasons[p] = f"'{name}': {CONSTANT_REASON}"
                break
    ok = [p for p in range(len(pairs)) if p not in reasons]
    needed = sorted({c for p in ok for c in cols[p]})
    if given is not None:
        by_col = {c: np.asarray(given.edges[rows.names[c]], dtype=np.float64) for c in needed}
    else:
        found = rows.edges(needed, bins=binning.bins, binning=binning.binning)
        by_col = dict(zip(needed, found, strict=True))
    return {p: (by_col[cols[p][0]], by_col[cols[p][1]]) for p in ok}, reasons
