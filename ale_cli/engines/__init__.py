"""Where the work runs: ``local`` (this process, the default) or ``dask`` (the parts of the
data or of a store on the workers of a Dask cluster, :mod:`ale_cli.engines.cluster`).

:func:`engine_for` turns the ``engine``/``scheduler`` options into the
:class:`~ale_cli.passes.engine.Engine` object every estimator is handed (the CLI, the
Python API and the job runner call it; nothing below compares engine names). This module
imports neither dask nor distributed: the local path never does.
"""

from __future__ import annotations

from ale_cli.engines.cluster import DaskEngine
from ale_cli.engines.options import (
    ENGINES,
    INSTALL_HINT,
    PROTOCOLS,
    check_engine,
    require_dask,
    scheduler_address,
    scheduler_target,
)
from ale_cli.errors import InputError
from ale_cli.passes.engine import LOCAL, Engine

__all__ = [
    "ENGINES",
    "INSTALL_HINT",
    "PROTOCOLS",
    "DaskEngine",
    "check_engine",
    "engine_for",
    "require_dask",
    "scheduler_address",
    "scheduler_target",
]


def engine_for(engine: Engine | str | None = None, scheduler: str | None = None) -> Engine:
    """The engine for the options ``engine`` ("local", the default, or "dask"; an Engine
    object is returned as it is) and ``scheduler`` (a Dask scheduler's address or file;
    None with dask: a LocalCluster on this machine), validated here once: InputError for
    an unknown engine, a scheduler without dask, a malformed scheduler, or dask without
    its optional packages.

    >>> engine_for()
    LocalEngine(threads=None)
    >>> engine_for("dask", "tcp://10.0.0.5:8786")
    DaskEngine(scheduler='tcp://10.0.0.5:8786')
    >>> engine_for("local", "tcp://10.0.0.5:8786")
    Traceback (most recent call last):
    ale_cli.errors.InputError: scheduler is the address of a Dask scheduler: it needs engine dask
    """
    if engine is not None and not isinstance(engine, str):
        if scheduler is not None:
            raise InputError("{param} is given with an engine object", param="scheduler")
        return engine
    name = "local" if engine is None else engine
    check_engine(name, scheduler)
    if name == "local":
        return LOCAL
    require_dask()
    return DaskEngine(scheduler)
