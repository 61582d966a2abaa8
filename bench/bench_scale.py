"""Scale: ``ale compute`` on N = 1e7, D = 32 from a partitioned Parquet dataset, then
``ale rhale`` and ``ale rebin --bins 20 --binning quantile`` on that store, each a
fresh process, with the local engine and with the Dask engine on 2 workers; wall time
and peak RSS per process (VmHWM from /proc while it runs; for Dask also the scheduler
and every worker process).

Data: a directory of 10 Parquet files of 1e6 rows (float32, Toeplitz-correlated
normal, rho = 0.5, row groups of 65536 rows): 1.28 GB of values. Model: a
float32 MLP D -> 64 -> 64 -> 1 (TorchScript; a narrower one than the side-by-side
bench so that the run fits a shared 2-core machine), one thread per process.

Dask: for each step a fresh ``LocalCluster(n_workers=2, threads_per_worker=1,
processes=True)`` is started by a helper process (as a long-lived cluster would be
running already, its start-up is reported apart), and the command gets
``--engine dask --scheduler ADDRESS``; the peaks are of that step alone. The store is
a directory store (one part per partition) beside the local engine's file store; the
summaries of both engines are compared (largest difference of the effects).

Usage: python bench/bench_scale.py [--rows 1e7] [--folder DIR] [--keep]
       [--engines local,dask]

Measured 2026-11-23, 17:40 UTC (one run, load average 0.7 at the start, 1.2 at the end),
store 2.60 GB (X, local effects and predictions float32), ale byte-compiled
(bench/installed.py):

=============================================================  ========  ==========
step                                                           wall      peak RSS
=============================================================  ========  ==========
ale compute (local engine, 65536-row chunks)                    14.7 s    668 MB
ale rebin --bins 20 --binning quantile (the store's first       4.27 s    213 MB
reader)
ale rhale                                                       2.93 s    163 MB
ale rebin --bins 20 --binning quantile                          4.23 s    214 MB
ale rhale, ALE_THREADS=1                                        3.57 s    113 MB
ale rebin --bins 20 --binning quantile, ALE_THREADS=1           5.88 s    224 MB
=============================================================  ========  ==========

A second run with both engines (18:11 UTC, load average 0.6 at the start, 2.6 at the end;
rebin as the first reader 5.19 s, again 4.13 s, rhale 2.94 s, compute 14.7 s / 670 MB),
and compute then rebin twice more by hand: first reader 4.27 s and 4.37 s, the next
4.28 s and 4.61 s; warm runs 3.96-4.67 s. So the quantile rebin takes 4.0-4.7 s here,
once 5.2 s.

Compute records the store's identity in its meta as it writes it (the digest of its
members' CRC-32s and sizes, ale_cli/store/format.py), and its manifest records the
percentiles of the predictions, so no estimator reads the store once more to hash it
(1.5 s of CPU) or reads and sorts 1e7 predictions (0.5 s). Before those two changes,
the same day on a quiet machine: compute 13.6 s / 562 MB, rhale 4.97 s / 389 MB,
rebin 5.77 s / 373 MB (5.23 s with byte-compiled modules); the percentiles cost
compute about 100 MB more at its end.

The Dask engine in that second run (2 worker processes x 1 thread, a fresh cluster per
step, on the same 2 cores as the client and the scheduler; effects equal to the local
engine's within 4.2e-17):

======================================  ==========  =====================================
step                                    wall        peak RSS: client; each worker;
                                                    scheduler and nannies
======================================  ==========  =====================================
ale compute (10 partitions of 1e6)      22.1 s      106 MB; 452 MB; 61 MB
ale rhale                               7.45 s      257 MB; 183 MB; 62 MB
ale rebin --bins 20 --binning quantile  18.4 s      287 MB; 147 MB; 79 MB
======================================  ==========  =====================================

The Dask rebin then took the local engine's two quantile passes (counts, then cells and
gathered rows, per part) instead of three or more: 11.5 s and 12.8 s (two runs on the
same directory store, a local cluster started by each; 4.4 s locally between them),
edges equal, effects within 4.2e-17.

Under load 5-7 the same steps took 48 s, 6-10 s and 12-16 s. The rebin against the
three-pass version before it, same store, one after the other at load 1.1: 15.3 s wall,
17.2 s CPU (user + sys) before; 5.9 s wall, 9.6 s CPU after (edges and counts equal,
effects and std within 3e-13 relative).

Both engines, two runs on 2026-11-23 on the same VM under load average 5 to 10 (other
test suites running: every wall time is 2-4x the quiet one above, and the two Dask
workers and the client share the same 2 cores with them); run 1 / run 2:

======================================  ===============  ===============  ==================
step                                    local wall       dask wall        dask peak RSS
                                        (peak RSS)                        client; each
                                                                          worker; scheduler
======================================  ===============  ===============  ==================
ale compute (10 partitions of 1e6)      47.7 / 48.0 s    97.5 / 104.1 s   115; 500; 64 MB
                                        (620 / 634 MB)
ale rhale                               20.2 / 18.5 s    49.6 / 46.5 s    344; 149; 64 MB
                                        (301 / 301 MB)
ale rebin --bins 20 --binning quantile  49.2 / 44.8 s    101.5 / 121.7 s  424 / 374; 181 /
                                        (330 / 405 MB)                    156; 79 MB
======================================  ===============  ===============  ==================

Starting the cluster (not in the walls above): 2.3-4.2 s. The summaries of the two
engines differ by at most 1.4e-17 (rhale) and 4.2e-17 (rebin) in the effects. On 2
shared cores the Dask engine cannot be faster: its two workers take the cores the
local engine had (whose reader and writer threads already overlap with the model),
and it adds the client, the scheduler and a torch import and model load per worker.
A probe at the same time (np.sort of 2e6 x 8, 5 times) took 9.1 s in one worker and
16.7-17.7 s in each of two workers at once: the two cores were not free to share.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from installed import compile_ale, installed_environ

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

ROOT = Path(__file__).resolve().parent.parent
D = 32
PART_ROWS = 1_000_000
ENV = {
    **installed_environ(),
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
}


def make_dataset(folder: Path, n: int) -> Path:
    """``folder/data/part=K/data.parquet``, PART_ROWS rows each, made once."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = folder / f"data-{n}"
    if (root / "_done").exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    rng = np.random.default_rng(0)
    chol = np.linalg.cholesky(0.5 ** np.abs(np.subtract.outer(np.arange(D), np.arange(D))))
    names = [f"x{j}" for j in range(D)]
    for k, start in enumerate(range(0, n, PART_ROWS)):
        rows = min(PART_ROWS, n - start)
        X = (rng.standard_normal((rows, D)) @ chol.T).astype(np.float32)
        part = root / f"part={k:03d}"
        part.mkdir(parents=True)
        table = pa.table({name: X[:, j] for j, name in enumerate(names)})
        pq.write_table(table, part / "data.parquet", row_group_size=65536)
    (root / "_done").touch()
    return root


def make_model(folder: Path) -> Path:
    import torch
    from torch import nn

    path = folder / "mlp64.pt"
    if not path.exists():
        torch.manual_seed(0)
        mlp = nn.Sequential(
            nn.Linear(D, 64),
            nn.ReLU(),
            nn.Linear(64, 64),
            nn.ReLU(),
            nn.Linear(64, 1),
            nn.Flatten(0),
        )
        torch.jit.save(torch.jit.script(mlp.eval()), str(path))
    return path


def _hwm_mb(pid: int) -> float | None:
    """VmHWM (peak resident set) of a live process from /proc, in MB."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def run_measured(args: list[str], env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MB) of that one process and its stdout.

    The peak is VmHWM read from /proc every 20 ms while the process lives (the
    rusage of wait4 is no use here: a child's ru_maxrss starts from the largest
    earlier child's on Linux, so every step would report the compute's peak).
    """
    t0 = time.perf_counter()
    peak = 0.0
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ale_cli", *args],
            env={**ENV, **(env or {})},
            stdout=out,
            stderr=err,
        )
        while proc.poll() is None:
            hwm = _hwm_mb(proc.pid)
            peak = max(peak, hwm or 0.0)
            time.sleep(0.02)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"ale {' '.join(args)} failed ({proc.returncode}): {err.read()}")
        return wall, peak, out.read()


def _children() -> dict[int, list[int]]:
    """Every live process's children, from /proc."""
    out: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        out.setdefault(ppid, []).append(int(entry))
    return out


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants."""
    children = _children()
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo += children.get(p, [])
    return found


def _name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            args = fh.read().split(b"\0")
    except OSError:
        return "?"
    text = b" ".join(args).decode(errors="replace")
    if "resource_tracker" in text:
        return "multiprocessing resource tracker"
    if "spawn_main" in text or "multiprocessing" in text:
        return "worker process"
    return "cluster (scheduler, nannies)" if "ale-bench-cluster" in text else text[:40]


CLUSTER = """
import sys, time
from distributed import LocalCluster
sys.argv[0] = "ale-bench-cluster"
if __name__ == "__main__":
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster:
        print(cluster.scheduler_address, flush=True)
        sys.stdin.read()  # until the bench closes it
"""


class Cluster:
    """A LocalCluster of 2 worker processes in a helper process (one per step)."""

    def __enter__(self) -> Cluster:
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CLUSTER, "ale-bench-cluster"],
            env=ENV,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        self.address = self.proc.stdout.readline().strip()
        if not self.address:
            raise SystemExit("the Dask cluster did not start")
        self.start_s = time.perf_counter() - t0
        return self

    def peaks(self) -> list[tuple[str, float]]:
        """(what, VmHWM MB) of the helper and its descendants, workers last."""
        out = []
        for pid in _tree(self.proc.pid):
            hwm = _hwm_mb(pid)
            if hwm is not None:
                out.append((_name(pid), hwm))
        return out

    def __exit__(self, *exc: object) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def run_tree(args: list[str], cluster: Cluster) -> tuple[float, float, str, dict[int, tuple]]:
    """:func:`run_measured` for a Dask step, also following every process of the cluster:
    returns the command's wall, its peak, its stdout and {pid: (what, peak MB)}."""
    t0 = time.perf_counter()
    peak = 0.0
    others: dict[int, tuple[str, float]] = {}
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ale_cli", *args], env=ENV, stdout=out, stderr=err
        )
        tick = 0
        while proc.poll() is None:
            peak = max(peak, _hwm_mb(proc.pid) or 0.0)
            if tick % 10 == 0:  # the process tree every 0.2 s (walking /proc costs)
                for pid in _tree(cluster.proc.pid):
                    hwm = _hwm_mb(pid)
                    if hwm is not None:
                        what = others.get(pid, (_name(pid), 0.0))[0]
                        others[pid] = (what, max(hwm, others.get(pid, ("", 0.0))[1]))
            tick += 1
            time.sleep(0.02)
        wall = time.perf_counter() - t0
        for pid in _tree(cluster.proc.pid):  # the last word: VmHWM only grows
            hwm = _hwm_mb(pid)
            if hwm is not None and pid in others:
                others[pid] = (others[pid][0], max(hwm, others[pid][1]))
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"ale {' '.join(args)} failed ({proc.returncode}): {err.read()}")
        return wall, peak, out.read(), others


def steps_for(model: Path, data: Path, store: Path, folder: Path, tag: str) -> list:
    return [
        (
            "ale compute",
            ["compute", str(model), str(data), "-o", str(store), "--force", "--json"],
        ),
        ("ale rhale", ["rhale", str(store), "-o", str(folder / f"rhale-{tag}.json"), "--quiet"]),
        (
            "ale rebin --bins 20 --binning quantile",
            [
                "rebin",
                str(store),
                "--bins",
                "20",
                "--binning",
                "quantile",
                "-o",
                str(folder / f"rebin-{tag}.json"),
                "--quiet",
            ],
        ),
    ]


def _largest_difference(folder: Path) -> str:
    """The largest |difference| of the effects between the engines' summaries."""
    out = []
    for kind in ("rhale", "rebin"):
        a = json.loads((folder / f"{kind}-local.json").read_text())
        b = json.loads((folder / f"{kind}-dask.json").read_text())
        worst = max(
            float(np.max(np.abs(np.subtract(fa["effect"], fb["effect"]))))
            for fa, fb in zip(a["features"], b["features"], strict=True)
        )
        out.append(f"{kind} {worst:.1e}")
    return ", ".join(out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", default="1e7")
    parser.add_argument("--folder", default=None)
    parser.add_argument("--keep", action="store_true", help="keep the data and the store")
    parser.add_argument("--engines", default="local,dask", help="local, dask or local,dask")
    args = parser.parse_args()
    n = int(float(args.rows))
    folder = Path(args.folder or tempfile.mkdtemp(prefix="ale-scale-"))
    folder.mkdir(parents=True, exist_ok=True)
    compile_ale()  # as an installed ale runs (bench/installed.py)
    t = time.perf_counter()
    data = make_dataset(folder, n)
    model = make_model(folder)
    size = sum(p.stat().st_size for p in data.rglob("*.parquet"))
    print(
        f"dataset: {n:,} rows x {D} float32 in {len(list(data.rglob('*.parquet')))} files, "
        f"{size / 1e9:.2f} GB ({time.perf_counter() - t:.0f} s to make)",
        flush=True,
    )
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    engines = args.engines.split(",")
    store = folder / "store.npz"
    parts = folder / "store.parts"
    if "local" in engines:
        print("local engine:", flush=True)
        steps = steps_for(model, data, store, folder, "local")
        # the first reader of a fresh store, then the later ones (the store's identity is
        # in its meta: no reader hashes it): the rebin once as the first
        steps.insert(1, (f"{steps[2][0]} [first reader]", steps[2][1]))
        # the estimators work on chunks in threads (ALE_THREADS, default: the CPUs): once
        # more with one worker thread
        steps += [(f"{label} [ALE_THREADS=1]", cli) for label, cli in steps[2:4]]
        for label, cli in steps:
            one = {"ALE_THREADS": "1"} if "ALE_THREADS=1" in label else None
            wall, rss, out = run_measured(cli, one)
            print(f"  {label:45s} wall {wall:8.2f} s   peak RSS {rss:7.0f} MB", flush=True)
            if cli[0] == "compute":
                result = json.loads(out)
                print(
                    f"    store {store.stat().st_size / 1e9:.2f} GB; in-command "
                    f"{result['seconds']:.1f} s",
                    flush=True,
                )
                from ale_cli.store.npz import read_meta

                timings = read_meta(store)["timings"]
                print("    " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()))
    if "dask" in engines:
        print("dask engine, 2 worker processes x 1 thread (a fresh cluster per step):")
        for label, cli in steps_for(model, data, parts, folder, "dask"):
            cli = [cli[0], *cli[1:]]
            with Cluster() as cluster:
                cli += ["--engine", "dask", "--scheduler", cluster.address]
                wall, rss, out, others = run_tree(cli, cluster)
            print(
                f"  {label:45s} wall {wall:8.2f} s   peak RSS {rss:7.0f} MB (client); "
                f"cluster start {cluster.start_s:.1f} s",
                flush=True,
            )
            for what, mb in sorted(others.values()):
                print(f"    {what:43s}             peak RSS {mb:7.0f} MB")
            if cli[0] == "compute":
                size = sum(p.stat().st_size for p in parts.iterdir())
                from ale_cli.store.npz import read_meta

                timings = read_meta(parts)["timings"]
                print(f"    store {size / 1e9:.2f} GB in {len(list(parts.iterdir())) - 1} parts")
                print("    " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()))
    if engines == ["local", "dask"]:
        print(f"largest |difference| of the effects, dask vs local: {_largest_difference(folder)}")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")
    if not args.keep:
        store.unlink(missing_ok=True)
        shutil.rmtree(parts, ignore_errors=True)
        if args.folder is None:  # a temporary folder of ours: the 1.9 GB dataset too
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
