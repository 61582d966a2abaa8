"""Hostile stores: chunked stores (as ``ale compute`` writes them, several chunks), directory
stores, bootstrap, ``plot --store``, ``interact --store``, non-finite members, zeroed and
malformed stores, overflowing edges.

Every case runs one command in-process on a fresh copy of a workspace holding good stores
made by ``ale compute`` and asserts, as ``tests/test_hostile.py`` does: the exit code,
exactly one ``error: `` line naming the store (and the member), no Traceback, and every
file byte-identical. A hypothesis test flips one byte anywhere in a small chunked store
and asserts every reader refuses it.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hostile import check_one_line, copy_workspace, snapshot

from ale_cli.errors import InputError
from ale_cli.store.npz import StoreWriter, open_store, read_meta, read_store
from ale_cli.store.parts import PartStoreWriter
from ale_cli.store.verify import DamagedStore

CI = os.environ.get("CI", "").lower() == "true"
N_ROWS = 200
CHUNK = "64"  # 4 chunks of 64, 64, 64 and 8 rows

# -- the good workspace -----------------------------------------------------------------------


@pytest.fixture(scope="session")
def stores_base(tmp_path_factory: pytest.TempPathFactory, rhale_model: Path) -> Path:
    """Chunked stores from ``ale compute`` (one with --pairs), a rebin summary, edges, a
    directory store written as the Dask engine writes one (without a cluster)."""
    from typer.testing import CliRunner

    from ale_cli.cli import app

    root = tmp_path_factory.mktemp("hostile-stores")
    rng = np.random.default_rng(3)
    X = rng.normal(size=(N_ROWS, 3))
    lines = ["x1,x2,x3,y", *(",".join(f"{v:.6f}" for v in [*r, r.sum()]) for r in X)]
    (root / "data.csv").write_text("\n".join(lines) + "\n")
    shutil.copy(rhale_model, root / "m.pt")
    runner = CliRunner()
    common = ["m.pt", "data.csv", "--exclude", "y", "--chunk-rows", CHUNK, "-q"]
    for args in (
        ["compute", *common, "-o", "c.npz"],
        ["compute", *common, "-o", "p.npz", "--pairs", "x1,x2"],
        ["rebin", "c.npz", "-o", "c.json", "--bins", "5", "--no-timestamp"],
    ):
        result = runner.invoke(app, [a if "." not in a else str(root / a) for a in args])
        assert result.exit_code == 0, result.output
    (root / "edges.json").write_text(json.dumps({"x1": [-3, 0, 3], "x2": [-3, -1, 1, 3]}))
    _directory_store(root / "d", X)
    return root


def _directory_store(path: Path, X: np.ndarray, slope: float = 2.0) -> None:
    names = ["x1", "x2", "x3"]
    meta = {"schema_version": 3, "tool": {"name": "ale"}, "categorical_features": []}
    with PartStoreWriter(path) as w:
        parts = []
        for i, rows in enumerate((X[:120], X[120:])):
            with StoreWriter(w.part_path(i)) as sw:
                for a in range(0, len(rows), 50):
                    x = rows[a : a + 50]
                    sw.add({"X": x, "local_effects": slope * x, "prediction": x.sum(1)})
                sw.finish(feature_names=names, input_names=names, meta=meta | {"n_rows": len(rows)})
            parts.append({"file": w.part_path(i).name, "rows": len(rows), "sha256": sw.sha256})
        w.finish(
            meta,
            feature_names=names,
            input_names=names,
            parts=parts,
            x_min=X.min(0),
            x_max=X.max(0),
            arrays=["X", "local_effects", "prediction"],
        )


@pytest.fixture()
def sws(stores_base: Path, tmp_path: Path) -> Path:
    return copy_workspace(stores_base, tmp_path)


# -- damage ------------------------------------------------------------------------------------

Damage = Callable[[Path], None]


def _flip(path: Path, offset: int, xor: int = 0xFF) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= xor
    path.write_bytes(bytes(data))


def _data_start(path: Path, member: str) -> tuple[int, int]:
    """Where member ``member``'s bytes start in the file, and how many there are."""
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(f"{member}.npy")
    head = path.read_bytes()[info.header_offset : info.header_offset + 30]
    name_len, extra_len = struct.unpack("<HH", head[26:30])
    return info.header_offset + 30 + name_len + extra_len, info.file_size


def _central(path: Path, member: str) -> int:
    """Where member ``member``'s central directory record starts."""
    data = path.read_bytes()
    with zipfile.ZipFile(path) as zf:
        pos = zf.start_dir
        for info in zf.infolist():
            if info.filename == f"{member}.npy":
                return pos
            n, e, c = struct.unpack("<HHH", data[pos + 28 : pos + 34])
            pos += 46 + n + e + c
    raise KeyError(member)


def data_byte(store: str, member: str, back: int = 5) -> Damage:
    """Flip a byte of ``member``'s values (``back`` bytes before its end)."""

    def damage(ws: Path) -> None:
        start, size = _data_start(ws / store, member)
        _flip(ws / store, start + size - back)

    return damage


def header_byte(store: str, member: str, at: int = 12) -> Damage:
    """Flip a byte of ``member``'s ``.npy`` header."""

    def damage(ws: Path) -> None:
        start, _ = _data_start(ws / store, member)
        _flip(ws / store, start + at, 0x01)

    return damage


def local_byte(store: str, member: str, field: int) -> Damage:
    """Flip byte ``field`` of ``member``'s local zip header (10: time, 14: CRC-32)."""

    def damage(ws: Path) -> None:
        with zipfile.ZipFile(ws / store) as zf:
            offset = zf.getinfo(f"{member}.npy").header_offset
        _flip(ws / store, offset + field, 0x01)

    return damage


def central_byte(store: str, member: str, field: int) -> Damage:
    """Flip byte ``field`` of ``member``'s central directory record (16: CRC-32)."""

    def damage(ws: Path) -> None:
        _flip(ws / store, _central(ws / store, member) + field, 0x01)

    return damage


def rewrite(store: str, change: Callable[[dict[str, Any]], None]) -> Damage:
    """Rewrite ``store`` with ``change`` applied to its members (name -> array; the meta
    as a dict under "meta"), every CRC-32 consistent: the damage is in the values."""

    def damage(ws: Path) -> None:
        path = ws / store
        with zipfile.ZipFile(path) as zf:
            arrays: dict[str, Any] = {}
            for name in zf.namelist():
                with zf.open(name) as fh:
                    arrays[name.removesuffix(".npy")] = np.lib.format.read_array(fh)
        arrays["meta"] = json.loads(str(arrays["meta"][()]))
        change(arrays)
        arrays["meta"] = np.array(json.dumps(arrays["meta"]), dtype=np.str_)
        with open(path, "wb") as fh:
            np.savez(fh, **arrays)

    return damage


def set_value(member: str, row: int, col: int | None, value: float) -> Callable[[dict], None]:
    def change(arrays: dict[str, Any]) -> None:
        a = arrays[member].copy()
        if col is None:
            a[row] = value
        else:
            a[row, col] = value
        arrays[member] = a

    return change


def set_meta(*keys: str, value: Any) -> Callable[[dict], None]:
    def change(arrays: dict[str, Any]) -> None:
        node = arrays["meta"]
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = value

    return change


def zeroed(store: str) -> Damage:
    def damage(ws: Path) -> None:
        size = (ws / store).stat().st_size
        (ws / store).write_bytes(bytes(size))

    return damage


def zip_version(store: str) -> Damage:
    """The first central record needs zip version 10.9 (zipfile raises NotImplementedError)."""

    def damage(ws: Path) -> None:
        with zipfile.ZipFile(ws / store) as zf:
            at = zf.start_dir + 6
        data = bytearray((ws / store).read_bytes())
        data[at] = 109
        (ws / store).write_bytes(bytes(data))

    return damage


def truncated(store: str) -> Damage:
    def damage(ws: Path) -> None:
        data = (ws / store).read_bytes()
        (ws / store).write_bytes(data[: len(data) // 2])

    return damage


def part_byte(member: str, part: str = "part-00001.npz") -> Damage:
    def damage(ws: Path) -> None:
        data_byte(f"d/{part}", member)(ws)

    return damage


def manifest_digit() -> Damage:
    """One input's minimum in the directory store's manifest moved (valid JSON still)."""

    def damage(ws: Path) -> None:
        manifest = json.loads((ws / "d" / "manifest.json").read_text())
        manifest["chunks"]["x_min"][1] -= 0.5
        (ws / "d" / "manifest.json").write_text(json.dumps(manifest, indent=1))

    return damage


def summary_edge(literal: str) -> Damage:
    """The summary's first feature's last edge written as ``literal`` (a JSON number)."""

    def damage(ws: Path) -> None:
        text = (ws / "c.json").read_text()
        data = json.loads(text)
        data["features"][0]["edges"][-1] = 123456.5
        (ws / "c.json").write_text(json.dumps(data).replace("123456.5", literal))

    return damage


def edges_file(literal: str) -> Damage:
    def damage(ws: Path) -> None:
        (ws / "edges.json").write_text('{"x1": [-3, 0, ' + literal + "]}")

    return damage


# -- the cases ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """``argv`` may use {ws}; ``message`` may too."""

    id: str
    damage: Damage
    argv: tuple[str, ...]
    message: str
    code: int = 2


REBIN = ("rebin", "{ws}/c.npz", "-o", "{ws}/out.json")
RHALE = ("rhale", "{ws}/c.npz", "-o", "{ws}/out.json")
INFO = ("info", "{ws}/c.npz")
PLOT = ("plot", "{ws}/c.json", "--store", "{ws}/c.npz", "-o", "{ws}/plots")
BOOT = (*REBIN, "--bootstrap", "20", "--seed", "1")
INTERACT = (
    "interact", "{ws}/m.pt", "{ws}/data.csv", "--exclude", "y", "--pair", "x1,x2",
    "--store", "{ws}/p.npz", "-o", "{ws}/out.json",
)  # fmt: skip
DIR_REBIN = ("rebin", "{ws}/d", "-o", "{ws}/out.json")
C = "store '{ws}/c.npz'"

CASES: list[Case] = [
    # one flipped byte in a member's values (the CRC-32 gap of the chunked read)
    Case("x-values-rebin", data_byte("c.npz", "X.00001"), REBIN,
         f"{C}: array 'X.00001' is damaged"),
    Case("effects-values-rhale", data_byte("c.npz", "local_effects.00002"), RHALE,
         f"{C}: array 'local_effects.00002' is damaged (its bytes do not match its CRC-32)"),
    Case("effects-quantile", data_byte("c.npz", "local_effects.00003"),
         (*REBIN, "--binning", "quantile"), "array 'local_effects.00003' is damaged"),
    Case("unread-prediction-rebin", data_byte("c.npz", "prediction.00001"), REBIN,
         "array 'prediction.00001' is damaged"),
    Case("unread-prediction-rhale", data_byte("c.npz", "prediction.00003"), RHALE,
         "array 'prediction.00003' is damaged"),
    Case("effects-info", data_byte("c.npz", "local_effects.00000"), INFO,
         "array 'local_effects.00000' is damaged"),
    Case("x-features-subset", data_byte("c.npz", "X.00002"), (*REBIN, "--features", "x3"),
         "array 'X.00002' is damaged"),
    Case("x-edges-given", data_byte("c.npz", "X.00000"), (*REBIN, "--edges", "{ws}/edges.json"),
         "array 'X.00000' is damaged"),
    Case("plot-store", data_byte("c.npz", "local_effects.00001"), PLOT,
         "array 'local_effects.00001' is damaged"),
    Case("plot-store-x", data_byte("c.npz", "X.00003"), PLOT, "array 'X.00003' is damaged"),
    Case("bootstrap", data_byte("c.npz", "local_effects.00001"), BOOT,
         "array 'local_effects.00001' is damaged"),
    Case("bootstrap-prediction", data_byte("c.npz", "prediction.00002"), BOOT,
         "array 'prediction.00002' is damaged"),
    Case("interact-store-mixed", data_byte("p.npz", "mixed_derivatives.00001"), INTERACT,
         "array 'mixed_derivatives.00001' is damaged"),
    Case("interact-store-x", data_byte("p.npz", "X.00002"), INTERACT,
         "array 'X.00002' is damaged"),
    # the headers: .npy header, local zip header, central directory
    Case("npy-header", header_byte("c.npz", "X.00001"), RHALE, "'X.00001'"),
    Case("local-time", local_byte("c.npz", "local_effects.00001", 10), REBIN,
         "array 'local_effects.00001' is damaged (its local header differs"),
    Case("local-crc", local_byte("c.npz", "X.00002", 14), RHALE,
         "array 'X.00002' is damaged (its local header differs"),
    Case("central-crc", central_byte("c.npz", "local_effects.00002", 16), REBIN,
         "array 'local_effects.00002' is damaged"),
    Case("central-crc-info", central_byte("c.npz", "prediction.00000", 16), INFO,
         "array 'prediction.00000' is damaged"),
    Case("meta-member", data_byte("c.npz", "meta", back=40), INFO, "array 'meta' is damaged"),
    Case("names-member", data_byte("c.npz", "feature_names", back=3), REBIN,
         "array 'feature_names' is damaged"),
    Case("inputs-member", data_byte("c.npz", "input_names", back=3), RHALE,
         "array 'input_names' is damaged"),
    # zeroed and cut stores
    Case("zeroed-rebin", zeroed("c.npz"), REBIN, "is not a local-effects store"),
    Case("zeroed-info", zeroed("c.npz"), INFO, "is not a local-effects store"),
    Case("zeroed-plot", zeroed("c.npz"), PLOT, "is not a local-effects store"),
    Case("zeroed-bootstrap", zeroed("c.npz"), BOOT, "is not a local-effects store"),
    Case("truncated-rhale", truncated("c.npz"), RHALE, "is not a local-effects store"),
    Case("zip-version-rhale", zip_version("c.npz"), RHALE, "is not a local-effects store"),
    # non-finite values where ale writes none (CRC-32 consistent)
    Case("nan-effects", rewrite("c.npz", set_value("local_effects.00001", 3, 1, np.nan)), RHALE,
         "array 'local_effects.00001' has 1 NaN or infinite value (first: row 3, feature 'x2')"),
    Case("inf-effects-info", rewrite("c.npz", set_value("local_effects.00002", 0, 0, np.inf)),
         INFO, "array 'local_effects.00002' has 1 NaN or infinite value"),
    Case("nan-x", rewrite("c.npz", set_value("X.00002", 5, 2, np.nan)), REBIN,
         "array 'X.00002' has 1 NaN or infinite value (first: row 5, feature 'x3')"),
    Case("nan-x-plot", rewrite("c.npz", set_value("X.00000", 1, 0, np.nan)), PLOT,
         "array 'X.00000' has 1 NaN or infinite value"),
    Case("inf-prediction", rewrite("c.npz", set_value("prediction.00001", 2, None, -np.inf)),
         BOOT, "array 'prediction.00001' has 1 NaN or infinite value"),
    Case("nan-mixed", rewrite("p.npz", set_value("mixed_derivatives.00000", 0, 4, np.nan)),
         INTERACT, "array 'mixed_derivatives.00000' has 1 NaN or infinite value"),
    # malformed meta (CRC-32 consistent)
    Case("meta-model-string", rewrite("c.npz", set_meta("model", value="m.pt")), REBIN,
         "meta"),
    Case("meta-model-string-info", rewrite("c.npz", set_meta("model", value="m.pt")), INFO,
         "meta"),
    Case("meta-data-list", rewrite("c.npz", set_meta("data", value=[1])), RHALE, "meta"),
    Case("meta-chunks-list", rewrite("c.npz", set_meta("chunks", value=[64, 64])), REBIN,
         "meta"),
    Case("meta-rows-text", rewrite("c.npz", set_meta("chunks", "rows", value=["64"] * 4)),
         REBIN, "meta"),
    Case("meta-x-min-text", rewrite("c.npz", set_meta("chunks", "x_min", value="low")), RHALE,
         "meta"),
    Case("meta-x-min-short", rewrite("c.npz", set_meta("chunks", "x_min", value=[0.0])), REBIN,
         "meta"),
    Case("meta-options-string", rewrite("c.npz", set_meta("options", value="fast")), REBIN,
         "meta"),
    Case("meta-features-number", rewrite("c.npz", set_meta("feature_names", value=7)), PLOT,
         "meta"),
    Case("meta-n-rows-float", rewrite("c.npz", set_meta("n_rows", value=200.5)), INFO, "n_rows"),
    Case("meta-x-max-huge", rewrite("c.npz", set_meta("chunks", "x_max", value=[10**400] * 3)),
         RHALE, "'chunks.x_min' and 'chunks.x_max' are not per-input finite ranges"),
    # numbers that overflow to infinity
    Case("edges-400-digits", edges_file("9" * 400), (*REBIN, "--edges", "{ws}/edges.json"),
         "edges"),
    Case("edges-1e400", edges_file("1e400"), (*REBIN, "--edges", "{ws}/edges.json"), "edges"),
    Case("summary-400-digits", summary_edge("9" * 400), PLOT, "c.json"),
    Case("summary-1e400", summary_edge("1e400"), PLOT, "c.json"),
    Case("summary-400-digits-edges", summary_edge("9" * 400),
         (*REBIN, "--edges", "{ws}/c.json"), "c.json"),
    # directory stores
    Case("dir-part-values", part_byte("local_effects.00001"), DIR_REBIN,
         "part-00001.npz': array 'local_effects.00001' is damaged"),
    Case("dir-part-info", part_byte("X.00000", "part-00000.npz"), ("info", "{ws}/d"),
         "part-00000.npz': array 'X.00000' is damaged"),
    Case("dir-part-prediction", part_byte("prediction.00001"),
         ("rhale", "{ws}/d", "-o", "{ws}/out.json"), "array 'prediction.00001' is damaged"),
    Case("dir-manifest-range", manifest_digit(), DIR_REBIN,
         "manifest.json has other input ranges (x_min, x_max) than its parts"),
    Case("dir-part-plot", part_byte("X.00001"),
         ("plot", "{ws}/c.json", "--store", "{ws}/d", "-o", "{ws}/plots"),
         "array 'X.00001' is damaged"),
]  # fmt: skip


def test_there_are_enough_cases():
    assert len(CASES) >= 35
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_store(cli, sws: Path, case: Case):
    case.damage(sws)
    before = snapshot(sws)
    result = cli(*(a.format(ws=sws) for a in case.argv))
    check_one_line(result, case.message.format(ws=sws), case.code)
    assert snapshot(sws) == before


# -- one flipped byte anywhere: refused by every reader -----------------------------------------


def _inert(path: Path) -> set[int]:
    """The bytes no reader uses: each central directory record's ``made by`` system and
    external file attributes (a change there changes no number: checked below)."""
    data = path.read_bytes()
    out: set[int] = set()
    with zipfile.ZipFile(path) as zf:
        pos = zf.start_dir
        for _ in zf.infolist():
            out |= {pos + 5, *range(pos + 38, pos + 42)}
            n, e, c = struct.unpack("<HHH", data[pos + 28 : pos + 34])
            pos += 46 + n + e + c
    return out


def _readers(path: Path, ws: Path, cli: Any) -> list[tuple[str, Callable[[], Any]]]:
    from ale_cli.estimators.bands import Bootstrap
    from ale_cli.estimators.dale import RebinRequest, RhaleRequest, rebin, rhale

    boot = Bootstrap(8, seed=1)

    def command(*argv: str) -> Callable[[], Any]:
        return lambda: cli(*(a.format(ws=ws) for a in argv))

    return [
        ("info", lambda: read_meta(path)),
        ("in-memory", lambda: read_store(path)),
        ("open+chunks", lambda: [c for c in open_store(path).chunks()]),
        ("rebin", lambda: rebin(RebinRequest(store=path, bins=4)).summary),
        ("rhale", lambda: rhale(RhaleRequest(store=path)).summary),
        ("bootstrap", lambda: rebin(RebinRequest(store=path, bins=4, bootstrap=boot)).summary),
        ("plot", command("plot", "{ws}/p.json", "--store", str(path), "-o", "{ws}/plots")),
        ("interact", command(*INTERACT[:-2], "-o", "{ws}/i.json", "--no-timestamp")),
    ]  # fmt: skip


def _outcome(reader: Callable[[], Any]) -> Any:
    """What a reader gave: the error line it refused with, or its result."""
    try:
        found = reader()
    except InputError as exc:
        return ("refused", str(exc))
    if hasattr(found, "exit_code"):  # the CLI
        if found.exit_code == 0:
            return ("ok", found.stdout)
        check_one_line(found, "store '", 2)
        return ("refused", found.stderr)
    return ("ok", found)


@pytest.fixture(scope="module")
def pairs_summary(stores_base: Path) -> Path:
    from typer.testing import CliRunner

    from ale_cli.cli import app

    out = stores_base / "p.json"
    if not out.exists():
        argv = ["rebin", str(stores_base / "p.npz"), "-o", str(out), "--bins", "4"]
        assert CliRunner().invoke(app, argv).exit_code == 0
    return out


@settings(
    max_examples=12 if not CI else 60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(where=st.data())
def test_one_flipped_byte_is_refused_by_every_reader(
    cli, stores_base: Path, pairs_summary: Path, tmp_path_factory, where
):
    """A chunked store from ``ale compute --pairs`` (4 chunks), one byte changed anywhere
    (any member's data or headers, the central directory, the end records): every reader
    refuses it in one line naming the store; only the bytes no reader uses may change
    and then every result is the good store's."""
    ws = tmp_path_factory.mktemp("flip")
    for name in ("p.npz", "p.json", "m.pt", "data.csv"):
        shutil.copy(stores_base / name, ws / name)
    path = ws / "p.npz"
    size = path.stat().st_size
    with zipfile.ZipFile(path) as zf:
        members = [i.filename.removesuffix(".npy") for i in zf.infolist()]
    member = where.draw(st.sampled_from(members))
    start, length = _data_start(path, member)
    offset = where.draw(
        st.one_of(st.integers(0, size - 1), st.integers(start, start + length - 1)),
        label="offset",
    )
    xor = where.draw(st.integers(1, 255), label="xor")
    inert = offset in _inert(path)
    _flip(path, offset, xor)
    for name, reader in _readers(path, ws, cli):
        kind, found = _outcome(reader)
        if not inert:
            assert kind == "refused", (name, offset, xor)
            assert str(path) in found, found
    if inert:  # the results are the good store's
        from ale_cli.estimators.dale import RebinRequest, rebin

        damaged = rebin(RebinRequest(store=path, bins=4)).summary
        good = rebin(RebinRequest(store=stores_base / "p.npz", bins=4)).summary
        for a, b in zip(damaged.features, good.features, strict=True):
            np.testing.assert_array_equal(a.effect, b.effect)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(where=st.data())
def test_a_flipped_byte_in_a_part_is_refused_and_never_a_cache_hit(
    stores_base: Path, tmp_path_factory, where
):
    """A directory store, one byte changed in one of its parts: its meta (what compute's
    cache check reads) and every reader refuse it, as damage (so compute recomputes)."""
    from ale_cli.estimators.dale import RhaleRequest, rhale

    ws = tmp_path_factory.mktemp("flip-dir")
    shutil.copytree(stores_base / "d", ws / "d")
    part = ws / "d" / where.draw(st.sampled_from(["part-00000.npz", "part-00001.npz"]))
    offset = where.draw(st.integers(0, part.stat().st_size - 1), label="offset")
    _flip(part, offset, where.draw(st.integers(1, 255), label="xor"))
    if offset in _inert(part):
        return
    with pytest.raises(InputError, match=str(part)):
        read_meta(ws / "d")
    with pytest.raises(InputError, match=str(part)):
        rhale(RhaleRequest(store=ws / "d"))
    with pytest.raises(InputError, match=str(part)):
        read_store(ws / "d")


def _central_offsets(path: Path) -> list[int]:
    """The offset of each central directory record of ``path``."""
    data = path.read_bytes()
    out = []
    with zipfile.ZipFile(path) as zf:
        pos = zf.start_dir
        for _ in zf.infolist():
            out.append(pos)
            n, e, c = struct.unpack("<HHH", data[pos + 28 : pos + 34])
            pos += 46 + n + e + c
    return out


@pytest.mark.parametrize("store", ["p.npz", "d/part-00000.npz"])
@pytest.mark.parametrize(
    "where",
    ["zip64-local-size", "last-name-length", "last-extra-length", "last-comment-length"],
)
def test_header_bytes_zipfile_tolerates_are_refused(stores_base: Path, tmp_path, store, where):
    """Bytes Python's zipfile reads past: one zip64 size marker of a local header changed
    (the other still marks zip64), and the lengths in the last central record (zipfile
    reads the directory from a buffer that cuts a longer name short)."""
    path = tmp_path / "s.npz"
    shutil.copyfile(stores_base / store, path)
    last = _central_offsets(path)[-1]
    offset = {
        "zip64-local-size": 18,  # the first member's compressed size (0xFFFFFFFF)
        "last-name-length": last + 28,
        "last-extra-length": last + 30,
        "last-comment-length": last + 32,
    }[where]
    _flip(path, offset, 1)
    with pytest.raises(InputError, match="is damaged"):
        read_store(path)


# -- compute on its own damaged output ----------------------------------------------------------


@pytest.mark.parametrize(
    "damage",
    [
        data_byte("c.npz", "local_effects.00001"),
        local_byte("c.npz", "X.00003", 10),
        rewrite("c.npz", set_value("X.00002", 1, 1, np.nan)),
    ],
    ids=["crc", "local-header", "nan-in-X"],
)
def test_compute_recomputes_its_own_damaged_store_and_says_so(cli, sws: Path, damage):
    good = read_store(sws / "c.npz")
    damage(sws)
    argv = ["compute", "m.pt", "data.csv", "--exclude", "y", "--chunk-rows", CHUNK]
    result = cli(*[a if "." not in a else str(sws / a) for a in argv], "-o", sws / "c.npz")
    assert result.exit_code == 0, result.output
    assert "cache hit" not in result.stdout
    assert f"note: store '{sws / 'c.npz'}' was damaged; recomputed (" in result.stderr
    again = read_store(sws / "c.npz")  # whole again, the same numbers
    np.testing.assert_array_equal(again.X, good.X)
    np.testing.assert_array_equal(again.local_effects, good.local_effects)


def test_a_damaged_directory_store_is_not_a_cache_hit(sws: Path):
    from ale_cli.estimators.local_effects import Damaged, cached_result

    data_byte("d/part-00001.npz", "X.00000")(sws)
    with pytest.raises(DamagedStore, match="part-00001.npz': array 'X.00000' is damaged"):
        read_meta(sws / "d")

    class Request:  # what the cache check reads of a request
        out = sws / "d"

    found = cached_result(Request(), None, 0.0)  # type: ignore[arg-type]
    assert isinstance(found, Damaged) and "was damaged; recomputed" in found.note


def test_a_rewritten_or_mixed_store_is_refused_by_info_and_never_a_cache_hit(cli, sws: Path):
    """Every CRC valid, its identity not the recorded one: a member rewritten (a file
    store), a part of another store of the same data (a directory store)."""
    from ale_cli.estimators.local_effects import Damaged, cached_result

    rewrite("c.npz", set_value("X.00002", 1, 1, 0.0))(sws)  # finite, inside the range
    result = cli("info", sws / "c.npz")
    check_one_line(result, ": its members differ from those its meta records", 2)
    argv = ["compute", sws / "m.pt", sws / "data.csv", "--exclude", "y", "--chunk-rows", CHUNK]
    result = cli(*argv, "-o", sws / "c.npz")
    assert result.exit_code == 0 and "cache hit" not in result.stdout, result.output
    note = f"note: store '{sws / 'c.npz'}' was damaged; recomputed (its members differ from"
    assert note in result.stderr

    _directory_store(sws / "other", read_store(sws / "d").X, slope=3.0)
    shutil.copy(sws / "other" / "part-00001.npz", sws / "d" / "part-00001.npz")
    result = cli("info", sws / "d")
    check_one_line(result, "part 'part-00001.npz' changed since the store was written", 2)

    class Request:  # what the cache check reads of a request
        out = sws / "d"

    found = cached_result(Request(), None, 0.0)  # type: ignore[arg-type]
    assert isinstance(found, Damaged)
    assert found.note.endswith(
        "recomputed (part 'part-00001.npz' changed since the store was "
        "written (its sha256 differs from the manifest's))"
    )


# -- the Dask engine reads through the same reader ---------------------------------------------


def test_the_dask_engine_refuses_a_damaged_chunk(cli, sws: Path):
    pytest.importorskip("distributed", reason="the dask extra is not installed")
    from distributed import LocalCluster

    data_byte("c.npz", "local_effects.00002")(sws)
    before = snapshot(sws)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False) as local:
        argv = (*RHALE, "--engine", "dask", "--scheduler", local.scheduler_address)
        result = cli(*(a.format(ws=sws) for a in argv))
    check_one_line(result, "array 'local_effects.00002' is damaged", 2)
    assert snapshot(sws) == before


def test_a_read_that_fails_without_a_message_is_still_a_damaged_store(tmp_path, monkeypatch):
    """zipfile raises a bare EOFError where a compressed member's bytes end early: the
    refusal names the error's type (it was an IndexError, an internal error)."""
    import io

    from ale_cli.store.verify import Archive

    class Truncated(io.BytesIO):
        def readinto(self, buffer: Any) -> int:
            raise EOFError

    path = tmp_path / "s.npz"
    np.savez(path, a=np.arange(6.0))
    monkeypatch.setattr(Archive, "_stream", lambda self, member: Truncated())
    with Archive(path) as archive, pytest.raises(DamagedStore, match="EOFError"):
        archive.verify("a")


def test_a_store_without_recorded_ranges_is_scanned_for_them(cli, sws: Path):
    """``chunks.x_min``/``x_max`` null (the layout allows it) read as absent: the estimators
    scan the rows for the ranges, as without them, and get the same summary."""
    want = cli("rhale", sws / "c.npz", "-o", sws / "want.json")
    assert want.exit_code == 0, want.output
    rewrite("c.npz", set_meta("chunks", "x_min", value=None))(sws)
    rewrite("c.npz", set_meta("chunks", "x_max", value=None))(sws)
    got = cli("rhale", sws / "c.npz", "-o", sws / "got.json")
    assert got.exit_code == 0, got.output
    want_s, got_s = (json.loads((sws / n).read_text()) for n in ("want.json", "got.json"))
    assert got_s["features"] == want_s["features"]
