"""Threads: the read-ahead starts at the call, so a caller's own work overlaps it; store headers
are parsed one at a time."""

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


def test_store_headers_are_parsed_one_at_a_time(tmp_path, monkeypatch):
    """numpy's header parser (``ast.literal_eval``) is not thread-safe on CPython 3.11: a
    store read from several threads parses its members' headers one at a time."""
    import time

    import numpy as np

    from ale_cli.store.verify import Archive

    path = tmp_path / "s.npz"
    np.savez(path, a=np.arange(6.0), b=np.ones((2, 3)))
    real, active, most = np.lib.format.read_array_header_1_0, [0], [0]

    def slow(fh, *args, **kwargs):
        active[0] += 1
        most[0] = max(most[0], active[0])
        time.sleep(0.005)
        try:
            return real(fh, *args, **kwargs)
        finally:
            active[0] -= 1

    monkeypatch.setattr(np.lib.format, "read_array_header_1_0", slow)
    read: list[float] = []

    def reader() -> None:
        with Archive(path) as archive:
            for _ in range(5):
                read.append(float(archive.array("a").sum() + archive.array("b").sum()))

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert read == [21.0] * 20
    assert most[0] == 1
