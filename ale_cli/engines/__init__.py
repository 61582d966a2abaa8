"""Where the work runs: ``local`` (this process, the default) or ``dask``
(:mod:`ale_cli.engines.cluster`); importing this module imports no dask."""

from __future__ import annotations

from ale_cli.checks import check_choice
from ale_cli.engines.cluster import DaskEngine
from ale_cli.errors import InputError
from ale_cli.passes.engine import LOCAL, Engine


def engine_for(engine: Engine | str | None = None, scheduler: str | None = None) -> Engine:
    """The engine for the options ``engine`` ("local", the default, "dask", or an Engine
    object as it is) and ``scheduler`` (an address or file; None with dask: a LocalCluster),
    validated once (InputError; the scheduler by the Dask engine).

    >>> engine_for()
    LocalEngine(threads=None)
    >>> engine_for("dask", "tcp://10.0.0.5:8786")
    DaskEngine(scheduler='tcp://10.0.0.5:8786')
    >>> engine_for("local", "tcp://10.0.0.5:8786")
    Traceback (most recent call last):
    ale_cli.errors.InputError: scheduler is the address of a Dask scheduler: it needs engine dask
    >>> engine_for("spark")
    Traceback (most recent call last):
    ale_cli.errors.InputError: engine must be one of local, dask, got 'spark'
    """
    if engine is not None and not isinstance(engine, str):
        if scheduler is not None:
            raise InputError("{param} is given with an engine object", param="scheduler")
        return engine
    name = "local" if engine is None else engine
    check_choice(name, ("local", "dask"), "engine")
    if scheduler is not None and name != "dask":
        raise InputError(
            "{param} is the address of a Dask scheduler: it needs {param:engine} dask",
            param="scheduler",
        )
    return LOCAL if name == "local" else DaskEngine(scheduler)
