"""A request built from a command's or API function's options (``checks.make_request`` over
its ``locals()``) takes every field from a parameter or local of that name or a keyword
given, but the fields listed in LEFT_AT_DEFAULT: a parameter renamed away from its field
would otherwise leave the field at its default without a word."""

from __future__ import annotations

import ast
import dataclasses
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: the fields a function leaves at their defaults, by design
ALPHA = {"alpha"}  # RegionalRequest's: no option sets it
LEFT_AT_DEFAULT = {
    "ale_cli.api.compute": {"chunk_rows"},  # the API computes in memory or on the engine's parts
    "ale_cli.api.regional": ALPHA,
    "ale_cli.cli.commands.regional.regional": ALPHA,
}


def _calls() -> list[tuple[str, ast.FunctionDef, ast.Call]]:
    found = []
    for path in sorted((ROOT / "ale_cli").rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for fn in ast.walk(ast.parse(path.read_text())):
            if not isinstance(fn, ast.FunctionDef):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "make_request":
                    found.append((module, fn, node))
    return found


CALLS = _calls()


def test_the_commands_and_api_functions_build_their_requests_so():
    assert len(CALLS) >= 12  # rebin, rhale, regional, classic, interact, compute: CLI and API


@pytest.mark.parametrize("module, fn, call", CALLS, ids=[f"{m}.{f.name}" for m, f, _ in CALLS])
def test_every_field_of_a_request_is_given(module: str, fn: ast.FunctionDef, call: ast.Call):
    assert isinstance(call.args[1], ast.Call) and ast.unparse(call.args[1]) == "locals()"
    cls = eval(ast.unparse(call.args[0]), vars(importlib.import_module(module)))  # noqa: S307
    params = {a.arg for a in fn.args.args + fn.args.kwonlyargs}
    assigned = {
        t.id
        for node in ast.walk(fn)
        if isinstance(node, ast.Assign) and node.lineno < call.lineno
        for t in node.targets
        if isinstance(t, ast.Name)
    }
    given = {k.arg for k in call.keywords}
    fields = {f.name for f in dataclasses.fields(cls) if f.init}
    default = LEFT_AT_DEFAULT.get(f"{module}.{fn.name}", set())
    assert fields - params - assigned - given == default, fn.name
