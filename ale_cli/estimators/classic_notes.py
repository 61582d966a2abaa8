"""What ``ale classic`` records of how features were estimated: the ``discrete`` parameter,
the binary columns taken as levels by default, and the bins between rows that hold none."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from ale_cli.estimators.levels import LevelPlan, binary_note
from ale_cli.summary.model import FeatureSummary


def with_empty_bins_note(feature: FeatureSummary) -> FeatureSummary:
    """``feature`` with a note when bins between rows hold none: classic ALE moves a row to
    the limits of its own bin only, so the model's change across empty bins is not
    measured (a binary column on uniform bins gets an effect of 0)."""
    counts = feature.counts
    if feature.status != "ok" or feature.note is not None or counts is None or counts.ndim != 1:
        return feature
    held = np.flatnonzero(counts > 0)
    if held.size < 2 or held[-1] - held[0] + 1 == held.size:
        return feature
    empty = int(held[-1] - held[0] + 1 - held.size)
    return replace(
        feature,
        note=(
            f"{empty} of {counts.size} bins between rows are empty: the model's change "
            "across them is not measured (taken as 0); use quantile bins, or estimate a "
            "column with few values per level (discrete)"
        ),
    )


def binary_notes(
    discrete: tuple[str, ...] | str | None, levels: dict[str, LevelPlan | str]
) -> tuple[str, ...]:
    """The note naming the binary columns estimated per level because of the default."""
    if discrete is not None:
        return ()
    found = [n for n, p in levels.items() if isinstance(p, LevelPlan) and p.kind == "discrete"]
    return (binary_note(found),) if found else ()


def discrete_param(discrete: tuple[str, ...] | str | None) -> dict[str, Any]:
    """``params["discrete"]`` when asked (absent otherwise: summaries as before)."""
    if discrete is None:
        return {}
    return {"discrete": discrete if isinstance(discrete, str) else list(discrete)}
