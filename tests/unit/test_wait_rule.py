"""Every asserted wait of tests/integration allows at least PATIENCE_S (120 s), so none slips back under it.

A wait that ran out while the flow was still under way failed loaded runs 8, 20 and 33 (docs/testing.md, "Loaded
runs"): on two busy cores a fresh function process's first request takes 10-19 s. A wait that is met costs
nothing, so the rule costs nothing when the suite passes. Read from the syntax: each call of a wait (the names in
WAITS) with its timeout evaluated in its module, or, where none is given, the waited function's own default.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from simulators.function_process import FunctionProcess
from simulators.polling import PATIENCE_S
from simulators.slack.state import SlackState
from simulators.stack import LocalStack
from simulators.workbench.state import SimulatorState

INTEGRATION = Path(__file__).resolve().parents[1] / "integration"
# A wait called as a method (`stack.slack.wait_for(...)`) is the stand-in's: its default is read from there.
METHODS: dict[str, Callable[..., Any]] = {
    "wait_for": SlackState.wait_for, "wait_until": SimulatorState.wait_until,
    "wait_idle": LocalStack.wait_idle, "wait_ready": FunctionProcess.wait_ready,
}
WAITS = frozenset(METHODS) | {"wait_alert", "wait_reply"}


def called_name(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return call.func.id if isinstance(call.func, ast.Name) else None


def timeout_argument(call: ast.Call, name: str) -> ast.expr | None:
    """The timeout as written: the keyword, or the first positional one of wait_idle and of the helpers' wait_for."""
    for keyword in call.keywords:
        if keyword.arg == "timeout":
            return keyword.value
    if name == "wait_idle" and call.args:
        return call.args[0]
    if name == "wait_for" and isinstance(call.func, ast.Name) and len(call.args) > 1:
        return call.args[1]
    return None


def default_timeout(call: ast.Call, name: str, module: ModuleType) -> float | None:
    """The waited function's own default: a helper of the module by name, else the stand-in's method."""
    waited = getattr(module, name, None) if isinstance(call.func, ast.Name) else METHODS.get(name)
    if waited is None:
        return None
    parameter = inspect.signature(waited).parameters.get("timeout")
    return None if parameter is None else float(parameter.default)


def short_waits(tree: ast.Module, module: ModuleType, where: str) -> Iterator[str]:
    for call in (node for node in ast.walk(tree) if isinstance(node, ast.Call)):
        name = called_name(call)
        if name not in WAITS:
            continue
        written = timeout_argument(call, name)
        try:
            allowed = (default_timeout(call, name, module) if written is None
                       else eval(compile(ast.Expression(written), where, "eval"), vars(module)))
        except NameError:
            continue  # a helper handing its own `timeout` on: the helper's callers are checked
        if allowed is not None and allowed < PATIENCE_S:
            yield f"{where}:{call.lineno} {name} allows {allowed:g} s"


def integration_modules() -> Iterator[tuple[Path, ModuleType]]:
    for path in sorted(INTEGRATION.glob("*.py")):
        yield path, importlib.import_module(f"tests.integration.{path.stem}")


def test_every_asserted_wait_of_the_wire_tests_allows_the_suites_patience() -> None:
    offenders = [line for path, module in integration_modules()
                 for line in short_waits(ast.parse(path.read_text()), module, path.name)]
    assert not offenders, "\n".join(offenders)


@pytest.mark.parametrize("source", [
    "def test(stack):\n    assert wait_alert(stack, 'n', 'Restarted')\n",  # the helper's own default
    "def test(stack):\n    assert stack.slack.wait_for(lambda: True, timeout=10)\n",
    "def test(stack):\n    assert stack.workbench.wait_until(lambda: True, timeout=HOLD_S + 5)\n",
    "def test(stack):\n    assert stack.wait_idle(30)\n",
    "def test(stack):\n    wait_alert(stack, 'n', 'Restarted', timeout=20)\n",
])
def test_the_walker_finds_a_short_wait(source: str) -> None:
    module = ModuleType("sample")
    module.HOLD_S = 3.0  # type: ignore[attr-defined]
    exec("def wait_alert(stack, name, needle, timeout=10.0): pass", vars(module))
    assert list(short_waits(ast.parse(source), module, "sample.py"))


def test_the_walker_passes_the_suites_waits() -> None:
    module = importlib.import_module("tests.integration.helpers")
    source = ("def test(stack, predicate):\n    assert wait_for(predicate)\n    assert stack.wait_idle(PATIENCE_S)\n"
              "    assert stack.slack.wait_for(predicate, timeout=PATIENCE_S)\n")
    assert not list(short_waits(ast.parse(source), module, "sample.py"))
