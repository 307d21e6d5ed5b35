"""How `pytest -n N` (make test) shares tests out: a module's local stacks start once per worker, not per test.

A wire module builds its stacks (four functions-framework processes and the simulators) in module-scoped
fixtures. Under xdist's per-test `load` every worker builds every module's stacks; under `loadscope` or
`loadfile` the largest module (test_faults) runs on one worker, a long serial tail, while the others sit idle.
So `--dist loadscope` (pyproject's addopts) is taken here to mean: a module's tests, in chunks of at most
STACK_CHUNK in collection order, each chunk to one worker. A big module is spread over several workers, each
building the stacks its chunk uses once; the chunks that mostly wait are sent first (first_sent).

Not `--dist loadgroup` with xdist_group marks: pytest-xdist 3.8 tags a grouped test by rewriting
`item._nodeid`, which pytest 9 no longer reads (Node.nodeid comes from `_id`), so every test ends up alone.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

# At most this many tests of one module run on one worker, on one build of its stacks; a bigger module is cut
# into equal chunks. Smaller: more stack starts (~2-3 s of CPU each, on a 2-core machine where the suite is
# already CPU-bound); larger: a big module (test_faults had 49 tests, 3 minutes of them) is a long serial tail.
STACK_CHUNK = 16


def chunk_scopes(nodeids: Sequence[str], most: int = STACK_CHUNK) -> dict[str, str]:
    """Each test's scope: its module, cut into the fewest equal runs (in order) of at most `most` tests."""
    sizes = Counter(nodeid.split("::", 1)[0] for nodeid in nodeids)
    seen: Counter[str] = Counter()
    scopes = {}
    for nodeid in nodeids:
        module = nodeid.split("::", 1)[0]
        chunks = -(-sizes[module] // most)
        scopes[nodeid] = f"{module}#{seen[module] * chunks // sizes[module]}"
        seen[module] += 1
    return scopes


# Tests that mostly wait (on their stacks' deadlines and polls, on a subprocess, on pip) or run long alone: sent
# first, so the CPU-bound rest (unit, property, simulators) fills the gaps and ends the run in small pieces.
SENT_FIRST = ("tests/integration/", "tests/doctor/", "tests/infra/", "tests/guest/")


def first_sent(scope: str, size: int) -> tuple[bool, int]:
    """The order chunks are handed out: waiting ones before the rest, bigger before smaller within each."""
    return (not scope.startswith(SENT_FIRST), -size)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getoption("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling  # noqa: PLC0415 - only the xdist controller needs it

    class ModuleChunks(LoadScopeScheduling):  # type: ignore[misc]
        """loadscope whose scopes are chunk_scopes(): computed once every worker has sent its collection."""

        def __init__(self, config: pytest.Config, log: Any = None) -> None:
            super().__init__(config, log)
            self.scopes: dict[str, str] = {}
            self.ranked = False

        def schedule(self) -> None:
            if self.collection is None and self.registered_collections:
                self.scopes = chunk_scopes(list(next(iter(self.registered_collections.values()))))
            super().schedule()

        def _split_scope(self, nodeid: str) -> str:
            return self.scopes.get(nodeid) or str(super()._split_scope(nodeid))

        def _assign_work_unit(self, node: Any) -> None:
            if not self.ranked:  # the first assignment: the queue is complete, nothing has been sent yet
                self.ranked = True
                ranked = sorted(self.workqueue.items(), key=lambda unit: first_sent(unit[0], len(unit[1])))
                self.workqueue.clear()
                self.workqueue.update(ranked)
            super()._assign_work_unit(node)

    return ModuleChunks(config, log)
