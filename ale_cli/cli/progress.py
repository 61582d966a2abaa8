"""A small progress bar on stderr, shown only on a terminal."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO


class ProgressBar:
    """Call with the number of items just finished; redraws at most 10 times a second
    (a no-op unless ``enabled``: a terminal without ``--quiet``)."""

    def __init__(self, total: int, label: str, *, enabled: bool, stream: TextIO | None = None):
        self.total = max(total, 1)
        self.label = label
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.done = 0
        self._start = time.perf_counter()
        self._last = 0.0

    def __call__(self, n: int) -> None:
        self.done += n
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self._last < 0.1 and self.done < self.total:
            return
        self._last = now
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


@contextmanager
def progress_bars(*labels: str, quiet: bool) -> Iterator[Callable[..., ProgressBar]]:
    """``progress(total[, label]) -> ProgressBar`` for a library call, closing every bar it
    made; the i-th bar gets ``labels[i]`` (the last once they run out) unless named.

    >>> with progress_bars("rows", quiet=True) as progress:
    ...     progress(10)(4)
    """
    bars: list[ProgressBar] = []

    def progress(total: int, label: str | None = None) -> ProgressBar:
        name = label if label is not None else labels[min(len(bars), len(labels) - 1)]
        bars.append(ProgressBar(total, name, enabled=not quiet and sys.stderr.isatty()))
        return bars[-1]

    try:
        yield progress
    finally:
        for bar in bars:
            bar.close()
