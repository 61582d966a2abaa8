"""Models given as Python objects, not files: :func:`model_object` wraps one in a
:class:`ModelObject` by its type (the table and the content hash: ``docs/models.md``).
The object is never changed: a torch module is copied before it is put in eval mode."""

from __future__ import annotations

import copy
import hashlib
import inspect
import io
import pickle
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ale_cli.errors import InputError

#: native booster format -> its library's module (and extra), its model class, its label
BOOSTERS = {
    "xgboost": ("xgboost", "Booster", "an XGBoost model"),
    "lightgbm": ("lightgbm", "Booster", "a LightGBM model"),
    "catboost": ("catboost", "CatBoost", "a CatBoost model"),
}

ACCEPTED = (
    "a model file path, a fitted scikit-learn estimator or pipeline, a torch.nn.Module, "
    "a torch.export.ExportedProgram, an XGBoost, LightGBM or CatBoost model, or a callable "
    "f(X) -> y (ale_cli.api.Predictor to add its gradient)"
)


@dataclass(frozen=True, eq=False)
class Predictor:
    """A prediction function, with its gradient when there is one.

    Attributes
    ----------
    predict : callable
        ``predict(X)`` for X of shape (M, D) float64 (or a DataFrame with the inputs'
        names, with ``frame``) returns the explained output, shape (M,) or (M, 1);
        (M, k) with ``output`` INDEX choosing a column.
    gradient : callable or None
        ``gradient(X)`` returns d predict / dX, shape (M, D). None: central finite
        differences (a small step, or secants when the output is mostly flat).
    frame : bool
        Call both with a pandas DataFrame whose columns are the inputs' names.

    >>> Predictor(lambda X: X.sum(axis=1)).gradient is None
    True
    """

    predict: Callable[[Any], Any]
    gradient: Callable[[Any], Any] | None = None
    frame: bool = False

    def __post_init__(self) -> None:
        for name in ("predict", "gradient"):
            value = getattr(self, name)
            if not (value is None and name == "gradient") and not callable(value):
                raise InputError(
                    f"{{param}} must be callable, got {type(value).__name__}", param=name
                )


@dataclass(frozen=True, eq=False)
class ModelObject:
    """A model object with its format and content hash (None: none can be computed).

    ``str()`` of it names it in messages and provenance: its ``name`` (the path of an
    MLflow pyfunc), else ``<Pipeline object>``, ``<callable f>``.
    """

    obj: Any
    format: str
    sha256: str | None
    name: str | None = None

    def __str__(self) -> str:
        if self.name is not None:
            return self.name
        inner = self.obj.predict if isinstance(self.obj, Predictor) else self.obj
        if self.format == "callable":
            return f"<callable {getattr(inner, '__qualname__', type(inner).__name__)}>"
        return f"<{type(inner).__name__} object>"

    @property
    def type_name(self) -> str:
        """The object's type, module-qualified (``sklearn.pipeline.Pipeline``)."""
        kind = type(self.obj)
        return f"{kind.__module__}.{kind.__qualname__}"

    def provenance(self) -> dict[str, Any]:
        """The store's and summary's ``model`` record of it."""
        return {
            "path": None,
            "object": self.type_name,
            "sha256": self.sha256,
            "format": self.format,
        }

    def note(self) -> str | None:
        """What a reader must know when the object has no content hash."""
        if self.sha256 is not None:
            return None
        return (
            f"the model was given as {self} ({self.type_name}), which has no content hash: "
            "a store of it is never reused as a cache"
        )


def _format_of(value: Any) -> str | None:
    """The format of a model object by its type (its library is imported if it is one)."""
    if "torch" in sys.modules:
        import torch

        if isinstance(value, torch.export.ExportedProgram):
            return "torch-export"
        if isinstance(value, torch.nn.Module):
            return "torch-module"
    for fmt, (module, name, _) in BOOSTERS.items():
        library = sys.modules.get(module)
        if library is not None and isinstance(value, getattr(library, name, ())):
            return fmt
    base = sys.modules.get("sklearn.base")
    return "sklearn" if base is not None and isinstance(value, base.BaseEstimator) else None


def native_bytes(value: Any, fmt: str) -> bytes:
    """A native booster object saved in its library's own format (UBJSON, LightGBM's text,
    ``.cbm``), as bytes."""
    if fmt == "xgboost":
        return bytes(value.save_raw("ubj"))
    if fmt == "lightgbm":
        return str(value.model_to_string()).encode()
    with tempfile.TemporaryDirectory(prefix="ale-catboost-") as folder:
        path = Path(folder) / "model.cbm"
        value.save_model(str(path), format="cbm")
        return path.read_bytes()


def model_object(value: Any, *, param: str = "model") -> ModelObject:
    """``value`` as a :class:`ModelObject`, its format told by its type; an InputError
    naming ``param`` for anything that is not a model."""
    fmt = _format_of(value)
    if fmt is None and (isinstance(value, Predictor) or callable(value)):
        if isinstance(value, type):
            raise InputError(
                f"{{param}} is the class {value.__name__}, not a fitted model; expected {ACCEPTED}",
                param=param,
            )
        fmt = "callable"
    if fmt is None:
        raise InputError(f"{{param}}: got {type(value).__name__}; expected {ACCEPTED}", param=param)
    return ModelObject(value, fmt, object_sha256(value, fmt))


def given_model(value: Any, *, param: str = "model") -> Path | ModelObject:
    """A path for ``str`` and ``os.PathLike`` values, else the :class:`ModelObject`."""
    if isinstance(value, ModelObject | Path):
        return value
    if isinstance(value, str) or hasattr(value, "__fspath__"):
        return Path(value)
    return model_object(value, param=param)


def object_sha256(value: Any, fmt: str) -> str | None:
    """The content hash of a model object, None where none can be computed (a callable;
    an object that cannot be pickled or whose classes' source cannot be read)."""
    digest = hashlib.sha256(f"{type(value).__module__}.{type(value).__qualname__}\n".encode())
    try:
        if fmt == "sklearn":
            digest.update(pickle.dumps(value, protocol=5))
        elif fmt == "torch-export":
            import torch

            digest.update(_saved(torch.export.save, value).getvalue())
        elif fmt == "torch-module":  # a ScriptModule's archive, else classes' source and state
            import torch

            if isinstance(value, torch.jit.ScriptModule):
                digest.update(_saved(torch.jit.save, value).getvalue())
                return digest.hexdigest()
            kinds = sorted({type(m) for m in value.modules()}, key=lambda k: k.__qualname__)
            for kind in kinds:
                digest.update(inspect.getsource(kind).encode())
            for name, tensor in value.state_dict().items():
                digest.update(f"{name}:{tensor.dtype}:{tuple(tensor.shape)}".encode())
                digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
        elif fmt in BOOSTERS:
            digest.update(native_bytes(value, fmt))
        else:
            return None
    except Exception:  # unpicklable parts, classes defined where no source is kept
        return None
    return digest.hexdigest()


def torch_module_of(given: ModelObject) -> Any:
    """The torch module to differentiate: a copy of an ``nn.Module`` (the caller's stays
    as it is); a ScriptModule's through its saved archive, as its file would be read (a
    deep copy of one holds parameters that are not leaves, which cannot be frozen)."""
    import torch

    if isinstance(given.obj, torch.jit.ScriptModule):
        return torch.jit.load(_saved(torch.jit.save, given.obj))
    return copy.deepcopy(given.obj)


def _saved(save: Callable[[Any, io.BytesIO], None], value: Any) -> io.BytesIO:
    """``save(value, buffer)`` into a new buffer, rewound."""
    buffer = io.BytesIO()
    save(value, buffer)
    buffer.seek(0)
    return buffer
