"""A store file's sha256 recorded in its extended attribute (ale_cli.store.digest)."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pytest

from ale_cli.store import digest
from ale_cli.store.npz import store_sha256

HOUR_NS = 3600 * 10**9


def _xattrs_work(folder: Path) -> bool:
    probe = folder / "probe"
    probe.write_bytes(b"x")
    try:
        os.setxattr(probe, "user.ale.probe", b"1")
    except (OSError, AttributeError):
        return False
    return True


@pytest.fixture
def settled(tmp_path: Path) -> Path:
    """A file last written an hour ago (as a store computed earlier)."""
    if not _xattrs_work(tmp_path):
        pytest.skip("this file system keeps no user extended attributes")
    path = tmp_path / "s.npz"
    path.write_bytes(os.urandom(3 * 2**20 + 17))
    old = os.stat(path).st_mtime_ns - HOUR_NS
    os.utime(path, ns=(old, old))
    return path


def _no_hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object) -> str:
        raise AssertionError("the file was hashed again")

    monkeypatch.setattr(digest, "sha256_file", refuse)


def test_a_settled_file_is_hashed_once(settled: Path, monkeypatch: pytest.MonkeyPatch):
    want = hashlib.sha256(settled.read_bytes()).hexdigest()
    assert store_sha256(settled) == want
    _no_hashing(monkeypatch)
    assert store_sha256(settled) == want


def test_a_write_of_the_same_size_is_seen(settled: Path):
    store_sha256(settled)
    data = bytearray(settled.read_bytes())
    data[100] ^= 0xFF
    with open(settled, "r+b") as fh:  # in place: same inode, same size
        fh.write(bytes(data))
    assert store_sha256(settled) == hashlib.sha256(bytes(data)).hexdigest()


def test_a_record_made_in_the_tick_of_the_last_write_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A write in the same tick of the file system's clock as the hashed one keeps the
    modification time: a record is used only once the file's change time is later."""
    if not _xattrs_work(tmp_path):
        pytest.skip("this file system keeps no user extended attributes")
    path = tmp_path / "fresh.npz"
    path.write_bytes(b"fresh bytes")
    st = os.stat(path)
    record = {"sha256": "0" * 64, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    os.setxattr(path, digest.ATTRIBUTE, json.dumps(record).encode())
    if os.stat(path).st_ctime_ns - st.st_mtime_ns >= digest.SETTLED_NS:
        pytest.skip("the machine was too slow to set the attribute in the same tick")
    assert store_sha256(path) == hashlib.sha256(b"fresh bytes").hexdigest()


@pytest.mark.parametrize(
    "value",
    [
        b"not json",
        b'{"sha256": "0", "size": 1, "mtime_ns": 2}',
        b'["a", "b"]',
        b'{"sha256": "' + b"0" * 64 + b'", "size": "x", "mtime_ns": null}',
    ],
)
def test_a_damaged_or_stale_record_is_hashed_again(settled: Path, value: bytes):
    want = hashlib.sha256(settled.read_bytes()).hexdigest()
    os.setxattr(settled, digest.ATTRIBUTE, value)
    assert store_sha256(settled) == want


def test_a_record_of_other_bytes_with_another_time_is_not_used(settled: Path):
    store_sha256(settled)
    other = settled.parent / "other.npz"
    other.write_bytes(settled.read_bytes()[::-1])  # same size, other bytes, new time
    os.setxattr(other, digest.ATTRIBUTE, os.getxattr(settled, digest.ATTRIBUTE))
    assert store_sha256(other) == hashlib.sha256(other.read_bytes()).hexdigest()


def test_without_extended_attributes_every_reader_hashes(
    settled: Path, monkeypatch: pytest.MonkeyPatch
):
    def unsupported(*args: object) -> None:
        raise OSError(95, "Operation not supported")

    monkeypatch.setattr(os, "setxattr", unsupported)
    monkeypatch.setattr(os, "getxattr", unsupported)
    want = hashlib.sha256(settled.read_bytes()).hexdigest()
    assert store_sha256(settled) == want
    assert store_sha256(settled) == want


def test_a_store_records_the_digest_of_its_bytes_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """StoreWriter hashes what it writes: the recorded digest is the file's, and a reader
    uses it without hashing; a later write of the file is seen."""
    import numpy as np

    from ale_cli.store.npz import StoreWriter

    if not _xattrs_work(tmp_path):
        pytest.skip("this file system keeps no user extended attributes")
    rng = np.random.default_rng(0)
    path = tmp_path / "s.npz"
    with StoreWriter(path) as w:
        for n in (700, 0, 1300, 5):
            X = rng.normal(size=(n, 3)).astype(np.float32)
            w.add({"X": X, "local_effects": X * 2, "prediction": X.sum(1)})
        w.finish(feature_names=("a", "b", "c"), input_names=("a", "b", "c"), meta={"n": 1})
    want = hashlib.sha256(path.read_bytes()).hexdigest()
    # a write time on a whole second reads as a file system that keeps whole seconds
    coarse = os.stat(path).st_mtime_ns % 1_000_000_000 == 0
    time.sleep((digest.SETTLED_COARSE_NS if coarse else digest.SETTLED_NS) / 1e9 + 0.01)
    os.chmod(path, os.stat(path).st_mode)  # a later change of the metadata: settled
    with monkeypatch.context() as m:
        _no_hashing(m)
        assert store_sha256(path) == want
    with open(path, "r+b") as fh:  # the same size, other bytes
        fh.seek(200)
        fh.write(b"\x00" * 8)
    assert store_sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest() != want
