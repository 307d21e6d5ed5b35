"""Time is a parameter: nothing in shared/ reads the time or waits except through a Clock (shared/adapters/clock.py).

A direct time.monotonic() or datetime.now() is a deadline, a backoff or a stamp that a test can only check by
waiting for real; so each reference to one of the standard library's clocks (a call, or a default argument
such as `clock=time.monotonic`) outside clock.py fails here, listed as file:line.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT / "shared"
CLOCK = SHARED / "adapters" / "clock.py"

TIME_FUNCTIONS = {"time", "monotonic", "sleep", "time_ns", "perf_counter", "monotonic_ns", "perf_counter_ns"}
CLASS_FUNCTIONS = {"datetime": {"now", "utcnow", "today"}, "date": {"today"}}


def clock_reads(source: str) -> list[tuple[int, str]]:
    """(line, what) for every reference to a standard clock in a module's source, however it was imported."""
    tree = ast.parse(source)
    time_modules: set[str] = set()  # names bound to the time module
    datetime_modules: set[str] = set()  # names bound to the datetime module
    classes: dict[str, str] = {}  # name -> "datetime" | "date"
    functions: dict[str, str] = {}  # name -> "time.<function>", from `from time import ...`
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name
                if alias.name == "time":
                    time_modules.add(bound)
                elif alias.name == "datetime":
                    datetime_modules.add(bound)
        elif isinstance(node, ast.ImportFrom) and node.module in ("time", "datetime"):
            for alias in node.names:
                bound = alias.asname or alias.name
                if node.module == "time" and alias.name in TIME_FUNCTIONS:
                    functions[bound] = f"time.{alias.name}"
                elif node.module == "datetime" and alias.name in CLASS_FUNCTIONS:
                    classes[bound] = alias.name
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in functions:
            found.append((node.lineno, functions[node.id]))
        if not isinstance(node, ast.Attribute):
            continue
        owner = node.value
        if isinstance(owner, ast.Name) and owner.id in time_modules and node.attr in TIME_FUNCTIONS:
            found.append((node.lineno, f"time.{node.attr}"))
        cls = None
        if isinstance(owner, ast.Name):
            cls = classes.get(owner.id)
        elif isinstance(owner, ast.Attribute) and isinstance(owner.value, ast.Name):
            cls = owner.attr if owner.value.id in datetime_modules and owner.attr in CLASS_FUNCTIONS else None
        if cls is not None and node.attr in CLASS_FUNCTIONS[cls]:
            found.append((node.lineno, f"{cls}.{node.attr}"))
    return sorted(found)


def test_nothing_in_shared_reads_the_time_but_the_clock() -> None:
    offences = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for path in sorted(SHARED.rglob("*.py"))
        if path != CLOCK
        for line, what in clock_reads(path.read_text())
    ]
    assert not offences, "take a Clock (shared/adapters/clock.py) instead:\n" + "\n".join(offences)


def test_the_clock_itself_is_found_reading_the_time() -> None:
    """The one place allowed to: if this found nothing, the check above would prove nothing."""
    assert {what for _, what in clock_reads(CLOCK.read_text())} >= {"time.monotonic", "time.sleep", "datetime.now"}


def test_every_way_of_reaching_a_clock_is_found() -> None:
    source = """
import time
import time as t
import datetime
import datetime as dt_module
from time import monotonic, sleep as nap
from datetime import date, datetime as DT

def f(clock=time.monotonic, wait=nap):
    t.sleep(1)
    time.perf_counter()
    time.time_ns()
    monotonic()
    datetime.datetime.now()
    dt_module.date.today()
    DT.utcnow()
    date.today()
    time.strftime("%Y")  # formats a time it is given: no clock read
    DT.fromisoformat("2026-01-01")
"""
    found = clock_reads(source)
    assert [what for _, what in found] == [
        "time.monotonic", "time.sleep", "time.sleep", "time.perf_counter", "time.time_ns", "time.monotonic",
        "datetime.now", "date.today", "datetime.utcnow", "date.today",
    ]
    assert [line for line, _ in found] == [9, 9, 10, 11, 12, 13, 14, 15, 16, 17]
