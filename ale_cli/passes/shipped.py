"""A model as a :class:`~ale_cli.passes.engine.Shared` handle that travels: pickled (once
per Dask worker) it carries the model file's bytes, and the worker loads it once (from the
user's path when that holds the same bytes), checked on the same rows and profile."""

from __future__ import annotations

import hashlib
import tempfile
import threading
import weakref
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ale_cli.errors import InputError, RunError
from ale_cli.io.files import sha256_file
from ale_cli.models import Columns, LoadOptions, Model, ModelObject, load_model
from ale_cli.models.profile import DataProfile


@dataclass(frozen=True, eq=False)
class ShippedModel:
    """The model file ``path`` (its ``sha256``) and how it was loaded: format, options, the
    columns of X, the rows it was checked on and a finite-difference model's profile."""

    path: str
    sha256: str
    model_format: str
    options: LoadOptions
    columns: Columns
    head: np.ndarray = field(repr=False)
    profile: DataProfile | None = field(default=None, repr=False)
    #: the model loaded in this process (never pickled)
    loaded: Model | None = field(default=None, repr=False, compare=False)
    #: the file's bytes (read when the handle is pickled, checked against ``sha256``)
    data: bytes | None = field(default=None, repr=False)
    #: a model given as an object (it has no file to ship)
    obj: ModelObject | None = field(default=None, repr=False)

    @classmethod
    def of(
        cls,
        path: Path | ModelObject,
        *,
        model_format: str,
        options: LoadOptions,
        columns: Columns,
        head: np.ndarray,
        profile: DataProfile | None = None,
        loaded: Model | None = None,
        sha256: str | None = None,
    ) -> ShippedModel:
        """The handle of the model file ``path`` (``sha256`` when known), or of a model
        object, which stays in this process."""
        if isinstance(path, ModelObject):
            sha, obj = path.sha256 or "", path
        else:
            sha, obj = (sha256 if sha256 is not None else sha256_file(path)), None
        return cls(str(path), sha, model_format, options, columns, head, profile, loaded, obj=obj)

    def __reduce__(self) -> tuple[Any, ...]:
        if self.obj is not None:
            raise InputError(
                f"{{param}} dask ships the model file to its workers, but the model is "
                f"{self.obj}; save it to a file, or run on the local engine",
                param="engine",
            )
        data = self.data
        if data is None:
            data = Path(self.path).read_bytes()
            if hashlib.sha256(data).hexdigest() != self.sha256:
                raise RunError(f"model file '{self.path}' changed during the run")
        return (partial(ShippedModel, **(self.__dict__ | {"loaded": None, "data": data})), ())

    def get(self) -> Model:
        """The model: loaded here, or once per process from the file's bytes."""
        if self.loaded is not None:
            return self.loaded
        with _LOCK:
            model = _LOADED.get(self)
            if model is None:
                model = self._load()
                _LOADED[self] = model
            return model

    def _load(self) -> Model:
        path = Path(self.path)
        try:
            same = path.is_file() and sha256_file(path) == self.sha256
        except OSError:
            same = False
        if not same:
            if self.data is None:
                raise RunError(f"model file '{self.path}' changed during the run")
            path = Path(tempfile.mkdtemp(prefix="ale-model-")) / path.name
            path.write_bytes(self.data)
        return load_model(
            path,
            model_format=self.model_format,
            options=self.options,
            columns=self.columns,
            X=self.head if self.profile is None else self.profile.head,
            profile=self.profile,
        )


#: the models loaded in this process, by handle (gone with the handle)
_LOADED: weakref.WeakKeyDictionary[ShippedModel, Model] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()
