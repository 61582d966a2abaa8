"""``make bench``: run every ``bench/bench_*.py`` in its own process and print its report.

Each script measures its own reference (a bare model pass, a bare bincount...)
in the same run and reports ratios, since the machines are shared and noisy.
Set BENCH_ONLY=name to run one script (e.g. BENCH_ONLY=compute).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    only = os.environ.get("BENCH_ONLY")
    scripts = sorted(HERE.glob("bench_*.py"))
    if only:
        scripts = [s for s in scripts if s.stem == f"bench_{only}"]
    failed = 0
    for script in scripts:
        print(f"== {script.stem} ==", flush=True)
        t0 = time.perf_counter()
        rc = subprocess.call([sys.executable, str(script)], cwd=HERE.parent)
        print(f"-- {script.stem}: exit {rc}, {time.perf_counter() - t0:.1f} s\n", flush=True)
        failed += rc != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
