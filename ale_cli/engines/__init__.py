"""Where the work runs: ``local`` (this process, the default) or ``dask`` (the partitions of
the data or of a store on the workers of a Dask cluster, :mod:`ale_cli.engines.dask`).

This module imports neither dask nor distributed: the local path never does.
"""

from __future__ import annotations

from ale_cli.checks import check_choice
from ale_cli.errors import InputError

ENGINES = ("local", "dask")
#: the one line a user without the optional dependencies gets (exit 2)
INSTALL_HINT = "pip install ale-cli[dask]"


def check_engine(engine: str, scheduler: str | None) -> None:
    """InputError naming ``engine`` unless it is one of :data:`ENGINES`, or naming
    ``scheduler`` when one is given for the local engine.

    >>> check_engine("local", None)
    >>> check_engine("spark", None)
    Traceback (most recent call last):
    ale_cli.errors.InputError: engine must be one of local, dask, got 'spark'
    """
    check_choice(engine, ENGINES, "engine")
    if scheduler is not None and engine != "dask":
        raise InputError(
            "{param} is the address of a Dask scheduler: it needs {param:engine} dask",
            param="scheduler",
        )


def require_dask() -> None:
    """InputError (exit 2) saying how to install dask and distributed when they are missing."""
    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
    except ImportError:
        raise InputError(
            f"{{param}} dask needs the optional packages dask and distributed: {INSTALL_HINT}",
            param="engine",
        ) from None


def needs_local(reason: str) -> InputError:
    """The refusal of ``--engine dask`` for inputs only the whole table handles (``reason``:
    the note the local engine gives for reading the whole table)."""
    why = reason.removeprefix("read the whole table: ")
    return InputError(
        f"{{param}} dask evaluates the model on partitions of a data file, but {why}; use "
        "{param} local",
        param="engine",
    )
