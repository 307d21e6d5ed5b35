"""Injected faults: Publish RPCs that fail with a chosen gRPC status, and a latency added to every RPC. Google's
emulator can do neither, so the tests of how the bot meets a failed or slow publish run on this simulator."""

from __future__ import annotations

import threading

import grpc


class PublishFaults:
    """The statuses the next Publish RPCs fail with, first in first out."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._codes: list[grpc.StatusCode] = []

    def inject(self, code: grpc.StatusCode, count: int) -> None:
        with self._lock:
            self._codes.extend([code] * count)

    def next(self) -> grpc.StatusCode | None:
        """The status the Publish now arriving fails with, or None: it goes through."""
        with self._lock:
            return self._codes.pop(0) if self._codes else None
