"""A store's identity, recorded in its meta when it is written (ale_cli.store.format)."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from ale_cli.errors import InputError
from ale_cli.io.files import sha256_file
from ale_cli.store import reader
from ale_cli.store.format import DIGEST, Store, content_digest
from ale_cli.store.npz import StoreWriter, read_meta, read_store, store_sha256, write_store
from ale_cli.store.verify import DamagedStore


def _chunked(path: Path, seed: int = 0, meta: dict | None = None) -> str:
    rng = np.random.default_rng(seed)
    with StoreWriter(path) as w:
        for n in (700, 0, 1300, 5):
            X = rng.normal(size=(n, 3)).astype(np.float32)
            w.add({"X": X, "local_effects": X * 2, "prediction": X.sum(1)})
        w.finish(
            feature_names=("a", "b", "c"),
            input_names=("a", "b", "c"),
            meta={"schema_version": 3, "n_rows": 2005} | (meta or {}),
        )
    assert w.sha256 is not None
    return w.sha256


def _listing(path: Path) -> str:
    """The digest of the members but the meta, from zipfile's own reading."""
    with zipfile.ZipFile(path) as zf:
        rows = [
            (i.filename.removesuffix(".npy"), i.CRC, i.compress_size)
            for i in zf.infolist()
            if i.filename != "meta.npy"
        ]
    return content_digest(rows)


def test_the_writer_records_the_digest_of_its_members_in_the_meta(tmp_path: Path):
    path = tmp_path / "s.npz"
    written = _chunked(path)
    meta = read_meta(path)
    assert meta[DIGEST] == written == _listing(path)
    assert store_sha256(path) == written
    with zipfile.ZipFile(path) as zf:
        assert zf.infolist()[-1].filename == "meta.npy"  # the last member: it names the others


def test_the_identity_is_taken_without_reading_an_array(tmp_path: Path, monkeypatch):
    path = tmp_path / "s.npz"
    written = _chunked(path)
    read = []
    real = reader.Archive.array

    def counted(self, name):
        read.append(name)
        return real(self, name)

    monkeypatch.setattr(reader.Archive, "array", counted)
    assert store_sha256(path) == written
    assert read == ["meta"]


def test_the_same_arrays_have_the_same_identity_and_other_arrays_another(tmp_path: Path):
    """The identity names the arrays, not the file: a store written again from the same
    inputs (another time of creation in its meta) is the same store."""
    a = _chunked(tmp_path / "a.npz", meta={"created": "2026-01-01"})
    b = _chunked(tmp_path / "b.npz", meta={"created": "2026-11-26"})
    c = _chunked(tmp_path / "c.npz", seed=1)
    assert a == b != c
    assert sha256_file(tmp_path / "a.npz") != sha256_file(tmp_path / "b.npz")


def test_a_store_in_memory_records_its_digest_too(tmp_path: Path):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(50, 2))
    store = Store(X=X, local_effects=X, prediction=X[:, 0], feature_names=("u", "v"), meta={})
    path = tmp_path / "m.npz"
    written = write_store(path, store)
    assert read_meta(path)[DIGEST] == written == _listing(path) == store_sha256(path)
    again = read_store(path)
    assert again.meta[DIGEST] == written
    # written again, its recorded digest is replaced by the one of what is written
    assert write_store(tmp_path / "n.npz", again) == written


def test_a_store_without_a_recorded_digest_is_identified_by_its_listing(tmp_path: Path):
    """Stores written before the digest was recorded (np.savez, meta in the middle)."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(20, 2))
    path = tmp_path / "old.npz"
    meta = json.dumps({"schema_version": 2, "n_rows": 20})
    np.savez(
        path,
        X=X,
        local_effects=X,
        prediction=X[:, 0],
        feature_names=np.array(["u", "v"]),
        meta=np.array(meta),
        input_names=np.array(["u", "v"]),
    )
    assert DIGEST not in read_meta(path)
    assert store_sha256(path) == _listing(path)


def test_members_that_differ_from_the_recorded_digest_are_refused(tmp_path: Path):
    """A member replaced after the store was written, its zip headers made consistent
    (as a tool rewriting the archive would): every CRC still matches, the identity
    does not."""
    path = tmp_path / "s.npz"
    _chunked(path)
    other = tmp_path / "t.npz"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(other, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "prediction.00000.npy":
                arr = np.load(src.open(info))
                buffer = io.BytesIO()
                np.lib.format.write_array(buffer, arr + 1)
                data = buffer.getvalue()
            dst.writestr(info.filename, data)
    with pytest.raises(DamagedStore, match="its members differ from those its meta records"):
        store_sha256(other)


def test_a_directory_store_checks_each_part_against_the_manifest(tmp_path: Path):
    from ale_cli.store.parts import MANIFEST, PartStoreWriter

    path = tmp_path / "d"
    with PartStoreWriter(path) as w:
        parts = []
        for i in range(2):
            digest = _chunked(w.part_path(i), seed=i)
            parts.append({"file": w.part_path(i).name, "rows": 2005, "sha256": digest})
        w.finish(
            {"schema_version": 3},
            feature_names=("a", "b", "c"),
            input_names=("a", "b", "c"),
            parts=parts,
            x_min=np.full(3, -10.0),
            x_max=np.full(3, 10.0),
            arrays=["X", "local_effects", "prediction"],
        )
    want = hashlib.sha256((path / MANIFEST).read_bytes()).hexdigest()
    assert store_sha256(path) == want
    shutil.copy(path / "part-00001.npz", path / "part-00000.npz")  # a part swapped
    with pytest.raises(InputError, match="part 'part-00000.npz' changed since"):
        store_sha256(path)


def test_a_directory_store_written_before_names_its_parts_by_their_file(tmp_path: Path):
    from ale_cli.store.parts import MANIFEST, PartStoreWriter

    path = tmp_path / "d"
    with PartStoreWriter(path) as w:
        _chunked(w.part_path(0))
        parts = [{"file": "part-00000.npz", "rows": 2005, "sha256": sha256_file(w.part_path(0))}]
        w.finish(
            {"schema_version": 3},
            feature_names=("a", "b", "c"),
            input_names=("a", "b", "c"),
            parts=parts,
            x_min=np.full(3, -10.0),
            x_max=np.full(3, 10.0),
            arrays=["X", "local_effects", "prediction"],
        )
    assert store_sha256(path) == sha256_file(path / MANIFEST)
