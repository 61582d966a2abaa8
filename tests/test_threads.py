"""io.threads: the read-ahead starts at the call, so a caller's own work overlaps it."""

from __future__ import annotations

import threading

import pytest

from ale_cli.io.threads import prefetched


def test_prefetched_reads_the_first_item_before_it_is_asked_for():
    started = threading.Event()

    def items():  # type: ignore[no-untyped-def]
        started.set()
        yield 1
        yield 2

    ahead = prefetched(items())
    assert started.wait(30)  # read while the caller does something else (import torch)
    assert list(ahead) == [1, 2]


def test_prefetched_raises_the_reader_error_at_the_item():
    def items():  # type: ignore[no-untyped-def]
        yield 1
        raise ValueError("bad chunk")

    ahead = prefetched(items())
    assert next(ahead) == 1
    with pytest.raises(ValueError, match="bad chunk"):
        next(ahead)
