"""Feature pairs of second-order effects: ``--pair a,b`` (interact), ``--pairs a,b`` (compute)."""

from __future__ import annotations

from collections.abc import Sequence

from ale_cli.errors import InputError

Pair = tuple[str, str]


def parse_pair(text: str, param: str = "pairs") -> Pair:
    """``"a,b"`` -> ``("a", "b")``; a one-line InputError for anything else.

    >>> parse_pair(" s1, s2 ")
    ('s1', 's2')
    """
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or not all(parts):
        raise InputError(
            f"{{param}} expects two comma-separated feature names A,B, got '{text}'", param=param
        )
    if parts[0] == parts[1]:
        raise InputError(
            f"{{param}} {text.strip()} names feature '{parts[0]}' twice; "
            "a pair needs two different features",
            param=param,
        )
    return parts[0], parts[1]


def parse_pairs(texts: Sequence[str] | str | None, param: str = "pairs") -> tuple[Pair, ...]:
    """Every ``--pair`` value parsed, duplicates (in either order) removed, order kept.

    Each item may be ``"a,b"`` or a sequence ``("a", "b")``; a single string is one pair.

    >>> parse_pairs(["a,b", "b,a", ("a", "c")])
    (('a', 'b'), ('a', 'c'))
    """
    out: list[Pair] = []
    seen: set[frozenset[str]] = set()
    items = [texts] if isinstance(texts, str) else list(texts or ())
    for item in items:
        text = item if isinstance(item, str) else ",".join(map(str, item))
        pair = parse_pair(text, param)
        if frozenset(pair) not in seen:
            seen.add(frozenset(pair))
            out.append(pair)
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
