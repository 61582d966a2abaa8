"""What ``ale compute`` is asked and answers, and its cache: a store at the output made
from the same model bytes, data bytes and result options is reused."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ale_cli.data.stream import DEFAULT_CHUNK_ROWS, inputs_sha256
from ale_cli.errors import InputError
from ale_cli.estimators.inputs import ModelInputs, model_sha256
from ale_cli.estimators.levels import BINARY, discrete_mode
from ale_cli.estimators.pairs import Pair
from ale_cli.models.secant import outdated
from ale_cli.store.npz import cache_key, read_meta
from ale_cli.store.verify import DamagedStore


@dataclass(frozen=True)
class ComputeRequest:
    """What ``ale compute`` is asked: the model and data, the store to write, the pairs
    whose mixed derivatives to cache. The result-affecting part keys the cache."""

    inputs: ModelInputs
    out: Path
    pairs: tuple[Pair, ...] = ()
    chunk_rows: int = DEFAULT_CHUNK_ROWS
    #: numeric features whose per-row jumps to the adjacent values are stored (names,
    #: "a,b", "auto", "none", or None: the binary ones); text and categorical columns
    #: always get them
    discrete: tuple[str, ...] | str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "discrete", discrete_mode(self.discrete))

    def result_options(self) -> dict[str, Any]:
        """Options that change the store's arrays (batch size and trust do not); a store
        made before binary columns were levels by default is not a cache hit."""
        out = self.inputs.result_options() | {"pairs": [list(p) for p in self.pairs]}
        discrete = BINARY if self.discrete is None else self.discrete
        out["discrete"] = discrete if isinstance(discrete, str) else list(discrete)
        return out


@dataclass(frozen=True)
class ComputeResult:
    """What one ``ale compute`` run did.

    ``cache_hit`` is True when an existing store was reused; ``reason`` says
    why a store at the output path was not reused (None if there was none).
    """

    out: Path
    cache_hit: bool
    n_rows: int
    n_features: int
    method: str
    seconds: float
    rows_dropped: int = 0
    reason: str | None = None
    notes: tuple[str, ...] = ()
    rows_nonfinite: int = 0


@dataclass(frozen=True)
class Hashes:
    """The inputs' content hashes and the cache key they make with the options."""

    model: str | None  # None: a model object without a content hash, never a cache hit
    data: str
    key: str

    @classmethod
    def of(
        cls, request: ComputeRequest, data: str | None = None, model: str | None = None
    ) -> Hashes:
        """The hashes; ``data`` when the data were hashed while they were read, ``model``
        when the model file was hashed already."""
        if model is None:
            model = model_sha256(request.inputs.model)
        if data is None:
            data = inputs_sha256(request.inputs.data)
        return cls(model, data, cache_key(model, data, request.result_options()))

    def stale_reason(self, meta: dict[str, Any]) -> str | None:
        """Why a store with this meta is not a cache hit (None when it is)."""
        if self.model is None:
            return "the model is an object without a content hash"
        if meta.get("cache_key") == self.key:
            return None
        if meta.get("model", {}).get("sha256") != self.model:
            return "the model file changed"
        if meta.get("data", {}).get("sha256") != self.data:
            return "the data file changed"
        return "the options changed"


@dataclass(frozen=True)
class Damaged:
    """The store at the output is ours but its bytes changed: it is recomputed, and the
    result's notes say so with ``note``."""

    note: str


def cached_result(
    request: ComputeRequest, hashes: Hashes, t0: float
) -> ComputeResult | Damaged | str | None:
    """The cache hit at ``request.out``, else why the store there is stale (None: no store;
    :class:`Damaged`: a damaged store of ours, never a cache hit)."""
    if not request.out.exists():
        return None
    try:
        meta = read_meta(request.out)  # checked whole once per process (see read_meta)
    except DamagedStore as exc:  # ours (its meta is intact), its bytes changed
        detail = str(exc).removeprefix(f"store '{request.out}': ")
        return Damaged(f"store '{request.out}' was damaged; recomputed ({detail})")
    except InputError:
        raise InputError(
            f"output '{request.out}' exists and is not a local-effects store; "
            "remove it, choose another output, or pass {param} to overwrite it",
            param="force",
        ) from None
    reason = hashes.stale_reason(meta) or outdated(meta)
    if reason is not None:
        return reason
    return ComputeResult(
        out=request.out,
        cache_hit=True,
        n_rows=int(meta["n_rows"]),
        n_features=len(meta["feature_names"]),
        method=str(meta["method"]),
        seconds=time.perf_counter() - t0,
        rows_dropped=int(meta["data"].get("rows_dropped", 0)),
        rows_nonfinite=int(meta["data"].get("rows_nonfinite", 0)),
    )
