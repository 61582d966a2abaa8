"""The hostile-input suite: what a careless or hostile user hands to ``ale``.

Every case runs one command in-process against a fresh workspace of generated
files (a good store, summary, edges file, data file and config, plus the
hostile file of the case) and asserts:

- the exit code (2 for bad input, 1 for a failure while running);
- exactly one line on stderr, starting with ``error: `` and holding the
  expected text; no ``Traceback`` anywhere; no numpy repr (``np.float64(``);
- nothing in the workspace changed, appeared or disappeared (names, sizes,
  modification times, modes; directories included).

Cases that need work owned elsewhere are
strict xfails: they start failing, as a reminder to drop the mark, once the
behaviour is there. A hypothesis test feeds generated CSV/Parquet tables through
``ale compute`` (200 examples when ``CI=true``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import struct
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ale_cli.errors import InputError
from ale_cli.store.npz import SCHEMA_VERSION, Store, write_store
from ale_cli.summary.model import read_summary
from ale_cli.summary.validate import schema_errors, summary_schema, validate_summary

CI = os.environ.get("CI", "").lower() == "true"
N_ROWS = 60
NAMES = ("a", "b", "c")

# -- the good files every case starts from ----------------------------------------------------


def good_arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    X = rng.normal(size=(N_ROWS, len(NAMES)))
    meta = {"schema_version": SCHEMA_VERSION, "n_rows": N_ROWS, "feature_names": list(NAMES)}
    return {
        "X": X,
        "local_effects": np.column_stack([np.ones(N_ROWS), 2 * X[:, 1], np.cos(X[:, 2])]),
        "prediction": X.sum(axis=1),
        "feature_names": np.array(NAMES, dtype=np.str_),
        "meta": np.array(json.dumps(meta), dtype=np.str_),
    }


GOOD_INTERACTION = {
    "features": ["a", "b"],
    "estimator": "dale",
    "status": "ok",
    "n_bins": [2, 2],
    "edges_a": [0.0, 1.0, 2.0],
    "edges_b": [0.0, 1.0, 2.0],
    "counts": [[1, 2], [3, 4]],
    "cell_effect": [[0.0, 0.1], [0.2, None]],
    "cell_std": [[0.0, 0.1], [0.2, 0.3]],
    "filled": [[False, False], [False, True]],
    "effect": [[0.0, 0.0, 0.0], [0.0, 0.1, 0.0], [0.0, 0.0, 0.0]],
    "center_offset": 0.0,
    "n_outside": 0,
}


@pytest.fixture(scope="session")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The good files, made once; each case works on a copy."""
    from typer.testing import CliRunner

    from ale_cli.cli import app

    root = tmp_path_factory.mktemp("hostile-base")
    arrays = good_arrays()
    meta = json.loads(str(arrays["meta"][()]))
    write_store(
        root / "good.npz",
        Store(
            X=arrays["X"],
            local_effects=arrays["local_effects"],
            prediction=arrays["prediction"],
            feature_names=NAMES,
            meta=meta,
        ),
    )
    result = CliRunner().invoke(
        app, ["rebin", str(root / "good.npz"), "-o", str(root / "good.json"), "--bins", "4"]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads((root / "good.json").read_text())
    (root / "inter.json").write_text(
        json.dumps({**summary, "features": [], "interactions": [GOOD_INTERACTION]})
    )
    read_summary(root / "inter.json")
    (root / "edges.json").write_text(json.dumps({"a": [-3, 0, 3], "b": [-3, -1, 1, 3]}))
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 3))
    lines = ["x1,x2,x3,y", *(",".join(f"{v:.6f}" for v in [*row, row.sum()]) for row in X)]
    (root / "data.csv").write_text("\n".join(lines) + "\n")
    (root / "notes.txt").write_text("my notes, not an ale output\n")
    (root / "adir").mkdir()
    return root


def copy_workspace(base: Path, tmp_path: Path) -> Path:
    """A fresh copy of a suite's good files (links copied as links) for one case."""
    work = tmp_path / "ws"
    shutil.copytree(base, work, symlinks=True)
    return work


@pytest.fixture()
def ws(base: Path, tmp_path: Path) -> Path:
    return copy_workspace(base, tmp_path)


def snapshot(root: Path) -> dict[str, tuple[Any, ...]]:
    """Every entry under ``root``: kind, size, mtime and mode (symlinks not followed)."""
    out: dict[str, tuple[Any, ...]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            st_ = os.lstat(path)
            size = st_.st_size if stat.S_ISREG(st_.st_mode) else 0
            out[str(path.relative_to(root))] = (
                stat.S_IFMT(st_.st_mode),
                size,
                st_.st_mtime_ns,
                stat.S_IMODE(st_.st_mode),
            )
    return out


# -- hostile file builders ---------------------------------------------------------------------

Builder = Callable[[Path], None]


def raw(data: bytes) -> Builder:
    return lambda path: path.write_bytes(data)


def text(content: str) -> Builder:
    return lambda path: path.write_text(content, encoding="utf-8")


def npz(**changes: Any) -> Builder:
    """The good store's arrays with ``changes`` (None removes an array), saved as given."""

    def build(path: Path) -> None:
        arrays = good_arrays()
        for name, value in changes.items():
            if value is None:
                arrays.pop(name)
            else:
                arrays[name] = value
        with open(path, "wb") as fh:
            np.savez(fh, **arrays)

    return build


def meta(**changes: Any) -> np.ndarray:
    """A meta array: the good meta with ``changes`` (None removes a key)."""
    data = json.loads(str(good_arrays()["meta"][()]))
    for key, value in changes.items():
        if value is None:
            data.pop(key)
        else:
            data[key] = value
    return np.array(json.dumps(data), dtype=np.str_)


def damaged_member(member: str) -> Builder:
    """A good store with one byte flipped inside ``member``'s data."""

    def build(path: Path) -> None:
        npz()(path)
        flip_member(path, member)

    return build


def short_member(path: Path) -> None:
    """A store whose local_effects member is shorter than its header says (CRC consistent)."""
    import io

    with zipfile.ZipFile(path, "w") as zf:
        for name, value in good_arrays().items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, value)
            data = buf.getvalue()
            zf.writestr(f"{name}.npy", data[:-80] if name == "local_effects" else data)


def truncated(path: Path) -> None:
    npz()(path)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def zip_with_text_member(path: Path) -> None:
    npz()(path)
    with zipfile.ZipFile(path, "a") as zf:
        zf.writestr("readme.txt", "hello")


def summary(mutate: Callable[[dict[str, Any]], Any], source: str = "good.json") -> Builder:
    """The good summary (read from the workspace) after ``mutate(data)``, as JSON text."""

    def build(path: Path) -> None:
        data = json.loads((path.parent / source).read_text())
        mutate(data)
        path.write_text(json.dumps(data))

    return build


def feat(field: str, value: Any, index: int = 0) -> Callable[[dict[str, Any]], None]:
    def mutate(data: dict[str, Any]) -> None:
        data["features"][index][field] = value

    return mutate


def inter(field: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(data: dict[str, Any]) -> None:
        data["interactions"][0][field] = value

    return mutate


def fifo(path: Path) -> None:
    os.mkfifo(path)


def symlink_loop(path: Path) -> None:
    path.symlink_to(path.parent / (path.name + ".other"))
    (path.parent / (path.name + ".other")).symlink_to(path)


def directory(path: Path) -> None:
    path.mkdir()


# -- the cases ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """``argv`` may use {ws} (the workspace), {bad} (the hostile file) and {model}."""

    id: str
    argv: tuple[str, ...]
    code: int
    message: str
    bad: Builder | None = None
    bad_name: str = "bad"
    xfail: str | None = None


BROKEN_STORES: list[tuple[str, Builder, str]] = [
    ("missing", lambda p: None, "does not exist; create it with 'ale compute'"),
    ("directory", directory, "is a directory, expected an .npz file"),
    ("empty", raw(b""), "is not a local-effects store"),
    ("garbage", raw(os.urandom(4096)), "is not a local-effects store"),
    ("text", text("X,local_effects\n1,2\n"), "is not a local-effects store"),
    ("truncated", truncated, "is not a local-effects store"),
    ("crc-local-effects", damaged_member("local_effects"), "array 'local_effects' is damaged"),
    ("crc-prediction", damaged_member("prediction"), "array 'prediction' is damaged"),
    ("crc-X", damaged_member("X"), "array 'X' is damaged"),
    ("short-member", short_member, "array 'local_effects' is"),
    ("text-member", zip_with_text_member, "member 'readme.txt' is not a .npy array"),
    ("no-X", npz(X=None), "lacks the array(s) X"),
    ("no-local-effects", npz(local_effects=None), "lacks the array(s) local_effects"),
    ("no-prediction", npz(prediction=None), "lacks the array(s) prediction"),
    ("no-names", npz(feature_names=None), "lacks the array(s) feature_names"),
    ("no-meta", npz(meta=None), "it has no 'meta' array"),
    ("meta-not-json", npz(meta=np.array("{not json")), "has an unreadable 'meta' array"),
    ("meta-list", npz(meta=np.array("[1, 2]")), "has an unreadable 'meta' array"),
    ("meta-float", npz(meta=np.array(3.5)), "has an unreadable 'meta' array"),
    ("meta-no-n-rows", npz(meta=meta(n_rows=None)), "its meta has no integer 'n_rows'"),
    ("meta-n-rows-text", npz(meta=meta(n_rows="60")), "its meta has no integer 'n_rows'"),
    ("meta-n-rows-wrong", npz(meta=meta(n_rows=61)), "says n_rows 61, array 'X' has 60 rows"),
    ("schema-99", npz(meta=meta(schema_version=99)), "has schema_version 99; this ale reads"),
    ("schema-text", npz(meta=meta(schema_version="1")), "has schema_version 1; this ale reads"),
    ("schema-bool", npz(meta=meta(schema_version=True)), "has schema_version True;"),
    (
        "X-objects",
        npz(X=np.array([[1.0, "a", None]] * N_ROWS, dtype=object)),
        "array 'X' holds Python objects",
    ),
    (
        "names-objects",
        npz(feature_names=np.array(["a", "b", 3], dtype=object)),
        "array 'feature_names' holds Python objects",
    ),
    ("X-strings", npz(X=np.full((N_ROWS, 3), "1.5")), "array 'X' must hold floats, it holds str"),
    (
        "X-complex",
        npz(X=np.ones((N_ROWS, 3), dtype=complex)),
        "array 'X' must hold floats, it holds complex128",
    ),
    ("X-int", npz(X=np.ones((N_ROWS, 3), dtype=np.int64)), "must hold floats, it holds int64"),
    ("X-1d", npz(X=np.ones(N_ROWS)), "array 'X' must be 2-D"),
    (
        "effects-shape",
        npz(local_effects=np.ones((N_ROWS, 2))),
        "array 'local_effects' has shape (60, 2), expected (60, 3)",
    ),
    ("prediction-2d", npz(prediction=np.ones((N_ROWS, 1))), "array 'prediction' has shape"),
    ("names-count", npz(feature_names=np.array(["a", "b"])), "array 'feature_names' has shape"),
    ("names-twice", npz(feature_names=np.array(["a", "b", "a"])), "feature 'a' appears twice"),
    ("names-empty", npz(feature_names=np.array(["a", "", "c"])), "holds an empty name"),
    ("names-int", npz(feature_names=np.arange(3)), "'feature_names' must hold text"),
    (
        "X-nan",
        npz(X=np.where(np.arange(N_ROWS)[:, None] == 5, np.nan, good_arrays()["X"])),
        "array 'X' has 3 NaN or infinite values (first: row 5, feature 'a')",
    ),
    (
        "X-inf",
        npz(X=np.where(np.arange(3)[None, :] == 2, np.inf, good_arrays()["X"])),
        "array 'X' has 60 NaN or infinite values (first: row 0, feature 'c')",
    ),
    (
        "X-huge-span",
        npz(X=np.where(np.arange(N_ROWS)[:, None] % 2 == 0, 1e308, -1e308) * np.ones((1, 3))),
        "feature 'a' spans [-1e+308, 1e+308], too wide to compute with",
    ),
    (
        "pairs-alone",
        npz(pairs=np.array([["a", "b"]])),
        "arrays 'pairs' and 'mixed_derivatives' come together",
    ),
    (
        "mixed-shape",
        npz(pairs=np.array([["a", "b"]]), mixed_derivatives=np.ones((2, N_ROWS))),
        "array 'mixed_derivatives' must hold floats of shape (1, 60)",
    ),
]

STORE_COMMANDS = {
    "rebin": ("rebin", "{bad}", "-o", "{ws}/out.json"),
    "rhale": ("rhale", "{bad}", "-o", "{ws}/out.json"),
    "info": ("info", "{bad}"),
}

CASES: list[Case] = []
for command, argv in STORE_COMMANDS.items():
    for name, build, message in BROKEN_STORES:
        CASES.append(Case(f"store-{name}-{command}", argv, 2, message, build, "bad.npz"))

# plot --store: the store is read and checked (what the plot then compares is not ours)
for name, build, message in BROKEN_STORES[:12]:
    CASES.append(
        Case(
            f"store-{name}-plot",
            ("plot", "{ws}/good.json", "--store", "{bad}", "-o", "{ws}/figs", "-j", "1"),
            2,
            message,
            build,
            "bad.npz",
        )
    )


def drop(field: str) -> Callable[[dict[str, Any]], None]:
    return lambda data: data["features"][0].pop(field)


def set_top(field: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda data: data.__setitem__(field, value)


def last_edge(literal: str) -> Builder:
    """The good summary with the first feature's last edge written as ``literal`` (JSON text
    that Python's parser accepts: Infinity, NaN, 1e999)."""

    def build(path: Path) -> None:
        data = json.loads((path.parent / "good.json").read_text())
        edges = data["features"][0]["edges"]
        data["features"][0]["edges"] = [*edges[:-1], "__EDGE__"]
        path.write_text(json.dumps(data).replace('"__EDGE__"', literal))

    return build


def no_bins(data: dict[str, Any]) -> None:
    arrays = ("edges", "counts", "bin_effect", "bin_std", "bin_stderr", "bin_filled")
    data["features"][0].update({k: [] for k in (*arrays, "effect", "std", "stderr")}, n_bins=0)


BROKEN_SUMMARIES: list[tuple[str, Builder, str]] = [
    ("missing", lambda p: None, "does not exist"),
    ("directory", directory, "is a directory, expected a JSON file"),
    ("empty", raw(b""), "is not valid JSON"),
    ("garbage", raw(b"\x00\xff\xfe" * 50), "is not valid JSON"),
    ("list", text("[1, 2, 3]"), "is not an ale summary"),
    ("deep", text("[" * 100_000 + "]" * 100_000), "nested too deeply"),
    ("no-estimator", summary(lambda d: d.pop("estimator")), "is not an ale summary"),
    ("schema-2", summary(set_top("schema_version", 2)), "has schema_version 2"),
    ("estimator-unknown", summary(set_top("estimator", "shap")), "field 'estimator': expected"),
    ("n-rows-negative", summary(set_top("n_rows", -1)), "field 'n_rows': expected at least 0"),
    ("unknown-field", summary(set_top("colour", "red")), "field 'colour': is not a known field"),
    ("reversed-edges", summary(feat("edges", [3, 2, 1, 0, -1])), "feature 'a', field 'edges'"),
    ("equal-edges", summary(feat("edges", [0, 1, 1, 2, 3])), "strictly increasing"),
    ("infinity-edge", text('{"x": Infinity}'), "is not an ale summary"),
    ("infinity-in-edges", last_edge("Infinity"), "field 'edges'[4]: expected number, got Infinity"),
    (
        "huge-edges",
        summary(feat("edges", [-1e308, -1e307, 0, 1e307, 1e308])),
        "is too wide to compute with",
    ),
    ("overflow-edge", last_edge("1e999"), "field 'edges'[4]: expected number, got Infinity"),
    ("counts-short", summary(feat("counts", [1, 2, 3])), "field 'n_bins': is 4 but 'counts'"),
    ("counts-negative", summary(feat("counts", [1, -2, 3, 4])), "field 'counts'[1]: expected"),
    ("counts-float", summary(feat("counts", [1, 2.5, 3, 4])), "field 'counts'[1]: expected"),
    ("counts-bool", summary(feat("counts", [1, True, 3, 4])), "field 'counts'[1]: expected"),
    ("counts-null", summary(feat("counts", [1, None, 3, 4])), "field 'counts'[1]: expected"),
    ("n-bins-wrong", summary(feat("n_bins", 7)), "field 'n_bins': is 7 but 'counts' has 4"),
    (
        "effect-short",
        summary(feat("effect", [0.0, 1.0])),
        "field 'effect': has 2 values, expected 5",
    ),
    ("bin-effect-long", summary(feat("bin_effect", [0.0] * 9)), "field 'bin_effect': has 9 values"),
    ("std-text", summary(feat("std", ["x"] * 5)), "field 'std'[0]: expected number or null"),
    ("filled-numbers", summary(feat("bin_filled", [0, 0, 0, 0])), "field 'bin_filled'[0]"),
    ("status-unknown", summary(feat("status", "great")), "field 'status': expected one of"),
    ("status-missing", summary(drop("status")), "field 'status': is missing"),
    ("edges-missing", summary(drop("edges")), "field 'edges': is missing"),
    ("name-number", summary(feat("name", 7)), "feature 1, field 'name': expected string"),
    (
        "not-estimable-no-reason",
        summary(feat("status", "not_estimable")),
        "feature 'a', field 'reason': is missing",
    ),
    ("ok-without-bins", summary(no_bins), "needs at least 1 bin"),
    (
        "duplicate-feature",
        summary(lambda d: d["features"].append(dict(d["features"][0]))),
        "feature 'a' appears twice",
    ),
    ("features-dict", summary(set_top("features", {"a": 1})), "field 'features': expected array"),
    (
        "inter-reversed",
        summary(inter("edges_a", [2.0, 1.0, 0.0]), "inter.json"),
        "interaction 'a,b', field 'edges_a': edges must be strictly increasing",
    ),
    (
        "inter-counts-grid",
        summary(inter("counts", [[1, 2, 3], [3, 4, 5]]), "inter.json"),
        "interaction 'a,b', field 'counts': expected a 2 x 2 grid",
    ),
    (
        "inter-effect-grid",
        summary(inter("effect", [[0.0, 0.0], [0.0, 0.0]]), "inter.json"),
        "field 'effect': expected a 3 x 3 grid",
    ),
    (
        "inter-n-bins",
        summary(inter("n_bins", [3, 2]), "inter.json"),
        "field 'n_bins': is [3, 2] but the edges give 2 x 2 cells",
    ),
    (
        "inter-one-feature",
        summary(inter("features", ["a"]), "inter.json"),
        "interaction 'a', field 'features': expected at least 2 items",
    ),
]


for name, build, message in BROKEN_SUMMARIES:
    CASES.append(
        Case(
            f"summary-{name}-plot",
            ("plot", "{bad}", "-o", "{ws}/figs", "-j", "1"),
            2,
            message,
            build,
            "bad.json",
        )
    )
# the same hostile summaries handed to --edges (a summary is a valid edges file); without
# 'estimator' the file is a mapping of feature names to edges, checked as such
AS_EDGES = {
    "schema-2": "field 'schema_version': expected 1, got 2",
    "no-estimator": "feature 'schema_version': expected a list of at least 2 numbers",
    "list": "must hold a summary or a mapping",
    "infinity-edge": "feature 'x': expected a list of at least 2 numbers",
}
for name, build, message in BROKEN_SUMMARIES:
    if name.startswith("inter-"):
        continue  # an interact summary has no first-order edges
    CASES.append(
        Case(
            f"summary-{name}-edges",
            ("rebin", "{ws}/good.npz", "--edges", "{bad}", "-o", "{ws}/out.json"),
            2,
            AS_EDGES.get(name, message),
            build,
            "bad.json",
        )
    )

BROKEN_EDGES: list[tuple[str, str, str]] = [
    ("empty-mapping", "{}", "has no edges"),
    ("list", "[[0, 1]]", "must hold a summary or a mapping"),
    ("empty-list", '{"a": []}', "feature 'a': expected a list of at least 2 numbers"),
    ("one-edge", '{"a": [1]}', "feature 'a': expected a list of at least 2 numbers"),
    ("reversed", '{"a": [2, 1, 0]}', "feature 'a': edges must be strictly increasing"),
    ("text-edge", '{"a": ["x", 1]}', "feature 'a': expected finite numbers, got 'x'"),
    ("bool-edge", '{"a": [true, 2]}', "expected finite numbers, got True"),
    ("null-edge", '{"a": [null, 2]}', "expected finite numbers, got None"),
    ("infinity", '{"a": [0, Infinity]}', "expected finite numbers, got Infinity"),
    ("nan", '{"a": [NaN, 1]}', "expected finite numbers, got NaN"),
    ("overflow", '{"a": [0, 1e999]}', "expected finite numbers, got Infinity"),
    ("huge-span", '{"a": [-1e308, 1e308]}', "span [-1e+308, 1e+308] is too wide"),
    ("dict-value", '{"a": {"x": 1}}', "feature 'a': expected a list of at least 2 numbers"),
    ("scalar", "3", "must hold a summary or a mapping"),
]
for name, content, message in BROKEN_EDGES:
    CASES.append(
        Case(
            f"edges-{name}",
            ("rebin", "{ws}/good.npz", "--edges", "{bad}", "-o", "{ws}/out.json"),
            2,
            message,
            text(content),
            "bad.json",
        )
    )

BOMB = "\n".join(
    [
        'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
        *(
            f"{c}: &{c} [{','.join([f'*{p}'] * 9)}]"
            for p, c in zip("abcdefgh", "bcdefghi", strict=True)
        ),
    ]
)
BROKEN_CONFIGS: list[tuple[str, Builder, str]] = [
    ("alias-bomb", text(BOMB), "more than 64 aliases"),
    ("self-reference", text("rebin: &r {features: *r}\n"), "refers to itself"),
    ("duplicate-key", text("rebin:\n  bins: 3\n  bins: 30\n"), "key 'bins' appears twice"),
    ("bins-true", text("rebin:\n  bins: true\n"), "key 'bins' expects int, got a boolean"),
    ("bins-nan", text("rebin:\n  bins: .nan\n"), "key 'bins' expects a finite number"),
    ("bins-text", text("rebin:\n  bins: many\n"), "key 'bins' expects int, got 'many'"),
    ("unknown-key", text("rebin:\n  binz: 3\n"), "unknown key 'binz' for 'ale rebin'"),
    ("section-list", text("rebin: [1, 2]\n"), "section 'rebin' must be a mapping"),
    ("top-list", text("- a\n- b\n"), "must hold a mapping of option names to values"),
    ("python-tag", text("!!python/object/apply:os.system [id]\n"), "is not valid YAML"),
    ("bad-yaml", text("rebin: [\n"), "is not valid YAML"),
    ("tabs", text("rebin:\n\tbins: 3\n"), "is not valid YAML"),
    ("not-utf8", raw(b"rebin:\n  center: \xff\xfe\n"), "is not UTF-8 text"),
    ("too-big", text("# " + "x" * (1 << 20) + "\n"), "is larger than 1024 KiB"),
    ("directory", directory, "is not a regular file"),
    ("missing", lambda p: None, "does not exist"),
    ("deep", text("[" * 3000 + "]" * 3000), "nested too deeply"),
    ("edges-dir-relative", text("rebin:\n  edges: adir\n"), "edges file"),
]
for name, build, message in BROKEN_CONFIGS:
    CASES.append(
        Case(
            f"config-{name}",
            ("rebin", "{ws}/good.npz", "-o", "{ws}/out.json", "--config", "{bad}"),
            2,
            message,
            build,
            "bad.yaml",
        )
    )

OPTION_CASES: list[Case] = [
    Case("opt-unknown-command", ("frobnicate",), 2, "No such command 'frobnicate'"),
    Case("opt-unknown-option", ("rebin", "{ws}/good.npz", "--binz", "3"), 2, "No such option"),
    Case("opt-missing-store", ("rebin",), 2, "Missing argument 'store'"),
    Case("opt-missing-out", ("rebin", "{ws}/good.npz"), 2, "Missing option '--out'"),
    Case("opt-missing-value", ("rhale", "{ws}/good.npz", "--alpha"), 2, "requires an argument"),
    Case("opt-compute-no-args", ("compute",), 2, "Missing argument 'model'"),
    Case("opt-plot-no-args", ("plot",), 2, "Missing argument 'summary'"),
    Case("opt-info-two-stores", ("info", "a", "b"), 2, "Got unexpected extra argument"),
]
for argv, message in [
    (("rebin", "{ws}/good.npz", "-o", "{ws}/o.json", "--bins", "x"), "'--bins': Input should"),
    (("rebin", "{ws}/good.npz", "-o", "{ws}/o.json", "--bins", "0"), "'--bins'"),
    (("rebin", "{ws}/good.npz", "-o", "{ws}/o.json", "--bins", "1.5"), "'--bins'"),
    (("rebin", "{ws}/good.npz", "-o", "{ws}/o.json", "--bins", "-3"), "'--bins'"),
    (("rebin", "{ws}/good.npz", "-o", "{ws}/o.json", "--bins", "1e99"), "'--bins'"),
    (
        ("rhale", "{ws}/good.npz", "-o", "{ws}/o.json", "--alpha", "nan"),
        "'--alpha': expected a finite number, got 'nan'",
    ),
    (
        ("rhale", "{ws}/good.npz", "-o", "{ws}/o.json", "--alpha", "NaN"),
        "'--alpha': expected a finite",
    ),
    (
        ("rhale", "{ws}/good.npz", "-o", "{ws}/o.json", "--alpha", "inf"),
        "'--alpha': expected a finite",
    ),
    (
        ("rhale", "{ws}/good.npz", "-o", "{ws}/o.json", "--alpha", "-inf"),
        "'--alpha': expected a finite",
    ),
    (
        ("rhale", "{ws}/good.npz", "-o", "{ws}/o.json", "--alpha", "1e999"),
        "'--alpha': expected a finite",
    ),
    (("rhale", "{ws}/good.npz", "-o", "{ws}/o.json", "--alpha", "2"), "'--alpha'"),
    (("rhale", "{ws}/good.npz", "-o", "{ws}/o.json", "--alpha", "-0.1"), "'--alpha'"),
    (("rhale", "{ws}/good.npz", "-o", "{ws}/o.json", "--alpha", "abc"), "'--alpha'"),
    (("rhale", "{ws}/good.npz", "-o", "{ws}/o.json", "--max-bins", "0"), "'--max-bins'"),
    (("rhale", "{ws}/good.npz", "-o", "{ws}/o.json", "--min-points", "1"), "'--min-points'"),
    (
        ("compute", "m.pt", "d.csv", "--step", "inf"),
        "'--step': expected a finite number, got 'inf'",
    ),
    (("compute", "m.pt", "d.csv", "--step", "nan"), "'--step': expected a finite number"),
    (("compute", "m.pt", "d.csv", "--step", "-1e999"), "'--step': expected a finite number"),
    (("compute", "m.pt", "d.csv", "--batch-size", "0"), "'--batch-size'"),
    (("compute", "m.pt", "d.csv", "--batch-size", "lots"), "'--batch-size'"),
    (("plot", "{ws}/good.json", "--dpi", "5"), "'--dpi'"),
    (("plot", "{ws}/good.json", "--dpi", "nan"), "'--dpi'"),
    (("plot", "{ws}/good.json", "--jobs", "0"), "'--jobs'"),
    (("plot", "{ws}/good.json", "--format", "gif"), "'--format'"),
    (("interact", "m.pt", "d.csv", "--bins", "x"), "'--bins'"),
    (("classic", "m.pt", "d.csv", "-o", "o.json", "--bins", "zero"), "'--bins'"),
]:
    OPTION_CASES.append(
        Case(f"opt-{argv[0]}-{'='.join(a.removeprefix('--') for a in argv[-2:])}", argv, 2, message)
    )
CASES.extend(OPTION_CASES)

WRITE_CASES: list[Case] = [
    Case("write-dir-rebin", ("rebin", "{ws}/good.npz", "-o", "{ws}/adir"), 2, "it is a directory"),
    Case("write-dir-rhale", ("rhale", "{ws}/good.npz", "-o", "{ws}/adir"), 2, "it is a directory"),
    Case("write-fifo-rebin", ("rebin", "{ws}/good.npz", "-o", "{bad}"), 2, "it is a FIFO", fifo),
    Case("write-fifo-rhale", ("rhale", "{ws}/good.npz", "-o", "{bad}"), 2, "it is a FIFO", fifo),
    Case(
        "write-loop-rebin",
        ("rebin", "{ws}/good.npz", "-o", "{bad}"),
        2,
        "it is a symlink loop",
        symlink_loop,
    ),
    Case(
        "write-under-a-file",
        ("rebin", "{ws}/good.npz", "-o", "{ws}/notes.txt/out.json"),
        2,
        "cannot write",
    ),
    Case(
        "write-store-over-itself",
        ("rebin", "{ws}/good.npz", "-o", "{ws}/good.npz"),
        2,
        "is the same file as the input",
    ),
    Case(
        "write-summary-over-notes",
        ("rebin", "{ws}/good.npz", "-o", "{ws}/notes.txt"),
        2,
        "exists and is not an ale summary",
    ),
    Case(
        "write-summary-over-edges-input",
        ("rebin", "{ws}/good.npz", "--edges", "{ws}/edges.json", "-o", "{ws}/edges.json"),
        2,
        "is the same file as the input",
    ),
]
CASES.extend(WRITE_CASES)

# absurd requests: more bins than rows (the good store has 60 rows)
CASES += [
    Case(
        "bins-over-rows-rebin",
        ("rebin", "{ws}/good.npz", "-o", "{ws}/out.json", "--bins", "61"),
        2,
        "--bins 61 is more than the 60 rows of store",
    ),
    Case(
        "max-bins-over-rows-rhale",
        ("rhale", "{ws}/good.npz", "-o", "{ws}/out.json", "--max-bins", "100000"),
        2,
        "--max-bins 100000 is more than the 60 rows of store",
    ),
]


def _param(case: Case) -> Any:
    marks = [pytest.mark.xfail(strict=True, reason=case.xfail)] if case.xfail else []
    return pytest.param(case, id=case.id, marks=marks)


def fill(arg: str, ws: Path, bad: Path, model: Path | None = None) -> str:
    return arg.format(ws=ws, bad=bad, model=model)


def check_one_line(result: Any, case_message: str, code: int) -> None:
    stderr = result.stderr
    assert "Traceback" not in stderr and "Traceback" not in result.stdout, stderr
    assert not re.search(r"np\.\w+\(|array\(\[", stderr), stderr  # no numpy repr
    assert result.exit_code == code, (result.exit_code, stderr)
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: "), stderr
    assert case_message in lines[0], lines[0]


def test_suite_is_large_enough():
    assert len(CASES) + len(DATA_CASES) >= 150
    assert len({c.id for c in CASES + DATA_CASES}) == len(CASES) + len(DATA_CASES)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_hostile(cli, ws: Path, case: Case):
    bad = ws / case.bad_name
    if case.bad is not None:
        case.bad(bad)
    message = case.message.replace("{bad}", str(bad))
    before = snapshot(ws)
    result = cli(*(fill(a, ws, bad) for a in case.argv))
    check_one_line(result, message, case.code)
    assert snapshot(ws) == before


# -- data and model files through `ale compute` (needs the sample model) ------------------------


def csv_lines(*rows: str) -> Builder:
    return text("\n".join(rows) + "\n")


def parquet_of(columns: dict[str, Any]) -> Builder:
    def build(path: Path) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.table(columns), path)

    return build


def duplicate_parquet(path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrays = [pa.array([1.0, 2.0, 3.0])] * 4
    pq.write_table(pa.Table.from_arrays(arrays, names=["x1", "x2", "x1", "y"]), path)


GOOD_ROWS = ("x1,x2,x3,y", "0.1,0.2,0.3,1", "0.4,0.5,0.6,2", "0.7,0.8,0.9,3")
BROKEN_DATA: list[tuple[str, Builder, str, str]] = [
    ("missing", lambda p: None, "bad.csv", "does not exist"),
    ("directory", directory, "bad.csv", "is a directory"),
    ("fifo-data", fifo, "bad.csv", "is a FIFO (named pipe), expected a regular file"),
    ("empty", raw(b""), "bad.csv", "is empty"),
    ("header-only", csv_lines("x1,x2,x3,y"), "bad.csv", "has no rows"),
    ("one-row", csv_lines(*GOOD_ROWS[:2]), "bad.csv", "has 1 row; at least 2 are needed"),
    ("binary", raw(bytes(range(256)) * 8), "bad.csv", "data file"),
    ("wrong-extension", csv_lines(*GOOD_ROWS), "bad.xlsx", "cannot tell the format"),
    ("no-extension", csv_lines(*GOOD_ROWS), "bad", "cannot tell the format"),
    (
        "duplicate-header",
        csv_lines("x1,x2,x1,y", "1,2,3,4", "5,6,7,8"),
        "bad.csv",
        "two columns named 'x1'",
    ),
    (
        "duplicate-header-3",
        csv_lines("x1,x1,x1,y", "1,2,3,4", "5,6,7,8"),
        "bad.csv",
        "two columns named 'x1'",
    ),
    ("duplicate-parquet", duplicate_parquet, "bad.parquet", "two columns named 'x1'"),
    ("text-column", csv_lines("x1,x2,x3,y", "1,a,3,4", "5,b,7,8"), "bad.csv", "column 'x2'"),
    (
        "nan-values",
        csv_lines("x1,x2,x3,y", "1,nan,3,4", "5,6,7,8", "1,2,3,4"),
        "bad.csv",
        "NaN or infinite",
    ),
    (
        "inf-values",
        csv_lines("x1,x2,x3,y", "1,inf,3,4", "5,6,7,8", "1,2,3,4"),
        "bad.csv",
        "NaN or infinite",
    ),
    ("parquet-is-csv", csv_lines(*GOOD_ROWS), "bad.parquet", "cannot read data file"),
    ("csv-is-parquet", parquet_of({"x1": [1.0, 2.0]}), "bad.csv", "data file"),
    (
        "empty-parquet",
        parquet_of({"x1": [], "x2": [], "x3": [], "y": []}),
        "bad.parquet",
        "has no rows",
    ),
    ("no-such-exclude", csv_lines("a,b,c", "1,2,3", "4,5,6"), "bad.csv", "has no column 'y'"),
]

DATA_CASES: list[Case] = [
    Case(
        f"data-{name}",
        ("compute", "{model}", "{bad}", "--exclude", "y", "-o", "{ws}/out.npz", "-q"),
        2,
        message,
        build,
        bad_name,
    )
    for name, build, bad_name, message in BROKEN_DATA
]
BROKEN_MODELS: list[tuple[str, Builder, str, str]] = [
    ("model-missing", lambda p: None, "bad.pt", "does not exist"),
    ("model-directory", directory, "bad.pt", "is a directory"),
    ("model-fifo", fifo, "bad.pt", "is a FIFO"),
]
DATA_CASES += [
    Case(
        name,
        ("compute", "{bad}", "{ws}/data.csv", "--exclude", "y", "-o", "{ws}/out.npz", "-q"),
        2,
        message,
        build,
        bad_name,
    )
    for name, build, bad_name, message in BROKEN_MODELS
]
BROKEN_MODEL_FILES: list[tuple[str, Builder, str, str]] = [
    ("model-empty-pt", raw(b""), "bad.pt", "is not a TorchScript archive"),
    ("model-garbage-pt", raw(bytes(range(256)) * 8), "bad.pt", "is not a TorchScript archive"),
    ("model-zip-pt", zip_with_text_member, "bad.pt", "is not a TorchScript archive"),
    ("model-empty-onnx", raw(b""), "bad.onnx", "is not an ONNX model"),
    ("model-garbage-onnx", raw(bytes(range(256)) * 8), "bad.onnx", "is not an ONNX model"),
    ("model-garbage-skops", text("not a zip"), "bad.skops", "is not a skops file"),
    ("model-pickle-untrusted", raw(b"\x80\x04K\x01."), "bad.pkl", "pass --trust-pickle"),
    ("model-csv", csv_lines(*GOOD_ROWS), "bad.csv", "cannot tell the format of model file"),
]
DATA_CASES += [
    Case(
        name,
        ("compute", "{bad}", "{ws}/data.csv", "--exclude", "y", "-o", "{ws}/out.npz", "-q"),
        2,
        message,
        build,
        bad_name,
    )
    for name, build, bad_name, message in BROKEN_MODEL_FILES
]
# the other commands that read a store or an edges file next to a model
DATA_CASES += [
    Case(
        f"store-{name}-interact",
        (
            "interact",
            "{model}",
            "{ws}/data.csv",
            "--exclude",
            "y",
            "--pair",
            "x1,x2",
            "--store",
            "{bad}",
            "-o",
            "{ws}/out.json",
            "-q",
        ),
        2,
        message,
        build,
        "bad.npz",
    )
    for name, build, message in BROKEN_STORES[:12] + BROKEN_STORES[-6:]
]
DATA_CASES += [
    Case(
        f"edges-{name}-classic",
        (
            "classic",
            "{model}",
            "{ws}/data.csv",
            "--exclude",
            "y",
            "--edges",
            "{bad}",
            "-o",
            "{ws}/out.json",
            "-q",
        ),
        2,
        message,
        text(content),
        "bad.json",
    )
    for name, content, message in BROKEN_EDGES
]
DATA_CASES += [
    Case(
        "compute-over-notes",
        ("compute", "{model}", "{ws}/data.csv", "--exclude", "y", "-o", "{ws}/notes.txt"),
        2,
        "exists and is not an ale local-effects store",
    ),
    Case(
        "compute-output-dir",
        ("compute", "{model}", "{ws}/data.csv", "--exclude", "y", "-o", "{ws}/adir", "-q"),
        2,
        "adir': it is a directory, not a regular file",
    ),
    Case(
        "compute-force-output-dir",
        ("compute", "{model}", "{ws}/data.csv", "--exclude", "y", "-o", "{ws}/adir", "--force"),
        2,
        "adir': it is a directory, not a regular file",
    ),
    Case(
        "compute-force-output-fifo",
        ("compute", "{model}", "{ws}/data.csv", "--exclude", "y", "-o", "{bad}", "--force"),
        2,
        "it is a FIFO (named pipe), not a regular file",
        fifo,
    ),
    Case(
        "compute-force-over-data",
        ("compute", "{model}", "{ws}/data.csv", "--exclude", "y", "-o", "{ws}/data.csv", "--force"),
        2,
        "is the same file as the input",
    ),
]


def torch_model(kind: str) -> Builder:
    """A TorchScript model of three inputs that misbehaves as ``kind`` says."""

    def build(path: Path) -> None:
        import torch
        from torch import nn

        class NanPredictions(nn.Module):  # log of x1 + 1: NaN where x1 < -1
            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return torch.log(x[:, 0] + 1.0) + x[:, 1]

        class NanGradients(nn.Module):  # finite, the gradient inf * 0 = NaN where x1 < 0
            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return torch.sqrt(x[:, 0] * (x[:, 0] > 0).to(x.dtype)) + x[:, 1]

        class Integer(nn.Module):
            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return (x[:, 0] > 0).to(torch.int64)

        class Wide(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.lin = nn.Linear(5, 1)

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return self.lin(x)

        class Raises(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.lin = nn.Linear(3, 1)

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                if bool((x[:, 0] > -1e9).any()):
                    raise ValueError("no rows please")
                return self.lin(x)

        class Dropout(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.drop = nn.Dropout(0.5)

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return self.drop(x).sum(dim=1)

        if kind == "dropout":  # traced in training mode: the dropout is baked in
            traced = torch.jit.trace(Dropout().train(), torch.ones(4, 3), check_trace=False)
            traced.save(str(path))
            return
        modules = {
            "nan-predictions": NanPredictions,
            "nan-gradients": NanGradients,
            "integer": Integer,
            "wide": Wide,
            "raises": Raises,
        }
        torch.jit.script(modules[kind]()).save(str(path))

    return build


MISBEHAVING_MODELS: list[tuple[str, str, int, str]] = [
    ("nan-predictions", "compute", 1, "gave NaN or infinite predictions on "),
    ("nan-predictions", "classic", 1, "gave NaN or infinite predictions on "),
    ("nan-gradients", "compute", 1, "gave NaN or infinite local effects on "),
    ("integer", "compute", 2, "returns integer values (int64): an integer-valued output"),
    ("wide", "compute", 2, "its first layer takes 5 features"),
    ("raises", "compute", 1, "failed on the first rows of the data: no rows please"),
    ("raises", "classic", 1, "failed on the first rows of the data: no rows please"),
    ("dropout", "compute", 2, "its graph calls aten::dropout, still active"),
]
for kind, command, code, message in MISBEHAVING_MODELS:
    out = "{ws}/out.npz" if command == "compute" else "{ws}/out.json"
    DATA_CASES.append(
        Case(
            f"model-{kind}-{command}",
            (command, "{bad}", "{ws}/data.csv", "--exclude", "y", "-o", out, "-q"),
            code,
            message,
            torch_model(kind),
            "bad.pt",
        )
    )
# more bins than the 40 rows of data.csv
DATA_CASES += [
    Case(
        "bins-over-rows-classic",
        (
            "classic",
            "{model}",
            "{ws}/data.csv",
            "--exclude",
            "y",
            "-o",
            "{ws}/o.json",
            "--bins",
            "41",
        ),
        2,
        "--bins 41 is more than the 40 rows of data",
    ),
    Case(
        "bins-over-rows-interact",
        (
            "interact",
            "{model}",
            "{ws}/data.csv",
            "--exclude",
            "y",
            "--pair",
            "x1,x2",
            "-o",
            "{ws}/o.json",
            "--bins",
            "100000",
        ),
        2,
        "--bins 100000 is more than the 40 rows of data",
    ),
]


@pytest.mark.parametrize("case", [_param(c) for c in DATA_CASES])
def test_hostile_data(cli, ws: Path, rhale_model: Path, case: Case):
    bad = ws / case.bad_name
    if case.bad is not None:
        case.bad(bad)
    before = snapshot(ws)
    result = cli(*(fill(a, ws, bad, rhale_model) for a in case.argv))
    check_one_line(result, case.message, case.code)
    assert snapshot(ws) == before


# -- a damaged store is never a cache hit ------------------------------------------------------


def flip_member(path: Path, member: str) -> None:
    """Flip one byte inside ``member``'s data: its CRC-32 no longer holds."""
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(f"{member}.npy")
    data = bytearray(path.read_bytes())
    offset = info.header_offset
    name_len, extra_len = struct.unpack("<HH", data[offset + 26 : offset + 30])
    data[offset + 30 + name_len + extra_len + info.file_size - 5] ^= 0xFF
    path.write_bytes(bytes(data))


def resave(path: Path, **changes: Any) -> None:
    """Rewrite a store with ``changes`` to its arrays (None removes one), meta untouched."""
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    for name, value in changes.items():
        if value is None:
            arrays.pop(name)
        else:
            arrays[name] = value(arrays)
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


@pytest.mark.parametrize(
    "damage",
    [
        # compute writes chunked stores (schema 3): the row arrays are X.00000, ...
        lambda p: flip_member(p, "local_effects.00000"),
        lambda p: resave(p, **{"local_effects.00000": None}),
        lambda p: resave(p, **{"local_effects.00000": lambda a: a["local_effects.00000"][:, :2]}),
        lambda p: resave(
            p, **{"X.00000": lambda a: np.where(a["X.00000"] > 1, np.nan, a["X.00000"])}
        ),
    ],
    ids=["crc", "missing-member", "wrong-shape", "nan-in-X"],
)
def test_damaged_store_is_not_a_cache_hit(
    cli, tmp_path: Path, rhale_model: Path, base, damage, request
):
    """The damaged store keeps the good store's meta, so its cache key still matches.
    Changed bytes (a CRC, a NaN where ale writes none) make it our damaged store: it is
    recomputed with a note; a changed layout is refused."""
    from ale_cli.store.npz import read_meta

    data = base / "data.csv"
    out = tmp_path / "s.npz"
    first = cli("compute", rhale_model, data, "--exclude", "y", "-o", out, "-q")
    assert first.exit_code == 0, first.output
    key = read_meta(out)["cache_key"]
    damage(out)
    before = out.read_bytes()
    result = cli("compute", rhale_model, data, "--exclude", "y", "-o", out)
    if request.node.callspec.id in ("crc", "nan-in-X"):
        assert result.exit_code == 0, result.output
        assert f"note: store '{out}' was damaged; recomputed (" in result.stderr
        assert read_meta(out)["cache_key"] == key
        return
    check_one_line(result, "is not an ale local-effects store", 2)
    assert "cache hit" not in result.stdout
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.npz"]
    forced = cli("compute", rhale_model, data, "--exclude", "y", "-o", out, "-q", "--force")
    assert forced.exit_code == 0, forced.output
    assert read_meta(out)["cache_key"] == key


# -- the catch-all and interruptions -----------------------------------------------------------


def test_unexpected_exception_is_one_line_with_a_traceback_file(cli, ws: Path, monkeypatch):
    import ale_cli.estimators.dale as estimate

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise ZeroDivisionError("division by zero\nsecond line")

    monkeypatch.setattr(estimate, "rebin", boom)
    before = snapshot(ws)
    result = cli("rebin", ws / "good.npz", "-o", ws / "out.json")
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    prefix = (
        "error: internal error (a bug in ale): ZeroDivisionError: division by zero second line; "
    )
    assert lines[0].startswith(prefix + "the traceback is in ")
    trace = Path(lines[0].removeprefix(prefix + "the traceback is in "))
    try:
        content = trace.read_text()
        assert "Traceback (most recent call last)" in content and "ZeroDivisionError" in content
    finally:
        trace.unlink()
    assert snapshot(ws) == before


def test_os_error_from_the_machine_is_one_line_not_a_bug(cli, ws: Path, monkeypatch):
    import ale_cli.estimators.dale as estimate

    def denied(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(13, "Permission denied", str(ws / "good.npz"))

    monkeypatch.setattr(estimate, "rebin", denied)
    result = cli("rebin", ws / "good.npz", "-o", ws / "out.json")
    assert (result.exit_code, result.stderr) == (1, f"error: Permission denied '{ws}/good.npz'\n")


@pytest.mark.parametrize(
    ("exc", "code", "line"),
    [("KeyboardInterrupt", 130, "error: interrupted"), ("Terminated", 143, "error: terminated")],
)
def test_interrupt_in_a_command(cli, ws: Path, monkeypatch, exc: str, code: int, line: str):
    import ale_cli.estimators.dale as estimate
    from ale_cli import signals

    error = signals.Terminated if exc == "Terminated" else KeyboardInterrupt

    def stop(*args: Any, **kwargs: Any) -> Any:
        raise error()

    monkeypatch.setattr(estimate, "rebin", stop)
    result = cli("rebin", ws / "good.npz", "-o", ws / "out.json")
    assert (result.exit_code, result.stderr) == (code, line + "\n")


@pytest.mark.parametrize(
    ("exc", "code", "line"),
    [("KeyboardInterrupt", 130, "error: interrupted"), ("Terminated", 143, "error: terminated")],
)
def test_a_signal_python_drops_in_a_finaliser_still_stops_the_command(
    cli, ws: Path, monkeypatch, exc: str, code: int, line: str
):
    """A signal whose handler runs inside a weakref callback (a garbage collection can run
    one at any moment): Python drops the exception; the command still stops, writes nothing
    and exits with the signal's code and one line."""
    import weakref

    import ale_cli.estimators.dale as estimate
    from ale_cli import signals

    error = signals.Terminated if exc == "Terminated" else KeyboardInterrupt
    rebin = estimate.rebin

    def stop(_: object) -> None:
        raise error()

    def rebin_with_a_signal_in_a_finaliser(*args: Any, **kwargs: Any) -> Any:
        held = type("Held", (), {})()
        ref = weakref.ref(held, stop)
        del held  # the callback runs here, and Python drops its exception
        assert ref() is None
        return rebin(*args, **kwargs)

    monkeypatch.setattr(estimate, "rebin", rebin_with_a_signal_in_a_finaliser)
    result = cli("rebin", ws / "good.npz", "-o", ws / "out.json")
    assert (result.exit_code, result.stderr) == (code, line + "\n")
    assert not (ws / "out.json").exists()


def test_sigterm_handler_is_restored_after_a_command(cli, ws: Path):
    import signal

    before = signal.getsignal(signal.SIGTERM)
    result = cli("info", ws / "good.npz")
    assert result.exit_code == 0
    assert signal.getsignal(signal.SIGTERM) is before


# -- the summary validator is the JSON Schema ---------------------------------------------------


def _mutations(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Copies of a summary each broken (or not) in one schema-relevant way."""
    out = []
    for key in list(data):
        out.append({k: v for k, v in data.items() if k != key})
        for value in (None, 1, -1, 2.5, "x", True, [], {}, [1, "a"]):
            out.append({**data, key: value})
    for group in ("features", "interactions"):
        if not data.get(group):
            continue
        item = data[group][0]
        for key in list(item):
            for value in (None, -1, 0, 1.5, "x", False, [], [None], [-1], [True], [[1]], {}):
                out.append({**data, group: [{**item, key: value}]})
            out.append({**data, group: [{k: v for k, v in item.items() if k != key}]})
    return out


def test_validator_agrees_with_plain_jsonschema_on_finite_numbers(base: Path):
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(summary_schema())
    for name in ("good.json", "inter.json"):
        data = json.loads((base / name).read_text())
        assert list(schema_errors(data)) == []
        for broken in _mutations(data):
            ours = any(True for _ in schema_errors(broken))
            theirs = any(True for _ in validator.iter_errors(broken))
            assert ours == theirs, json.dumps(broken)[:300]


def test_validator_refuses_non_finite_numbers(base: Path):
    data = json.loads((base / "good.json").read_text())
    data["features"][0]["bin_effect"][0] = float("nan")
    with pytest.raises(InputError, match=r"feature 'a', field 'bin_effect'\[0\]: expected number"):
        validate_summary("s.json", data)


# -- generated tables through `ale compute` -----------------------------------------------------

COLUMN_NAMES = st.one_of(
    st.sampled_from(
        ["x1", "x2", "x3", "y", "X1", "ß", "名前", "", " ", "a,b", 'q"'],
    ),
    st.text(min_size=0, max_size=6),
)
CELLS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(10**20), 10**20),
    st.booleans(),
    st.text(max_size=4),
    st.none(),
)


@st.composite
def tables(draw: Any) -> tuple[list[str], list[list[Any]], str]:
    n_cols = draw(st.integers(0, 5))
    names = draw(st.lists(COLUMN_NAMES, min_size=n_cols, max_size=n_cols))
    if draw(st.booleans()):  # often the model's own columns, so some runs get far
        names = ["x1", "x2", "x3", *names][: max(3, n_cols)]
    n_rows = draw(st.sampled_from([0, 1, 2, 3, 17]))
    kinds = draw(
        st.lists(
            st.sampled_from(["float", "int", "mixed"]), min_size=len(names), max_size=len(names)
        )
    )
    columns = []
    for kind in kinds:
        if kind == "float":
            cell = st.floats(allow_nan=True, allow_infinity=True, width=64)
        elif kind == "int":
            cell = st.integers(-1000, 1000)
        else:
            cell = CELLS
        columns.append(draw(st.lists(cell, min_size=n_rows, max_size=n_rows)))
    rows = [[col[i] for col in columns] for i in range(n_rows)]
    fmt = draw(st.sampled_from(["csv", "parquet"]))
    return names, rows, fmt


def _write_table(path: Path, names: list[str], rows: list[list[Any]], fmt: str) -> bool:
    """Write the table; False when the format itself cannot hold it (then there is no case)."""
    if fmt == "csv":
        import csv

        with open(path, "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(names)
            writer.writerows(rows)
        return True
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        arrays = [pa.array([r[j] for r in rows]) for j in range(len(names))]
        pq.write_table(pa.Table.from_arrays(arrays, names=names), path)
    except (pa.ArrowException, ValueError, TypeError, OverflowError):
        return False
    return True


@settings(
    max_examples=200 if CI else 25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(table=tables())
def test_generated_tables_through_compute(cli, tmp_path_factory, rhale_model: Path, table):
    names, rows, fmt = table
    work = tmp_path_factory.mktemp("gen")
    data = work / f"t.{fmt}"
    if not _write_table(data, names, rows, fmt):
        return
    args = ["compute", rhale_model, data, "-o", work / "s.npz", "-q"]
    if "y" in names:
        args += ["--exclude", "y"]
    result = cli(*args)
    event(f"exit {result.exit_code}")
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    assert result.exit_code in (0, 1, 2), result.stderr
    if result.exit_code:
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
        if result.exit_code == 1:  # the model fails (overflows) on values it cannot take
            assert lines[0].startswith(f"error: model '{rhale_model}' "), lines[0]
        assert not (work / "s.npz").exists()
    else:
        assert (work / "s.npz").is_file()
    leftovers = [p.name for p in work.iterdir() if p.name.startswith(".")]
    assert leftovers == []


# -- SIGTERM while `ale compute` writes a 200k-row store -----------------------------------------


@pytest.mark.slow
def test_sigterm_during_compute_keeps_the_previous_store(
    cli, tmp_path: Path, mlp_model, sample_dir
):
    """SIGTERM (what `timeout`, cron and CI cancellation send) while the new store is being
    written: exit 143 with one line, no temporary file left, the previous store untouched."""
    import subprocess
    import sys
    import time

    import pandas as pd

    small = pd.read_csv(sample_dir / "diabetes.csv")
    rows = np.random.default_rng(0).integers(0, len(small), size=200_000)
    big = tmp_path / "big.csv"
    small.iloc[rows].to_csv(big, index=False)
    out = tmp_path / "s.npz"
    first = cli(
        "compute", mlp_model, sample_dir / "diabetes.csv", "--exclude", "target", "-o", out, "-q"
    )
    assert first.exit_code == 0, first.output
    previous = out.read_bytes()

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ale_cli",
            "compute",
            str(mlp_model),
            str(big),
            "--exclude",
            "target",
            "-o",
            str(out),
            "-q",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        while proc.poll() is None:  # wait for the temporary file of the new store
            if any(p.name.startswith(".s.npz.") for p in tmp_path.iterdir()):
                proc.send_signal(15)
                break
            time.sleep(0.001)
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, (proc.returncode, stderr)
    assert stderr == "error: terminated\n"
    assert stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.csv", "s.npz"]
    assert out.read_bytes() == previous
