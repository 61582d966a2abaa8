"""The one description of a model and its data (:class:`ModelInputs`, checked when built)
shared by ``compute``, ``classic``, ``interact`` and the API; :func:`open_inputs` reads the
data and loads and checks the model; :func:`provenance` is a summary's.
"""

from __future__ import annotations

import math
import stat
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ale_cli.checks import check_choice, names_tuple
from ale_cli.data.sources import DataSource
from ale_cli.data.stream import is_glob
from ale_cli.data.table import FORMATS as DATA_FORMATS
from ale_cli.data.table import IN_MEMORY, data_sha256, is_frame, load_table
from ale_cli.errors import InputError
from ale_cli.io.files import sha256_file
from ale_cli.models import MODEL_FORMATS, Columns, detect_format, load_model
from ale_cli.models.base import METHODS, LoadOptions
from ale_cli.models.columns import ColumnOrder, model_column_order, order_note
from ale_cli.models.mlflow_model import MlflowSource, is_reference, resolve
from ale_cli.models.objects import ModelObject, given_model

if TYPE_CHECKING:
    from ale_cli.data.table import Table
    from ale_cli.models.base import Model

#: Model formats that read text columns (encoded as codes and decoded for the model).
TEXT_FORMATS = ("skops", "pickle", "sklearn")
#: Model formats that take their columns by position (no names to match them by).
POSITIONAL_FORMATS = (
    "torchscript",
    "torch-export",
    "onnx",
    "torch-module",
    "callable",
    "xgboost",
    "lightgbm",
    "catboost",
)


@dataclass(frozen=True)
class ModelInputs:
    """A model file, a data file, how to read both, and which features to explain.

    ``model``: a model file or object (:mod:`ale_cli.models.objects`); ``data``: a CSV or
    Parquet file, or a DataFrame; ``inputs``: the model's columns in its order (None: every
    column but ``exclude``); ``features``: the inputs to explain (None: all); ``step``: the
    finite-difference step as a fraction of each feature's std. An MLflow model is resolved
    here, ``model_source`` saying where it came from (:mod:`ale_cli.models.mlflow_model`).
    Names may be given as tuples, lists or comma-separated strings.

    >>> ModelInputs(model=Path("m.pt"), data=Path("d.csv"), exclude="target").exclude
    ('target',)
    >>> ModelInputs(model=Path("m.pt"), data=Path("d.csv"), method="fast")
    Traceback (most recent call last):
    ale_cli.errors.InputError: method must be one of auto, autodiff, finite-differences, got 'fast'
    """

    model: Path | ModelObject
    data: Path | Any
    data_format: str | None = None
    inputs: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()
    features: tuple[str, ...] | None = None
    dropna: bool = False
    drop_nonfinite: bool = False
    model_format: str | None = None
    output: str | None = None
    categorical: tuple[str, ...] = ()
    trust: tuple[str, ...] = ()
    trust_pickle: bool = False
    batch_size: int | None = None
    method: str = "auto"
    step: float | None = None
    model_source: MlflowSource | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        if self.model_source is None and is_reference(self.model):
            if self.model_format is not None:
                raise InputError(
                    "{param} does not apply to an MLflow model: its MLmodel file names its flavour",
                    param="model_format",
                )
            found = resolve(self.model, trust_pickle=self.trust_pickle)
            set_(self, "model_format", found.model_format)
            set_(self, "model", found.model)
            set_(self, "model_source", found.source)
        set_(self, "model", given_model(self.model))
        if not is_frame(self.data):
            if not isinstance(self.data, str | PathLike):
                raise InputError(
                    f"{{param}}: got {type(self.data).__name__}; expected a CSV or Parquet "
                    "file path or a pandas DataFrame",
                    param="data",
                )
            set_(self, "data", Path(self.data))
        for name in ("inputs", "features"):
            set_(self, name, names_tuple(getattr(self, name), name))
        for name in ("exclude", "categorical", "trust"):
            set_(self, name, names_tuple(getattr(self, name), name) or ())
        check_choice(self.data_format, DATA_FORMATS, "data_format")
        check_choice(self.model_format, MODEL_FORMATS, "model_format")
        check_choice(self.method, METHODS, "method")
        if self.batch_size is not None and (
            isinstance(self.batch_size, bool) or not int(self.batch_size) >= 1
        ):
            raise InputError(
                f"{{param}} must be a whole number of at least 1, got {self.batch_size}",
                param="batch_size",
            )
        if self.step is not None and not (math.isfinite(self.step) and self.step > 0):
            raise InputError(
                "{param} must be a positive finite fraction of each feature's std, "
                f"got {self.step:g}",
                param="step",
            )
        if self.inputs is not None:
            _refuse_shared("exclude", self.exclude, self.inputs, "inputs lists as a model input")
        if self.features is not None:
            why = "exclude leaves out of the model's inputs"
            _refuse_shared("features", self.features, self.exclude, why)

    def check_files(self) -> None:
        """InputError naming the model or data file that is missing or not a file (the data
        may be a directory: a partitioned Parquet dataset, read by the streaming compute)."""
        files = [] if isinstance(self.model, ModelObject) else [("model", self.model)]
        files += [] if is_frame(self.data) else [("data", self.data)]
        for label, path in files:
            if label == "data" and is_glob(path):  # a partitioned dataset given as a glob
                continue
            if not path.exists():
                raise InputError(f"{label} file '{path}' does not exist")
            if path.is_dir() and label == "model":
                raise InputError(f"{label} file '{path}' is a directory, expected a file")
            if not path.is_dir() and not path.is_file():  # reading a FIFO would block
                raise InputError(
                    f"{label} file '{path}' is a FIFO (named pipe), expected a regular file"
                    if stat.S_ISFIFO(path.stat().st_mode)
                    else f"{label} file '{path}' is not a regular file"
                )

    def result_options(self) -> dict[str, Any]:
        """The options that change the numbers (batch size, trust and where an MLflow model
        came from do not: its bytes key the cache), for cache keys."""
        skip = ("model", "data", "batch_size", "trust", "trust_pickle", "model_source")
        options = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in skip}
        # the model's columns file decides which column is which: it keys the cache too
        # (an ONNX graph's input names are part of the model's bytes, already in the key)
        names = model_column_order(self.model).names
        return options | {"model_columns": None if names is None else list(names)}

    @property
    def data_label(self) -> str:
        """How messages and provenance name the data: its path, or ``<DataFrame>``."""
        return IN_MEMORY if is_frame(self.data) else str(self.data)

    def explained(self, names: Sequence[str]) -> tuple[tuple[str, ...], tuple[int, ...]]:
        """The features to explain and their columns among the data file's ``names``."""
        return feature_columns(self.features, names, where=f"data file '{self.data_label}'")

    def passes(self, chunk_rows: int, text: Mapping[str, Any] | None = None) -> DataSource:
        """The data file read chunk by chunk (``text``: the text columns' levels, as codes)."""
        return DataSource(
            path=Path(self.data),
            fmt=self.data_format,
            names=(),
            inputs=self.inputs,
            exclude=self.exclude,
            dropna=self.dropna,
            categorical=self.categorical,
            chunk_rows=chunk_rows,
            text=tuple((text or {}).items()),
        )

    def load_options(self) -> Any:
        """The model adapter's :class:`~ale_cli.models.base.LoadOptions`."""
        return LoadOptions(
            output=self.output,
            batch_size=self.batch_size,
            method=self.method,
            step=self.step,
            trust=self.trust,
            trust_pickle=self.trust_pickle,
        )


@dataclass(frozen=True)
class Opened:
    """The data read (``table.X`` (N, D)) and the model loaded and checked; the features to
    explain and their ``columns`` in ``table.X``; timings; notes on the columns' matching."""

    table: Table
    model: Model
    features: tuple[str, ...]
    columns: tuple[int, ...]
    timings: dict[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def source(self, inputs: ModelInputs, *, method: str) -> dict[str, Any]:
        """A summary's ``store`` part when it was made from the model (:func:`provenance`)."""
        X, names = self.table.X, self.table.feature_names
        return provenance(inputs, self.model, data_sha256(inputs.data), len(X), names, method)


def feature_columns(
    features: Sequence[str] | None, names: Sequence[str], *, where: str
) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The features to explain and their columns among ``names`` (None: all of them).

    >>> feature_columns(["b"], ["a", "b"], where="the data")
    (('b',), (1,))
    """
    if features is None:
        return tuple(names), tuple(range(len(names)))
    index = {name: j for j, name in enumerate(names)}
    for name in features:
        if name not in index:
            raise InputError(
                f"{{param}}: '{name}' is not one of the model's inputs in {where} "
                f"({', '.join(names)})",
                param="features",
            )
    return tuple(features), tuple(index[n] for n in features)


def open_inputs(inputs: ModelInputs) -> Opened:
    """Read the data (in the model's column order, its columns file's when it has one),
    load the model and check it on the rows (see :class:`Opened`)."""
    inputs.check_files()
    model_format = detect_format(inputs.model, inputs.model_format)
    order = model_column_order(inputs.model, model_format)
    t = time.perf_counter()
    try:
        table = load_table(
            inputs.data,
            fmt=inputs.data_format,
            inputs=_model_order(inputs, order),
            exclude=inputs.exclude,
            dropna=inputs.dropna,
            categorical=inputs.categorical,
            # scikit-learn pipelines can take text columns; tensor models cannot
            encode_text=model_format in TEXT_FORMATS,
        )
    except InputError as exc:
        if order.names is None or "has no column" not in str(exc):
            raise
        raise InputError(f"{exc}, which {order.source} lists as a model input") from None
    features, columns = inputs.explained(table.feature_names)
    timings = {"load_data_s": time.perf_counter() - t}
    model = load_timed(inputs, model_format, table_columns(table), table.X, timings)
    names = table.feature_names
    notes = columns_notes(inputs, model_format, order, table.file_columns, names, model)
    return Opened(table, model, features, columns, timings, notes)


def load_timed(
    inputs: ModelInputs,
    model_format: str,
    columns: Columns,
    X: Any,
    timings: dict[str, float],
    profile: Any = None,
) -> Model:
    """The model of ``inputs`` loaded on the rows ``X`` (``timings["load_model_s"]``)."""
    t = time.perf_counter()
    model = load_model(
        inputs.model,
        model_format=model_format,
        options=inputs.load_options(),
        columns=columns,
        X=X,
        profile=profile,
    )
    timings["load_model_s"] = time.perf_counter() - t
    return model


def table_columns(table: Table) -> Columns:
    """The model adapter's :class:`~ale_cli.models.Columns` of a whole table."""
    return Columns(
        names=table.feature_names, fixed=table.categorical, levels=table.levels, dtypes=table.dtypes
    )


def columns_notes(
    inputs: ModelInputs,
    model_format: str,
    order: ColumnOrder,
    file_columns: Sequence[str],
    feature_names: Sequence[str],
    model: Model,
) -> tuple[str, ...]:
    """The note (none or one) saying how the data's columns (``file_columns`` in the file's
    order, the inputs ``feature_names`` among them) were given to the loaded ``model``."""
    names_in = model.describe().get("feature_names_in")
    if names_in is not None:  # scikit-learn: the adapter matches the columns by name
        order = ColumnOrder(tuple(names_in), "the model's feature_names_in_")
    note = order_note(
        order,
        [c for c in file_columns if c in feature_names],
        order.names or feature_names,
        positional=model_format in POSITIONAL_FORMATS
        and inputs.inputs is None
        and not model.describe().get("dataframe_input"),  # a callable given named columns
    )
    return () if note is None else (note,)


def _model_order(inputs: ModelInputs, order: ColumnOrder) -> tuple[str, ...] | None:
    """The columns to read: its columns file's (``inputs``, ``exclude`` agreeing), or ``inputs``."""
    if order.names is None:
        return inputs.inputs
    if inputs.inputs is not None and tuple(inputs.inputs) != order.names:
        raise InputError(
            f"{{param}} lists {', '.join(inputs.inputs)}, but {order.source} says the model "
            f"takes {', '.join(order.names)}; leave out {{param}}",
            param="inputs",
        )
    _refuse_shared("exclude", inputs.exclude, order.names, f"{order.source} lists as a model input")
    return order.names


def _refuse_shared(param: str, names: Sequence[str], among: Sequence[str], why: str) -> None:
    """InputError naming the first of ``names`` (given as ``param``) that is ``among``."""
    shared = [n for n in names if n in among]
    if shared:
        raise InputError(f"{{param}} names '{shared[0]}', which {why}", param=param)


def provenance(
    inputs: ModelInputs,
    model: Model,
    data_sha: str | None,
    n_rows: int,
    names: Sequence[str],
    method: str,
) -> dict[str, Any]:
    """A summary's ``store`` part for ``model`` run on ``n_rows`` rows of the data."""
    return {
        "path": None,
        "model": model_record(inputs, model.format),
        "data": {"path": inputs.data_label, "sha256": data_sha},
        "method": method,
        "output": model.describe().get("output"),
        **{k: v for k, v in model.describe().items() if k == "outputs"},
        "n_rows": n_rows,
        "inputs": list(names),
    }


def model_sha256(model: Path | ModelObject) -> str | None:
    """The content hash of a model file or object (None: an object without one)."""
    return model.sha256 if isinstance(model, ModelObject) else sha256_file(model)


def model_record(inputs: ModelInputs, fmt: str, sha256: str | None = None) -> dict[str, Any]:
    """A store's or summary's ``model`` provenance: a file's path, sha256 (when known) and
    format, or an object's type and content hash, and an MLflow model's origin."""
    model = inputs.model
    if isinstance(model, ModelObject):
        record = model.provenance() | {"format": fmt}
    else:
        record = {"path": str(model), "sha256": sha256 or sha256_file(model), "format": fmt}
    if inputs.model_source is not None:
        record["mlflow"] = inputs.model_source.record()
    return record


def object_notes(inputs: ModelInputs) -> tuple[str, ...]:
    """The notes a result carries for its model: an object without a content hash; an
    MLflow model called through its pyfunc."""
    model, source = inputs.model, inputs.model_source
    notes = (model.note() if isinstance(model, ModelObject) else None,)
    notes += (source.note() if source is not None else None,)
    return tuple(n for n in notes if n is not None)
