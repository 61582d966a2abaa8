"""Write the golden summaries: run once, by hand, from the repository root, on the commit
whose numbers later code must keep::

    make samples      # sample_data/models/ (the cases load them)
    PYTHONPATH=$PWD .venv/bin/python tests/data/golden/make.py

One JSON file per case of ``cases.CASES`` (``tests/data/golden/NAME.json``), each with
the commit it was made from; ``tests/test_golden.py`` recomputes every case and compares.
Never rerun it to make that test pass: a changed number is a changed result.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import CASES, GOLDEN, MODELS, ROOT, SAMPLE, Workspace  # noqa: E402


def main(names: list[str]) -> None:
    models = SAMPLE / "models"
    missing = [m for m in MODELS if not (models / m).exists()]
    if missing:
        sys.exit(f"missing sample models ({', '.join(missing)}): run 'make samples'")
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(models, Path(tmp))
        for name in names or list(CASES):
            t = time.perf_counter()
            record = {"case": name, "made_from": commit, "results": CASES[name](ws)}
            path = GOLDEN / f"{name}.json"
            path.write_text(json.dumps(record, indent=1, allow_nan=False) + "\n")
            print(f"{path.name}: {path.stat().st_size} bytes, {time.perf_counter() - t:.1f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
