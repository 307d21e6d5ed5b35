"""shared/ is three layers: core (pure: data in, data out), adapters (the only code that talks to Google, Slack
or the clock), app (what the functions run, wiring the two). These tests keep the arrows pointing one way, and keep
the whole tree (shared, functions, tools, simulators, bench, demo) free of import cycles, TYPE_CHECKING ones too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT / "shared"
LAYERS = ("core", "adapters", "app")
# What a layer may import from the others, and which outside libraries it may touch.
ALLOWED = {"core": {"core"}, "adapters": {"core", "adapters"}, "app": {"core", "adapters", "app"}}
IO_LIBRARIES = ("google", "slack_sdk", "slack_bolt", "requests", "grpc", "functions_framework", "flask", "urllib3")


def imported_modules(path: Path) -> list[str]:
    modules: list[str] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.append(node.module)
            modules += [f"{node.module}.{alias.name}" for alias in node.names if node.module in ("shared",)]
        elif isinstance(node, ast.Import):
            modules += [alias.name for alias in node.names]
    return modules


def modules_of(layer: str) -> list[Path]:
    return sorted((SHARED / layer).rglob("*.py"))  # sub-packages too (core/messages/)


def test_every_module_of_shared_sits_in_a_layer() -> None:
    loose = [p.name for p in SHARED.glob("*.py") if p.name != "__init__.py"]
    assert not loose, f"modules outside core/adapters/app: {loose}"
    assert {p.name for p in SHARED.iterdir() if p.is_dir() and p.name != "__pycache__"} == set(LAYERS)


@pytest.mark.parametrize("layer", LAYERS)
def test_a_layer_imports_only_the_layers_beneath_it(layer: str) -> None:
    wrong = {
        f"{path.relative_to(ROOT)} imports {module}"
        for path in modules_of(layer)
        for module in imported_modules(path)
        if module.startswith("shared.") and module.split(".")[1] not in ALLOWED[layer]
    }
    assert not wrong, sorted(wrong)


def test_the_core_touches_no_client_library_and_no_clock() -> None:
    wrong = {
        f"{path.relative_to(ROOT)} imports {module}"
        for path in modules_of("core")
        for module in imported_modules(path)
        if module.split(".")[0] in IO_LIBRARIES or module in ("time", "threading", "socket", "os")
    }
    assert not wrong, sorted(wrong)


def test_the_layer_check_sees_a_wrong_arrow(tmp_path: Path) -> None:
    """The walker must find an import of an adapter written the usual ways, one for annotations only included; else
    the tests above prove nothing."""
    sample = tmp_path / "sample.py"
    sample.write_text("from typing import TYPE_CHECKING\nimport google.cloud.notebooks_v2\n"
                      "if TYPE_CHECKING:\n    from shared.adapters.workbench import Workbench\n")
    assert {"shared.adapters.workbench", "google.cloud.notebooks_v2"} <= set(imported_modules(sample))


# ---- no import cycle anywhere in the tree -------------------------------------------------------
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
