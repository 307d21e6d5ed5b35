"""One Pub/Sub emulator per test run (simulators/pubsub_emulator/process.py): the controller starts it for its
workers, who attach to it, and start their own when it could not start. The JVM's start is replaced here; the real
one runs in every `make test` (tests/contract, the stacks)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from simulators.pubsub_emulator import process
from simulators.pubsub_emulator.process import SHARED_ENV, PubSubEmulator


class Started:
    """Stands in for a started emulator: its host, and whether it was stopped."""

    def __init__(self, host: str) -> None:
        self.host = host
        self.stopped = threading.Event()

    def stop(self) -> None:
        self.stopped.set()


@pytest.fixture(autouse=True)
def a_process_of_its_own(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No shared emulator yet in this process, and no controller's."""
    monkeypatch.delenv(SHARED_ENV, raising=False)
    monkeypatch.setattr(process, "_shared", {})
    yield


def test_workers_attach_to_the_controllers_emulator_and_it_stops_with_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    release, started = threading.Event(), Started("127.0.0.1:8123")

    def slow_start(*_args: Any, **_kwargs: Any) -> Started:
        release.wait(10)  # a JVM still starting while the workers ask
        return started

    monkeypatch.setattr(process, "_start_on_a_free_port", slow_start)
    stop = process.start_for_workers()
    answers: list[PubSubEmulator] = []
    worker = threading.Thread(target=lambda: answers.append(process.shared_emulator()))
    worker.start()
    release.set()
    worker.join(10)
    [attached] = answers
    assert attached.host == "127.0.0.1:8123"
    assert attached.port == 8123
    attached.stop()  # a worker's stop leaves the run's emulator alone
    assert not started.stopped.is_set()
    stop()
    assert started.stopped.is_set()
    assert SHARED_ENV not in process.os.environ


def test_a_worker_starts_its_own_when_the_controllers_could_not_start(monkeypatch: pytest.MonkeyPatch) -> None:
    own = Started("127.0.0.1:9001")
    calls: list[str] = []

    def start(*_args: Any, **_kwargs: Any) -> Started:
        calls.append("start")
        if len(calls) == 1:
            raise RuntimeError("the Pub/Sub emulator did not start")
        return own

    monkeypatch.setattr(process, "_start_on_a_free_port", start)
    stop = process.start_for_workers()
    try:
        assert process.shared_emulator() is own  # type: ignore[comparison-overlap]
        assert calls == ["start", "start"]
    finally:
        stop()


def test_without_a_controller_a_process_starts_one_and_keeps_it(monkeypatch: pytest.MonkeyPatch) -> None:
    own = Started("127.0.0.1:9002")
    monkeypatch.setattr(process, "_start_on_a_free_port", lambda *_a, **_k: own)
    monkeypatch.setattr(process.atexit, "register", lambda _f: None)
    assert process.shared_emulator() is own  # type: ignore[comparison-overlap]
    assert process.shared_emulator() is own  # type: ignore[comparison-overlap]
