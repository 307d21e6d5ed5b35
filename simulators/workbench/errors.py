"""The Workbench simulator's errors: an API refusal sent as Google's error body, and a request dropped at stop.

It imports nothing of the simulator, so that every face (REST, gRPC) and the state can raise and catch them
without an import cycle."""

from __future__ import annotations

from typing import Any

Json = dict[str, Any]

# HTTP status -> (gRPC status name, gRPC code), per google/rpc/code.proto's mapping.
HTTP_TO_GRPC: dict[int, tuple[str, int]] = {
    400: ("INVALID_ARGUMENT", 3),
    401: ("UNAUTHENTICATED", 16),
    403: ("PERMISSION_DENIED", 7),
    404: ("NOT_FOUND", 5),
    409: ("ABORTED", 10),
    429: ("RESOURCE_EXHAUSTED", 8),
    499: ("CANCELLED", 1),
    500: ("INTERNAL", 13),
    501: ("UNIMPLEMENTED", 12),
    503: ("UNAVAILABLE", 14),
    504: ("DEADLINE_EXCEEDED", 4),
}
GRPC_CODES: dict[str, int] = {name: code for name, code in HTTP_TO_GRPC.values()} | {
    "FAILED_PRECONDITION": 9,
    "ALREADY_EXISTS": 6,
    "OUT_OF_RANGE": 11,
    "DATA_LOSS": 15,
    "UNKNOWN": 2,
}


class SimulatorError(Exception):
    """An API error to be sent as Google's JSON error body."""

    def __init__(self, http_status: int, message: str, grpc_status: str | None = None) -> None:
        super().__init__(message)
        self.http_status = http_status
        self.message = message
        self.grpc_status = grpc_status or HTTP_TO_GRPC.get(http_status, ("UNKNOWN", 2))[0]

    def body(self) -> Json:
        return {
            "error": {
                "code": self.http_status,
                "message": self.message,
                "status": self.grpc_status,
            }
        }



class HeldError(SimulatorError):
    """In process: a request a `timeout` fault holds past its client's timeout; applied later, never answered."""

    def __init__(self) -> None:
        super().__init__(504, "Deadline Exceeded", "DEADLINE_EXCEEDED")


class AbortError(Exception):
    """The simulator is stopping: drop the request without answering."""


