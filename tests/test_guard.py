"""The output guard: each kind recognised by what ale wrote, refusals, --force, '-',
stale temporaries, and every command re-running over its own outputs."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_config import small_store

from ale_cli.errors import InputError
from ale_cli.io.files import STARTED, atomic_write, remove_stale_temporaries
from ale_cli.outputs import figures
from ale_cli.outputs.guard import KIND_LIST, KINDS, guard


@pytest.fixture(scope="module")
def made_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One real output of every file kind, written by the commands themselves."""
    from typer.testing import CliRunner

    from ale_cli.cli import app

    tmp_path = tmp_path_factory.mktemp("made")
    store = small_store(tmp_path / "s.npz")
    summary = tmp_path / "s.json"
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n  - feature: a\n    max_aled: 100\n")
    steps = [
        ("rebin", store, "-o", summary, "--bins", "4"),
        ("audit", summary, "--rules", rules, "--json-report", tmp_path / "a.json"),
        ("audit", summary, "--rules", rules, "--junit", tmp_path / "a.xml"),
        ("export", summary, "-o", tmp_path / "t.csv"),
        ("export", summary, "-o", tmp_path / "t.parquet"),
        ("report", summary, "-o", tmp_path / "r.html", "--no-timestamp"),
        ("plot", summary, "-o", tmp_path / "figs", "-j", "1"),
    ]
    for argv in steps:
        result = CliRunner().invoke(app, [str(a) for a in argv])
        assert result.exit_code == 0, (argv, result.stderr)
    return tmp_path


@pytest.fixture()
def made(made_once: Path, tmp_path: Path) -> dict[str, Path]:
    """A copy of :func:`made_once`'s outputs for one test, by kind."""
    tmp_path = tmp_path / "made"
    shutil.copytree(made_once, tmp_path)
    return {
        "store": tmp_path / "s.npz",
        "summary": tmp_path / "s.json",
        "audit-json": tmp_path / "a.json",
        "junit": tmp_path / "a.xml",
        "table-csv": tmp_path / "t.csv",
        "table-parquet": tmp_path / "t.parquet",
        "html": tmp_path / "r.html",
        "figures": tmp_path / "figs",
        "rules": tmp_path / "rules.yaml",
    }


FILE_KINDS = ("store", "summary", "audit-json", "junit", "table-csv", "table-parquet", "html")


def test_every_kind_recognises_what_ale_wrote_and_no_other_kind_does(made):
    for kind in (*FILE_KINDS, "figures"):
        assert KINDS[kind].recognise(made[kind]), kind
        others = [k for k in FILE_KINDS if k != kind and KINDS[k].recognise(made[kind])]
        assert others == [], (kind, others)
        assert guard(made[kind], kind=kind) == made[kind]


FOREIGN = {
    "summary": b'{"schema_version": 1, "estimator": "dale", "features": []}',
    "audit-json": b'{"name": "my-app", "version": "1.0.0", "rules": [], "checks": []}',
    "junit": b'<?xml version="1.0"?>\n<testsuites name="pytest"><testsuite/></testsuites>\n',
    "table-csv": b"estimator,feature,kind,mine\ndale,a,edge,1\n",
    "table-parquet": b"PAR1 not really parquet PAR1",
    "html": b'<!DOCTYPE html>\n<html><head><meta name="generator" content="Hugo 0.1">',
    "store": b"PK\x03\x04 a zip that is not a store",
}


@pytest.mark.parametrize("kind", sorted(FOREIGN))
def test_a_look_alike_is_refused_unless_force(tmp_path: Path, kind: str):
    path = tmp_path / "out"
    path.write_bytes(FOREIGN[kind])
    with pytest.raises(InputError) as info:
        guard(path, kind=kind)
    message = info.value.render(lambda p: "--" + p.replace("_", "-"))
    assert message == (
        f"output '{path}' exists and is not an ale {KINDS[kind].description}; remove it, "
        "choose another output, or pass --force to overwrite it"
    )
    assert guard(path, kind=kind, force=True) == path
    assert path.read_bytes() == FOREIGN[kind]


def test_a_parquet_file_without_the_ale_key_is_not_an_export(tmp_path: Path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "mine.parquet"
    pq.write_table(pa.table({"estimator": ["x"], "feature": ["a"], "kind": ["edge"]}), path)
    assert not KINDS["table-parquet"].recognise(path)


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["schema_version", "estimator", "features", "tool", "rules", "checks"]),
        st.one_of(st.integers(), st.text(max_size=5), st.just([]), st.just({"name": "other"})),
    )
)
def test_json_without_tool_ale_is_never_a_summary_or_an_audit_report(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("j") / "x.json"
    path.write_text(json.dumps(data))
    assert not KINDS["summary"].recognise(path)
    assert not KINDS["audit-json"].recognise(path)


@pytest.mark.parametrize("force", [False, True])
def test_an_input_is_refused_under_any_spelling_even_with_force(tmp_path: Path, force: bool):
    data = tmp_path / "data.csv"
    data.write_text("a,b\n1,2\n")
    hard = tmp_path / "hard.csv"
    os.link(data, hard)
    link = tmp_path / "link.csv"
    link.symlink_to(data)
    for spelling in (data, tmp_path / "." / "data.csv", hard, link):
        with pytest.raises(InputError, match="is the same file as the input"):
            guard(spelling, kind="table-csv", inputs=[data], force=force)
    assert data.read_text() == "a,b\n1,2\n"


@pytest.mark.parametrize("force", [False, True])
def test_what_an_input_directory_holds_is_refused_even_with_force(tmp_path: Path, force: bool):
    model = tmp_path / "ml_model"
    (model / "sub").mkdir(parents=True)
    (model / "model.skops").write_bytes(b"PK")
    (model / "sub" / "old.npz").write_bytes(b"PK")
    for out in (model / "model.skops", model / "sub" / "old.npz", tmp_path / "." / model.name):
        where = "the same file as" if out.is_dir() else "inside"
        with pytest.raises(InputError, match=f"^output '{out}' is {where} the input '{model}'"):
            guard(out, kind="store", inputs=[model], force=force)
    for new in (tmp_path / "ml_model.npz", model / "sub" / "new.npz"):  # nothing of the input
        assert guard(new, kind="store", inputs=[model], force=force) == new
    assert (model / "model.skops").read_bytes() == b"PK"


@pytest.mark.parametrize("force", [False, True])
def test_the_api_refuses_a_models_columns_file_as_output(tmp_path: Path, force: bool):
    from ale_cli import api

    model, columns = tmp_path / "m.pt", tmp_path / "m.columns.json"
    model.write_bytes(b"PK")
    columns.write_text('{"columns": ["a"]}')
    (tmp_path / "d.csv").write_text("a\n1\n")
    with pytest.raises(InputError, match=f"^output '{columns}' is the same file as the input"):
        api.compute(model, tmp_path / "d.csv", out=columns, force=force)
    assert columns.read_text() == '{"columns": ["a"]}'


@pytest.mark.parametrize("force", [False, True])
def test_not_a_regular_file_is_refused_even_with_force(tmp_path: Path, force: bool):
    (tmp_path / "d").mkdir()
    with pytest.raises(InputError, match="it is a directory, not a regular file"):
        guard(tmp_path / "d", kind="summary", force=force)
    os.mkfifo(tmp_path / "p")
    with pytest.raises(InputError, match=r"it is a FIFO \(named pipe\)"):
        guard(tmp_path / "p", kind="html", force=force)
    with pytest.raises(InputError, match="output directory '.*' is a FIFO"):
        guard(tmp_path / "p", kind="figures", force=force)


def test_standard_output_only_for_kinds_that_stream():
    assert guard("-", kind="summary") == guard("-", kind="junit") == Path("-")
    for kind in ("store", "figures", "table-parquet", "store-dir"):
        with pytest.raises(InputError) as info:
            guard("-", kind=kind, param="out")
        assert info.value.render(lambda p: "--" + p).startswith(
            "--out - (standard output) cannot be used for a"
        )


def test_each_output_kind_is_named_once_and_described_apart():
    assert len(KINDS) == len(KIND_LIST)  # a name given twice would keep only the last kind
    descriptions = [kind.description for kind in KIND_LIST]
    assert len(set(descriptions)) == len(descriptions)


# -- figure directories ------------------------------------------------------------------------


def test_a_figure_directory_is_ours_only_with_its_manifest_and_unchanged_files(made):
    figs = made["figures"]
    assert figures.read_manifest(figs) is not None
    png = figs / "a.png"
    png.write_bytes(png.read_bytes() + b"edited")  # a figure changed since
    with pytest.raises(InputError, match="is a directory that is not an ale figure directory"):
        guard(figs, kind="figures")
    guard(figs, kind="figures", force=True)
    (figs / "holiday.jpg").write_bytes(b"mine")  # not ours: never, even with --force
    for force in (False, True):
        with pytest.raises(InputError, match="holds 'holiday.jpg', which ale did not write"):
            guard(figs, kind="figures", force=force)


def test_a_directory_without_a_manifest_is_refused_whatever_it_holds(tmp_path: Path):
    old = tmp_path / "plots"
    old.mkdir()
    (old / "a.png").write_bytes(b"\x89PNG\r\n\x1a\n")  # an earlier ale's figures, or a user's
    for force in (False, True):
        with pytest.raises(InputError, match="holds 'a.png', which ale did not write there"):
            guard(old, kind="figures", force=force)
    (old / "a.png").unlink()
    assert guard(old, kind="figures") == old  # empty: ours to fill


def test_a_directory_output_holding_an_input_is_refused(tmp_path: Path):
    summary = tmp_path / "sub" / "s.json"
    summary.parent.mkdir()
    summary.write_text("{}")
    with pytest.raises(InputError, match="holds the input .* which replacing it would delete"):
        guard(tmp_path, kind="figures", inputs=[summary])


# -- stale temporaries -------------------------------------------------------------------------


def test_stale_temporaries_of_the_target_are_removed_and_nothing_else(tmp_path: Path):
    target = tmp_path / "out.json"
    old = time.time() - 3600
    stale = tmp_path / ".out.json.0123456789ab.tmp"
    stale.write_text("half")
    os.utime(stale, (old, old))
    fresh = tmp_path / ".out.json.ba9876543210.tmp"  # a writer that is still going
    fresh.write_text("busy")
    other = tmp_path / ".other.json.0123456789ab.tmp"  # another target's
    other.write_text("x")
    os.utime(other, (old, old))
    looks = tmp_path / ".out.json.0123456789xy.tmp"  # not our exact pattern
    looks.write_text("x")
    os.utime(looks, (old, old))
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    link = tmp_path / ".out.json.aaaaaaaaaaaa.tmp"
    link.symlink_to(victim)
    os.utime(link, (old, old), follow_symlinks=False)
    folder = tmp_path / ".out.json.bbbbbbbbbbbb.tmp"
    folder.mkdir()
    os.utime(folder, (old, old))
    assert os.stat(fresh).st_mtime >= STARTED
    with atomic_write(target) as fh:
        fh.write(b"{}")
    assert not stale.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [p.name for p in (fresh, other, looks, victim, link, folder)] + ["out.json"]
    )
    assert victim.read_text() == "keep" and link.is_symlink()
    assert remove_stale_temporaries(target) == []


# -- '-' and re-runs through the commands ------------------------------------------------------


def test_every_command_overwrites_its_own_outputs_without_force(made, cli):
    """A second run over the outputs the first one wrote: no refusal, no --force."""
    summary, rules, d = made["summary"], made["rules"], made["summary"].parent
    steps = [
        ("rebin", made["store"], "-o", summary, "--bins", "3"),
        ("audit", summary, "--rules", rules, "--json-report", made["audit-json"]),
        ("audit", summary, "--rules", rules, "--junit", made["junit"]),
        ("export", summary, "-o", made["table-csv"]),
        ("export", summary, "-o", made["table-parquet"]),
        ("report", summary, "-o", made["html"]),
        ("plot", summary, "-o", made["figures"], "-j", "1"),
        ("diff", summary, summary, "-o", d / "diff"),
        ("diff", summary, summary, "-o", d / "diff"),
    ]
    for argv in steps:
        result = cli(*argv)
        assert result.exit_code == 0, (argv, result.stderr)
    assert figures.read_manifest(d / "diff") is not None


def test_audit_report_and_junit_to_standard_output(made, cli):
    summary, rules = made["summary"], made["rules"]
    result = cli("audit", summary, "--rules", rules, "--json-report", "-")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["tool"]["name"] == "ale"
    assert "FEATURE" in result.stderr  # the table goes to stderr
    result = cli("audit", summary, "--rules", rules, "--junit", "-")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("<?xml") and "<!-- generator: ale " in result.stdout
    assert not Path("-").exists()
    both = cli("audit", summary, "--rules", rules, "--json-report", "-", "--junit", "-")
    assert (both.exit_code, both.stderr) == (
        2,
        "error: --json-report - and --junit - both write to standard output; give one a path\n",
    )


def test_report_to_standard_output_and_diff_refuses_it(made, cli):
    result = cli("report", made["summary"], "-o", "-")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("<!DOCTYPE html>")
    assert '<meta name="generator" content="ale ' in result.stdout
    result = cli("diff", made["summary"], made["summary"], "-o", "-")
    assert (result.exit_code, result.stderr) == (
        2,
        "error: --out - (standard output) cannot be used for a figure directory; give a path\n",
    )
    assert not Path("-").exists()


def test_export_paths_in_a_config_file_are_relative_to_it(made, cli, tmp_path: Path):
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "export.yaml").write_text("export:\n  summary: ../made/s.json\n  out: table.csv\n")
    result = cli("export", "--config", conf / "export.yaml")
    assert result.exit_code == 0, result.stderr
    assert (conf / "table.csv").read_text().startswith("estimator,feature,kind,")


# -- directory stores ---------------------------------------------------------------------------


def test_a_directory_store_holding_files_ale_did_not_write_is_refused_even_with_force(tmp_path):
    """A directory store is replaced whole: a file beside its parts (the user's) is never
    deleted, with or without --force; the store alone is replaced."""
    import numpy as np
    from test_hostile_stores import _directory_store

    store = tmp_path / "d.parts"
    _directory_store(store, np.random.default_rng(0).normal(size=(200, 3)))
    assert guard(store, kind="store-dir") == store  # only its manifest and parts
    (store / "mine").mkdir()
    (store / "mine" / "notes.txt").write_text("my notes\n")
    (store / "README").write_text("mine\n")
    for force in (False, True):
        with pytest.raises(InputError) as info:
            guard(store, kind="store-dir", force=force)
        assert str(info.value) == (
            f"output directory '{store}' holds 'README' and 1 more, which ale did not write "
            "there (not in its manifest.json); the store replaces the whole directory, so "
            "choose a new or empty one"
        )


def test_a_file_a_glob_input_matches_is_an_input_even_with_force(tmp_path):
    """A dataset given as a glob: each file it matches is an input, never overwritten."""
    part = tmp_path / "day=2" / "part-1.parquet"
    part.parent.mkdir()
    part.write_bytes(b"PAR1 not ours")
    pattern = str(tmp_path / "*" / "*.parquet")
    for force in (False, True):
        with pytest.raises(InputError) as info:
            guard(part, kind="store", inputs=[pattern], force=force)
        assert str(info.value) == (
            f"output '{part}' is the same file as the input '{part}'; choose another output"
        )
    assert part.read_bytes() == b"PAR1 not ours"
    assert guard(tmp_path / "s.npz", kind="store", inputs=[pattern]) == tmp_path / "s.npz"
