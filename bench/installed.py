"""The environment of the CLI processes the benchmarks time: as an installed ``ale`` runs.

pip byte-compiles a package's modules when it installs it; an environment with
``PYTHONDONTWRITEBYTECODE`` set (some CI images, this project's VMs) would make every
``ale`` process compile ale's modules from source again (0.05-0.1 s of each run), which
is not what a user pays. So the benchmarks compile them once and drop that variable.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def installed_environ() -> dict[str, str]:
    """``os.environ`` without ``PYTHONDONTWRITEBYTECODE``."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def compile_ale() -> None:
    """Byte-compile ``ale_cli`` (into its ``__pycache__`` folders, as pip does)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "ale_cli")], check=True)
