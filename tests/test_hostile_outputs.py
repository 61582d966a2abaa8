"""Hostile outputs: every command that writes, pointed at what it must not replace.

Each case runs one command in a fresh workspace (the good files of
``test_hostile`` plus a user's own files: a ``package.json``, a ``pom.xml``, an
HTML page, a folder of photos, a CSV, a Parquet file, a rules file) and asserts
exit 2, exactly one ``error:`` line holding the expected text, no traceback,
and every file byte-identical (names, sizes, times, modes).

:func:`test_every_output_option_is_declared` and
:func:`test_every_output_option_refuses_a_file_that_is_not_ours` enumerate the
commands of the typer app: an option whose value is a path must be declared an
output (with its kind) or an input, and every declared output refuses a user's
file, so a new command or output option without a declaration fails here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_hostile import (
    Builder,
    Case,
    check_one_line,
    directory,
    fifo,
    fill,
    raw,
    snapshot,
    text,
)
from test_hostile import base as base  # noqa: F401  (the fixtures, by name)
from test_hostile import ws as ws  # noqa: F401

from ale_cli.outputs.figures import write_manifest

PACKAGE_JSON = '{"name": "my-app", "version": "1.0.0", "dependencies": {}}\n'
POM_XML = '<?xml version="1.0"?>\n<project><modelVersion>4.0.0</modelVersion></project>\n'
PAGE = "<!DOCTYPE html>\n<html><head><title>My page</title></head><body>hi</body></html>\n"
RULES = "rules:\n  - feature: a\n    max_aled: 100\n"


@pytest.fixture()
def ows(ws: Path) -> Path:  # noqa: F811
    """The workspace with a user's own files beside the good ones."""
    (ws / "package.json").write_text(PACKAGE_JSON)
    (ws / "pom.xml").write_text(POM_XML)
    (ws / "page.html").write_text(PAGE)
    (ws / "rules.yaml").write_text(RULES)
    (ws / "people.csv").write_text("name,age\nann,31\nbob,42\n")
    photos = ws / "photos"
    photos.mkdir()
    for name in ("beach.png", "dog.png", "cat.svg"):
        (photos / name).write_bytes(b"\x89PNG\r\n\x1a\n my holiday " + name.encode())
    return ws


def user_parquet(path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"estimator": ["x"], "feature": ["a"], "kind": ["edge"]}), path)


def hard_link_to(name: str) -> Builder:
    return lambda path: path.hardlink_to(path.parent / name)


def link_to(name: str) -> Builder:
    return lambda path: path.symlink_to(path.parent / name)


def ale_figures_plus(extra: str | None, edit: bool = False) -> Builder:
    """A figure directory as ``ale plot`` leaves it (manifest), then a user's ``extra``
    file added, or one of its figures edited."""

    def build(path: Path) -> None:
        path.mkdir()
        (path / "a.png").write_bytes(b"\x89PNG\r\n\x1a\n figure")
        write_manifest(path, [path / "a.png"])
        if extra is not None:
            (path / extra).write_text("my notes")
        if edit:
            (path / "a.png").write_bytes(b"\x89PNG\r\n\x1a\n my annotations")

    return build


def old_plot_dir(path: Path) -> None:
    """Figures of an ale before the manifest (or a user's): no .ale-plots.json."""
    path.mkdir()
    (path / "overview.png").write_bytes(b"\x89PNG\r\n\x1a\n old")


def with_link_inside(path: Path) -> None:
    path.mkdir()
    (path / "a.png").symlink_to(path.parent / "notes.txt")


def config_in_sub(path: Path) -> None:
    """A config file one directory down whose paths are relative to it."""
    path.parent.mkdir()
    path.write_text("summary: ../good.json\nout: ../people.csv\n")


def model_with_columns(path: Path) -> None:
    """A model file and the columns file beside it (``m.pt``, ``m.columns.json``)."""
    path.write_bytes(b"PK\x03\x04 a model")
    path.with_suffix(".columns.json").write_text('{"columns": ["x1", "x2", "x3"]}')


def mlflow_model(path: Path) -> None:
    """An MLflow model directory: its MLmodel file and the model file it names."""
    path.mkdir()
    flavor = "  sklearn:\n    pickled_model: model.skops\n    serialization_format: skops\n"
    (path / "MLmodel").write_text(f"flavors:\n{flavor}")
    (path / "model.skops").write_bytes(b"PK\x03\x04 a skops model")


def json_file(data: Any) -> Builder:
    return text(json.dumps(data))


NOT_SUMMARY = "exists and is not an ale summary"
NOT_HTML = "exists and is not an ale HTML report"
NOT_CSV = "exists and is not an ale CSV export"
NOT_PARQUET = "exists and is not an ale Parquet export"
NOT_AUDIT = "exists and is not an ale audit report"
NOT_JUNIT = "exists and is not an ale JUnit XML of 'ale audit'"
NOT_STORE = "exists and is not an ale local-effects store"
SAME = "is the same file as the input"
NOT_OURS = "which ale did not write there (not in its .ale-plots.json)"
G = "{ws}/good.json"
R = ("--rules", "{ws}/rules.yaml")

CASES: list[Case] = [
    # ale report -o
    Case("report-over-its-summary", ("report", G, "-o", G), 2, SAME),
    Case(
        "report-over-its-store",
        ("report", G, "--store", "{ws}/good.npz", "-o", "{ws}/good.npz"),
        2,
        SAME,
    ),
    Case(
        "report-over-audit-input",
        ("report", G, "--audit", "{ws}/notes.txt", "-o", "{ws}/notes.txt"),
        2,
        SAME,
    ),
    Case("report-over-data-csv", ("report", G, "-o", "{ws}/data.csv"), 2, NOT_HTML),
    Case("report-over-users-page", ("report", G, "-o", "{ws}/page.html"), 2, NOT_HTML),
    Case(
        "report-over-other-generator",
        ("report", G, "-o", "{bad}"),
        2,
        NOT_HTML,
        text('<!DOCTYPE html>\n<html><head><meta name="generator" content="Hugo 0.120">'),
        "site.html",
    ),
    Case("report-over-package-json", ("report", G, "-o", "{ws}/package.json"), 2, NOT_HTML),
    Case("report-over-a-store", ("report", G, "-o", "{ws}/good.npz"), 2, NOT_HTML),
    Case("report-over-notes", ("report", G, "-o", "{ws}/notes.txt"), 2, NOT_HTML),
    Case("report-over-empty-file", ("report", G, "-o", "{bad}"), 2, NOT_HTML, raw(b""), "r.html"),
    Case("report-into-directory", ("report", G, "-o", "{ws}/adir"), 2, "it is a directory"),
    Case("report-into-fifo", ("report", G, "-o", "{bad}"), 2, "it is a FIFO", fifo),
    Case("report-link-to-summary", ("report", G, "-o", "{bad}"), 2, SAME, link_to("good.json")),
    Case(
        "report-hard-link-to-summary",
        ("report", G, "-o", "{bad}"),
        2,
        SAME,
        hard_link_to("good.json"),
    ),
    Case("report-stdout-with-json", ("report", G, "-o", "-", "--json"), 2, "which --json needs"),
    # ale export -o
    Case("export-over-users-csv", ("export", G, "-o", "{ws}/people.csv"), 2, NOT_CSV),
    Case("export-over-data-csv", ("export", G, "-o", "{ws}/data.csv"), 2, NOT_CSV),
    Case(
        "export-over-look-alike-header",
        ("export", G, "-o", "{bad}"),
        2,
        NOT_CSV,
        text("estimator,feature,kind,my_column\nx,a,edge,1\n"),
        "t.csv",
    ),
    Case("export-over-empty-csv", ("export", G, "-o", "{bad}"), 2, NOT_CSV, raw(b""), "t.csv"),
    Case(
        "export-over-users-parquet",
        ("export", G, "-o", "{bad}"),
        2,
        NOT_PARQUET,
        user_parquet,
        "mine.parquet",
    ),
    Case(
        "export-over-par1-bytes",
        ("export", G, "-o", "{bad}"),
        2,
        NOT_PARQUET,
        raw(b"PAR1 anything at all PAR1"),
        "x.pq",
    ),
    Case("export-over-its-summary", ("export", G, "-o", G, "--format", "csv"), 2, SAME),
    Case(
        "export-into-directory",
        ("export", G, "-o", "{bad}"),
        2,
        "it is a directory",
        directory,
        "out.csv",
    ),
    Case("export-into-fifo", ("export", G, "-o", "{bad}"), 2, "it is a FIFO", fifo, "p.csv"),
    Case(
        "export-link-to-users-csv",
        ("export", G, "-o", "{bad}"),
        2,
        NOT_CSV,
        link_to("people.csv"),
        "l.csv",
    ),
    Case(
        "export-parquet-to-stdout",
        ("export", G, "-o", "-", "--format", "parquet"),
        2,
        "takes CSV only",
    ),
    Case(
        "export-config-out-relative-to-the-file",
        ("export", "--config", "{bad}"),
        2,
        "output '{ws}/sub/../people.csv' exists and is not an ale CSV export",
        config_in_sub,
        "sub/export.yaml",
    ),
    # ale audit --json-report / --junit (and --report, its old spelling)
    Case(
        "audit-old-report-spelling-over-package-json",
        ("audit", G, *R, "--report", "{ws}/package.json"),
        2,
        NOT_AUDIT,
    ),
    Case("audit-junit-over-pom-xml", ("audit", G, *R, "--junit", "{ws}/pom.xml"), 2, NOT_JUNIT),
    Case(
        "audit-junit-over-pytest-xml",
        ("audit", G, *R, "--junit", "{bad}"),
        2,
        NOT_JUNIT,
        text('<?xml version="1.0"?>\n<testsuites name="pytest"><testsuite/></testsuites>\n'),
        "junit.xml",
    ),
    Case("audit-report-over-its-summary", ("audit", G, *R, "--json-report", G), 2, SAME),
    Case(
        "audit-report-over-other-summary",
        ("audit", G, *R, "--json-report", "{ws}/inter.json"),
        2,
        NOT_AUDIT,
    ),
    Case("audit-report-over-rules", ("audit", G, *R, "--json-report", "{ws}/rules.yaml"), 2, SAME),
    Case(
        "audit-report-over-baseline",
        ("audit", G, *R, "--baseline", "{ws}/inter.json", "--json-report", "{ws}/inter.json"),
        2,
        SAME,
    ),
    Case(
        "audit-report-over-foreign-tool-json",
        ("audit", G, *R, "--json-report", "{bad}"),
        2,
        NOT_AUDIT,
        json_file({"tool": {"name": "eslint"}, "rules": [], "checks": []}),
        "a.json",
    ),
    Case(
        "audit-junit-into-directory",
        ("audit", G, *R, "--junit", "{ws}/adir"),
        2,
        "it is a directory",
    ),
    Case(
        "audit-both-to-stdout",
        ("audit", G, *R, "--json-report", "-", "--junit", "-"),
        2,
        "--json-report - and --junit - both write to standard output",
    ),
    Case(
        "audit-report-stdout-json",
        ("audit", G, *R, "--json-report", "-", "--json"),
        2,
        "which --json needs",
    ),
    # ale plot -o
    Case("plot-over-photos", ("plot", G, "-o", "{ws}/photos"), 2, NOT_OURS),
    Case("plot-over-photos-force", ("plot", G, "-o", "{ws}/photos", "--force"), 2, NOT_OURS),
    Case(
        "plot-figures-plus-user-file",
        ("plot", G, "-o", "{bad}", "--force"),
        2,
        "holds 'notes.md', " + NOT_OURS,
        ale_figures_plus("notes.md"),
        "figs",
    ),
    Case(
        "plot-figure-edited",
        ("plot", G, "-o", "{bad}"),
        2,
        "is a directory that is not an ale figure directory",
        ale_figures_plus(None, edit=True),
        "figs",
    ),
    Case(
        "plot-old-dir-no-manifest", ("plot", G, "-o", "{bad}"), 2, NOT_OURS, old_plot_dir, "plots"
    ),
    Case("plot-dir-with-link", ("plot", G, "-o", "{bad}"), 2, NOT_OURS, with_link_inside, "figs"),
    Case(
        "plot-over-a-file",
        ("plot", G, "-o", "{ws}/notes.txt"),
        2,
        "output directory '{ws}/notes.txt' is a file",
    ),
    Case("plot-into-fifo", ("plot", G, "-o", "{bad}"), 2, "is a FIFO", fifo),
    Case("plot-to-stdout", ("plot", G, "-o", "-"), 2, "cannot be used for a figure directory"),
    Case("plot-over-its-inputs-dir", ("plot", G, "-o", "{ws}"), 2, "holds the input"),
    # ale diff -o
    Case("diff-over-photos", ("diff", G, G, "-o", "{ws}/photos"), 2, NOT_OURS),
    Case("diff-over-photos-force", ("diff", G, G, "-o", "{ws}/photos", "--force"), 2, NOT_OURS),
    Case("diff-to-stdout", ("diff", G, G, "-o", "-"), 2, "cannot be used for a figure directory"),
    Case("diff-over-a-file", ("diff", G, G, "-o", "{ws}/notes.txt"), 2, "is a file"),
    Case("diff-over-its-inputs-dir", ("diff", G, G, "-o", "{ws}"), 2, "holds the input"),
    # summaries: rebin, rhale, classic, interact -o
    Case(
        "rebin-over-package-json",
        ("rebin", "{ws}/good.npz", "-o", "{ws}/package.json"),
        2,
        NOT_SUMMARY,
    ),
    Case(
        "rebin-over-audit-report",
        ("rebin", "{ws}/good.npz", "-o", "{bad}"),
        2,
        NOT_SUMMARY,
        json_file({"schema_version": 1, "tool": {"name": "ale"}, "rules": "r", "checks": []}),
        "a.json",
    ),
    Case(
        "rhale-over-foreign-tool",
        ("rhale", "{ws}/good.npz", "-o", "{bad}"),
        2,
        NOT_SUMMARY,
        json_file(
            {"schema_version": 1, "tool": {"name": "shap"}, "estimator": "x", "features": []}
        ),
        "s.json",
    ),
    Case(
        "rhale-over-users-edges",
        ("rhale", "{ws}/good.npz", "-o", "{ws}/edges.json"),
        2,
        NOT_SUMMARY,
    ),
    Case("rhale-over-page", ("rhale", "{ws}/good.npz", "-o", "{ws}/page.html"), 2, NOT_SUMMARY),
    Case(
        "classic-over-its-edges",
        (
            "classic",
            "{ws}/m.pt",
            "{ws}/data.csv",
            "--edges",
            "{ws}/edges.json",
            "-o",
            "{ws}/edges.json",
        ),
        2,
        SAME,
    ),
    Case(
        "interact-over-its-store",
        (
            "interact",
            "{ws}/m.pt",
            "{ws}/data.csv",
            "--store",
            "{ws}/good.npz",
            "-o",
            "{ws}/good.npz",
        ),
        2,
        SAME,
    ),
    Case(
        "classic-over-its-data",
        ("classic", "{ws}/m.pt", "{ws}/data.csv", "-o", "{ws}/data.csv"),
        2,
        SAME,
    ),
    # ale compute -o
    Case(
        "compute-over-its-data",
        ("compute", "{ws}/m.pt", "{ws}/data.csv", "-o", "{ws}/data.csv"),
        2,
        SAME,
    ),
    Case(
        "classic-over-its-models-columns-file",
        ("classic", "{bad}", "{ws}/data.csv", "-o", "{ws}/m.columns.json", "--force"),
        2,
        "output '{ws}/m.columns.json' " + SAME,
        model_with_columns,
        "m.pt",
    ),
    Case(
        "compute-over-its-models-columns-file",
        ("compute", "{bad}", "{ws}/data.csv", "-o", "{ws}/m.columns.json", "--force"),
        2,
        SAME,
        model_with_columns,
        "m.pt",
    ),
    Case(
        "compute-over-its-mlflow-models-file",
        ("compute", "{bad}", "{ws}/data.csv", "-o", "{bad}/model.skops", "--force"),
        2,
        "output '{bad}/model.skops' is inside the input '{bad}'; choose another output",
        mlflow_model,
        "ml_sk",
    ),
    Case(
        "interact-over-its-mlflow-models-mlmodel",
        ("interact", "{bad}", "{ws}/data.csv", "-o", "{bad}/MLmodel"),
        2,
        "output '{bad}/MLmodel' is inside the input '{bad}'",
        mlflow_model,
        "ml_sk",
    ),
    Case(
        "compute-over-notes",
        ("compute", "{ws}/m.pt", "{ws}/data.csv", "-o", "{ws}/notes.txt"),
        2,
        NOT_STORE,
    ),
    Case(
        "compute-to-stdout",
        ("compute", "{ws}/m.pt", "{ws}/data.csv", "-o", "-"),
        2,
        "cannot be used for a local-effects store",
    ),
    Case(
        "compute-dask-over-a-folder",
        ("compute", "{ws}/m.pt", "{ws}/data.csv", "--engine", "dask", "-o", "{ws}/photos"),
        2,
        "is a directory that is not an ale directory store",
    ),
    Case(
        "compute-dask-over-a-folder-force",
        (
            "compute",
            "{ws}/m.pt",
            "{ws}/data.csv",
            "--engine",
            "dask",
            "-o",
            "{ws}/photos",
            "--force",
        ),
        2,
        "is a directory that is not an ale directory store; choose another output",
    ),
    Case(
        "compute-over-zip",
        ("compute", "{ws}/m.pt", "{ws}/data.csv", "-o", "{bad}"),
        2,
        NOT_STORE,
        raw(b"PK\x03\x04 my archive"),
        "archive.npz",
    ),
]


def test_enough_cases():
    assert len(CASES) >= 50
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_hostile_output(cli, ows: Path, case: Case):
    bad = ows / case.bad_name
    if case.bad is not None:
        case.bad(bad)
    message = case.message.replace("{ws}", str(ows)).replace("{bad}", str(bad))
    before = snapshot(ows)
    result = cli(*(fill(a, ows, bad) for a in case.argv))
    check_one_line(result, message, case.code)
    assert snapshot(ows) == before
    assert not (Path.cwd() / "-").exists()


# -- every command, every output option ----------------------------------------------------------

#: Options that are paths but neither read nor written by the command itself, with why.
DELEGATED = {
    ("run", "out"): "the run directory: the job runner (ale_cli.job) checks and replaces it",
    ("run", "job"): "the job file: read by ale_cli.job, never written",
}

#: For each command and output option: the command line with the output at {target}.
MINIMAL = {
    ("audit", "json_report"): ("audit", G, *R, "--json-report", "{target}"),
    ("audit", "junit"): ("audit", G, *R, "--junit", "{target}"),
    ("audit", "out"): ("audit", G, *R, "-o", "{target}"),
    ("diff", "out"): ("diff", G, G, "-o", "{target}"),
    ("classic", "out"): ("classic", "{ws}/m.pt", "{ws}/data.csv", "-o", "{target}"),
    ("compute", "out"): ("compute", "{ws}/m.pt", "{ws}/data.csv", "-o", "{target}"),
    ("rebin", "out"): ("rebin", "{ws}/good.npz", "-o", "{target}"),
    ("rhale", "out"): ("rhale", "{ws}/good.npz", "-o", "{target}"),
    ("regional", "out"): ("regional", "{ws}/good.npz", "-o", "{target}"),
    ("export", "out"): ("export", G, "-o", "{target}", "--format", "csv"),
    ("interact", "out"): ("interact", "{ws}/m.pt", "{ws}/data.csv", "-o", "{target}"),
    ("plot", "out"): ("plot", G, "-o", "{target}"),
    ("report", "out"): ("report", G, "-o", "{target}"),
}


def _commands() -> dict[str, Any]:
    import typer

    from ale_cli.cli import app

    return dict(typer.main.get_command(app).commands)


def _is_path(param: Any) -> bool:
    descriptor = getattr(param, "type_descriptor", None)
    return bool(descriptor is not None and descriptor.is_path)


def test_every_output_option_is_declared():
    """Every path parameter of every command is a declared output or input (an old
    spelling, through the parameter it now spells); each command with outputs has --force."""
    from ale_cli.cli import registry
    from ale_cli.cli.config import ALIAS

    commands = _commands()
    assert list(commands) == list(registry.COMMANDS)
    outputs = set()
    for name, command in commands.items():
        declared = registry.load(name)
        spelt = {ALIAS + new: new for new in declared.aliases.values()}
        names = {p.name for p in command.params}
        for param in command.params:
            if not _is_path(param) or param.name == "config" or (name, param.name) in DELEGATED:
                continue
            target = spelt.get(param.name, param.name)
            assert target in declared.outputs or target in declared.inputs, (
                f"ale {name}: path option '{param.name}' is neither a declared output nor input"
            )
        if declared.outputs:
            assert "force" in names, name
        outputs |= {(name, o) for o in declared.outputs}
    assert outputs == set(MINIMAL)


@pytest.mark.parametrize("key", sorted(MINIMAL), ids=lambda k: f"{k[0]}-{k[1]}")
def test_every_output_option_refuses_a_file_that_is_not_ours(cli, ows: Path, key):
    """A user's file (or, for a directory output, a folder holding one) at the output:
    exit 2, one line, nothing changed; a directory, never, even with --force."""
    from ale_cli.cli import registry
    from ale_cli.outputs.guard import KINDS

    kind = registry.load(key[0]).outputs[key[1].split()[0]]
    kind = kind({"out": "x.csv", "fmt": None, "engine": "local"}) if callable(kind) else kind
    target = ows / "users-file"
    if KINDS[kind].directory:
        target.mkdir()
        (target / "mine.txt").write_text("precious")
        argv = [*MINIMAL[key], "--force"]
        message = "users-file"
    else:
        target.write_text("precious, not an ale output\n")
        argv = list(MINIMAL[key])
        message = "exists and is not an ale"
    before = snapshot(ows)
    result = cli(*(a.format(ws=ows, target=target) for a in argv))
    check_one_line(result, message, 2)
    assert snapshot(ows) == before
