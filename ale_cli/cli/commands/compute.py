"""``ale compute`` and ``ale info``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer

from ale_cli.checks import make_request
from ale_cli.cli.command import Outcome, Run, command, counted, refuse_stdio
from ale_cli.cli.model_options import GROUP_ALIASES, model_data_options
from ale_cli.cli.options import (
    DiscreteOption,
    EngineOption,
    SchedulerOption,
    unshown,
)
from ale_cli.data.stream import DEFAULT_CHUNK_ROWS
from ale_cli.engines import engine_for
from ale_cli.estimators.inputs import ModelInputs
from ale_cli.estimators.local_effects import ComputeRequest
from ale_cli.estimators.local_effects import compute as run_compute
from ale_cli.outputs.guard import store_kind
from ale_cli.store.npz import open_store, read_meta

StoreOutOption = Annotated[
    Path,
    typer.Option(
        "--out",
        "-o",
        help="Store to write (.npz; with --engine dask a directory store: a manifest and one "
        "part per partition).",
    ),
]

MethodOption = Annotated[
    str,
    typer.Option(
        "--method",
        help="auto, autodiff or finite-differences. auto: autodiff for torch models and "
        "translatable ONNX graphs, finite differences otherwise.",
    ),
]

StepOption = Annotated[
    float | None,
    unshown(
        "--step",
        help="Finite-difference step as a fraction of each feature's std (default: "
        "1e-5 for smooth float64 models, 1e-2 for float32 ONNX graphs, 0.05 for "
        "piecewise-constant models such as trees, chosen automatically).",
    ),
]

ChunkRowsOption = Annotated[
    int,
    typer.Option(
        "--chunk-rows",
        help="Rows read, computed and written at a time by the streaming compute (TorchScript, "
        "ONNX and smooth scikit-learn models on files): memory grows with it; the method and "
        "steps do not change, finite-difference quotients only within about 1e-10 relative.",
        min=2,
    ),
]


def _store_kind(values: Mapping[str, Any]) -> str:
    return store_kind(values.get("engine") == "dask", values["out"])


@command(
    epilog="Renamed: --format (the data file's format) is now --data-format and --pairs is "
    "now --pair; the old spellings still work in this release.\n\n"
    "Example: ale compute sample_data/models/diabetes_mlp.pt "
    "sample_data/diabetes.csv --exclude target -o out/diabetes-mlp.npz",
    outputs={"out": _store_kind},
    inputs=("model", "data"),
    # old spellings, hidden, for one release
    aliases={**GROUP_ALIASES, "--pairs": "pairs"},
)
@model_data_options
def compute(
    inputs: ModelInputs,
    run: Run,
    out: StoreOutOption = Path("effects.npz"),
    method: MethodOption = "auto",
    step: StepOption = None,
    pairs: Annotated[
        list[str] | None,
        unshown(
            "--pair",
            help="Also cache the mixed derivatives d2f/dx_a dx_b of the pair A,B for "
            "'ale interact' (repeat for more pairs, as in 'ale interact'; needs autodiff).",
        ),
    ] = None,
    chunk_rows: ChunkRowsOption = DEFAULT_CHUNK_ROWS,
    discrete: DiscreteOption = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Recompute even if the store is up to date, and overwrite a file at -o that is "
            "not recognisably an ale store.",
        ),
    ] = False,
    engine: EngineOption = "local",
    scheduler: SchedulerOption = None,
) -> Outcome:
    """Compute the local effects (model gradients at every row) and cache them in a store.

    Reuses the store at -o when it was made from the same model bytes, data bytes and
    options (a cache hit); --force recomputes. Text, --categorical, --discrete and binary
    (two-valued) features also get every row's jumps to the adjacent levels (model calls),
    so rebin and rhale report them per level as classic does.
    """
    request = make_request(
        ComputeRequest,
        locals(),
        inputs=replace(inputs, method=method, step=step),
    )
    with run.progress("local effects", "mixed derivatives") as progress:
        result = run_compute(
            request, engine=engine_for(engine, scheduler), force=force, progress=progress
        )
    notes = list(result.notes)
    if result.reason is not None:
        notes.append(f"recomputed '{out}': {result.reason} since it was made")
    if result.rows_dropped:
        notes.append(f"dropped {result.rows_dropped} rows with NaN or infinite values (--dropna)")
    shape = f"{result.n_rows} rows x {counted(result.n_features, 'feature')}, {result.method}"
    if result.cache_hit:
        message = (
            f"cache hit: '{out}' already holds local effects for this model, data and options "
            f"({shape}); --force recomputes"
        )
    else:
        message = f"computed local effects: {shape}, {result.seconds:.2f} s -> '{out}' (cache miss)"
    return Outcome(
        message=message,
        outputs=() if result.cache_hit else (str(out),),
        counts={
            "rows": result.n_rows,
            "features": result.n_features,
            "rows_dropped": result.rows_dropped,
            "rows_nonfinite": result.rows_nonfinite,
        },
        notes=tuple(notes),
        seconds=result.seconds,
        cache_hit=result.cache_hit,
        details={"store": str(out), "method": result.method, "stale_reason": result.reason},
    )


def _flatten(prefix: str, value: object) -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _flatten(f"{prefix}.{key}" if prefix else str(key), item)
    elif isinstance(value, list):
        more = f", ... ({len(value)} items)" if len(value) > 12 else ""
        yield prefix, ", ".join(str(v) for v in value[:12]) + more or "-"
    elif isinstance(value, float):
        yield prefix, f"{value:.4g}"
    else:
        yield prefix, "-" if value is None else str(value)


@command(epilog="Example: ale info out/diabetes-mlp.npz --json", inputs=("store",))
def info(
    store: Annotated[Path, typer.Argument(help="Store written by 'ale compute'.")],
) -> Outcome:
    """Show how a store was made: model, data, method, output, row counts and timings.

    With --json the store's meta is the result's "details.meta".
    """
    refuse_stdio(store, "store", "a store")
    meta = read_meta(store)  # a file, or a directory store's manifest
    rows = list(_flatten("", meta))
    width = max(len(k) for k, _ in rows)
    lines = tuple(f"{key.ljust(width)}  {value}" for key, value in rows)
    n_rows, features = meta.get("n_rows"), meta.get("feature_names")
    if features is None:  # a part of a directory store: its names are its own member
        features = open_store(store).feature_names
    return Outcome(
        message=f"store '{store}': {n_rows} rows x {counted(len(features), 'feature')}",
        counts={"rows": int(n_rows) if isinstance(n_rows, int) else 0, "features": len(features)},
        lines=lines,
        details={"store": str(store), "meta": meta},
    )
