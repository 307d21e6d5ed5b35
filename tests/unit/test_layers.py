"""shared/ is three layers: core (pure: data in, data out), adapters (the only code that talks to Google, Slack
or the clock), app (what the functions run, wiring the two). These tests keep the arrows pointing one way."""

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
    """The walker must find an import of an adapter written the usual ways; else the tests above prove nothing."""
    sample = tmp_path / "sample.py"
    sample.write_text("from shared.adapters.workbench import Workbench\nimport google.cloud.notebooks_v2\n")
    assert {"shared.adapters.workbench", "google.cloud.notebooks_v2"} <= set(imported_modules(sample))
