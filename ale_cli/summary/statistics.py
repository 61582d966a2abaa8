"""The effect-size statistics a summary records per feature (definitions in
:mod:`ale_cli.core.statistics`, per level in :mod:`ale_cli.core.discrete`, their
bootstrap bands in :mod:`ale_cli.core.bootstrap`), by the definitions its
``params.statistics`` names: ``"ale-cli"`` (also when absent, as in older summaries) or
``"r"`` (R ``ale``'s ``calc_stats``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ale_cli.checks import check_choice
from ale_cli.core.bootstrap import statistics_bands
from ale_cli.core.discrete import level_statistics
from ale_cli.core.statistics import ALE_CLI, DEFINITIONS, Definitions, effect_statistics, ranks

#: how each choice of ``statistics`` differs from the other, as ``params`` records it
NOTES = {
    "ale-cli": "ALED and NALED split a bin whose curve crosses zero at the crossing (R's ale "
    "takes the bin's midpoint); NALED and NALER are percentile points of the model's "
    "predictions (R's ale: of the observed outcome for a numeric target); statistics r "
    "gives R's definitions",
    "r": "R ale's calc_stats: ALED and NALED on bin midpoints (no split at zero), R's "
    "normalisation with the 101 recorded percentiles of the predictions as its reference "
    "(R's ale uses the observed outcome for a numeric target)",
}


def statistics_params(name: str) -> dict[str, str]:
    """The ``params`` entries of the ``statistics`` definitions named (checked)."""
    check_choice(name, tuple(DEFINITIONS), "statistics")
    return {"statistics": name, "statistics_note": NOTES[name]}


def definitions_of(params: dict[str, Any]) -> Definitions:
    """The definitions a summary's ``params`` name; ale's own when absent (older summaries)."""
    return DEFINITIONS.get(str(params.get("statistics")), ALE_CLI)


def feature_statistics(
    features: Sequence[Any], quantiles: np.ndarray | None, definitions: Definitions = ALE_CLI
) -> list[dict[str, Any] | None]:
    """The ``statistics`` object of every :class:`~ale_cli.summary.model.FeatureSummary`
    (None where not estimable): the statistics, their bands with bootstrap replicates, and
    ``rank`` (1 = largest ALED among the estimable features given)."""
    stats: list[dict[str, Any] | None] = []
    how = {"quantiles": quantiles, "definitions": definitions}
    for feat in features:
        if not feat.estimable:
            stats.append(None)
            continue
        curve = {"effect": feat.effect, "std": feat.std, "counts": feat.counts} | how
        levels = feat.kind is not None
        item = (level_statistics if levels else effect_statistics)(**curve)
        r = feat.replicates
        if r is not None:
            item |= statistics_bands(r.effect, r.counts, ci=r.ci, levels=levels, **how)
        stats.append(item)
    estimable = [item for item in stats if item is not None]
    aleds = np.array([item["aled"] for item in estimable])
    for item, r in zip(estimable, ranks(aleds), strict=True):
        item["rank"] = int(r)
    return stats
