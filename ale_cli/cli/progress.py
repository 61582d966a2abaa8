"""A small progress bar on stderr, shown only on a terminal."""

from __future__ import annotations

import sys
import time
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


class ProgressBars:
    """``progress(total[, label]) -> ProgressBar`` for a library call, closing every bar it
    made; the i-th bar gets ``labels[i]`` (the last once they run out) unless named.

    >>> with ProgressBars("rows", quiet=True) as progress:
    ...     progress(10)(4)
    """

    def __init__(self, *labels: str, quiet: bool) -> None:
        self.labels = labels
        self.quiet = quiet
        self.bars: list[ProgressBar] = []

    def __call__(self, total: int, label: str | None = None) -> ProgressBar:
        if label is None:
            label = self.labels[min(len(self.bars), len(self.labels) - 1)]
        enabled = not self.quiet and sys.stderr.isatty()
        self.bars.append(ProgressBar(total, label, enabled=enabled))
        return self.bars[-1]

    def __enter__(self) -> ProgressBars:
        return self

    def __exit__(self, *exc: object) -> None:
        for bar in self.bars:
            bar.close()
