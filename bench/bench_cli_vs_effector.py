"""Side by side: a bare forward+backward pass, effector's RHALE in process, and
``ale compute`` + ``ale rhale`` as CLI processes; and the fixed costs of ``ale compute``.

Setup: MLP D -> 256 -> 256 -> 1 (float32, ReLU), D = 32, Toeplitz-correlated
normal data (rho = 0.5) in a float32 Parquet file, one thread everywhere
(OMP/MKL_NUM_THREADS=1, torch.set_num_threads(1)). Rounds are interleaved
(bare, effector, CLI, bare, ...) so that the load of the shared machine hits
all three alike; each reports the median and the min-max over the rounds.

- bare: in this process, the rows already a tensor, one forward+backward per
  8192 rows (ale's default batch), gradient copied out to numpy, the graph
  executor's optimisation off as ale runs TorchScript (same per-batch speed).
- effector: ``effector.RHALE(X, model, model_jac, nof_instances="all")``,
  ``fit("all", binning_method="dp")``, in a child process of a venv of its own
  (``EFFECTOR_VENV``, default /tmp/effector-venv; made on first use with pip:
  ``effector==0.6.0`` and ``tqdm==4.70.1`` without dependencies, numpy, scipy,
  matplotlib and torch taken from this environment by a ``.pth`` file; or give
  ``EFFECTOR_PYTHON``); timed inside it from the data in memory to the fitted
  RHALE (Jacobian + DP). Skipped with a message when it cannot be had.
- CLI: ``ale compute MODEL DATA -o S --force`` then ``ale rhale S -o R``, wall
  time of both processes (start-up, imports and exit included), ``ALE_THREADS=1``.

Each row gives the median, min-max and the spread (max - min) / median over the
rounds: the noise of the shared machine.

Fixed costs, at N = 1e5 and at N = 100 (where nothing that grows with N is left: the
fixed costs proper): python start-up (``python -c pass``), the imports of the compute
command (numpy, typer, ale's modules), of torch, of pyarrow.parquet (each a fresh
process, minus the start-up), ``ale --version``, the command's own time (``seconds``
of ``--json``) with the steps its store records (``import_torch_s``: torch imported
inside ale, cheaper than in a fresh process), what is left of the wall time
(start-up, CLI, typer, exit), and wall - torch import - local effects. ale's modules
are byte-compiled first and PYTHONDONTWRITEBYTECODE is dropped (bench/installed.py):
an installed ale does not compile its modules on every run.

Usage: python bench/bench_cli_vs_effector.py [--rows 1e5,1e6] [--rounds 3]

Measured 2026-11-23, 17:42-17:50 UTC (one run, 3 interleaved rounds, median
(min-max, spread)), shared 2-core VM, load average 0.5 at the start, 1.3 at 1e6;
effector 0.6.0:

====  ==================  ===================  ========================================
N     bare fwd+bwd        effector RHALE       ale compute + ale rhale
====  ==================  ===================  ========================================
1e5   0.66 (0.51-0.66)    1.51 (1.43-1.56)     2.45 (2.27-2.49): 3.7x bare, 1.62x effector
1e6   5.02 (4.53-5.11)    14.05 (13.6-14.1)    6.36 (6.32-6.63): 1.27x bare (per round
                                               1.32, 1.25, 1.39), 0.45x effector
====  ==================  ===================  ========================================

Fixed costs of ale compute (median, min-max of 3):

- N = 100: wall 1.16 s = torch imported inside ale 0.93 + the rest 0.24 s (0.21-0.27):
  start-up, imports, parsing and exit 0.15 (python 0.02, the compute command's
  imports 0.10), reading (pyarrow's import) 0.04, model load and checks 0.01-0.02,
  the rest of the command (hashing the inputs, writing the store) 0.03. Everything but
  the torch import: 0.24 s.
- N = 1e5: wall 1.97 s = torch 1.02 + local effects 0.52 + 0.41 s (0.37-0.45), of which
  0.17 s grows with N (reading 12.8 MB of Parquet, screening, writing and hashing a
  38 MB store, its fsync, the percentiles of the predictions).

Earlier the same day, before the command modules were imported lazily, the first
TorchScript call ran without the profiling executor, the manifest recorded the
prediction percentiles and the store's digest was kept with the file: 1e6 at 1.41x
bare (quiet machine) and 1.54x (load 2.5); N = 1e5 wall - torch - local effects
0.43-0.49 s, with ale's modules compiled on every run. Under load 3-7 the same
rounds gave 1.5-2.3x bare at 1e6: the noise of this machine is that large.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from installed import compile_ale, installed_environ

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's ale_cli (the store's timings)
D = 32
BATCH = 8192
ENV = {
    **installed_environ(),
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "ALE_THREADS": "1",  # one worker thread in ale's estimators too
    "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
}
# effector is not a dependency of ale: it lives in a venv of its own (made on first use),
# pinned, with numpy/torch/scipy/matplotlib taken from this environment (a .pth file)
EFFECTOR_VENV = Path(os.environ.get("EFFECTOR_VENV", "/tmp/effector-venv"))
EFFECTOR_PINS = ("effector==0.6.0", "tqdm==4.70.1")
EFFECTOR_PYTHON = os.environ.get("EFFECTOR_PYTHON", str(EFFECTOR_VENV / "bin" / "python"))

EFFECTOR_SCRIPT = r"""
import sys, time, json
import numpy as np, torch, pyarrow.parquet as pq
torch.set_num_threads(1)
import effector
model = torch.jit.load(sys.argv[1]).eval()
X = np.column_stack([c.to_numpy() for c in pq.read_table(sys.argv[2]).columns])
def f(x):
    with torch.inference_mode():
        return model(torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))).numpy()
def jac(x):
    out = np.empty(x.shape, dtype=np.float64)
    for s in range(0, len(x), 8192):
        t = torch.from_numpy(np.ascontiguousarray(x[s:s + 8192], dtype=np.float32))
        t.requires_grad_(True)
        (g,) = torch.autograd.grad(model(t).sum(), t)
        out[s:s + 8192] = g.numpy()
    return out
t0 = time.perf_counter()
r = effector.RHALE(X, f, jac, nof_instances="all")
r.fit("all", binning_method="dp")
print(json.dumps({"seconds": time.perf_counter() - t0}))
"""


def make_inputs(folder: Path, n: int) -> tuple[Path, Path]:
    """The MLP (TorchScript) and n rows of float32 data (Parquet), made once per folder."""
    import pandas as pd
    import torch
    from torch import nn

    model = folder / "mlp.pt"
    if not model.exists():
        torch.manual_seed(0)
        mlp = nn.Sequential(
            nn.Linear(D, 256),
            nn.ReLU(),
            nn.Linear(256, 256),
            nn.ReLU(),
            nn.Linear(256, 1),
            nn.Flatten(0),
        )
        torch.jit.save(torch.jit.script(mlp.eval()), str(model))
    data = folder / f"data-{n}.parquet"
    if not data.exists():
        rng = np.random.default_rng(0)
        cov = 0.5 ** np.abs(np.subtract.outer(np.arange(D), np.arange(D)))
        X = (rng.standard_normal((n, D)) @ np.linalg.cholesky(cov).T).astype(np.float32)
        frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(D)])
        frame.to_parquet(data, index=False, row_group_size=65536)
    return model, data


def bare_pass(model_path: Path, data: Path) -> float:
    """One forward+backward pass over the rows in memory, in this process (the graph
    executor's optimisation off, as ale runs TorchScript: the same per-batch speed, no
    profiling runs)."""
    import pyarrow.parquet as pq
    import torch

    torch.set_num_threads(1)
    model = torch.jit.load(str(model_path)).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    X = np.column_stack([c.to_numpy() for c in pq.read_table(data).columns])
    x = torch.from_numpy(X)
    grads = np.empty(X.shape, dtype=np.float64)
    t0 = time.perf_counter()
    with torch.jit.optimized_execution(False):
        for s in range(0, len(X), BATCH):
            xb = x[s : s + BATCH].clone().requires_grad_(True)
            (g,) = torch.autograd.grad(model(xb).sum(), xb)
            grads[s : s + BATCH] = g.numpy()
    return time.perf_counter() - t0


def ensure_effector() -> bool:
    """True when ``EFFECTOR_PYTHON`` imports effector; else make the venv (pip, pinned,
    ``--no-deps``: its dependencies are numpy, scipy, matplotlib and tqdm, the first
    three taken from this interpreter's site-packages) and try again."""

    def importable() -> bool:
        try:
            probe = [EFFECTOR_PYTHON, "-c", "import effector, torch, pyarrow"]
            return subprocess.run(probe, capture_output=True, timeout=300).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False

    if importable() or "EFFECTOR_PYTHON" in os.environ:
        return importable()
    import sysconfig

    print(f"making {EFFECTOR_VENV} with {', '.join(EFFECTOR_PINS)}", flush=True)
    venv_python = str(EFFECTOR_VENV / "bin" / "python")
    try:
        base = getattr(sys, "_base_executable", sys.executable)
        subprocess.run([base, "-m", "venv", str(EFFECTOR_VENV)], check=True)
        pip = [venv_python, "-m", "pip", "install", "--quiet", "--no-deps"]
        subprocess.run([*pip, *EFFECTOR_PINS], check=True)
        where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
        site = subprocess.run(
            [venv_python, "-c", where], check=True, capture_output=True, text=True
        ).stdout.strip()
        Path(site, "ale-env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"effector: cannot make its venv ({exc})", file=sys.stderr)
        return False
    return importable()


def effector_run(model: Path, data: Path) -> float | None:
    try:
        out = subprocess.run(
            [EFFECTOR_PYTHON, "-c", EFFECTOR_SCRIPT, str(model), str(data)],
            env=ENV,
            capture_output=True,
            text=True,
            check=True,
            timeout=3600,
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"effector: skipped ({str(exc).splitlines()[0]})", file=sys.stderr)
        return None
    return float(json.loads(out.stdout.strip().splitlines()[-1])["seconds"])


def cli_run(model: Path, data: Path, folder: Path) -> tuple[float, float, dict, dict]:  # type: ignore[type-arg]
    """Wall time of ``ale compute`` + ``ale rhale``; compute's wall, its --json and the
    timings its store records."""
    from ale_cli.store.npz import read_meta

    store, summary = folder / "s.npz", folder / "r.json"
    ale = [sys.executable, "-m", "ale_cli"]
    t0 = time.perf_counter()
    out = subprocess.run(
        [*ale, "compute", str(model), str(data), "-o", str(store), "--force", "--json"],
        env=ENV,
        capture_output=True,
        text=True,
        check=True,
    )
    t1 = time.perf_counter()
    subprocess.run(
        [*ale, "rhale", str(store), "-o", str(summary), "--quiet"],
        env=ENV,
        capture_output=True,
        check=True,
    )
    t2 = time.perf_counter()
    return t2 - t0, t1 - t0, json.loads(out.stdout), read_meta(store)["timings"]


def process_time(args: list[str]) -> float:
    """Wall time of a fresh ``python ARGS`` process."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *args], env=ENV, check=True, capture_output=True)
    return time.perf_counter() - t0


def spread(values: list[float]) -> str:
    """Median (min-max) and the spread as a share of the median."""
    m = statistics.median(values)
    noise = (max(values) - min(values)) / m if m else 0.0
    return f"{m:6.2f} s ({min(values):.2f}-{max(values):.2f}, spread {noise:4.0%})"


def fixed_costs(model: Path, data: Path, folder: Path, rounds: int) -> None:
    """The parts of ``ale compute``'s wall time at this N, each process fresh."""
    parts: dict[str, list[float]] = {}

    def add(label: str, value: float) -> None:
        parts.setdefault(label, []).append(value)

    for _ in range(rounds):
        start = process_time(["-c", "pass"])
        add("python start-up (python -c pass)", start)
        cli = process_time(["-c", "import ale_cli.cli.registry as r; r.load('compute')"]) - start
        add("import the compute command (numpy, typer, ale)", cli)
        torch_import = process_time(["-c", "import torch"]) - start
        add("import torch", torch_import)
        add("import pyarrow.parquet", process_time(["-c", "import pyarrow.parquet"]) - start)
        add(
            "ale --version (start-up, CLI import, exit)",
            process_time(["-m", "ale_cli", "--version"]),
        )
        _, wall, result, timings = cli_run(model, data, folder)
        add("ale compute wall", wall)
        add("  in the command (--json seconds)", result["seconds"])
        for key in ("import_torch_s", "load_data_s", "load_model_s", "local_effects_s"):
            if key in timings:
                add(f"    {key} (store meta timings)", timings[key])
        add("  outside the command (start-up, CLI, typer, exit)", wall - result["seconds"])
        # torch imported inside ale (after numpy, pyarrow) is cheaper than in a fresh process
        inside = timings.get("import_torch_s", torch_import)
        add("  wall - torch import (ale's own)", wall - inside)
        add(
            "  wall - torch import - local effects",
            wall - inside - timings.get("local_effects_s", 0.0),
        )
    print(f"fixed costs of ale compute at N = {len(_rows(data)):,}: median (min-max) of {rounds}")
    for label, values in parts.items():
        print(f"  {label:58s} {spread(values)}")


def _rows(data: Path) -> range:
    import pyarrow.parquet as pq

    return range(pq.ParquetFile(data).metadata.num_rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", default="1e5,1e6")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--folder", default=None)
    args = parser.parse_args()
    folder = Path(args.folder or tempfile.mkdtemp(prefix="ale-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    compile_ale()  # as an installed ale runs (bench/installed.py)
    have_effector = ensure_effector()
    if not have_effector:
        print("effector: not importable, its column is skipped", file=sys.stderr)
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for n in [int(float(r)) for r in args.rows.split(",")]:
        model, data = make_inputs(folder, n)
        bare, eff, cli = [], [], []
        for _ in range(args.rounds):  # interleaved: the machine's load hits all three alike
            bare.append(bare_pass(model, data))
            e = effector_run(model, data) if have_effector else None
            if e is not None:
                eff.append(e)
            cli.append(cli_run(model, data, folder)[0])
        b = statistics.median(bare)
        print(
            f"N = {n:,}, D = {D}, one thread, {args.rounds} interleaved rounds "
            f"(load average now {os.getloadavg()[0]:.1f})"
        )
        print(f"  bare forward+backward       {spread(bare)}")
        if eff:
            e = statistics.median(eff)
            print(f"  effector RHALE in process   {spread(eff)}  {e / b:.2f}x bare")
        else:
            print("  effector RHALE in process   skipped (effector not importable)")
        c = statistics.median(cli)
        line = f"  ale compute + ale rhale     {spread(cli)}  {c / b:.2f}x bare"
        if eff:
            line += f", {c / statistics.median(eff):.2f}x effector"
        print(line, flush=True)
        ratios = [ci / bi for ci, bi in zip(cli, bare, strict=True)]
        print(f"  per-round ratio CLI / bare: {', '.join(f'{r:.2f}' for r in ratios)}")
        if n == 100_000:
            fixed_costs(model, data, folder, args.rounds)
    # the fixed costs proper: at 100 rows nothing that grows with N is left
    model, data = make_inputs(folder, 100)
    fixed_costs(model, data, folder, args.rounds)
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    if args.folder is None:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
