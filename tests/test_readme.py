"""The README and docs/ say what the tool does: the tour runs as written, every command is
in the command tables, every link resolves, the numpy example reads a real store.

The Python examples of the README and of docs/*.md run as doctests (``--doctest-glob``
in the pytest options); `make demo` runs the tour.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
sys.path.insert(0, str(ROOT / "scripts"))

import tour  # noqa: E402  (scripts/ is not a package)

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def ale_commands() -> list[str]:
    """The commands ``ale --help`` lists, in its order."""
    done = subprocess.run(
        [sys.executable, "-m", "ale_cli", "--help"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "200"},
    )
    section = done.stdout.split("Commands:", 1)[1]
    return re.findall(r"^  ([a-z][a-z-]*)  ", section, flags=re.MULTILINE)


def table_commands(text: str, heading: str) -> list[str]:
    """The ``ale NAME`` of the first cell of each row of the first table under ``heading``."""
    lines = text.splitlines()
    start = lines.index(heading)
    rows = []
    for line in lines[start + 1 :]:
        if line.startswith("#"):
            break
        if line.startswith("| `ale "):
            rows.append(line.split("`")[1].split()[1])
        elif rows and not line.startswith("|"):
            break
    return rows


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.DOTALL)
    return {slug(line.lstrip("#")) for line in text.splitlines() if line.startswith("#")}


def test_make_demo_runs_the_readme_tour() -> None:
    makefile = (ROOT / "Makefile").read_text()
    demo = makefile[makefile.index("\ndemo:") :].split("\n\n")[0]
    assert "scripts/tour.py README.md" in demo


def test_tour_commands_are_read_with_their_continuations() -> None:
    commands = tour.tour_commands(README)
    assert all(c.startswith("ale ") for c in commands)
    assert not any("\\" in c for c in commands)
    assert tour.outputs("ale rhale s.npz -o out/r.json") == ["out/r.json"]
    assert tour.outputs("ale audit s.json --junit - --json-report a.json") == ["a.json"]
    assert any(c.startswith("ale run ") for c in commands), "make demo runs the demo job"


def test_the_readme_stays_short() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 220


def test_every_command_is_in_the_readme_table_and_in_docs_commands() -> None:
    commands = ale_commands()
    assert len(commands) >= 12 and "compute" in commands and "run" in commands
    readme = table_commands(README.read_text(encoding="utf-8"), "## Commands")
    docs = table_commands((DOCS / "commands.md").read_text(encoding="utf-8"), "## The commands")
    assert sorted(readme) == sorted(commands)
    assert sorted(docs) == sorted(commands)


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = {
        (ROOT / target.split("#")[0]).resolve()
        for target in LINK.findall(README.read_text(encoding="utf-8"))
        if target.startswith("docs/")
    }
    assert linked == {page.resolve() for page in DOCS.glob("*.md")}


@pytest.mark.parametrize("page", [README, *sorted(DOCS.glob("*.md"))], ids=lambda p: p.name)
def test_every_relative_link_resolves(page: Path) -> None:
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if "://" in target:
            continue
        file, _, anchor = target.partition("#")
        path = (page.parent / file).resolve() if file else page
        assert path.exists(), f"{page.name}: {target}"
        if anchor:
            assert anchor in anchors(path), f"{page.name}: {target}"


def test_docs_numpy_example_reads_a_chunked_store(
    mlp_model: Path, sample_dir: Path, tmp_path: Path
) -> None:
    text = (DOCS / "store-and-summary.md").read_text(encoding="utf-8")
    start = text.index("```python\n", text.index("Open it with numpy alone")) + len("```python\n")
    snippet = text[start : text.index("```", start)]
    out = tmp_path / "mlp.npz"
    ale = Path(sys.executable).with_name("ale")
    subprocess.run(
        [
            str(ale),
            "compute",
            str(mlp_model),
            str(sample_dir / "diabetes.csv"),
            "--exclude",
            "target",
            "--chunk-rows",
            "100",
            "-q",
            "-o",
            str(out),
        ],
        check=True,
    )
    scope: dict[str, object] = {}
    exec(snippet.replace("out/diabetes-mlp.npz", str(out)), scope)  # noqa: S102
    from ale_cli.api import read_store

    store = read_store(out)
    assert len(scope["meta"]["chunks"]["rows"]) == 5  # type: ignore[index]  # 442 rows by 100
    np.testing.assert_array_equal(scope["x_bmi"], store.X[:, store.input_index("bmi")])
    np.testing.assert_array_equal(
        scope["effect_bmi"], store.local_effects[:, store.feature_index("bmi")]
    )
    assert json.loads(str(np.load(out)["meta"]))["n_rows"] == 442


@pytest.mark.slow
def test_the_tour_runs_as_written_and_writes_what_it_names(
    sample_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(sample_dir, tmp_path / "sample_data")
    shutil.copytree(ROOT / "configs", tmp_path / "configs")
    monkeypatch.chdir(tmp_path)
    commands = tour.tour_commands(README)
    tour.run(commands, ale=str(Path(sys.executable).with_name("ale")))
    named = [path for command in commands for path in tour.outputs(command)]
    assert len(named) >= 9
    for path in named:
        assert (tmp_path / path).exists(), path
    assert (tmp_path / "out/plots/diabetes-mlp/bmi.svg").exists()
    assert (tmp_path / "out/plots/diabetes-mlp/overview.png").exists()
    assert (tmp_path / "out/demo-job/report.html").exists()


#: Flags of other programs that the docs show (pip, dask).
OTHER_PROGRAMS = {"--extra-index-url", "--scheduler-file"}


#: Spellings of this release that the docs already use; the command line gains them with
#: the flag renames (the data file's format, the audit's JSON report).
def test_every_flag_the_docs_name_is_an_option_of_ale() -> None:
    options: set[str] = set()
    for command in [None, *ale_commands()]:
        done = subprocess.run(
            [sys.executable, "-m", "ale_cli", *([command] if command else []), "--help"],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
            env={**os.environ, "COLUMNS": "200"},
        )
        options.update(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", done.stdout))
    flag = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
    for page in [README, *sorted(DOCS.glob("*.md"))]:
        named = set(flag.findall(page.read_text(encoding="utf-8")))
        unknown = named - options - OTHER_PROGRAMS
        assert not unknown, f"{page.name} names options ale does not have: {sorted(unknown)}"


def test_the_commands_said_to_select_features_take_the_features_option() -> None:
    text = (DOCS / "commands.md").read_text(encoding="utf-8")
    said = re.search(r"the same list selects features in (.*?)[.;]", text, re.S)
    assert said is not None
    for command in re.findall(r"`(\w+)`", said.group(1)):
        done = subprocess.run(
            [sys.executable, "-m", "ale_cli", command, "--help"],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
        assert "--features" in done.stdout, command
