"""The places that broke the size rules (400 lines a file, 60 a function) when issue 26 extended them beyond shared/,
each with its size that day: they may only shrink (tests/unit/test_house_rules.py).

The list is exact: when a listed file or function shrinks, its number is lowered to its new size; when it is back
within the rule, or gone, its line leaves. Nothing is ever added here: a new file or function keeps the rule.
"""

from __future__ import annotations

# path from the root -> lines
FILE_EXCEPTIONS: dict[str, int] = {
    "simulators/stack.py": 484,
    "tests/guest/rig.py": 507,
    "tests/integration/test_faults.py": 505,
    "tests/integration/test_memory_and_resize.py": 551,
    "tests/integration/test_wording.py": 403,
    "tests/property/hostile.py": 651,
    "tests/simulators/test_slack_sim.py": 496,
}

# "path:Class.function" (nested functions by their enclosing names) -> lines, decorators not counted
FUNCTION_EXCEPTIONS: dict[str, int] = {
    "bench/__main__.py:main": 79,
    "bench/__main__.py:parse_args": 63,
    "bench/report.py:markdown": 161,
    "bench/report.py:metrics": 112,
    "bench/slow_answer.py:_one": 63,
    "bench/storm.py:run": 129,
    "demo/story.py:scenario": 77,
    "simulators/stack.py:LocalStack.start": 63,
    "tests/guest/test_guard_systemd.py:test_guard_in_debian12_systemd": 61,
}
