"""Earlier runs of a report: one subdirectory per run, names in time order, holding its
summaries (matched by file name, else by estimator); a feature's drift is ``ale diff``'s
largest absolute difference of the centered curves on the current edges.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ale_cli.errors import InputError
from ale_cli.summary.compare import compare_feature
from ale_cli.summary.model import Summary, read_summary


@dataclass(frozen=True)
class HistoryRun:
    """One earlier run: its directory name and its summaries by file name."""

    label: str
    summaries: dict[str, Summary]

    def match(self, name: str, summary: Summary) -> Summary | None:
        """The summary of this run that corresponds to ``summary`` (file ``name``)."""
        if name in self.summaries:
            return self.summaries[name]
        for other in self.summaries.values():
            if other.estimator == summary.estimator and other.features:
                return other
        return None


def read_history(directory: str | Path, *, exclude: Sequence[str] = ()) -> list[HistoryRun]:
    """The runs under ``directory`` in name (time) order, less the names in ``exclude``;
    a run's ``*.json`` files that are not summaries (an audit report) are skipped."""
    root = Path(directory)
    if not root.is_dir():
        raise InputError(f"history directory '{root}' does not exist or is not a directory")
    runs = []
    listed = (p for p in root.iterdir() if p.is_dir() and p.name not in exclude)
    for sub in sorted(p for p in listed if not p.name.startswith(".")):
        summaries = {}
        for path in sorted(sub.glob("*.json")):
            try:
                summaries[path.name] = read_summary(path)
            except InputError:
                continue  # the audit report, or another JSON file
        runs.append(HistoryRun(sub.name, summaries))
    return runs


@dataclass(frozen=True)
class FeatureDrift:
    """How one feature moved: ``values[i]`` the max abs difference against ``runs[i]``
    (None: no comparable curve); ``previous`` against the newest run that has one,
    ``previous_at`` where on the grid, ``previous_run`` its label."""

    name: str
    runs: tuple[str, ...]
    values: tuple[float | None, ...]
    previous: float | None
    previous_at: float | None
    previous_run: str | None


def feature_drifts(name: str, summary: Summary, runs: Sequence[HistoryRun]) -> list[FeatureDrift]:
    """Per first-order feature of ``summary`` (file ``name``), its drift against ``runs``."""
    matched = (run.match(name, summary) for run in runs)
    earlier = [{f.name: f for f in reversed(s.features)} if s else {} for s in matched]
    out = []
    for feat in summary.features:
        values: list[float | None] = []
        at: list[float | None] = []
        for other in earlier:  # the first record of the name, as ``Summary.feature``
            d = compare_feature(feat.name, feat, other.get(feat.name)).difference
            values.append(None if d is None else d.max_abs)
            at.append(None if d is None else d.max_abs_at)
        last = max((i for i, v in enumerate(values) if v is not None), default=None)
        newest = (None, None, None) if last is None else (values[last], at[last], runs[last].label)
        out.append(FeatureDrift(feat.name, tuple(r.label for r in runs), tuple(values), *newest))
    return out
