"""The summary: the JSON contract every estimator writes and plots and audits read.

One :class:`FeatureSummary` per feature (K bins: ``edges`` (K+1,), per-bin arrays (K,),
accumulated ``effect``/``std``/``stderr`` at the edges (K+1,); per-level features: K
levels, K-1 jumps) or one :class:`InteractionSummary` per pair (cells (K_a, K_b),
``effect`` at the corners (K_a+1, K_b+1)), inside one :class:`Summary` per run. Every
field is described in ``docs/store-and-summary.md``; ``ale_cli/schema/summary.schema.json``
is its JSON Schema. NaN is written as ``null`` and read back as NaN; the file is
byte-identical for the same inputs apart from ``created`` (omitted with ``timestamp=False``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ale_cli import __version__
from ale_cli.core.statistics import prediction_distribution
from ale_cli.errors import InputError
from ale_cli.io.files import atomic_write
from ale_cli.io.jsonio import dumps, float_array, read_json_file
from ale_cli.summary.statistics import definitions_of, feature_statistics
from ale_cli.summary.validate import SCHEMA_PATH as SCHEMA_PATH  # the summary's JSON Schema
from ale_cli.summary.validate import validate_summary

if TYPE_CHECKING:
    from ale_cli.core.effect import FirstOrderEffect

SCHEMA_VERSION = 1

_FLOAT_BIN = ("bin_effect", "bin_std", "bin_stderr")
_FLOAT_EDGE = ("effect", "std", "stderr")


def _empty() -> np.ndarray:
    return np.zeros(0, dtype=np.float64)


def present(item: Any, *names: str) -> dict[str, Any]:
    """The attributes ``names`` of ``item`` that are not None (a record's optional keys)."""
    return {k: getattr(item, k) for k in names if getattr(item, k) is not None}


@dataclass(frozen=True)
class FeatureSummary:
    """The first-order effect of one feature; see the module docstring for shapes."""

    name: str
    status: str = "ok"
    reason: str | None = None
    edges: np.ndarray = field(default_factory=_empty)
    counts: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    bin_effect: np.ndarray = field(default_factory=_empty)
    bin_std: np.ndarray = field(default_factory=_empty)
    bin_stderr: np.ndarray = field(default_factory=_empty)
    bin_filled: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    effect: np.ndarray = field(default_factory=_empty)
    std: np.ndarray = field(default_factory=_empty)
    stderr: np.ndarray = field(default_factory=_empty)
    center_offset: float = 0.0
    n_outside: int = 0
    objective: float | None = None
    note: str | None = None
    statistics: dict[str, Any] | None = None
    ci_low: np.ndarray | None = None
    ci_high: np.ndarray | None = None
    kind: str | None = None
    levels: tuple[Any, ...] | None = None
    order: np.ndarray | None = None
    #: how the local effects were obtained when it is not a derivative ("secant")
    method: str | None = None
    #: the model output explained, in a summary of several (its record's ``name``)
    output: str | None = None
    #: the bootstrap replicates (in memory only, for the statistics' bands)
    replicates: Replicates | None = field(default=None, compare=False, repr=False)

    @property
    def n_bins(self) -> int:
        return len(self.counts)

    @property
    def bin_counts(self) -> np.ndarray:
        """Rows per bin (K,); per-level: per jump between adjacent levels, n_{k-1} + n_k (K-1,)."""
        return self.counts if self.kind is None else self.counts[:-1] + self.counts[1:]

    @property
    def estimable(self) -> bool:
        """Status ``ok`` with at least one bin: a record with numbers to read."""
        return self.status == "ok" and self.n_bins > 0

    @property
    def key(self) -> str:
        """How messages name the record: ``name``, or ``name [output]`` in a summary of
        several outputs."""
        return self.name if self.output is None else f"{self.name} [{self.output}]"

    @classmethod
    def from_effect(cls, name: str, effect: FirstOrderEffect, **more: Any) -> FeatureSummary:
        """The summary of an estimated feature: every array of ``effect`` and ``more``
        (``n_outside``, ``objective``, ``note``)."""
        arrays: dict[str, Any] = {f.name: getattr(effect, f.name) for f in fields(effect)}
        return cls(name=name, **arrays, **more)

    def to_dict(self) -> dict[str, Any]:
        out = {"name": self.name, "status": self.status} | present(self, "output", "reason")
        if self.kind is not None:
            out["kind"] = self.kind
            out["levels"] = list(self.levels or ())
            out["order"] = np.asarray(self.order, dtype=np.int64)
        out |= {
            "n_bins": self.n_bins,
            "edges": self.edges,
            "counts": self.counts.astype(np.int64),
            **{k: getattr(self, k) for k in _FLOAT_BIN},
            "bin_filled": self.bin_filled.astype(bool),
            **{k: getattr(self, k) for k in _FLOAT_EDGE},
            "center_offset": self.center_offset,
            "n_outside": self.n_outside,
        }
        out |= present(self, "objective", "note", "method", "statistics")
        if self.ci_low is not None and self.ci_high is not None:
            out["ci_low"], out["ci_high"] = self.ci_low, self.ci_high
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FeatureSummary:
        floats = {k: float_array(data[k]) for k in ("edges", *_FLOAT_BIN, *_FLOAT_EDGE)}
        floats |= {k: float_array(data[k]) for k in ("ci_low", "ci_high") if k in data}
        texts = {k: data[k] for k in ("reason", "note", "kind", "method", "output") if k in data}
        return cls(
            name=str(data["name"]),
            status=str(data["status"]),
            counts=np.asarray(data["counts"], dtype=np.int64).reshape(-1),
            bin_filled=np.asarray(data["bin_filled"], dtype=bool).reshape(-1),
            center_offset=_number(data["center_offset"]),
            n_outside=int(data.get("n_outside", 0)),
            objective=_number(data["objective"]) if "objective" in data else None,
            statistics=_statistics(data.get("statistics")),
            levels=tuple(data["levels"]) if "levels" in data else None,
            order=np.asarray(data["order"], dtype=np.int64) if "order" in data else None,
            **floats,
            **texts,
        )


@dataclass(frozen=True)
class Replicates:
    """Bootstrap replicates of a feature's effect: ``effect`` (B, K+1), ``counts`` (B, K),
    and the band level ``ci``."""

    effect: np.ndarray
    counts: np.ndarray
    ci: float


def _number(value: Any) -> float:
    """A JSON number, ``null`` read as NaN."""
    return np.nan if value is None else float(value)


def _statistics(data: Any) -> dict[str, Any] | None:
    """A feature's ``statistics`` as read (``null`` stays None, ``rank`` an int)."""
    if data is None:
        return None
    return {
        k: (None if v is None else int(v) if k == "rank" else float(v))
        for k, v in dict(data).items()
    }


def _matrix(values: Any, dtype: Any) -> np.ndarray:
    """A JSON list of rows as a 2-D array (``null`` -> NaN for floats); [] -> shape (0, 0)."""
    return np.array(values, dtype=dtype) if len(values) else np.zeros((0, 0), dtype=dtype)


@dataclass(frozen=True)
class InteractionSummary:
    """The second-order effect of one feature pair: ``estimator`` ``"ale"`` (differences at
    the cell corners; ``cell_std`` None) or ``"dale"`` (mixed derivatives). A pair whose
    grid cannot be built is ``not_estimable``, with a ``reason`` and empty arrays."""

    features: tuple[str, str]
    estimator: str
    status: str = "ok"
    reason: str | None = None
    edges_a: np.ndarray = field(default_factory=_empty)
    edges_b: np.ndarray = field(default_factory=_empty)
    counts: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    cell_effect: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    cell_std: np.ndarray | None = None
    filled: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=bool))
    effect: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    center_offset: float = 0.0
    n_outside: int = 0
    note: str | None = None

    @property
    def name(self) -> str:
        """``"a,b"``: how messages name the pair."""
        return ",".join(self.features)

    @property
    def shape(self) -> tuple[int, int]:
        """(K_a, K_b)."""
        return max(len(self.edges_a) - 1, 0), max(len(self.edges_b) - 1, 0)

    @property
    def estimable(self) -> bool:
        """Status ``ok`` with at least one cell: a record with numbers to read."""
        return self.status == "ok" and 0 not in self.shape

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)[:4]} | {"n_bins": self.shape}
        out |= {f.name: getattr(self, f.name) for f in fields(self)[4:]}
        out |= {"counts": self.counts.astype(np.int64), "filled": self.filled.astype(bool)}
        return {k: v for k, v in out.items() if v is not None}  # reason, cell_std, note

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> InteractionSummary:
        a, b = (str(n) for n in data["features"])
        return cls(
            features=(a, b),
            estimator=str(data["estimator"]),
            status=str(data["status"]),
            reason=data.get("reason"),
            edges_a=float_array(data["edges_a"]),
            edges_b=float_array(data["edges_b"]),
            counts=_matrix(data["counts"], np.int64),
            cell_effect=_matrix(data["cell_effect"], np.float64),
            cell_std=_matrix(data["cell_std"], np.float64) if "cell_std" in data else None,
            filled=_matrix(data["filled"], bool),
            effect=_matrix(data["effect"], np.float64),
            center_offset=_number(data["center_offset"]),
            n_outside=int(data.get("n_outside", 0)),
            note=data.get("note"),
        )


@dataclass(frozen=True)
class Summary:
    """One estimator run over the features of one store: ``params`` every parameter used,
    ``store`` where the numbers came from, ``interactions`` (``ale interact``) or
    ``features``."""

    estimator: str
    params: dict[str, Any]
    store: dict[str, Any]
    n_rows: int
    features: tuple[FeatureSummary, ...]
    interactions: tuple[InteractionSummary, ...] = ()
    prediction: dict[str, Any] | None = None
    created: str | None = None
    tool: dict[str, str] = field(default_factory=lambda: {"name": "ale", "version": __version__})
    schema_version: int = SCHEMA_VERSION
    #: what a reader must know about how the numbers were made (e.g. secants of a
    #: piecewise-constant model); written only when there are some
    notes: tuple[str, ...] = ()

    def feature(self, name: str) -> FeatureSummary:
        for feat in self.features:
            if feat.name == name:
                return feat
        names = ", ".join(f.name for f in self.features)
        raise InputError(f"summary has no feature '{name}' (features: {names})")

    @property
    def outputs(self) -> tuple[str, ...]:
        """The outputs of the records, in order (empty: a summary of one output)."""
        return tuple(dict.fromkeys(f.output for f in self.features if f.output is not None))

    def of_output(self, output: str | None) -> Summary:
        """The summary of ``output``'s records (None: of the records of no named output),
        its store naming that output (for the figures' labels); no interactions, as they
        are of no one output."""
        store = self.store
        if output is not None:
            records = {str(r.get("name")): r for r in store.get("outputs") or ()}
            store = store | {"output": records.get(output, output)}
        feats = tuple(f for f in self.features if f.output == output)
        return replace(self, features=feats, store=store, interactions=())

    def to_dict(self, *, timestamp: bool = True) -> dict[str, Any]:
        out = {
            "schema_version": self.schema_version,
            "tool": self.tool,
            "created": self.created if timestamp else None,
            "estimator": self.estimator,
            "params": self.params,
            "store": self.store,
            "n_rows": self.n_rows,
            "notes": list(self.notes) or None,
            "prediction": self.prediction,
            "features": [f.to_dict() for f in self.features],
            "interactions": [i.to_dict() for i in self.interactions] or None,
        }
        return {k: v for k, v in out.items() if v is not None}  # the optional keys left out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Summary:
        p = data.get("prediction")  # n, mean and the 101 percentiles
        if p is not None:
            p = {
                "n": int(p["n"]),
                "mean": float(p["mean"]),
                "quantiles": float_array(p["quantiles"]),
            }
        return cls(
            schema_version=int(data["schema_version"]),
            tool=dict(data["tool"]),
            created=data.get("created"),
            estimator=str(data["estimator"]),
            params=dict(data["params"]),
            store=dict(data["store"]),
            n_rows=int(data["n_rows"]),
            notes=tuple(str(n) for n in data.get("notes", ())),
            prediction=p,
            features=tuple(FeatureSummary.from_dict(f) for f in data["features"]),
            interactions=tuple(
                InteractionSummary.from_dict(i) for i in data.get("interactions", ())
            ),
        )


def with_statistics(
    summary: Summary,
    prediction: np.ndarray | None,
    outputs: Mapping[str, np.ndarray] | None = None,
) -> Summary:
    """The summary with the distribution of ``prediction`` (N,; NaN/inf left out; None:
    the recorded one, if any; none: NALED and NALER ``null``) and each estimable feature's
    statistics by the definitions ``params.statistics`` names. The records of each output
    of several are ranked among themselves, normalised by ``outputs[name]`` (N,)."""
    recorded = summary.prediction
    if prediction is not None and np.isfinite(prediction).any():
        dist = prediction_distribution(prediction=prediction)
        recorded = {"n": dist.n, "mean": dist.mean, "quantiles": dist.quantiles}
    quantiles = None if recorded is None else np.asarray(recorded["quantiles"], dtype=np.float64)
    definitions = definitions_of(summary.params)
    stats: dict[str | None, Iterator[dict[str, Any] | None]] = {}
    for label in summary.outputs or (None,):
        q = quantiles
        if outputs and label in outputs and np.isfinite(outputs[label]).any():
            q = np.asarray(prediction_distribution(prediction=outputs[label]).quantiles)
        stats[label] = iter(feature_statistics(summary.of_output(label).features, q, definitions))
    features = tuple(replace(f, statistics=next(stats[f.output])) for f in summary.features)
    return replace(summary, prediction=recorded, features=features)


def summary_json(summary: Summary, *, timestamp: bool = True) -> str:
    """The summary as stable JSON text (same inputs, same bytes)."""
    return dumps(summary.to_dict(timestamp=timestamp))


def write_summary(path: str | Path, summary: Summary, *, timestamp: bool = True) -> None:
    """Write the summary JSON atomically."""
    text = summary_json(summary, timestamp=timestamp)
    with atomic_write(path) as fh:
        fh.write(text.encode("utf-8"))


def read_summary(path: str | Path) -> Summary:
    """Read a summary written by :func:`write_summary`; one-line errors for bad files."""
    return load_summary(path)[0]


def load_summary(path: str | Path) -> tuple[Summary, dict[str, Any]]:
    """A checked summary file (``-``: standard input) and its JSON object."""
    data = read_json_file(path, "summary")
    if not isinstance(data, dict) or "features" not in data or "estimator" not in data:
        raise InputError(f"'{path}' is not an ale summary (no 'estimator'/'features')")
    version = data.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int) or version > SCHEMA_VERSION:
        shown = str(version) if isinstance(version, int | float | None) else type(version).__name__
        raise InputError(
            f"summary '{path}' has schema_version {shown[:40]}; "
            f"this ale reads up to {SCHEMA_VERSION}"
        )
    validate_summary(path, data)
    try:
        return Summary.from_dict(data), data
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"summary '{path}' is malformed: {exc}") from None
