"""`ale compute`: the store's contents and meta, caching, and what invalidates the cache."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import ale_cli.models as models
from ale_cli.estimators import inputs
from ale_cli.store.npz import META_KEYS, read_store


@pytest.fixture()
def rhale_inputs(tmp_path: Path, sample_dir: Path, rhale_model: Path) -> tuple[Path, Path]:
    """Private copies of the RHALE model and data, so tests may change their bytes."""
    model = shutil.copy(rhale_model, tmp_path / "f.pt")
    data = shutil.copy(sample_dir / "rhale_synthetic.csv", tmp_path / "d.csv")
    return Path(model), Path(data)


@pytest.fixture()
def count_model_loads(monkeypatch) -> list[Path]:
    calls: list[Path] = []
    real = models.load_model

    def counting(path, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(path)
        return real(path, **kwargs)

    monkeypatch.setattr(models, "load_model", counting)
    monkeypatch.setattr(inputs, "load_model", counting)
    return calls


def test_store_holds_data_effects_and_meta(cli, rhale_inputs, tmp_path: Path):
    model, data = rhale_inputs
    out = tmp_path / "s.npz"
    result = cli("compute", model, data, "--exclude", "y", "-o", out)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("computed local effects: 1000 rows x 3 features, autodiff, ")
    assert result.stdout.rstrip().endswith(f"-> '{out}' (cache miss)")
    store = read_store(out)
    import pandas as pd

    frame = pd.read_csv(data)
    np.testing.assert_array_equal(store.X, frame[["x1", "x2", "x3"]].to_numpy())
    np.testing.assert_allclose(store.local_effects[:, 1], -5 + 10 * (frame["x3"] > 0), atol=1e-12)
    assert store.feature_names == ("x1", "x2", "x3")
    meta = store.meta
    assert set(META_KEYS) <= set(meta)
    assert meta["method"] == "autodiff" and meta["n_rows"] == 1000
    assert meta["data"]["rows_dropped"] == 0 and meta["data"]["rows_read"] == 1000
    import hashlib

    assert meta["model"]["sha256"] == hashlib.sha256(model.read_bytes()).hexdigest()
    assert meta["data"]["sha256"] == hashlib.sha256(data.read_bytes()).hexdigest()
    assert meta["options"]["exclude"] == ["y"]
    assert {"load_data_s", "load_model_s", "local_effects_s"} <= set(meta["timings"])


def test_one_feature_is_one_feature_not_features(cli, rhale_inputs, tmp_path: Path):
    model, data = rhale_inputs
    out = tmp_path / "s.npz"
    result = cli("compute", model, data, "--exclude", "y", "--features", "x2", "-o", out)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("computed local effects: 1000 rows x 1 feature, autodiff, ")
    info = cli("info", out)
    assert info.stdout.splitlines()[-1] == f"store '{out}': 1000 rows x 1 feature", info.output


def test_rerun_is_a_cache_hit_without_loading_the_model(
    cli, rhale_inputs, tmp_path, count_model_loads
):
    model, data = rhale_inputs
    out = tmp_path / "s.npz"
    assert cli("compute", model, data, "--exclude", "y", "-o", out).exit_code == 0
    assert len(count_model_loads) == 1
    stamp = out.stat().st_mtime_ns
    again = cli("compute", model, data, "--exclude", "y", "-o", out)
    assert again.exit_code == 0
    assert again.stdout.startswith(f"cache hit: '{out}' already holds local effects")
    assert len(count_model_loads) == 1 and out.stat().st_mtime_ns == stamp
    forced = cli("compute", model, data, "--exclude", "y", "-o", out, "--force")
    assert "(cache miss)" in forced.stdout and len(count_model_loads) == 2


def _flip_last_byte(path: Path) -> None:
    raw = bytearray(path.read_bytes())
    raw[-2] = ord("7") if raw[-2] != ord("7") else ord("8")  # a digit of the last value
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("change", ["data", "model", "option"])
def test_any_change_recomputes(cli, rhale_inputs, tmp_path, count_model_loads, change):
    model, data = rhale_inputs
    out = tmp_path / "s.npz"
    args = ["compute", model, data, "--exclude", "y", "-o", out]
    assert cli(*args).exit_code == 0
    key_before = read_store(out).meta["cache_key"]
    if change == "data":
        _flip_last_byte(data)
        reason = "the data file changed"
    elif change == "model":
        with open(model, "ab") as fh:  # a trailing byte: still a valid zip archive
            fh.write(b"\0")
        reason = "the model file changed"
    else:
        args += ["--features", "x1,x2,x3"]
        reason = "the options changed"
    result = cli(*args)
    assert result.exit_code == 0, result.output
    assert "(cache miss)" in result.stdout
    assert f"recomputed '{out}': {reason} since it was made" in result.stderr
    assert len(count_model_loads) == 2
    assert read_store(out).meta["cache_key"] != key_before


def test_batch_size_does_not_invalidate_the_cache(cli, rhale_inputs, tmp_path):
    model, data = rhale_inputs
    out = tmp_path / "s.npz"
    assert cli("compute", model, data, "--exclude", "y", "-o", out).exit_code == 0
    again = cli("compute", model, data, "--exclude", "y", "-o", out, "--batch-size", "64")
    assert again.stdout.startswith("cache hit")


def test_output_that_is_not_a_store_is_not_overwritten(cli, rhale_inputs, tmp_path):
    model, data = rhale_inputs
    out = tmp_path / "notes.npz"
    out.write_text("my notes")
    result = cli("compute", model, data, "--exclude", "y", "-o", out)
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: output '{out}' exists and is not an ale local-effects store (.npz with a "
        "readable meta); remove it, choose another output, or pass --force to overwrite it\n"
    )
    assert out.read_text() == "my notes"


def test_info_prints_meta_as_table_and_json(cli, rhale_inputs, tmp_path):
    model, data = rhale_inputs
    out = tmp_path / "s.npz"
    cli("compute", model, data, "--exclude", "y", "-o", out)
    as_json = cli("info", out, "--json")
    assert as_json.exit_code == 0
    result = json.loads(as_json.stdout)
    assert result["command"] == "info" and result["details"]["meta"] == read_store(out).meta
    table = cli("info", out)
    rows = dict(line.split(None, 1) for line in table.stdout.splitlines())
    assert rows["method"] == "autodiff" and rows["n_rows"] == "1000"
    assert rows["model.path"] == str(model)
    assert rows["feature_names"] == "x1, x2, x3"
    missing = cli("info", tmp_path / "nope.npz")
    assert missing.exit_code == 2
    assert missing.stderr == (
        f"error: store '{tmp_path / 'nope.npz'}' does not exist; create it with 'ale compute'\n"
    )
