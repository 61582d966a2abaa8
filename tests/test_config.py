"""Config files: the bounded YAML loader, typed values, paths relative to the config file."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from ale_cli.errors import InputError
from ale_cli.io.yamlsafe import MAX_ALIASES, MAX_BYTES, load_yaml
from ale_cli.store.npz import SCHEMA_VERSION, Store, read_meta, write_store

# the 335-byte "billion laughs": 9 levels of 9 aliases, 9^9 strings once expanded
ALIAS_BOMB = "\n".join(
    [
        'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
        *(
            f"{c}: &{c} [{','.join([f'*{p}'] * 9)}]"
            for p, c in zip("abcdefgh", "bcdefghi", strict=True)
        ),
    ]
)
# fewer aliases than the limit, still a million values once expanded
WIDE_BOMB = "\n".join(
    [
        "a: &a [x, x, x, x, x, x, x, x, x, x]",
        *(f"{c}: &{c} [{','.join([f'*{p}'] * 10)}]" for p, c in zip("abcde", "bcdef", strict=True)),
    ]
)


def write(tmp_path: Path, text: str, name: str = "c.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def small_store(path: Path) -> Path:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    write_store(
        path,
        Store(
            X=X,
            local_effects=np.ones_like(X),
            prediction=X.sum(axis=1),
            feature_names=("a", "b"),
            meta={"schema_version": SCHEMA_VERSION, "n_rows": 40},
        ),
    )
    return path


# -- the loader --------------------------------------------------------------------------------


def test_alias_bomb_is_small_and_refused_fast(tmp_path: Path):
    path = write(tmp_path, ALIAS_BOMB)
    assert len(path.read_bytes()) < 400
    with pytest.raises(InputError, match=f"is refused: more than {MAX_ALIASES} aliases"):
        load_yaml(path)


def test_wide_alias_expansion_is_refused(tmp_path: Path):
    assert WIDE_BOMB.count("*") < MAX_ALIASES
    with pytest.raises(InputError, match="expands to more than 100000 values"):
        load_yaml(write(tmp_path, WIDE_BOMB))


def test_a_few_aliases_are_fine(tmp_path: Path):
    data = load_yaml(write(tmp_path, "base: &b [s1, s2]\nrebin:\n  features: *b\n"))
    assert data == {"base": ["s1", "s2"], "rebin": {"features": ["s1", "s2"]}}


def test_self_reference_is_refused(tmp_path: Path):
    with pytest.raises(InputError, match="refers to itself"):
        load_yaml(write(tmp_path, "a: &a [1, *a]\n"))


@pytest.mark.parametrize(
    ("text", "key", "line"),
    [
        ("bins: 3\nbins: 4\n", "bins", 2),
        ("rebin:\n  bins: 3\n  center: mean\n  bins: 5\n", "bins", 4),
        ("a: 1\nb: 2\na: 3\n", "a", 3),
    ],
)
def test_duplicate_keys_name_the_key(tmp_path: Path, text: str, key: str, line: int):
    with pytest.raises(InputError) as info:
        load_yaml(write(tmp_path, text))
    assert str(info.value).endswith(
        f"is refused: key '{key}' appears twice in the same mapping (line {line})"
    )


def test_size_cap(tmp_path: Path):
    path = write(tmp_path, "# " + "x" * MAX_BYTES + "\n")
    with pytest.raises(InputError, match="is larger than 1024 KiB"):
        load_yaml(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("!!python/object/apply:os.system ['true']\n", "is not valid YAML: could not determine"),
        ("[" * 5000 + "]" * 5000, "nested too deeply|not valid YAML"),
        ("a: [\n", "is not valid YAML"),
    ],
)
def test_unsafe_or_broken_yaml(tmp_path: Path, text: str, message: str):
    with pytest.raises(InputError, match=message):
        load_yaml(write(tmp_path, text))


def test_not_utf8_and_not_a_file(tmp_path: Path):
    path = tmp_path / "c.yaml"
    path.write_bytes(b"bins: \xff\xfe\n")
    with pytest.raises(InputError, match="is not UTF-8 text"):
        load_yaml(path)
    with pytest.raises(InputError, match="is not a regular file"):
        load_yaml(tmp_path)
    with pytest.raises(InputError, match="does not exist"):
        load_yaml(tmp_path / "missing.yaml")


# -- through the CLI ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("rebin:\n  bins: true\n", "key 'bins' expects int, got a boolean (true)"),
        ("rebin:\n  bins: no\n", "key 'bins' expects int, got a boolean (false)"),
        ("rhale:\n  alpha: .nan\n", "key 'alpha' expects a finite number, got nan"),
        ("rhale:\n  alpha: .inf\n", "key 'alpha' expects a finite number, got inf"),
        ("rhale:\n  alpha: -.inf\n", "key 'alpha' expects a finite number, got -inf"),
        ("rhale:\n  alpha: nan\n", "key 'alpha' expects float, got 'nan' (expected a finite"),
        ("rhale:\n  max-bins: 1.5\n", "key 'max-bins' expects int, got 1.5"),
        ("rebin:\n  bins: 3\n  bins: 4\n", "key 'bins' appears twice in the same mapping"),
        ("rhale:\n  max-bins: 3\n  max_bins: 4\n", "keys 'max-bins' and 'max_bins' both set"),
        (ALIAS_BOMB, "more than 64 aliases"),
    ],
)
def test_config_values_through_the_cli(cli, tmp_path: Path, text: str, message: str):
    config = write(tmp_path, text)
    command = "rhale" if text.startswith("rhale") else "rebin"
    store = small_store(tmp_path / "s.npz")
    result = cli(command, store, "-o", tmp_path / "out.json", "--config", config)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: config file '{config}'")
    assert message in result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert not (tmp_path / "out.json").exists()


def test_relative_paths_are_relative_to_the_config_file(cli, tmp_path: Path, monkeypatch):
    project = tmp_path / "project"
    (project / "out").mkdir(parents=True)
    small_store(project / "out" / "s.npz")
    config = write(project, "rebin:\n  store: out/s.npz\n  out: out/s.json\n  bins: 4\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    result = cli("rebin", "--config", config)
    assert result.exit_code == 0, result.output
    assert (project / "out" / "s.json").is_file()
    assert list(elsewhere.iterdir()) == []


def test_relative_config_path_and_flags_stay_relative_to_cwd(cli, tmp_path: Path, monkeypatch):
    """The config file's own path may be relative; a flag on the command line is relative to
    the current directory as always."""
    project = tmp_path / "project"
    project.mkdir()
    small_store(project / "s.npz")
    write(project, "rebin:\n  store: s.npz\n  out: from-config.json\n")
    monkeypatch.chdir(tmp_path)
    result = cli("rebin", "--config", "project/c.yaml", "-o", "flag.json")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "flag.json").is_file()
    assert not (project / "from-config.json").exists()


def test_compute_config_from_another_directory(
    cli, tmp_path: Path, monkeypatch, rhale_model: Path, sample_dir: Path
):
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(rhale_model, project / "model.pt")
    shutil.copy(sample_dir / "rhale_synthetic.csv", project / "data.csv")
    config = write(
        project,
        "compute:\n  model: model.pt\n  data: data.csv\n  exclude: [y]\n  out: effects.npz\n",
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    result = cli("compute", "--config", config, "-q")
    assert result.exit_code == 0, result.output
    meta = read_meta(project / "effects.npz")
    assert meta["model"]["path"] == str(project / "model.pt")
    assert list(elsewhere.iterdir()) == []
