"""The .npz store: round trip, atomic writes, clear errors for files that are not stores."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import ale_cli.store.format as writer_mod
from ale_cli.errors import InputError, RunError
from ale_cli.store.npz import DIGEST, SCHEMA_VERSION, Store, read_meta, read_store, write_store


def make_store(n: int = 5, d: int = 2) -> Store:
    rng = np.random.default_rng(0)
    return Store(
        X=rng.normal(size=(n, d)),
        local_effects=rng.normal(size=(n, d)),
        prediction=rng.normal(size=n),
        feature_names=tuple(f"f{j}" for j in range(d)),
        meta={"schema_version": SCHEMA_VERSION, "n_rows": n, "note": "ünïcode"},
    )


# a store refuses a column whose range overflows (max - min = inf), hence the bounds
finite = st.floats(min_value=-1e300, max_value=1e300, width=64)


@settings(max_examples=25, deadline=None)
@given(
    X=arrays(np.float64, st.tuples(st.integers(1, 6), st.integers(1, 4)), elements=finite),
    # numpy's unicode arrays cannot hold trailing NULs; no column name has them
    names=st.lists(
        st.text(st.characters(blacklist_characters="\x00"), min_size=1, max_size=8),
        min_size=4,
        max_size=4,
        unique=True,
    ),
)
def test_round_trip_is_exact(tmp_path_factory: pytest.TempPathFactory, X: np.ndarray, names):
    path = tmp_path_factory.mktemp("rt") / "s.npz"
    original = Store(
        X=X,
        local_effects=-X,
        prediction=X[:, 0].copy(),
        feature_names=tuple(names[: X.shape[1]]),
        meta={"schema_version": SCHEMA_VERSION, "n_rows": len(X), "k": [1, 2.5, None]},
    )
    digest = write_store(path, original)
    back = read_store(path)
    np.testing.assert_array_equal(back.X, original.X)
    np.testing.assert_array_equal(back.local_effects, original.local_effects)
    np.testing.assert_array_equal(back.prediction, original.prediction)
    assert back.feature_names == original.feature_names
    assert back.meta == original.meta | {DIGEST: digest}


def test_store_loads_without_pickle(tmp_path: Path):
    write_store(tmp_path / "s.npz", make_store())
    with np.load(tmp_path / "s.npz", allow_pickle=False) as npz:
        assert set(npz.files) == {
            "X",
            "input_names",
            "local_effects",
            "prediction",
            "feature_names",
            "meta",
        }
        assert npz["feature_names"].dtype.kind == "U" and npz["meta"].shape == ()
        assert npz["X"].dtype == np.float64


def test_failure_while_writing_leaves_no_partial_file(tmp_path: Path, monkeypatch):
    target = tmp_path / "s.npz"

    def explode(zf, name, array):  # writes half a file, then fails like a full disk would
        zf.fp.write(b"PK\x03\x04 half a zip")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer_mod, "_entry", explode)
    with pytest.raises(RunError, match="No space left on device"):
        write_store(target, make_store())
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []


def test_failure_while_overwriting_keeps_the_old_store(tmp_path: Path, monkeypatch):
    target = tmp_path / "s.npz"
    write_store(target, make_store())
    before = target.read_bytes()

    def explode(zf, name, array):
        zf.fp.write(b"garbage")
        raise KeyboardInterrupt

    monkeypatch.setattr(writer_mod, "_entry", explode)
    with pytest.raises(KeyboardInterrupt):
        write_store(target, make_store(n=7))
    assert target.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["s.npz"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "store '{p}' does not exist; create it with 'ale compute'"),
        (b"hello", "'{p}' is not a local-effects store (.npz from 'ale compute')"),
    ],
)
def test_not_a_store(tmp_path: Path, content, message):
    path = tmp_path / "s.npz"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(InputError) as info:
        read_store(path)
    assert str(info.value) == message.format(p=path)


def test_npz_without_meta_or_newer_schema(tmp_path: Path):
    np.savez(tmp_path / "a.npz", X=np.zeros((2, 2)))
    with pytest.raises(InputError, match="it has no 'meta' array"):
        read_meta(tmp_path / "a.npz")
    np.savez(tmp_path / "b.npz", meta=np.array('{"schema_version": 99}'))
    with pytest.raises(InputError, match="has schema_version 99; this ale reads up to 3"):
        read_meta(tmp_path / "b.npz")


def test_read_meta_checks_every_byte_each_time(tmp_path: Path):
    """``read_meta`` keeps nothing between calls: a store read whole and then changed in
    place (one byte of its second chunk's X) is refused on the next call."""
    from ale_cli.store.npz import StoreWriter

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    path = tmp_path / "s.npz"
    with StoreWriter(path) as w:
        for a in (0, 200):
            rows = slice(a, a + 200)
            w.add({"X": X[rows], "local_effects": X[rows], "prediction": X[rows, 0]})
        w.finish(
            feature_names=("a", "b", "c"),
            input_names=("a", "b", "c"),
            meta={"schema_version": 3, "n_rows": 400},
        )
    first = read_meta(path)
    first["n_rows"] = -1  # the caller's copy
    assert read_meta(path)["n_rows"] == 400
    data = bytearray(path.read_bytes())
    data[data.index(X[250].tobytes())] ^= 0xFF  # inside the second chunk's X
    stat = path.stat()
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # the same size and mtime
    with pytest.raises(InputError, match="array 'X.00001' is damaged"):
        read_meta(path)


def test_the_writer_refuses_what_every_reader_refuses(tmp_path: Path):
    """ale writes no NaN or infinity into a store (compute screens its rows first), and
    a store holding one is refused by every reader: the writer refuses it too."""
    from ale_cli.store.npz import StoreWriter

    X = np.zeros((4, 2))
    E = np.array([[0.0, 1.0], [np.inf, 0.0], [0.0, 0.0], [0.0, 0.0]])
    with pytest.raises(ValueError, match="chunk 0 of 'local_effects' holds NaN or infinite"):
        with StoreWriter(tmp_path / "s.npz") as w:
            w.add({"X": X, "local_effects": E, "prediction": X.sum(1)})
    assert list(tmp_path.iterdir()) == []
