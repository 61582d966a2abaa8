"""The command line as a whole: help, start-up cost, config files, progress, exit codes."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ale_cli.cli import app
from ale_cli.cli.command import ProgressBar


def _tiny_store(path: Path, *, rows: int, seed: int) -> None:
    """A store of ``rows`` rows of two features whose local effects are 2 x."""
    from ale_cli.store.npz import Store, write_store

    X = np.random.default_rng(seed).normal(size=(rows, 2))
    meta = {"schema_version": 2, "n_rows": rows}
    store = Store(
        X=X, local_effects=X * 2, prediction=X.sum(1), feature_names=("a", "b"), meta=meta
    )
    write_store(path, store)


def command_names() -> list[str]:
    from typer.main import get_command

    return sorted(get_command(app).commands)  # type: ignore[attr-defined]


def test_top_level_help_lists_every_command(cli):
    result = cli("--help")
    assert result.exit_code == 0
    for name in command_names():
        assert f"  {name}  " in result.stdout
    assert result.stdout.rstrip().splitlines()[-2].strip().startswith("Example: ale ")


@pytest.mark.parametrize("name", command_names())
def test_every_command_has_help_ending_with_an_example(cli, name):
    result = cli(name, "--help")
    assert result.exit_code == 0
    tail = result.stdout.rstrip().split("\n\n")[-1]
    assert tail.strip().startswith(f"Example: ale {name} ")


@pytest.mark.parametrize("name", command_names())
def test_every_command_is_in_the_readme(name):
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    assert f"ale {name}" in readme


def test_the_registry_is_the_one_list_of_commands():
    """Each registry line names a declared command of its module; the app and its help
    list exactly the registry's names, in its order."""
    from ale_cli.cli import registry
    from ale_cli.cli.command import Command

    for name, entry in registry.COMMANDS.items():
        module, _, attribute = entry.target.partition(":")
        assert module.startswith("ale_cli.cli.commands."), name
        assert isinstance(registry.load(name), Command), name
    assert command_names() == sorted(registry.COMMANDS)
    listed = [
        line.split()[0]
        for line in app_help().split("Commands:\n", 1)[1].split("\n\n")[0].splitlines()
    ]
    assert listed == list(registry.COMMANDS)


def app_help() -> str:
    from typer.testing import CliRunner

    return CliRunner().invoke(app, ["--help"]).stdout


def test_declaring_a_command_registers_nothing():
    """Importing a command module adds no command anywhere: the registry is the list."""
    code = (
        "import sys\n"
        "from ale_cli.cli.application import app\n"
        "import ale_cli.cli.commands.estimate\n"
        "print(len(app.registered_commands))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0"


def test_running_a_command_imports_no_other_command_module(tmp_path):
    _tiny_store(tmp_path / "s.npz", rows=40, seed=1)
    code = (
        "import sys\n"
        "from ale_cli.cli import _exit, main\n"
        f"sys.argv = ['ale', 'rebin', {str(tmp_path / 's.npz')!r}, '-o', "
        f"{str(tmp_path / 'r.json')!r}, '--quiet']\n"
        "import ale_cli.cli as c\n"
        "c._exit = lambda code: print(code, sorted(m for m in sys.modules "
        "if m.startswith('ale_cli.cli.commands.')))\n"
        "main()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    code_line = out.stdout.strip().splitlines()[-1]
    assert code_line.startswith("0 ")
    loaded = {m.rsplit(".", 1)[1] for m in eval(code_line[2:])}  # noqa: S307 (our own list)
    assert loaded == {"estimate"}


def test_help_imports_no_command_module():
    code = (
        "import sys; from ale_cli.cli import app\n"
        "try:\n    app(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('ale_cli.cli.commands.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_an_unknown_command_suggests_a_registered_one(cli):
    result = cli("rhal", "x.npz")
    assert result.exit_code == 2
    assert "No such command 'rhal'. Did you mean 'rhale'?" in result.stderr


def test_help_does_not_import_heavy_libraries():
    code = (
        "import sys; from ale_cli.cli import app\n"
        "try:\n    app(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('torch', 'onnxruntime', 'matplotlib', 'pandas', 'sklearn') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_plain_options_are_coerced_without_pydantic(tmp_path):
    """typer builds a pydantic adapter per parameter (0.1-0.2 s of every run); plain
    values of plain parameters skip it: running a command imports no pydantic."""
    _tiny_store(tmp_path / "s.npz", rows=50, seed=0)
    code = (
        "import sys; from ale_cli.cli import app\n"
        "try:\n"
        f"    app(['rhale', {str(tmp_path / 's.npz')!r}, '-o', {str(tmp_path / 'r.json')!r},"
        " '--max-bins', '7', '--alpha', '0.3', '--quiet'])\n"
        "except SystemExit as exc:\n    assert exc.code in (0, None), exc.code\n"
        "print('pydantic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "False"


@settings(max_examples=200, deadline=None)
@given(
    value=st.one_of(
        st.from_regex(r"[+-]?[0-9]{1,25}", fullmatch=True),
        st.from_regex(r"[+-]?[0-9]*\.?[0-9]*([eE][+-]?[0-9]{1,3})?", fullmatch=True),
        st.text(max_size=8),
        st.integers(-(10**20), 10**20),
        st.floats(allow_nan=True, allow_infinity=True),
        st.booleans(),
    ),
    kind=st.sampled_from([int, float, str, bool]),
    bounds=st.sampled_from([(None, None), (1, None), (None, 1), (0, 10)]),
)
def test_plain_coercion_equals_typers_where_it_applies(value, kind, bounds):
    """Where the fast coercion takes a value, typer's own (pydantic) coercion gives the
    same value and type; everything else is left to typer."""
    from typer._coercion import build_runtime_param, resolve_type_descriptor
    from typer.models import OptionInfo

    from ale_cli.cli.coercion import NOT_PLAIN, plain_value

    info = OptionInfo(min=bounds[0], max=bounds[1]) if kind in (int, float) else OptionInfo()
    fast = plain_value(kind, info, value)
    if fast is NOT_PLAIN:
        return
    runtime = build_runtime_param(resolve_type_descriptor(kind, info))

    class Param:
        multiple = False
        nargs = 1

    slow = runtime.coerce(value, param=Param(), ctx=None)
    assert type(fast) is type(slow) and fast == slow


def test_plain_path_coercion_equals_typers(tmp_path):
    from typer._coercion import build_runtime_param, resolve_type_descriptor
    from typer.models import OptionInfo

    from ale_cli.cli.coercion import plain_value

    (tmp_path / "f.txt").write_text("x")
    runtime = build_runtime_param(resolve_type_descriptor(Path, OptionInfo()))

    class Param:
        multiple = False
        nargs = 1

    for value in (str(tmp_path / "f.txt"), str(tmp_path / "missing.csv"), str(tmp_path), "-"):
        fast = plain_value(Path, OptionInfo(), value)
        assert fast == runtime.coerce(value, param=Param(), ctx=None) == Path(value)


def test_unknown_option_is_a_usage_error(cli):
    result = cli("compute", "a.pt", "b.csv", "--bins", "3")
    assert result.exit_code == 2
    assert "No such option: --bins" in result.stderr


# -- config files -----------------------------------------------------------------------


def test_config_supplies_options_and_flags_win(cli, tmp_path, rhale_model, sample_dir):
    config = tmp_path / "run.yaml"
    out = tmp_path / "from_config.npz"
    config.write_text(
        "compute:\n"
        f"  model: {rhale_model}\n"
        f"  data: {sample_dir / 'rhale_synthetic.csv'}\n"
        "  exclude: [y]\n"
        f"  out: {out}\n"
        "info:\n  json: true\n"  # other commands' sections are not this command's business
    )
    result = cli("compute", "--config", config)
    assert result.exit_code == 0, result.output
    assert out.exists()
    flag_out = tmp_path / "from_flag.npz"
    result = cli("compute", "--config", config, "-o", flag_out, "--features", "x3,x2,x1")
    assert result.exit_code == 0, result.output
    from ale_cli.store.npz import read_meta

    assert read_meta(flag_out)["feature_names"] == ["x3", "x2", "x1"]
    assert read_meta(flag_out)["options"]["exclude"] == ["y"]  # from the config


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "compute:\n  bins: 3\n",
            "unknown key 'bins' for 'ale compute' (known: batch-size, categorical, "
            "chunk-rows, data, data-format, discrete, drop-nonfinite, dropna, engine, exclude, "
            "features, force, inputs, json, method, model, model-format, out, output, pair, "
            "quiet, scheduler, step, trust, trust-pickle)",
        ),
        (
            "batch-size: many\n",
            "key 'batch-size' expects int, got 'many' (Input should be a "
            "valid integer, unable to parse string as an integer)",
        ),
        ("dropna: maybe\n", "key 'dropna' expects bool, got 'maybe'"),
        ("- a\n- b\n", "must hold a mapping of option names to values"),
        ("compute: [1, 2]\n", "section 'compute' must be a mapping"),
        ("a: [\n", "is not valid YAML: "),
    ],
)
def test_config_errors_name_the_key(cli, tmp_path, text, message):
    config = tmp_path / "bad.yaml"
    config.write_text(text)
    result = cli("compute", "--config", config, "m.pt", "d.csv")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: config file '{config}'")
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_shipped_config_is_valid(cli, tmp_path):
    config = Path(__file__).resolve().parent.parent / "configs" / "diabetes-mlp.yaml"
    # --help after --config: the file is parsed and checked, nothing runs
    result = cli("compute", "--config", config, "--help")
    assert result.exit_code == 0, result.output


# -- progress and quiet output --------------------------------------------------------------


def test_progress_bar_draws_and_ends_its_line():
    stream = io.StringIO()
    bar = ProgressBar(100, "local effects", enabled=True, stream=stream)
    bar(40)
    bar(60)
    bar.close()
    text = stream.getvalue()
    assert "local effects [" in text and "100/100 100%" in text and text.endswith("\n")
    silent = io.StringIO()
    quiet = ProgressBar(100, "x", enabled=False, stream=silent)
    quiet(100)
    quiet.close()
    assert silent.getvalue() == ""


def test_not_on_a_terminal_compute_prints_only_its_result(cli, tmp_path, rhale_model, sample_dir):
    result = cli(
        "compute",
        rhale_model,
        sample_dir / "rhale_synthetic.csv",
        "--exclude",
        "y",
        "-o",
        tmp_path / "s.npz",
    )
    assert result.exit_code == 0
    # the TorchScript model takes its columns by position: the one note says in which order
    assert result.stderr == "note: columns taken by position: x1, x2, x3\n"
    assert len(result.stdout.splitlines()) == 1


def test_rhale_option_defaults_are_the_core_defaults():
    """The CLI spells the paper's defaults as literals (importing the numpy core would
    slow down `ale --help`); they must stay the core's values."""
    from typer.main import get_command

    from ale_cli.core.rhale import DEFAULT_ALPHA, DEFAULT_MAX_BINS

    params = {p.name: p for p in get_command(app).commands["rhale"].params}  # type: ignore[attr-defined]
    assert params["max_bins"].default == DEFAULT_MAX_BINS
    assert params["alpha"].default == DEFAULT_ALPHA


def test_a_config_with_other_commands_sections_runs_from_the_console_script(tmp_path):
    """The console script builds only the invoked command, except with --config, whose
    file may hold sections for the other commands."""
    from ale_cli.store.npz import Store, write_store

    X = np.random.default_rng(1).normal(size=(40, 2))
    meta = {"schema_version": 2, "n_rows": 40}
    store = Store(X=X, local_effects=X, prediction=X[:, 0], feature_names=("a", "b"), meta=meta)
    write_store(tmp_path / "s.npz", store)
    config = tmp_path / "c.yaml"
    config.write_text("compute:\n  out: other.npz\nrebin:\n  bins: 4\n")
    out = tmp_path / "r.json"
    cmd = [sys.executable, "-m", "ale_cli", "rebin", str(tmp_path / "s.npz"), "-o", str(out)]
    proc = subprocess.run([*cmd, "--config", str(config)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "bins a=4 b=4" in proc.stdout


# -- typer's private API, pinned -------------------------------------------------------------


def test_typer_is_the_pinned_release_whose_private_api_coercion_uses():
    """ale_cli/cli/coercion.py uses typer's private coercion (it keeps pydantic out of
    every run); pyproject.toml pins typer exactly, and these are the names it needs."""
    import re

    import typer
    from typer import _click, _coercion, core
    from typer.models import OptionInfo

    pyproject = (Path(__file__).resolve().parent.parent / "pyproject.toml").read_text()
    assert re.search(r'"typer==([0-9.]+)"', pyproject).group(1) == typer.__version__
    for name in ("BadParameter", "ClickException", "NoArgsIsHelpError"):
        assert isinstance(getattr(_click.exceptions, name), type), name
    assert callable(_coercion.build_runtime_param)
    assert callable(core._TyperParameter.get_runtime_param)
    info = OptionInfo()
    for name in ("min", "max", "clamp", "parser", "exists", "file_okay", "dir_okay"):
        assert hasattr(info, name), name
    command = typer.main.get_command(app).commands["rhale"]  # type: ignore[attr-defined]
    param = next(p for p in command.params if p.name == "alpha")
    assert hasattr(param, "_runtime_param")
    descriptor = param.type_descriptor
    assert descriptor.annotation is float and descriptor.file_annotation is None
    assert descriptor.parameter_info.min == 0.0


# -- old spellings, hidden, for one release --------------------------------------------------


@pytest.mark.parametrize(
    ("name", "old", "new"),
    [
        ("compute", "--format", "--data-format"),
        ("compute", "--pairs", "--pair"),
        ("classic", "--format", "--data-format"),
        ("interact", "--format", "--data-format"),
        ("audit", "--report", "--json-report"),
        ("diff", "--formats", "--format"),
    ],
)
def test_an_old_spelling_is_hidden_and_its_renaming_is_in_the_help(cli, name, old, new):
    from ale_cli.cli import registry

    assert registry.load(name).aliases[old]
    text = cli(name, "--help").stdout
    options = text.split("Options:", 1)[1].split("\n\n")[0]
    assert f"{new} " in options and f"{old} " not in options
    assert f"{old} " in text.split("\n\n", 2)[-1] and "Renamed:" in text


def test_an_old_spelling_reaches_its_parameter(cli, tmp_path):
    """--format (the data's format) is read as --data-format: the error names the new flag."""
    args = ("compute", "m.pt", tmp_path / "d.csv", "-o", tmp_path / "s.npz")
    old = cli(*args, "--format", "xls")
    new = cli(*args, "--data-format", "xls")
    assert old.exit_code == new.exit_code == 2
    assert old.stderr == new.stderr
    assert old.stderr.startswith("error: --data-format ")


def test_an_old_spelling_with_its_new_one_is_an_error(cli, tmp_path):
    args = ("compute", "m.pt", tmp_path / "d.csv", "-o", tmp_path / "s.npz")
    result = cli(*args, "--format", "csv", "--data-format", "csv")
    assert result.exit_code == 2
    assert result.stderr == (
        "error: --data-format and --format (its old spelling) are both given; give --data-format\n"
    )


def test_a_config_key_in_an_old_spelling_sets_the_option_and_a_flag_wins(cli, tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("compute:\n  format: xls\n")
    args = ("compute", "m.pt", tmp_path / "d.csv", "-o", tmp_path / "s.npz", "--config", config)
    from_file = cli(*args)
    assert from_file.exit_code == 2
    assert from_file.stderr.startswith("error: --data-format ") and "'xls'" in from_file.stderr
    flag = cli(*args, "--data-format", "ods")
    assert flag.exit_code == 2
    assert flag.stderr.startswith("error: --data-format ") and "'ods'" in flag.stderr
