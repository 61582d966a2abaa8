"""The package's shape in numbers: import circles, upward imports, long modules, size.

Run ``python scripts/layers.py`` (``make lint`` does). Every ``import`` of an
``ale_cli`` module counts, also one inside a function. Exit status 1 when a limit
is broken, 0 otherwise; ``--report`` prints the numbers without judging them.

Layers, lowest first: a module may import from its own layer or a lower one.
``ale_cli/__init__.py`` (the lazy re-export of the API) is left out of the graph.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

PACKAGE = "ale_cli"
MAX_MODULE_LINES = 500
MAX_PACKAGE_LINES = 24_000

# Lowest first. The first name of a module's path below ale_cli picks its layer;
# a top-level module (ale_cli/x.py) is looked up by its own name.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "signals", "checks", "core"),
    ("io",),
    ("models", "data"),
    ("store", "summary"),
    ("outputs",),
    ("passes",),
    ("estimators",),
    ("engines",),
    ("plot", "audit"),
    ("report",),
    ("api", "job", "sample"),
    ("cli", "entry", "__main__"),
)


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported(tree: ast.AST, name: str, is_package: bool, known: set[str]) -> set[str]:
    """The ale_cli modules a module imports, at any depth of its code."""
    found: set[str] = set()
    base = name.split(".") if is_package else name.split(".")[:-1]
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[: len(base) - node.level + 1]
                stem = ".".join(anchor + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            targets = [f"{stem}.{alias.name}" for alias in node.names] + [stem]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != PACKAGE and target != name:
                found.add(target)
    return found


def layer_of(module: str) -> int | None:
    parts = module.split(".")
    head = parts[1] if len(parts) > 1 else parts[0]
    for rank, names in enumerate(LAYERS):
        if head in names:
            return rank
    return None


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=PACKAGE)
    parser.add_argument("--report", action="store_true", help="print, never fail")
    parser.add_argument(
        "--max-package-lines",
        type=int,
        default=MAX_PACKAGE_LINES,
        help=f"the package's size limit (default: the target, {MAX_PACKAGE_LINES})",
    )
    args = parser.parse_args(argv)
    root = Path(args.root)
    files = sorted(root.rglob("*.py"))
    names = {module_name(f, root.parent): f for f in files}
    known = set(names)
    graph: dict[str, set[str]] = {}
    lines: dict[str, int] = {}
    for name, path in names.items():
        text = path.read_text()
        lines[name] = text.count("\n")
        if name == PACKAGE:
            continue
        tree = ast.parse(text, filename=str(path))
        graph[name] = imported(tree, name, path.name == "__init__.py", known) - {PACKAGE}

    problems: list[str] = []
    for component in circles(graph):
        problems.append("import circle: " + " <-> ".join(component))
    for name, targets in sorted(graph.items()):
        mine = layer_of(name)
        if mine is None:
            problems.append(f"no layer: {name}")
            continue
        for target in sorted(targets):
            theirs = layer_of(target)
            if theirs is not None and theirs > mine:
                problems.append(f"upward import: {name} -> {target}")
    for name, count in sorted(lines.items()):
        if count > MAX_MODULE_LINES:
            problems.append(f"long module: {name} ({count} lines > {MAX_MODULE_LINES})")
    total = sum(lines.values())
    if total > args.max_package_lines:
        problems.append(f"package: {total} lines > {args.max_package_lines}")

    for line in problems:
        print(line)
    n_circles = sum(1 for p in problems if p.startswith("import circle"))
    n_up = sum(1 for p in problems if p.startswith("upward"))
    n_long = sum(1 for p in problems if p.startswith("long module"))
    print(
        f"{len(names)} modules, {total} lines; {n_circles} import circles, "
        f"{n_up} upward imports, {n_long} modules over {MAX_MODULE_LINES} lines"
    )
    return 0 if args.report or not problems else 1


if __name__ == "__main__":
    sys.exit(main())
