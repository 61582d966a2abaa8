"""MLflow models (a model directory, or a ``models:/``/``runs:/`` URI): :func:`resolve`
turns one into the native flavour's file, else its pyfunc as a callable
(``docs/models.md``)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ale_cli.errors import InputError, ModelError, first_line
from ale_cli.io.yamlsafe import load_yaml
from ale_cli.models import sniff_format
from ale_cli.models.base import extra
from ale_cli.models.objects import ModelObject, Predictor

SCHEMES = ("models:/", "runs:/")
_SKLEARN_FILES = {"skops": "skops", "pickle": "pickle", "cloudpickle": "pickle"}
_TORCH = ("torch-export", "torchscript")


def is_reference(value: Any) -> bool:
    """True for an MLflow model URI, or a directory holding an ``MLmodel`` file."""
    if str(value).startswith(SCHEMES):
        return True
    return isinstance(value, str | Path) and (Path(value) / "MLmodel").is_file()


@dataclass(frozen=True)
class MlflowSource:
    """Where an MLflow model came from (``name``, ``version``: None when not registered)."""

    uri: str
    flavor: str
    run_id: str | None = None
    name: str | None = None
    version: str | None = None

    def record(self) -> dict[str, Any]:
        """The ``mlflow`` entry of the store's and summary's model provenance."""
        return {k: v for k, v in vars(self).items() if v is not None}

    def note(self) -> str | None:
        """What a reader must know when the model is called through its pyfunc."""
        if self.flavor != "python_function":
            return None
        return (
            f"MLflow model '{self.uri}' is called through its pyfunc, with finite differences "
            "(read natively: the sklearn, xgboost and lightgbm flavours, and pytorch saved "
            "as pt2 or TorchScript)"
        )


@dataclass(frozen=True)
class Resolved:
    """The model to load (a file with its format, or an object) and its source."""

    model: Path | ModelObject
    model_format: str | None
    source: MlflowSource


def _local(reference: str | Path) -> tuple[Path, str | None, str | None]:
    """The local model directory, and the registry's name and version of a models:/ URI."""
    text = str(reference)
    if not text.startswith(SCHEMES):
        return Path(reference), None, None
    mlf = extra("mlflow", f"model '{text}' is an MLflow URI, which")
    if not _tracking_uri_set():  # else MLflow makes ./mlflow.db and looks there
        raise ModelError(
            f"cannot read MLflow model '{text}': MLFLOW_TRACKING_URI is not set; a models:/ "
            "or runs:/ URI is read from the tracking store it names (e.g. sqlite:///mlflow.db)"
        )
    try:
        local = Path(mlf.artifacts.download_artifacts(artifact_uri=text))
        name, version = _registered(mlf, text)
    except Exception as exc:  # MlflowException and the store's own errors
        raise ModelError(f"cannot read MLflow model '{text}': {first_line(exc)}") from None
    return local, name, version


def _tracking_uri_set() -> bool:
    """Whether MLflow's tracking URI is set (its variable, or ``mlflow.set_tracking_uri``)."""
    try:  # a private helper of MLflow's; where it is gone, the variable alone
        from mlflow.tracking._tracking_service.utils import is_tracking_uri_set
    except ImportError:
        return bool(os.environ.get("MLFLOW_TRACKING_URI"))
    return bool(is_tracking_uri_set())


def _registered(mlf: Any, uri: str) -> tuple[str | None, str | None]:
    """(name, version) of a registered model's URI; (None, None) for runs:/ and models:/ID."""
    rest = uri[len("models:/") :] if uri.startswith("models:/") else ""
    client = mlf.MlflowClient()
    if "@" in rest:
        name, alias = rest.rsplit("@", 1)
        found = client.get_model_version_by_alias(name, alias)
    elif "/" in rest:
        from mlflow.models.utils import get_model_version_from_model_uri

        found = get_model_version_from_model_uri(uri)
    else:
        return None, None
    return found.name, str(found.version)


def _native(local: Path, flavors: Mapping[str, Any]) -> tuple[str, Path, str] | None:
    """(flavour, file, format) of the first flavour read natively, else None."""
    keys = (("sklearn", "pickled_model"), ("xgboost", "data"), ("lightgbm", "data"))
    for flavor, key in (*keys, ("pytorch", "model_data")):
        spec = flavors.get(flavor)
        if not isinstance(spec, Mapping) or key not in spec:
            continue
        path = local / str(spec[key])
        if flavor == "pytorch":  # pt2, or a ScriptModule; a pickled nn.Module is not read
            files = [path / "model.pt2", path / "model.pth"]
            found = [(p, sniff_format(p)) for p in files if p.is_file()]
            return next((("pytorch", p, f) for p, f in found if f in _TORCH), None)
        if flavor == "xgboost" or str(spec.get("model_class", "")).endswith(".Booster"):
            return flavor, path, flavor
        fmt = _SKLEARN_FILES.get(str(spec.get("serialization_format", "cloudpickle")))
        if fmt is not None:
            return flavor, path, fmt
    return None


def resolve(reference: str | Path, *, trust_pickle: bool = False) -> Resolved:
    """The model an MLflow reference holds: its native flavour's file, else its pyfunc."""
    local, name, version = _local(reference)
    meta = load_yaml(local / "MLmodel", "MLflow MLmodel file")
    flavors = meta.get("flavors") if isinstance(meta, Mapping) else None
    if not isinstance(flavors, Mapping) or not flavors:
        raise ModelError(f"MLflow model '{reference}' lists no flavours in its MLmodel file")
    run_id = meta.get("run_id")
    native = _native(local, flavors)
    if native is not None:
        flavor, path, fmt = native
        if not path.is_file():
            raise ModelError(f"MLflow model '{reference}': its {flavor} file '{path}' is missing")
        return Resolved(path, fmt, MlflowSource(str(reference), flavor, run_id, name, version))
    if "python_function" not in flavors:
        raise ModelError(
            f"MLflow model '{reference}' has neither a flavour ale reads (sklearn, pytorch, "
            f"xgboost, lightgbm) nor a pyfunc; its flavours: {', '.join(flavors)}"
        )
    if not trust_pickle:
        raise InputError(
            f"MLflow model '{reference}' is read through its pyfunc, and loading it runs its "
            "code; pass {param} if you trust it",
            param="trust_pickle",
        )
    source = MlflowSource(str(reference), "python_function", run_id, name, version)
    return Resolved(_pyfunc(local, str(reference)), None, source)


def _pyfunc(local: Path, label: str) -> ModelObject:
    """The pyfunc as a callable model, hashed over every file in the model directory."""
    mlf = extra("mlflow", f"MLflow model '{label}' (a pyfunc)")
    try:
        model = mlf.pyfunc.load_model(str(local))
    except Exception as exc:
        raise ModelError(f"cannot load MLflow model '{label}': {first_line(exc)}") from None
    schema = model.metadata.get_input_schema()  # a DataFrame, as MLflow serves, but for tensors
    frame = schema is None or not schema.is_tensor_spec()
    digest = hashlib.sha256(b"mlflow-pyfunc\n")
    for path in sorted(p for p in local.rglob("*") if p.is_file()):
        digest.update(path.relative_to(local).as_posix().encode() + b"\n" + path.read_bytes())
    return ModelObject(Predictor(model.predict, frame=frame), "callable", digest.hexdigest(), label)
