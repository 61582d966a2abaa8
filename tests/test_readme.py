"""The README's tour runs as written and writes every file it names; `make demo` runs it.

The Python example of the README runs as a doctest (``--doctest-glob=README.md``
in the pytest options).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import tour  # noqa: E402  (scripts/ is not a package)


def test_make_demo_runs_the_readme_tour() -> None:
    makefile = (ROOT / "Makefile").read_text()
    demo = makefile[makefile.index("\ndemo:") :].split("\n\n")[0]
    assert "scripts/tour.py README.md" in demo


def test_tour_commands_are_read_with_their_continuations() -> None:
    commands = tour.tour_commands(ROOT / "README.md")
    assert all(c.startswith("ale ") for c in commands)
    assert not any("\\" in c for c in commands)
    assert tour.outputs("ale rhale s.npz -o out/r.json") == ["out/r.json"]


@pytest.mark.slow
def test_the_tour_runs_as_written_and_writes_what_it_names(
    sample_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(sample_dir, tmp_path / "sample_data")
    shutil.copytree(ROOT / "configs", tmp_path / "configs")
    monkeypatch.chdir(tmp_path)
    commands = tour.tour_commands(ROOT / "README.md")
    tour.run(commands, ale=str(Path(sys.executable).with_name("ale")))
    named = [path for command in commands for path in tour.outputs(command)]
    assert len(named) >= 9
    for path in named:
        assert (tmp_path / path).exists(), path
    assert (tmp_path / "out/plots/diabetes-mlp/bmi.svg").exists()
    assert (tmp_path / "out/plots/diabetes-mlp/overview.png").exists()
