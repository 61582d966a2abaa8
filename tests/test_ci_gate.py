"""docs/ci-gate.md runs as written: the release block, then the workflow's ``ale`` steps, as a
CI runner runs them (bash -e, ``$GITHUB_STEP_SUMMARY`` an empty file, ``$GITHUB_WORKSPACE``
the checkout), once on the release's model (passes) and once on a model whose bmi input is
zeroed (fails with exit 3, the failure in the JUnit report and the markdown)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "ci-gate.md"


def blocks(kind: str) -> list[str]:
    """The bodies of the page's fenced blocks whose info string is ``kind``."""
    found, lang, body = [], None, []
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            if lang is None:
                lang, body = line[3:].strip(), []
                continue
            if lang == kind:
                found.append("\n".join(body) + "\n")
            lang = None
        elif lang is not None:
            body.append(line)
    return found


def release_commands() -> str:
    (block,) = [b for b in blocks("sh") if "release/" in b]
    return block


def workflow_steps() -> list[str]:
    (workflow,) = [yaml.safe_load(b) for b in blocks("yaml") if "jobs:" in b]
    steps = workflow["jobs"]["gate"]["steps"]
    return [s["run"] for s in steps if "run" in s and "ale " in s["run"]]


def bash(script: str, ws: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``script`` as a runner runs a step (``bash -e``), ``ale`` being this checkout's."""
    prelude = f'ale() {{ "{sys.executable}" -m ale_cli "$@"; }}\n'
    return subprocess.run(
        ["bash", "-e", "-c", prelude + script],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def zero_bmi(model: Path) -> None:
    """Replace the TorchScript model with one that sees bmi (column 2) as 0."""
    import torch
    from torch import nn

    inner = torch.jit.load(str(model))

    class ZeroBmi(nn.Module):
        def __init__(self, m: torch.jit.ScriptModule) -> None:
            super().__init__()
            self.m = m

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            keep = torch.ones(x.shape[1], dtype=x.dtype)
            keep[2] = 0.0
            return self.m(x * keep)

    torch.jit.save(torch.jit.script(ZeroBmi(inner).eval()), str(model))


@pytest.fixture
def workspace(sample_dir: Path, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    ws = tmp_path / "checkout"
    (ws / "configs").mkdir(parents=True)
    shutil.copytree(sample_dir, ws / "sample_data")
    shutil.copy(ROOT / "configs" / "gate-naled.yaml", ws / "configs")
    summary = tmp_path / "step_summary.md"
    summary.write_text("")
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "GITHUB_WORKSPACE": str(ws),
        "GITHUB_STEP_SUMMARY": str(summary),
    }
    done = bash(release_commands(), ws, env)
    assert done.returncode == 0, done.stderr
    return ws, env


def run_workflow(ws: Path, env: dict[str, str]) -> list[subprocess.CompletedProcess[str]]:
    results = []
    for step in workflow_steps():
        results.append(bash(step, ws, env))
        if results[-1].returncode:
            break
    return results


def test_the_gate_passes_on_the_release_model(workspace) -> None:
    ws, env = workspace
    results = run_workflow(ws, env)
    assert [r.returncode for r in results] == [0, 0], results[-1].stderr
    page = Path(env["GITHUB_STEP_SUMMARY"]).read_text()
    assert "### ale audit passed: 0 failed" in page
    assert "Every rule passed." in page and "<details>" in page
    junit = ET.parse(ws / "out" / "gate.xml").getroot()
    assert junit.get("failures") == "0" and int(junit.get("tests")) == 30
    assert "::error" not in results[-1].stdout


def test_the_gate_fails_when_bmi_stops_reaching_the_model(workspace) -> None:
    ws, env = workspace
    zero_bmi(ws / "sample_data" / "models" / "diabetes_mlp.pt")
    results = run_workflow(ws, env)
    assert [r.returncode for r in results] == [0, 3], results[-1].stderr
    page = Path(env["GITHUB_STEP_SUMMARY"]).read_text()
    flagged = page.split("<details>")[0].splitlines()
    rows = [line for line in flagged if line.startswith("| FAIL |")]
    assert rows[0].startswith("| FAIL | bmi | drift | NALED ")
    assert re.search(r"-&gt; 0 \(change -\d", rows[0]), rows[0]
    # the page shows what this run prints: the heading and the rows it quotes
    (shown,) = [b for b in blocks("") if "### ale audit FAILED" in b]
    quoted = [line for line in shown.splitlines() if line.startswith(("###", "| FAIL", "| WARN"))]
    assert quoted and all(line in flagged for line in quoted), (quoted, flagged)
    junit = ET.parse(ws / "out" / "gate.xml").getroot()
    failed = [c.get("name") for c in junit.iter("testcase") if c.find("failure") is not None]
    assert "bmi: drift (rule 1)" in failed  # rule 2: its rank drift
    assert len(failed) == sum(line.startswith("| FAIL |") for line in flagged)
    # the annotation names the rules file relative to the workspace, at the rule's line
    assert "::error file=configs/gate-naled.yaml,line=6,title=ale audit%3A bmi drift::" in (
        results[-1].stdout
    )
