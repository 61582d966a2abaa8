"""Where the work runs: ``local`` (this process, the default) or ``dask`` (the parts of a
source on the workers of a Dask cluster, :mod:`ale_cli.engines.cluster`). This module
imports neither dask nor distributed.
"""

from __future__ import annotations

from ale_cli.engines.cluster import DaskEngine
from ale_cli.engines.options import check_engine, require_dask
from ale_cli.errors import InputError
from ale_cli.passes.engine import LOCAL, Engine


def engine_for(engine: Engine | str | None = None, scheduler: str | None = None) -> Engine:
    """The engine for the options ``engine`` ("local", the default, "dask", or an Engine
    object as it is) and ``scheduler`` (an address or file; None with dask: a LocalCluster),
    validated here once (InputError).

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
