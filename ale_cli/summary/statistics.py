"""The effect-size statistics a summary records per feature (definitions in
:mod:`ale_cli.core.statistics`, per level in :mod:`ale_cli.core.discrete`, their
bootstrap bands in :mod:`ale_cli.core.bootstrap`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ale_cli.core.bootstrap import statistics_bands
from ale_cli.core.discrete import level_statistics, level_statistics_bands
from ale_cli.core.statistics import effect_statistics, ranks


def feature_statistics(
    features: Sequence[Any], quantiles: np.ndarray | None
) -> list[dict[str, Any] | None]:
    """The ``statistics`` object of every :class:`~ale_cli.summary.model.FeatureSummary`
    (None where not estimable): the statistics, their bands with bootstrap replicates, and
    ``rank`` (1 = largest ALED among the estimable features given)."""
    stats: list[dict[str, Any] | None] = []
    for feat in features:
        if feat.status != "ok" or feat.n_bins == 0:
            stats.append(None)
            continue
        if feat.kind is not None:
            level = level_statistics(
                effect=feat.effect, std=feat.std, counts=feat.counts, quantiles=quantiles
            )
            if feat.replicates is not None:
                r = feat.replicates
                level |= level_statistics_bands(r.effect, r.counts, quantiles=quantiles, ci=r.ci)
            stats.append(level)
            continue
        s = effect_statistics(
            effect=feat.effect, std=feat.std, counts=feat.counts, quantiles=quantiles
        )
        item: dict[str, Any] = {
            "aled": s.aled,
            "aler_min": s.aler_min,
            "aler_max": s.aler_max,
            "naled": s.naled,
            "naler_min": s.naler_min,
            "naler_max": s.naler_max,
            "heterogeneity_share": s.heterogeneity_share,
        }
        if feat.replicates is not None:
            r = feat.replicates
            item |= statistics_bands(r.effect, r.counts, quantiles=quantiles, ci=r.ci)
        stats.append(item)
    estimable = [item for item in stats if item is not None]
    aleds = np.array([item["aled"] for item in estimable])
    for item, r in zip(estimable, ranks(aleds), strict=True):
        item["rank"] = int(r)
    return stats
