"""The whole tree (shared, functions, tools, simulators, bench, demo) is free of import cycles, TYPE_CHECKING ones
too. shared/'s layer rules are import-linter contracts (pyproject.toml [tool.importlinter], run by `make lint`);
import-linter has no contract for this one: its acyclic_siblings also refuses two packages that import each other
without any module cycle (simulators.workbench and simulators.workbench_grpc do)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TREE = ("shared", "functions", "tools", "simulators", "bench", "demo")


def module_name(path: Path, root: Path = ROOT) -> str:
    """The dotted name a file is imported by (a package's __init__.py is the package)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path = ROOT, packages: tuple[str, ...] = TREE) -> dict[str, set[str]]:
    """Each module of the tree and the modules of the tree it imports: at the top, in a function, or under
    TYPE_CHECKING alike (a cycle hidden from the interpreter is still one a reader must walk round). `from pkg
    import name` is an arrow to pkg.name when that is a module, else to pkg itself."""
    files = {module_name(p, root): p for top in packages for p in sorted((root / top).rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        arrows: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                arrows |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1]) if node.level else ""
                source = ".".join(p for p in (base, node.module or "") if p)
                arrows |= {f"{source}.{a.name}" if f"{source}.{a.name}" in files else source for a in node.names}
        graph[name] = {a for a in arrows if a in files and a != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group: list[str] = []
            while not group or group[-1] != node:
                group.append(stack.pop())
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_no_import_cycle_in_the_tree() -> None:
    assert cycles(import_graph()) == [], "import cycles (TYPE_CHECKING imports included)"


def test_the_cycle_check_sees_a_cycle_hidden_under_type_checking(tmp_path: Path) -> None:
    """A service importing a module that imports the service back only for its annotations is a cycle."""
    package = tmp_path / "shared" / "app"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('"""p"""\n')
    (package / "service.py").write_text("from shared.app import command\n")
    (package / "command.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from shared.app.service import Service\n")
    (package / "alone.py").write_text("from . import command\n")
    graph = import_graph(tmp_path, ("shared",))
    assert graph["shared.app.alone"] == {"shared.app.command"}
    assert cycles(graph) == [["shared.app.command", "shared.app.service"]]
