"""The lazily made clients are made once, however many threads ask for them first at the same moment.

The Slack app lists its zones in parallel and makes its publisher during those reads, so on a cold
start several threads reach Workbench.client (and RestartQueue.publisher) together. Making a client
opens no connection, so no simulator is needed here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from shared.adapters.queue import RestartQueue
from shared.adapters.workbench import Workbench

THREADS = 16


def all_at_once(read: Callable[[], Any]) -> list[Any]:
    start = threading.Barrier(THREADS)

    def one() -> Any:
        start.wait()
        return read()

    with ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(lambda _: one(), range(THREADS)))


def test_workbench_client_is_made_once_and_ready_with_its_retry() -> None:
    workbench = Workbench(endpoint="grpc://127.0.0.1:9")

    def read() -> tuple[Any, Any]:
        client = workbench.client
        return client, workbench._retry  # what _call pairs with it

    seen = all_at_once(read)
    assert len({id(client) for client, _ in seen}) == 1
    assert all(retry is not None for _, retry in seen), "a thread got the client before its retry was set"


def test_publisher_is_made_once(monkeypatch: Any) -> None:
    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", "127.0.0.1:9")  # no credentials needed to make it
    queue = RestartQueue("projects/p/topics/t")
    assert not queue.ready
    seen = all_at_once(lambda: queue.publisher)
    assert len({id(publisher) for publisher in seen}) == 1 and queue.ready
