"""tests/conftest.py's ModuleChunks, driven as xdist's controller drives a scheduler: every test is sent once, the
chunks that wait first, a worker is topped up as it runs dry and told to end when nothing is left, and a crashed
worker's unfinished tests go to another."""

from __future__ import annotations

from typing import Any

from tests.conftest import STACK_CHUNK, ModuleChunks

WAITING = [f"tests/integration/test_big.py::test_{i}" for i in range(2 * STACK_CHUNK)]
QUICK = [f"tests/unit/test_small.py::test_{i}" for i in range(3)]
COLLECTION = QUICK + WAITING  # collection order puts the quick ones first; the scheduler must not


class Config:
    """The one option a scheduler reads from pytest's config: the workers xdist starts (`-n 2`)."""

    def getvalue(self, name: str) -> Any:
        assert name == "tx"
        return ["2*popen"]


class Worker:
    """What a scheduler calls on xdist's WorkerController."""

    def __init__(self, name: str) -> None:
        self.gateway = type("Gateway", (), {"id": name})()
        self.sent: list[int] = []
        self.shutting_down = False

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def started() -> tuple[ModuleChunks, list[Worker]]:
    scheduler = ModuleChunks(Config(), log=lambda *args: None)  # type: ignore[arg-type]
    workers = [Worker("gw0"), Worker("gw1")]
    for worker in workers:
        scheduler.add_node(worker)
    assert not scheduler.collection_is_completed
    for worker in workers:
        scheduler.add_node_collection(worker, COLLECTION)
    assert scheduler.collection_is_completed
    scheduler.schedule()
    return scheduler, workers


def run_to_the_end(scheduler: ModuleChunks, workers: list[Worker]) -> list[str]:
    """Each worker finishes what it was sent, in order, as xdist reports it; returns the tests run."""
    done: list[str] = []
    progress = True
    while progress:
        progress = False
        for worker in scheduler.nodes:
            finished = len([n for n in done if n in {COLLECTION[i] for i in worker.sent}])
            if finished < len(worker.sent):
                index = worker.sent[finished]
                done.append(COLLECTION[index])
                scheduler.mark_test_complete(worker, index)
                progress = True
    return done


def test_the_waiting_chunks_go_first_and_every_test_runs_once() -> None:
    scheduler, workers = started()
    first = [COLLECTION[w.sent[0]] for w in workers]
    assert all(nodeid.startswith("tests/integration/") for nodeid in first), first
    done = run_to_the_end(scheduler, workers)
    assert sorted(done) == sorted(COLLECTION)
    assert scheduler.tests_finished and not scheduler.has_pending
    assert all(worker.shutting_down for worker in workers)


def test_a_chunk_stays_on_one_worker() -> None:
    scheduler, workers = started()
    run_to_the_end(scheduler, workers)
    owners = {COLLECTION[i]: w.gateway.id for w in workers for i in w.sent}
    for chunk in {scheduler.scopes[n] for n in COLLECTION}:
        assert len({owners[n] for n in COLLECTION if scheduler.scopes[n] == chunk}) == 1, chunk


def test_a_crashed_workers_tests_go_to_another() -> None:
    scheduler, workers = started()
    crashed, other = workers
    crashed_tests = [COLLECTION[i] for i in crashed.sent]
    assert scheduler.remove_node(crashed) == crashed_tests[0]
    run_to_the_end(scheduler, [other])
    assert set(crashed_tests) <= {COLLECTION[i] for i in other.sent}
    assert scheduler.tests_finished
