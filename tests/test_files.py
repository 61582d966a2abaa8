"""Safe writes: what atomic_write refuses and the modes it gives (the guard: test_guard)."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from ale_cli.errors import InputError, RunError
from ale_cli.io.files import atomic_write, sha256_file
from ale_cli.store.npz import SCHEMA_VERSION, Store, write_store

REPO = Path(__file__).resolve().parent.parent


def write(path: Path, data: bytes = b"new") -> None:
    with atomic_write(path) as fh:
        fh.write(data)


def small_store(path: Path) -> None:
    write_store(
        path,
        Store(
            X=np.arange(6.0).reshape(3, 2),
            local_effects=np.ones((3, 2)),
            prediction=np.zeros(3),
            feature_names=("a", "b"),
            meta={"schema_version": SCHEMA_VERSION, "n_rows": 3},
        ),
    )


# -- what atomic_write refuses ---------------------------------------------------------------


def test_refuses_a_directory(tmp_path: Path):
    (tmp_path / "d").mkdir()
    with pytest.raises(InputError, match=r"cannot write '.*d': it is a directory, not a regular"):
        write(tmp_path / "d")
    assert (tmp_path / "d").is_dir() and list(tmp_path.iterdir()) == [tmp_path / "d"]


def test_refuses_a_fifo(tmp_path: Path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="it is a FIFO"):
        write(fifo)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["pipe"]


def test_refuses_a_socket(tmp_path: Path):
    path = tmp_path / "s.sock"
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(path))
        with pytest.raises(InputError, match="it is a socket"):
            write(path)
        assert stat.S_ISSOCK(os.lstat(path).st_mode)
    finally:
        sock.close()


def test_refuses_a_device(tmp_path: Path):
    """A character device (a copy of /dev/null's node, so a regression cannot replace a real
    device of the machine)."""
    device = tmp_path / "null"
    try:
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device node needs root")
    with pytest.raises(InputError, match="cannot write '.*null': it is a device"):
        write(device)
    assert stat.S_ISCHR(os.lstat(device).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["null"]


def test_hashing_refuses_what_is_not_a_regular_file(tmp_path: Path):
    os.mkfifo(tmp_path / "fifo")  # reading it would block forever
    with pytest.raises(InputError, match="data file '.*fifo' is a FIFO .*, expected a regular"):
        sha256_file(tmp_path / "fifo", "data file")
    with pytest.raises(InputError, match="model file '.*' is a directory, expected a regular"):
        sha256_file(tmp_path, "model file")
    with pytest.raises(InputError, match="file '.*nothing' does not exist"):
        sha256_file(tmp_path / "nothing")


def test_refuses_a_symlink_loop(tmp_path: Path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(InputError, match="symlink loop"):
        write(tmp_path / "a")


def test_symlink_is_written_through_and_survives(tmp_path: Path):
    real = tmp_path / "runs" / "42.json"
    real.parent.mkdir()
    real.write_bytes(b"old")
    link = tmp_path / "latest.json"
    link.symlink_to(Path("runs") / "42.json")
    write(link, b"fresh")
    assert link.is_symlink() and os.readlink(link) == str(Path("runs") / "42.json")
    assert real.read_bytes() == b"fresh"
    assert sorted(p.name for p in real.parent.iterdir()) == ["42.json"]


def test_dangling_symlink_creates_its_target(tmp_path: Path):
    link = tmp_path / "out.json"
    link.symlink_to(tmp_path / "target.json")
    write(link, b"x")
    assert link.is_symlink() and (tmp_path / "target.json").read_bytes() == b"x"


def test_a_symlink_chain_is_written_through_to_its_final_target(tmp_path: Path):
    (tmp_path / "c").write_bytes(b"")
    (tmp_path / "b").symlink_to(tmp_path / "c")
    (tmp_path / "a").symlink_to(tmp_path / "b")
    write(tmp_path / "a", b"x")
    assert (tmp_path / "a").is_symlink() and (tmp_path / "b").is_symlink()
    assert (tmp_path / "c").read_bytes() == b"x"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b", "c"]


# -- modes -----------------------------------------------------------------------------------


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_new_file_mode_follows_the_umask(tmp_path: Path, umask: int):
    old = os.umask(umask)
    try:
        write(tmp_path / "f")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "f").st_mode) == 0o666 & ~umask


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o600, 0o664])
def test_rewritten_file_keeps_its_mode(tmp_path: Path, mode: int):
    path = tmp_path / "f"
    path.write_bytes(b"old")
    os.chmod(path, mode)
    write(path)
    assert path.read_bytes() == b"new"
    assert stat.S_IMODE(os.stat(path).st_mode) == mode


# -- failures --------------------------------------------------------------------------------


def test_full_disk_is_one_line_and_leaves_nothing(tmp_path: Path):
    path = tmp_path / "f"
    path.write_bytes(b"old")
    with pytest.raises(RunError, match=r"^cannot write '.*f': No space left on device$"):
        with atomic_write(path) as fh:
            fh.write(b"half")
            raise OSError(28, "No space left on device")
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["f"]


def test_unwritable_directory_is_a_run_error(tmp_path: Path):
    if os.geteuid() == 0:
        pytest.skip("root writes anywhere")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(RunError, match="cannot write .*Permission denied"):
            write(locked / "f")
    finally:
        locked.chmod(0o700)


# -- signals and start-up --------------------------------------------------------------------


def _python(code: str, **kwargs) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        **kwargs,
    )


def test_sigterm_inside_atomic_write_removes_the_temporary_file(tmp_path: Path):
    """SIGTERM while the temporary file is being written: it is removed, the old file stays,
    and the process exits 143 with one line."""
    target = tmp_path / "out.bin"
    target.write_bytes(b"previous")
    code = f"""
        import os, signal, sys
        from ale_cli import signals
        from ale_cli.io.files import atomic_write
        signals.install()
        try:
            with atomic_write({str(target)!r}) as fh:
                fh.write(b"partial")
                os.kill(os.getpid(), signal.SIGTERM)
                fh.write(b"never")
        except signals.Terminated:
            print("error: terminated", file=sys.stderr)
            sys.exit(signals.EXIT_TERMINATED)
    """
    out = _python(code)
    assert out.returncode == 143
    assert out.stderr == "error: terminated\n"
    assert target.read_bytes() == b"previous"
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"]


@pytest.mark.parametrize(("exc", "code", "line"), [("KeyboardInterrupt", 130, "interrupted")])
def test_interrupt_while_importing_is_one_line(exc: str, code: int, line: str):
    """Ctrl-C while the CLI's modules are being imported (typer is the slow one)."""
    script = f"""
        import sys
        class Interrupt:
            def find_spec(self, name, path=None, target=None):
                if name == "typer":
                    raise {exc}()
                return None
        sys.meta_path.insert(0, Interrupt())
        sys.argv = ["ale", "--help"]
        from ale_cli.entry import main
        main()
    """
    out = _python(script)
    assert out.returncode == code
    assert out.stderr == f"error: {line}\n"
    assert out.stdout == ""


def test_sigterm_while_importing_is_one_line():
    script = """
        import os, signal, sys
        class Terminate:
            def find_spec(self, name, path=None, target=None):
                if name == "typer":
                    os.kill(os.getpid(), signal.SIGTERM)
                return None
        sys.meta_path.insert(0, Terminate())
        sys.argv = ["ale", "--help"]
        from ale_cli.entry import main
        main()
    """
    out = _python(script)
    assert out.returncode == 143
    assert out.stderr == "error: terminated\n"


@pytest.mark.parametrize("exchange", [True, False])
def test_swap_in_replaces_a_directory_and_leaves_nothing_else(tmp_path, monkeypatch, exchange):
    from ale_cli.io import files

    real, done = files._exchange, []

    def exchanged(a: Path, b: Path) -> bool:  # else as where it cannot: renamed aside
        done.append(exchange and real(a, b))
        return done[-1]

    monkeypatch.setattr(files, "_exchange", exchanged)
    new, target = tmp_path / ".new", tmp_path / "out"
    new.mkdir()
    (new / "a").write_text("new")
    target.mkdir()
    (target / "b").write_text("old")
    files.swap_in(new, target)
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
    assert [p.name for p in target.iterdir()] == ["a"]
    assert done == [exchange]


def test_swap_in_puts_the_old_one_back_when_the_new_cannot_move(tmp_path, monkeypatch):
    from ale_cli.io import files

    monkeypatch.setattr(files, "_exchange", lambda a, b: False)
    real = os.rename

    def rename(src, dst):  # the second rename (new -> target) fails
        if Path(src).name == ".new":
            raise OSError(28, "No space left on device")
        real(src, dst)

    monkeypatch.setattr(files.os, "rename", rename)
    new, target = tmp_path / ".new", tmp_path / "out"
    new.mkdir()
    target.write_text("old")
    with pytest.raises(OSError, match="No space"):
        files.swap_in(new, target)
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".new", "out"]
