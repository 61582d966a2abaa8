"""Run the README's short tour, as written: ``python scripts/tour.py [README] [--dry-run]``.

The commands are the lines of the first ``sh`` block under the heading
"## A short tour" (comments skipped, ``\\`` continuations joined); each runs
with the ``ale`` installed beside this Python, in the current directory, and
the tour stops at the first failure. ``make demo`` runs it, and
``tests/test_readme.py`` runs it in a temporary directory and checks that
every file it names was written, so the README cannot drift from the tool.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

HEADING = "## A short tour"


def tour_commands(readme: Path) -> list[str]:
    """The commands of the tour, one string each."""
    lines = readme.read_text(encoding="utf-8").splitlines()
    start = lines.index(HEADING)
    begin = next(i for i in range(start, len(lines)) if lines[i].strip() == "```sh")
    end = next(i for i in range(begin + 1, len(lines)) if lines[i].strip() == "```")
    commands: list[str] = []
    pending = ""
    for line in lines[begin + 1 : end]:
        text = line.strip()
        if not text or (text.startswith("#") and not pending):
            continue
        pending += text[:-1].strip() + " " if text.endswith("\\") else text
        if not text.endswith("\\"):
            commands.append(pending)
            pending = ""
    return commands


#: The options whose value is a path the command writes.
OUTPUT_OPTIONS = ("-o", "--out", "--junit", "--json-report")


def outputs(command: str) -> list[str]:
    """The paths a command names after an output option (``-`` excluded)."""
    words = shlex.split(command)
    return [
        words[i + 1]
        for i, word in enumerate(words[:-1])
        if word in OUTPUT_OPTIONS and words[i + 1] != "-"
    ]


def run(commands: list[str], *, ale: str) -> None:
    """Run every command (``ale`` replaced by the given executable); stop at a failure."""
    for command in commands:
        words = shlex.split(command)
        if words[0] == "ale":
            words[0] = ale
        print(f"$ {command}", flush=True)
        done = subprocess.run(words, check=False)
        if done.returncode != 0:
            raise SystemExit(f"tour: '{command}' exited with {done.returncode}")


def main(argv: list[str]) -> None:
    readme = Path(next((a for a in argv if not a.startswith("-")), "README.md"))
    commands = tour_commands(readme)
    if "--dry-run" in argv:
        print("\n".join(commands))
        return
    run(commands, ale=str(Path(sys.executable).with_name("ale")))


if __name__ == "__main__":
    main(sys.argv[1:])
