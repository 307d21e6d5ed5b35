"""The Pub/Sub simulator's one error: a refusal with the gRPC status the real service answers, raised by the checks,
the state and the direct API and turned into the RPC's status where a call is served. It imports nothing of the
simulator."""

from __future__ import annotations

import grpc


class PubSubError(Exception):
    """An error with the gRPC status the real service answers (raised by the direct API)."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
