"""The sample builder: an optional model is skipped, with a note, when its package is broken."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest


def test_gbr_onnx_is_skipped_when_skl2onnx_cannot_be_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ale_cli.sample import MODEL_BUILDERS

    # None in sys.modules: "import skl2onnx" raises ImportError, as a broken install does
    monkeypatch.setitem(sys.modules, "skl2onnx", None)
    path = tmp_path / "diabetes_gbr.onnx"
    assert MODEL_BUILDERS["diabetes_gbr.onnx"](path) is None
    assert not path.exists()
    note = capsys.readouterr().err
    assert note.startswith(f"skipped {path}: diabetes_gbr.onnx needs skl2onnx")
    assert "pip install -e '.[test]'" in note
