"""Hostile cases on ``ale run``, job files, rules files and ``ale audit``'s rules input.

Every case starts from a fresh workspace (a data file, a good rules file, a
user's file, and ``prev/``: a finished run of a small job), writes its hostile
file(s), runs one command in-process and asserts: the exit code, exactly one
``error: `` line naming what is wrong (the job file and the key path, never a
command-line flag, for job files), no Traceback, and every entry of the
workspace unchanged (names, sizes, times, modes; links not followed) except
the run's own lock.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_hostile import BOMB, check_one_line, snapshot

Builder = Callable[[Path], None]


def job_text(**changes: Any) -> str:
    """A good job (one estimator, no figures, no report) with ``changes`` (None: drop)."""
    fields: dict[str, Any] = {
        "model": "{model}",
        "data": "data.csv",
        "exclude": ["y"],
        "estimators": {"rhale": None},
        "plots": False,
        "report": False,
        "keep": 3,
    }
    for key, value in changes.items():
        if value is None:
            fields.pop(key, None)
        else:
            fields[key] = value
    return yaml.safe_dump(fields, sort_keys=False)


@dataclass(frozen=True)
class Case:
    id: str
    files: dict[str, str | bytes | Builder]  # name in the workspace -> content or builder
    argv: tuple[str, ...]
    code: int
    message: str


def job_case(id: str, message: str, *, code: int = 2, text: str | bytes | None = None,
             extra: dict[str, str | bytes | Builder] | None = None, out: str = "{ws}/out",
             **changes: Any) -> Case:  # fmt: skip
    content = text if text is not None else job_text(**changes)
    files = {"job.yaml": content, **(extra or {})}
    return Case(id, files, ("run", "{ws}/job.yaml", "-o", out), code, message)


def link(target: str) -> Builder:
    return lambda path: os.symlink(target, path)


def hardlink(target: str) -> Builder:
    return lambda path: os.link(path.parent / target, path)


def directory(path: Path) -> None:
    path.mkdir()


def with_rules(id: str, message: str, rules: str | bytes) -> Case:
    """A job whose ``audit.rules`` is the file ``bad.yaml`` holding ``rules``."""
    return job_case(id, message, audit={"rules": "bad.yaml"}, extra={"bad.yaml": rules})


GOOD = job_text()
RULES = "rules:\n  - feature: x1\n    max_aled: 100\n"
JOB = "{ws}/job.yaml"
ERR = "error: job '{ws}/job.yaml': "

JOB_CASES = [
    # the hardened loader on job files
    job_case("job-alias-bomb", "more than 64 aliases", text=BOMB),
    job_case("job-self-reference", "refers to itself", text="a: &a [*a]\n"),
    job_case("job-too-large", "larger than 64 KiB", text=GOOD + "#" * 70_000 + "\n"),
    job_case("job-duplicate-key", "key 'keep' appears twice", text=GOOD + "keep: 30\n"),
    job_case("job-utf16", "is not UTF-8 text", text=GOOD.encode("utf-16")),
    job_case("job-latin1", "is not UTF-8 text", text=("# café\n" + GOOD).encode("latin-1")),
    job_case("job-python-tag", "is not valid YAML", text="!!python/object/apply:os.system [id]\n"),
    job_case("job-bad-syntax", "is not valid YAML", text="estimators: [\n"),
    job_case("job-a-list", "expected a mapping, got ['a']", text="- a\n"),
    job_case("job-empty", "expected a mapping, got None", text=""),
    Case("job-is-directory", {"job.yaml": directory}, ("run", JOB), 2, "is not a regular file"),
    Case("job-missing", {}, ("run", JOB), 2, f"job file '{JOB}' does not exist"),
    # shape and values, named by key path
    job_case("unknown-top-key", "unknown key 'plot' (known:", plot={}),
    job_case("missing-estimators", "missing 'estimators'", estimators=None),
    job_case("unknown-estimator", "estimators: unknown key 'kmeans'", estimators=["kmeans"]),
    job_case(
        "unknown-option", "estimators.rhale: unknown key 'bins'", estimators={"rhale": {"bins": 3}}
    ),  # fmt: skip
    job_case("no-estimator", "estimators: must name at least 1 key", estimators={}),
    job_case("estimator-list-of-numbers", "estimators: expected a mapping", estimators=[1]),
    job_case("dpi-too-low", f"{ERR}plots.dpi: must be at least 30, got 5", plots={"dpi": 5}),
    job_case("dpi-too-high", "plots.dpi: must be at most 1200, got 5000", plots={"dpi": 5000}),
    job_case("dpi-text", "plots.dpi: expected a whole number, got 'high'", plots={"dpi": "high"}),
    job_case(
        "format-gif",
        "plots.formats[0]: must be one of png, svg, got 'gif'",
        plots={"formats": ["gif"]},
    ),  # fmt: skip
    job_case("formats-empty", "plots.formats: must hold at least 1 item", plots={"formats": []}),
    job_case("plots-true", "plots: expected false or null or a mapping, got True", plots=True),
    job_case(
        "report-timestamp-text",
        "report.timestamp: expected true or false, got 'yes'",
        report={"timestamp": "yes"},
    ),  # fmt: skip
    job_case("keep-negative", f"{ERR}keep: must be at least 1, got -1", keep=-1),
    job_case("keep-text", "keep: expected a whole number, got 'many'", keep="many"),
    job_case("keep-bool", "keep: expected a whole number, got True", keep=True),
    job_case(
        "rebin-bins-zero",
        f"{ERR}estimators.rebin.bins must be a whole number of at least 1, got 0",
        estimators={"rebin": {"bins": 0}},
    ),  # fmt: skip
    job_case(
        "pairs-one-name",
        f"{ERR}estimators.interact.pairs",
        estimators={"interact": {"pairs": ["x1"]}},
    ),  # fmt: skip
    job_case(
        "pairs-a-number",
        "estimators.interact.pairs: expected a list of pairs",
        estimators={"interact": {"pairs": 3}},
    ),  # fmt: skip
    job_case("method-unknown", f"{ERR}method must be one of", method="fast"),
    job_case(
        "discrete-number", "discrete: expected auto, none or a list of column names", discrete=3
    ),
    job_case("model-empty", "model: must not be empty", model=""),
    # every file the job names exists, before any step runs
    job_case("model-missing", "model: '{ws}/nope.pt' does not exist", model="nope.pt"),
    job_case("data-missing", "data: '{ws}/nope.csv' does not exist", data="nope.csv"),
    job_case(
        "edges-missing",
        "estimators.rebin.edges: '{ws}/edges.json' does not exist",
        estimators={"rebin": {"edges": "edges.json"}},
    ),  # fmt: skip
    job_case(
        "rules-missing",
        f"{ERR}audit.rules: '{{ws}}/nope.yaml' does not exist",
        audit={"rules": "nope.yaml"},
    ),  # fmt: skip
    job_case(
        "rules-a-directory",
        "audit.rules: '{ws}/adir' is not a regular file",
        audit={"rules": "adir"},
    ),  # fmt: skip
    job_case(
        "baseline-without-rules",
        "audit.baseline: needs audit.rules",
        audit={"baseline": "prev/rhale.json"},
    ),  # fmt: skip
    job_case(
        "baseline-missing",
        "audit.baseline: '{ws}/nope.json' does not exist",
        audit={"rules": "rules.yaml", "baseline": "nope.json"},
    ),  # fmt: skip
    job_case(
        "baseline-not-a-summary",
        "audit.baseline",
        audit={"rules": "rules.yaml", "baseline": "notes.txt"},
    ),  # fmt: skip
    with_rules(
        "drift-without-baseline",
        "audit.baseline: rule 1, line 2 (drift) on feature 'x1'",
        "rules:\n  - feature: x1\n    drift: {max_abs: 1}\n",
    ),
    # the rules file a job names goes through the same loader
    with_rules("rules-alias-bomb", "audit.rules: rules file '{ws}/bad.yaml' is refused", BOMB),
    with_rules(
        "rules-duplicate-key", "key 'max_aled' appears twice", RULES + "    max_aled: 1000\n"
    ),
    with_rules(
        "rules-utf16", "rules file '{ws}/bad.yaml' is not UTF-8 text", RULES.encode("utf-16")
    ),
    with_rules(
        "rules-unknown-rule", "unknown rule 'max_ale'", "rules:\n  - feature: x1\n    max_ale: 1\n"
    ),
    job_case(
        "out-is-a-file",
        "run directory '{ws}/notes.txt' exists and is not a directory",
        out="{ws}/notes.txt",
    ),  # fmt: skip
]

PREV = "{ws}/prev"


def in_prev(id: str, message: str, name: str, content: str | bytes | Builder) -> Case:
    """A run into ``prev/`` (a finished run) after ``prev/NAME`` was replaced."""
    return job_case(id, message, out=PREV, extra={f"prev/{name}": content})


def in_mine(id: str, message: str, files: dict[str, Any], **changes: Any) -> Case:
    """A run into ``mine/``, a user's directory holding ``files`` (and an earlier lock, so
    taking it adds no entry to the workspace)."""
    extra = {"mine": directory, "mine/.lock": "", **{f"mine/{k}": v for k, v in files.items()}}
    return job_case(id, message, out="{ws}/mine", extra=extra, **changes)


NOT_OURS = "in the run directory was not written by an earlier run"
SVG = {"formats": ["svg"]}
RUN_DIR_CASES = [
    in_prev("lock-symlink", f"the lock file '{PREV}/.lock' is a symbolic link", ".lock",
            link("../notes.txt")),
    in_prev("lock-dangling-symlink", "is a symbolic link", ".lock", link("../created-by-ale")),
    in_prev("lock-directory", f"the lock file '{PREV}/.lock' is not a regular file", ".lock",
            directory),
    in_prev("lock-hard-link", f"the lock file '{PREV}/.lock' is a hard link", ".lock",
            hardlink("../notes.txt")),
    in_prev("store-symlink", f"'{PREV}/store.npz' in the run directory is a link", "store.npz",
            link("../notes.txt")),
    in_prev("history-symlink", f"'{PREV}/history' in the run directory is a link", "history",
            link("../adir")),
    in_mine("user-summary-in-dir", f"'{{ws}}/mine/rhale.json' {NOT_OURS}",
            {"rhale.json": '{"mine": 1}'}),
    in_mine("user-run-json", "'{ws}/mine/run.json' is not the manifest of an 'ale run'",
            {"run.json": '{"name": "pkg"}'}),
    in_mine("user-png-in-plots", f"'{{ws}}/mine/plots/rhale/photo.png' {NOT_OURS}",
            {"plots": directory, "plots/rhale": directory,
             "plots/rhale/photo.png": b"\x89PNG mine"}, plots=SVG),
    in_mine("plots-symlink", "'{ws}/mine/plots' in the run directory is a link",
            {"plots": link("../adir")}, plots=SVG),
]  # fmt: skip

AUDIT = ("audit", "{ws}/prev/rhale.json", "--rules", "{ws}/bad.yaml")
AUDIT_CASES = [
    Case("audit-rules-alias-bomb", {"bad.yaml": BOMB}, AUDIT, 2, "more than 64 aliases"),
    Case(
        "audit-rules-self-reference", {"bad.yaml": "rules: &r [*r]\n"}, AUDIT, 2, "refers to itself"
    ),  # fmt: skip
    Case(
        "audit-rules-duplicate-key",
        {"bad.yaml": RULES + "    max_aled: 1000\n"},
        AUDIT,
        2,
        "rules file '{ws}/bad.yaml' is refused: key 'max_aled' appears twice",
    ),  # fmt: skip
    Case(
        "audit-rules-utf16",
        {"bad.yaml": RULES.encode("utf-16")},
        AUDIT,
        2,
        "rules file '{ws}/bad.yaml' is not UTF-8 text",
    ),  # fmt: skip
    Case(
        "audit-rules-latin1",
        {"bad.yaml": ("# café\n" + RULES).encode("latin-1")},
        AUDIT,
        2,
        "rules file '{ws}/bad.yaml' is not UTF-8 text",
    ),  # fmt: skip
    Case(
        "audit-rules-too-large",
        {"bad.yaml": RULES + "#" * 300_000 + "\n"},
        AUDIT,
        2,
        "rules file '{ws}/bad.yaml' is larger than 256 KiB",
    ),  # fmt: skip
    Case(
        "audit-rules-python-tag",
        {"bad.yaml": "!!python/object/apply:os.system [id]\n"},
        AUDIT,
        2,
        "is not valid YAML",
    ),  # fmt: skip
    Case(
        "audit-rules-fifo",
        {"bad.yaml": lambda p: os.mkfifo(p)},
        AUDIT,
        2,
        "rules file '{ws}/bad.yaml' is not a regular file",
    ),  # fmt: skip
]

CASES = JOB_CASES + RUN_DIR_CASES + AUDIT_CASES


def test_the_run_suite_is_large_enough():
    assert len(CASES) >= 35
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.fixture(scope="module")
def run_base(tmp_path_factory: pytest.TempPathFactory, rhale_model: Path, sample_dir: Path):
    """The workspace every case copies: data, rules, a user's file, a finished run."""
    from typer.testing import CliRunner

    from ale_cli.cli import app

    root = tmp_path_factory.mktemp("hostile-run")
    lines = (sample_dir / "rhale_synthetic.csv").read_text().splitlines()
    (root / "data.csv").write_text("\n".join(lines[:61]) + "\n")
    (root / "rules.yaml").write_text(RULES)
    (root / "notes.txt").write_text("my notes, not an ale output\n")
    (root / "adir").mkdir()
    (root / "good.yaml").write_text(GOOD.replace("{model}", str(rhale_model)))
    result = CliRunner().invoke(app, ["run", str(root / "good.yaml"), "-o", str(root / "prev")])
    assert result.exit_code == 0, result.output
    return root


def _without_lock(entries: dict[str, Any]) -> dict[str, Any]:
    """The entries less the run's own lock file (a regular ``.lock``: ale writes its pid)."""
    return {k: v for k, v in entries.items() if Path(k).name != ".lock" or v[0] != stat.S_IFREG}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_run(cli, run_base: Path, rhale_model: Path, tmp_path: Path, case: Case):
    ws = tmp_path / "ws"
    shutil.copytree(run_base, ws, symlinks=True)

    def fill(value: str) -> str:
        return value.replace("{ws}", str(ws)).replace("{model}", str(rhale_model))

    for name, content in case.files.items():
        path = ws / name
        if name in ("prev/.lock", "prev/store.npz", "prev/history"):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        if callable(content):
            content(path)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(fill(content))
    before = snapshot(ws)
    result = cli(*(fill(a) for a in case.argv))
    check_one_line(result, fill(case.message), case.code)
    assert "--" not in result.stderr or case.argv[0] != "run", result.stderr  # no CLI flags
    assert _without_lock(snapshot(ws)) == _without_lock(before)
    assert not (ws / "created-by-ale").exists()
    if case.argv[0] == "run" and case.id.startswith(("rules-", "job-", "dpi")):
        assert not (ws / "out").exists()  # refused before any step: no store written


def test_a_users_folder_and_a_link_under_history_are_left_and_named(cli, run_base, tmp_path):
    """Only entries ale wrote (name pattern and marker) are pruned; keep: 1 prunes ours."""
    ws = tmp_path / "ws"
    shutil.copytree(run_base, ws, symlinks=True)
    history = ws / "prev" / "history"
    (history / "my-notes").mkdir()
    (history / "my-notes" / "keep.txt").write_text("mine")
    (history / "20200101T000000.000000Z").mkdir()  # looks like ours, has no marker
    (history / "20200101T000000.000000Z" / "rhale.json").write_text("{}")
    os.symlink(ws / "adir", history / "linked")
    lines = (ws / "data.csv").read_text().splitlines()
    (ws / "data.csv").write_text("\n".join([lines[0], *lines[2:]]) + "\n")  # a new run
    job = ws / "good.yaml"
    job.write_text(job.read_text().replace("keep: 3", "keep: 1"))
    result = cli("run", job, "-o", ws / "prev", "--json")
    assert result.exit_code == 0, result.output
    value = json.loads(result.stdout)
    manifest = value["details"]["manifest"]
    assert len(manifest["history"]["pruned"]) == 1 and len(manifest["history"]["runs"]) == 1
    assert sorted(manifest["history"]["left"]) == ["20200101T000000.000000Z", "linked", "my-notes"]
    assert (history / "my-notes" / "keep.txt").read_text() == "mine"
    assert (history / "20200101T000000.000000Z" / "rhale.json").read_text() == "{}"
    assert (history / "linked").is_symlink() and (ws / "adir").is_dir()
    notes = " ".join(value["notes"])
    assert f"'{history / 'my-notes'}' is not an entry ale wrote; left as it is" in notes


def test_a_damaged_store_in_the_run_directory_is_recomputed_with_a_note(cli, run_base, tmp_path):
    ws = tmp_path / "ws"
    shutil.copytree(run_base, ws, symlinks=True)
    store = ws / "prev" / "store.npz"
    raw = bytearray(store.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    store.write_bytes(bytes(raw))
    summary = ws / "prev" / "rhale.json"
    summary.write_text(summary.read_text().replace('"rhale"', '"rhale" ', 1))
    result = cli("run", ws / "good.yaml", "-o", ws / "prev", "--json")
    assert result.exit_code == 0, result.output
    steps = {s["name"]: s for s in json.loads(result.stdout)["details"]["manifest"]["steps"]}
    assert not steps["compute"]["cache_hit"] and not steps["rhale"]["cache_hit"]
    assert (
        "'store.npz' differs from its record in run.json (changed or damaged): written again"
        in steps["compute"]["notes"]
    )
    assert any("'rhale.json' differs from its record" in n for n in steps["rhale"]["notes"])
    again = cli("run", ws / "good.yaml", "-o", ws / "prev", "--json")
    manifest = json.loads(again.stdout)["details"]["manifest"]
    assert again.exit_code == 0 and manifest["steps_run"] == 0  # repaired: all cached again
