"""The regional summary (``ale regional``): an ordinary summary (estimator ``"regional"``,
its ``features`` the global RHALE records, so ``ale plot``, ``audit`` and ``export`` read
it as any other) with one more list, ``regions``: per feature its ``status`` (``"split"``,
``"no_split"`` or ``"not_estimable"``), heterogeneity and tree, root first, each leaf with
a full first-order ``record`` on its rows. JSON Schema: ``$defs/region_feature`` in
``ale_cli/schema/summary.schema.json``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ale_cli.core.regional import Condition
from ale_cli.errors import InputError
from ale_cli.io.files import atomic_write
from ale_cli.io.jsonio import dumps
from ale_cli.summary.compare import records_difference
from ale_cli.summary.model import FeatureSummary, Summary, load_summary, present

#: the estimator of a regional summary
REGIONAL = "regional"
#: what a feature without a kept split says
NO_SPLIT_NOTE = "no split lowers the heterogeneity by at least min_drop; one region"


@dataclass(frozen=True)
class Split:
    """A kept split of a node: ``conditions[0]`` holds in child ``children[0]``."""

    input: str
    kind: str
    value: float
    conditions: tuple[Condition, Condition]
    children: tuple[int, int]
    rows: tuple[int, int]
    before: float
    after: float

    @property
    def drop(self) -> float:
        """Relative drop of the heterogeneity, ``1 - after / before``."""
        return 0.0 if self.before <= 0 else 1.0 - self.after / self.before

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)} | {
            "conditions": [_condition_dict(c) for c in self.conditions],
            "drop": self.drop,
        }


@dataclass(frozen=True)
class RegionNode:
    """One node of a feature's tree; a leaf has a ``record`` and no ``split``."""

    id: int
    parent: int | None
    conditions: tuple[Condition, ...]
    rows: int
    share: float
    heterogeneity: float
    split: Split | None = None
    record: FeatureSummary | None = None

    @property
    def label(self) -> str:
        """The region in words: ``"bmi > 27.5 and sex == 1"``, or ``"all rows"``."""
        return " and ".join(c.text for c in self.conditions) or "all rows"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "parent": self.parent,
            "conditions": [_condition_dict(c) for c in self.conditions],
            "region": self.label,
            "rows": self.rows,
            "share": self.share,
            "heterogeneity": self.heterogeneity,
        }
        more = {"split": self.split, "record": self.record}
        return out | {k: v.to_dict() for k, v in more.items() if v is not None}


@dataclass(frozen=True)
class RegionalFeature:
    """The regions of one feature (see the module docstring)."""

    name: str
    status: str
    heterogeneity: float | None = None
    nodes: tuple[RegionNode, ...] = ()
    reason: str | None = None
    note: str | None = None

    @property
    def leaves(self) -> tuple[RegionNode, ...]:
        return tuple(n for n in self.nodes if n.split is None)

    @property
    def splits(self) -> tuple[Split, ...]:
        return tuple(n.split for n in self.nodes if n.split is not None)

    @property
    def drop(self) -> float:
        """Relative drop of H from all rows to the leaves (0 without a split):
        ``1 - sum_leaves n_l H_l / (N H)``."""
        if not self.splits or not self.heterogeneity:
            return 0.0
        total = sum(n.rows for n in self.leaves)
        after = sum(n.rows * n.heterogeneity for n in self.leaves) / total
        return 1.0 - after / self.heterogeneity

    def to_dict(self) -> dict[str, Any]:
        out = {"feature": self.name, "status": self.status} | present(self, "reason", "note")
        if self.status != "not_estimable":
            out |= {
                "heterogeneity": self.heterogeneity,
                "drop": self.drop,
                "nodes": [n.to_dict() for n in self.nodes],
            }
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RegionalFeature:
        nodes = tuple(_node(n) for n in data.get("nodes", ()))
        name, status, h = str(data["feature"]), str(data["status"]), data.get("heterogeneity")
        return cls(name, status, h, nodes, data.get("reason"), data.get("note"))


def _condition_dict(c: Condition) -> dict[str, Any]:
    return {"input": c.name} | {
        k: getattr(c, k) for k in ("column", "op", "value", "shown", "text")
    }


def _condition(d: dict[str, Any]) -> Condition:
    return Condition(
        str(d["input"]), int(d["column"]), str(d["op"]), float(d["value"]), str(d["shown"])
    )


def _node(d: dict[str, Any]) -> RegionNode:
    split = None
    if "split" in d:
        s = d["split"]
        pairs = (("conditions", _condition), ("children", int), ("rows", int))
        two = {k: (f(s[k][0]), f(s[k][1])) for k, f in pairs}
        numbers = {k: float(s[k]) for k in ("value", "before", "after")}
        split = Split(input=str(s["input"]), kind=str(s["kind"]), **numbers, **two)
    parent = None if d["parent"] is None else int(d["parent"])
    conditions = tuple(_condition(c) for c in d["conditions"])
    sizes = int(d["rows"]), float(d["share"]), float(d["heterogeneity"])
    record = FeatureSummary.from_dict(d["record"]) if "record" in d else None
    return RegionNode(int(d["id"]), parent, conditions, *sizes, split, record)


@dataclass(frozen=True)
class RegionalSummary:
    """A regional summary: the global records (``summary``) and each feature's regions."""

    summary: Summary
    regions: tuple[RegionalFeature, ...]

    def feature(self, name: str) -> RegionalFeature:
        for r in self.regions:
            if r.name == name:
                return r
        names = ", ".join(r.name for r in self.regions)
        raise InputError(f"regional summary has no feature '{name}' (features: {names})")

    def to_dict(self, *, timestamp: bool = True) -> dict[str, Any]:
        return self.summary.to_dict(timestamp=timestamp) | {
            "regions": [r.to_dict() for r in self.regions]
        }


def write_regional(path: str | Path, result: RegionalSummary, *, timestamp: bool = True) -> None:
    """Write a regional summary's JSON atomically."""
    text = dumps(result.to_dict(timestamp=timestamp))
    with atomic_write(path) as fh:
        fh.write(text.encode("utf-8"))


def read_regional(path: str | Path) -> RegionalSummary:
    """A regional summary written by ``ale regional``; one-line errors for other files."""
    summary, data = load_summary(path)
    if summary.estimator != REGIONAL:
        raise InputError(f"'{path}' is not a regional summary (estimator 'regional')")
    regions = data.get("regions", ())
    try:
        return RegionalSummary(summary, tuple(map(RegionalFeature.from_dict, regions)))
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise InputError(f"regional summary '{path}' is malformed: {exc}") from None


def regional_diff_lines(a: str | Path, b: str | Path) -> tuple[str, ...]:
    """``ale diff`` of two regional summaries: per feature of both, in A's
    order, whether their leaves have the same conditions, and then the largest difference
    of the leaves' curves (on A's edges, :func:`~ale_cli.summary.compare.records_difference`)."""
    found_a, found_b = read_regional(a), read_regional(b)
    names_b = {r.name: r for r in found_b.regions}
    lines = ["REGIONS"]
    for ra in found_a.regions:
        rb = names_b.get(ra.name)
        if rb is None:
            continue
        la, lb = (" | ".join(n.label for n in r.leaves) for r in (ra, rb))
        if [n.label for n in ra.leaves] != [n.label for n in rb.leaves]:
            lines.append(f"{ra.name}: different regions: A {la}; B {lb}")
            continue
        pairs = [(na.record, nb.record) for na, nb in zip(ra.leaves, rb.leaves, strict=True)]
        found = [
            records_difference(fa, fb)
            for fa, fb in pairs
            if fa and fb and fa.status == fb.status == "ok" and not fa.kind
        ]
        worst = [d.max_abs for d in found if d is not None]
        shown = f"; leaf curves differ by at most {max(worst):.4g}" if worst else ""
        lines.append(f"{ra.name}: same regions ({la}){shown}")
    return tuple(lines)
