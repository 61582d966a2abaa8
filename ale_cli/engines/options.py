"""The ``scheduler`` option checked (a Dask scheduler's address or file), and the optional
packages of the dask extra."""

from __future__ import annotations

import json
import re
from pathlib import Path

from ale_cli.errors import InputError

#: the protocols of Dask's comms a scheduler listens on
PROTOCOLS = ("tcp", "tls", "ws", "wss", "ucx", "inproc")
_HOST_PORT = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[^/:\[\]\s]+):(?P<port>[0-9]{1,5})/?")


def scheduler_target(scheduler: str) -> tuple[str, str]:
    """``("address", ADDRESS)`` for a scheduler address (one of :data:`PROTOCOLS`, or
    ``host:port`` read as tcp), ``("file", PATH)`` for an existing scheduler file, else an
    InputError naming ``scheduler``. No connection is tried.

    >>> scheduler_target("tcp://10.0.0.5:8786"), scheduler_target("node7:8786")
    (('address', 'tcp://10.0.0.5:8786'), ('address', 'node7:8786'))
    >>> scheduler_target("http://node7:8787/status")
    Traceback (most recent call last):
    ale_cli.errors.InputError: scheduler must be a Dask scheduler address \
(tcp://host:port, tls://host:port, ws://host:port, host:port) or an existing scheduler \
file (JSON), got 'http://node7:8787/status' (http is not a Dask protocol)
    """
    if "://" not in scheduler and Path(scheduler).is_file():
        return "file", scheduler
    scheme, sep, rest = scheduler.partition("://")
    if not sep:
        scheme, rest = "tcp", scheduler
    scheme = scheme.lower()
    found = _HOST_PORT.fullmatch(rest)
    if scheme not in PROTOCOLS:
        why = f" ({scheme} is not a Dask protocol)"
    elif scheme == "inproc":
        return "address", scheduler
    elif found is None:
        why = " (no host:port)" if sep else " (neither host:port nor an existing file)"
    elif not 1 <= int(found.group("port")) <= 65535:
        why = f" (port {found.group('port')} is not between 1 and 65535)"
    else:
        return "address", scheduler
    raise InputError(
        "{param} must be a Dask scheduler address (tcp://host:port, tls://host:port, "
        f"ws://host:port, host:port) or an existing scheduler file (JSON), got "
        f"'{scheduler}'{why}",
        param="scheduler",
    )


def require_dask() -> None:
    """InputError (exit 2) saying how to install dask and distributed when they are missing."""
    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
    except ImportError:
        raise InputError(
            "{param} dask needs the optional packages dask and distributed: "
            "pip install ale-cli[dask]",
            param="engine",
        ) from None


def scheduler_address(scheduler: str) -> str:
    """The address of the scheduler given as an address or a scheduler file."""
    kind, value = scheduler_target(scheduler)
    if kind == "address":
        return value
    try:
        address = json.loads(Path(value).read_text(encoding="utf-8")).get("address")
        found = isinstance(address, str) and "://" in address
        found = found and scheduler_target(address)[0] == "address"
    except (OSError, ValueError, AttributeError, InputError):
        found = False
    if not found:
        raise InputError(
            f"{{param}} file '{value}' is not a Dask scheduler file (a JSON object whose "
            "'address' is tcp://host:port, as 'dask scheduler --scheduler-file' writes)",
            param="scheduler",
        )
    return address
