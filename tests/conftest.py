"""How `pytest -n N` (make test) shares tests out: a module's local stacks start once per worker, not per test.

A wire module builds its stacks (four functions-framework processes and the simulators) in module-scoped
fixtures. Under xdist's per-test `load` every worker builds every module's stacks; under `loadscope` or
`loadfile` the largest module runs on one worker, a long serial tail, while the others sit idle.
So `--dist loadscope` (pyproject's addopts) is taken here to mean: a module's tests, in chunks of at most
STACK_CHUNK in collection order, each chunk to one worker. A big module is spread over several workers, each
building the stacks its chunk uses once; the chunks that mostly wait are sent first (first_sent).

ModuleChunks is a scheduler of its own behind xdist's public hook (`pytest_xdist_make_scheduler`, returning an
object of the `xdist.scheduler.Scheduling` protocol), written on the protocol and the worker's public calls
(`send_runtest_some`, `shutdown`, `shutting_down`) rather than by overriding LoadScopeScheduling's private
`_split_scope`, `_assign_work_unit` and `workqueue` (issue 26). Not `--dist loadgroup` with xdist_group marks:
pytest-xdist 3.8 tags a grouped test by rewriting `item._nodeid`, which pytest 9 no longer reads (Node.nodeid
comes from `_id`), so every test ends up alone. Not plain loadscope with `--no-loadscope-reorder` and the
collection reordered: its scope is the module, so a big module would again be one worker's serial tail.
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
SENT_FIRST = ("tests/integration/", "tests/contract/", "tests/doctor/", "tests/infra/", "tests/guest/")


def first_sent(scope: str, size: int) -> tuple[bool, int]:
    """The order chunks are handed out: waiting ones before the rest, bigger before smaller within each."""
    return (not scope.startswith(SENT_FIRST), -size)


class ModuleChunks:
    """The chunks of chunk_scopes() handed out in first_sent() order, each to one worker, a worker topped up when it
    has at most two tests left (as loadscope does); a crashed worker's unfinished tests go back to the queue."""

    def __init__(self, config: pytest.Config, log: Any) -> None:
        from xdist.workermanage import parse_tx_spec_config  # type: ignore[import-untyped]  # noqa: PLC0415 - controller only

        self.numnodes = len(parse_tx_spec_config(config))
        self.log = log
        self.collection: list[str] | None = None
        self.index: dict[str, int] = {}  # a test's place in the collection, which every worker shares
        self.queue: list[tuple[str, dict[str, bool]]] = []  # (chunk, its tests -> done), in the order sent
        self.assigned: dict[Any, dict[str, dict[str, bool]]] = {}  # worker -> its chunks
        self.collections: dict[Any, list[str]] = {}
        self.scopes: dict[str, str] = {}

    @property
    def nodes(self) -> list[Any]:
        return list(self.assigned)

    @property
    def collection_is_completed(self) -> bool:
        return len(self.collections) >= self.numnodes

    @property
    def tests_finished(self) -> bool:
        return self.collection_is_completed and not self.queue and all(
            pending(work) < 2 for work in self.assigned.values())

    @property
    def has_pending(self) -> bool:
        return bool(self.queue) or any(pending(work) for work in self.assigned.values())

    def add_node(self, node: Any) -> None:
        self.assigned[node] = {}

    def add_node_collection(self, node: Any, collection: Sequence[str]) -> None:
        if self.collection is not None and list(collection) != self.collection:
            self.log(f"worker {node.gateway.id} collected other tests than the first: not used")
            return
        self.collections[node] = list(collection)

    def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
        nodeid = self.collections[node][item_index]
        self.assigned[node][self.scopes[nodeid]][nodeid] = True
        self.top_up(node)

    def mark_test_pending(self, item: str) -> None:
        raise NotImplementedError("only work stealing hands a test back")

    def remove_pending_tests_from_node(self, node: Any, indices: Sequence[int]) -> None:
        raise NotImplementedError("only work stealing takes tests back")

    def remove_node(self, node: Any) -> str | None:
        """A worker gone: None when it had finished; else the test it was running, and its chunks go back."""
        work = self.assigned.pop(node)
        unfinished = [nodeid for chunk in work.values() for nodeid, done in chunk.items() if not done]
        if not unfinished:
            return None
        self.queue[:0] = list(work.items())
        for other in self.assigned:
            self.top_up(other)
        return unfinished[0]

    def schedule(self) -> None:
        if self.collection is not None:  # a worker added later: top everyone up
            for node in self.nodes:
                self.top_up(node)
            return
        collections = list(self.collections.values())
        if any(collection != collections[0] for collection in collections):
            self.log("**Different tests collected, aborting run**")
            return
        self.collection = collections[0]
        self.index = {nodeid: i for i, nodeid in enumerate(self.collection)}
        self.scopes = chunk_scopes(self.collection)
        chunks: dict[str, dict[str, bool]] = {}
        for nodeid in self.collection:
            chunks.setdefault(self.scopes[nodeid], {})[nodeid] = False
        self.queue = sorted(chunks.items(), key=lambda unit: first_sent(unit[0], len(unit[1])))
        for node in self.nodes[len(self.queue):]:  # more workers than chunks
            self.assigned.pop(node)
            node.shutdown()
        for node in self.nodes:
            self.send(node)
        for node in self.nodes:
            self.top_up(node)

    def top_up(self, node: Any) -> None:
        """A worker with at most two tests left gets the next chunk; with none left to give, it is told to end."""
        if node.shutting_down:
            return
        if not self.queue:
            node.shutdown()
        elif pending(self.assigned[node]) <= 2:
            self.send(node)

    def send(self, node: Any) -> None:
        scope, chunk = self.queue.pop(0)
        self.assigned[node][scope] = chunk
        node.send_runtest_some([self.index[nodeid] for nodeid, done in chunk.items() if not done])


def pending(work: dict[str, dict[str, bool]]) -> int:
    """Tests a worker has been sent and not finished."""
    return sum(not done for chunk in work.values() for done in chunk.values())


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist, the controller starts one Pub/Sub emulator for all its workers, before they start: one
    JVM for the run, not one per worker (simulators/pubsub_emulator/process.py, `start_for_workers`)."""
    from simulators.pubsub_emulator import emulator_launcher, start_for_workers  # noqa: PLC0415

    controller = getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput")
    if controller and emulator_launcher() is not None:
        config.add_cleanup(start_for_workers())


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """ModuleChunks for `--dist loadscope` (pyproject's addopts); any other --dist is xdist's own."""
    return ModuleChunks(config, log) if config.getoption("dist") == "loadscope" else None


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """One line: whether tests/contract held the stacks' Pub/Sub (simulators/pubsub/) to Google's emulator here."""
    from simulators.pubsub_emulator import emulator_launcher  # noqa: PLC0415 - only for this line

    launcher = emulator_launcher()
    terminalreporter.write_line(
        f"Pub/Sub: stacks on simulators/pubsub/; tests/contract on it and on Google's emulator ({launcher})" if launcher
        else "Pub/Sub: stacks on simulators/pubsub/; Google's emulator is not installed here: tests/contract's "
             "emulator variants skipped")
