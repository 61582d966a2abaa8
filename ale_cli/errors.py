"""The one exception family of the tool.

Every error a user can cause is an :class:`AleError` raised deep in the code and
caught once, in the CLI, where it is printed as one line and turned into an exit
code: 2 for bad input or options, 1 for a failure while running.
"""

from __future__ import annotations


class AleError(Exception):
    """An error reported to the user as one line; exit code 1 unless a subclass says 2."""

    exit_code = 1


class InputError(AleError):
    """Bad input: a missing or malformed file, an unknown column, a bad option value."""

    exit_code = 2


class ModelError(InputError):
    """The model file cannot be used as asked (wrong format, width, output, unsafe)."""


class RunError(AleError):
    """A failure while running on valid input (the model raised, a write failed)."""

    exit_code = 1
