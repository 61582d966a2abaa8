"""A small progress bar on stderr, shown only on a terminal."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressBar:
    """Call with the number of items just finished; redraws at most 10 times a second.

    Disabled (a no-op) when ``enabled`` is false, e.g. with ``--quiet`` or when
    stderr is not a terminal, so logs and CI output stay clean.
    """

    def __init__(self, total: int, label: str, *, enabled: bool, stream: TextIO | None = None):
        self.total = max(total, 1)
        self.label = label
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.done = 0
        self._start = time.perf_counter()
        self._last = 0.0

    @classmethod
    def for_terminal(cls, total: int, label: str, *, quiet: bool) -> ProgressBar:
        return cls(total, label, enabled=not quiet and sys.stderr.isatty())

    def __call__(self, n: int) -> None:
        self.done += n
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self._last >= 0.1 or self.done >= self.total:
            self._last = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        frac = min(self.done / self.total, 1.0)
        filled = int(30 * frac)
        bar = "#" * filled + "." * (30 - filled)
        self.stream.write(
            f"\r{self.label} [{bar}] {self.done:,}/{self.total:,} {frac:4.0%} "
            f"{now - self._start:5.1f}s"
        )
        self.stream.flush()

    def close(self) -> None:
        """End the bar's line (if anything was drawn)."""
        if self.enabled and self.done:
            self.stream.write("\n")
            self.stream.flush()
