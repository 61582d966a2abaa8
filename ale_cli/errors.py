"""The one exception family of the tool.

Every error a user can cause is an :class:`AleError`, caught once in the CLI, printed
as one line, exit 2 for bad input or options, 1 for a failure while running. The
library names its *parameters*, never flags: ``str(exc)`` names the parameter, the CLI
renders the flag (:meth:`AleError.render`), so that mapping lives in one place.

>>> str(InputError("{param} must be at least 1, got 0", param="max_bins"))
'max_bins must be at least 1, got 0'
>>> InputError("{param} must be at least 1, got 0", param="max_bins").render(
...     lambda p: "--" + p.replace("_", "-"))
'--max-bins must be at least 1, got 0'

A message may name other parameters as ``{param:NAME}``:

>>> str(InputError("{param} replaces {param:bins}", param="edges"))
'edges replaces bins'
"""

from __future__ import annotations

import re
from collections.abc import Callable

_PLACEHOLDERS = re.compile(r"\{param(?::([A-Za-z_][A-Za-z0-9_]*))?\}")


class AleError(Exception):
    """An error reported as one line; exit code 1 unless a subclass says 2. ``param``
    names the parameter the message's ``{param}`` is about."""

    exit_code = 1

    def __init__(self, message: str, *, param: str | None = None) -> None:
        self.template = message
        self.param = param
        super().__init__(self.render())

    def __reduce__(self) -> tuple[object, ...]:
        """Pickle the template and ``param`` (a Dask worker's error reaches the CLI whole,
        so it still names the flag)."""
        return (_rebuild, (type(self), self.template, self.param))

    def render(self, name_of: Callable[[str], str] | None = None) -> str:
        """The message with ``{param}`` replaced by ``name_of(param)`` and every
        ``{param:OTHER}`` by ``name_of("OTHER")`` (default: the names themselves)."""
        name = name_of or (lambda p: p)

        def other(match: re.Match[str]) -> str:
            return name(match.group(1)) if match.group(1) else name(self.param or "")

        if self.param is None and ":" not in self.template:
            return self.template
        return _PLACEHOLDERS.sub(other, self.template)

    def reworded(self, template: str, *, param: str | None = None) -> AleError:
        """An error of this one's kind (its exit code) with another message, whatever
        arguments the kind's own constructor takes."""
        return _rebuild(type(self), template, param)


class InputError(AleError):
    """Bad input: a missing or malformed file, an unknown column, a bad option value."""

    exit_code = 2


class NotNumeric(InputError):
    """A data column holds text where only numbers can be read (tensor models, the
    streaming reader); a scikit-learn pipeline reads it on the whole-table path."""


class ModelError(InputError):
    """The model file cannot be used as asked (wrong format, width, output, unsafe)."""


class RunError(AleError):
    """A failure while running on valid input (the model raised, a write failed)."""


class ModelFailed(RunError):
    """The user's model raised (or returned garbage) while it was being evaluated."""


def _rebuild(cls: type[AleError], template: str, param: str | None) -> AleError:
    """An error from :meth:`AleError.__reduce__`'s parts.

    >>> import pickle
    >>> e = pickle.loads(pickle.dumps(InputError("{param} is bad", param="bins")))
    >>> type(e).__name__, e.render(lambda p: "--" + p)
    ('InputError', '--bins is bad')
    """
    error = Exception.__new__(cls)  # whatever arguments the kind's own constructor takes
    AleError.__init__(error, template, param=param)
    return error


_TORCHSCRIPT_PREAMBLE = "The following operation failed in the TorchScript interpreter"


def first_line(exc: BaseException) -> str:
    """The first non-empty line of an exception's message (its type name if empty);
    for a TorchScript error, the reason after the interpreter's tracebacks.

    >>> first_line(ValueError("bad width\\nmore detail"))
    'bad width'
    >>> first_line(RuntimeError(_TORCHSCRIPT_PREAMBLE + ".\\nTraceback of TorchScript:\\n"
    ...                         "  File x\\nbuiltins.ValueError: negative input\\nmore"))
    'negative input'
    """
    lines = [ln.rstrip() for ln in str(exc).strip().splitlines() if ln.strip()]
    if lines and lines[0].startswith(_TORCHSCRIPT_PREAMBLE):
        last = max((i for i, ln in enumerate(lines) if ln.startswith("Traceback")), default=0)
        reason = next((ln for ln in lines[last + 1 :] if not ln[0].isspace()), lines[-1])
        head, sep, tail = reason.partition(": ")
        return tail if sep and head.rpartition(".")[2].endswith(("Error", "Exception")) else reason
    return lines[0].strip() if lines else type(exc).__name__
