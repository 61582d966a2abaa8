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
    """The address of a scheduler given as an address (one of :data:`PROTOCOLS`, or
    ``host:port`` read as tcp) or as an existing scheduler file (its ``address``), else an
    InputError naming ``scheduler``. No connection is tried.

    >>> scheduler_address("tcp://10.0.0.5:8786"), scheduler_address("node7:8786")
    ('tcp://10.0.0.5:8786', 'node7:8786')
    >>> scheduler_address("http://node7:8787/status")
    Traceback (most recent call last):
    ale_cli.errors.InputError: scheduler must be a Dask scheduler address \
(tcp://host:port, tls://host:port, ws://host:port, host:port) or an existing scheduler \
file (JSON), got 'http://node7:8787/status' (http is not a Dask protocol)
    """
    if "://" not in scheduler and Path(scheduler).is_file():
        try:
            address = json.loads(Path(scheduler).read_text(encoding="utf-8")).get("address")
            found = isinstance(address, str) and "://" in address
            found = found and scheduler_address(address) == address
        except (OSError, ValueError, AttributeError, InputError):
            found = False
        if not found:
            raise InputError(
                f"{{param}} file '{scheduler}' is not a Dask scheduler file (a JSON object "
                "whose 'address' is tcp://host:port, as 'dask scheduler --scheduler-file' "
                "writes)",
                param="scheduler",
            )
        return str(address)
    scheme, sep, rest = scheduler.partition("://")
    if not sep:
        scheme, rest = "tcp", scheduler
    scheme = scheme.lower()
    host_port = _HOST_PORT.fullmatch(rest)
    if scheme not in PROTOCOLS:
        why = f" ({scheme} is not a Dask protocol)"
    elif scheme == "inproc":
        return scheduler
    elif host_port is None:
        why = " (no host:port)" if sep else " (neither host:port nor an existing file)"
    elif not 1 <= int(host_port.group("port")) <= 65535:
        why = f" (port {host_port.group('port')} is not between 1 and 65535)"
    else:
        return scheduler
    raise InputError(
        "{param} must be a Dask scheduler address (tcp://host:port, tls://host:port, "
        f"ws://host:port, host:port) or an existing scheduler file (JSON), got "
        f"'{scheduler}'{why}",
        param="scheduler",
    )
