"""Fixed bins as a command asks for them (``rebin``, ``classic``, ``interact``): K bins of a
binning, or the edges of a file (``-``: standard input), checked before anything is loaded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ale_cli.checks import check_choice, check_count
from ale_cli.core.binning import BINNINGS
from ale_cli.core.effect import CENTER_MODES
from ale_cli.errors import InputError
from ale_cli.summary.validate import EdgesFile, read_edges

#: bins per feature of the first-order estimators
DEFAULT_BINS = 20


def check_bins_rows(k: int, n_rows: int, source: str, *, param: str, asked: bool) -> None:
    """InputError naming ``param`` when ``k`` bins were asked for on fewer rows."""
    if asked and k > n_rows:
        raise InputError(
            f"{{param}} {k} is more than the {n_rows} rows of {source}; ask for at most {n_rows}",
            param=param,
        )


def check_center(center: str) -> None:
    """InputError naming ``center`` unless it is a centering mode."""
    check_choice(center, CENTER_MODES, "center")


@dataclass(frozen=True)
class FixedBins:
    """K bins of a binning (``bins``, ``binning``), or the edges of ``edges_file``."""

    bins: int
    binning: str
    edges_file: EdgesFile | None = None
    asked: bool = False

    @classmethod
    def from_options(
        cls,
        *,
        bins: int | None,
        binning: str | None,
        edges: Path | None,
        default: str,
        default_bins: int = DEFAULT_BINS,
    ) -> FixedBins:
        """Check ``bins``/``binning``/``edges`` (None: not given) and read the edges file."""
        if edges is not None:
            if bins is not None or binning is not None:
                raise InputError(
                    f"{{param}} takes the bins from '{edges}'; leave out {{param:bins}} and "
                    "{param:binning}",
                    param="edges",
                )
            return cls(bins=default_bins, binning=default, edges_file=read_edges(edges))
        k = default_bins if bins is None else bins
        check_count(k, "bins")
        chosen = binning or default
        check_choice(chosen, BINNINGS, "binning")
        return cls(bins=k, binning=chosen, asked=bins is not None)

    def check_rows(self, n_rows: int, source: str) -> None:
        """Refuse more bins asked for than the ``n_rows`` rows of ``source`` (not the default).

        >>> FixedBins(bins=50, binning="quantile", asked=True).check_rows(40, "d.csv")
        Traceback (most recent call last):
        ...
        ale_cli.errors.InputError: bins 50 is more than the 40 rows of d.csv; ask for at most 40
        """
        check_bins_rows(self.bins, n_rows, source, param="bins", asked=self.asked)

    @property
    def edges(self) -> dict[str, Any] | None:
        """The edges per feature of the edges file (None without one)."""
        return self.edges_file.edges if self.edges_file is not None else None

    def check_features(
        self, features: Sequence[str] | None, available: Sequence[str], source: str
    ) -> None:
        """With an edges file: every feature asked for has edges; with none asked for, the
        file names no feature that ``source`` lacks."""
        if self.edges_file is None:
            return
        missing = [n for n in features or () if n not in self.edges_file.edges]
        if missing:
            raise InputError(
                f"edges file '{self.edges_file.path}' has no edges for feature '{missing[0]}'"
            )
        unknown = [n for n in self.edges_file.edges if n not in available]
        if features is None and unknown:
            raise InputError(
                f"edges file '{self.edges_file.path}' has edges for '{unknown[0]}', which "
                f"{source} does not have; choose the features to explain with {{param}}",
                param="features",
            )

    def params(self, center: str, features: Sequence[str] | None) -> dict[str, Any]:
        """The binning part of a summary's ``params`` (defaults included)."""
        by_file = self.edges_file is not None
        return {
            "bins": None if by_file else self.bins,
            "binning": "edges" if by_file else self.binning,
            "center": center,
            "features": list(features) if features is not None else None,
            "edges": self.edges_file.describe() if self.edges_file is not None else None,
        }
