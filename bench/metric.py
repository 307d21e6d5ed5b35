"""One row of the benchmark's table, apart from report.py so that a benchmark builds its rows without importing it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    key: str
    name: str
    value: float | None
    unit: str
    target: str  # as written in the table, e.g. "< 600 ms"; "" for information only
    passed: bool | None  # None: information only
    shown: str = ""  # the value as the table shows it, when more than value + unit

    def cell(self) -> str:
        if self.shown:
            return self.shown
        if self.value is None:
            return "not measured"
        return f"{self.value:g} {self.unit}".strip()

    def verdict(self) -> str:
        if self.passed is None:
            return "info"
        return "PASS" if self.passed else "**FAIL**"
