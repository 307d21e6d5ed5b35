"""What leaves the Workbench adapter when the API fails, over the wire: the project's error named as the API answered.

The real client over gRPC and over REST, one attempt, each fault injected in the Workbench simulator: no
google.api_core or requests class leaves the adapter. What the functions then do with each error is in
test_faults_retried.py and test_faults_reported.py; the in-process matrix on a fake clock is
tests/unit/test_fault_matrix.py (docs/fault-matrix.md says which row is where).

The stack is tests/integration/faults.py's (module-scoped, per label variant).
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from shared.adapters.errors import (
    BusyError,
    MaybeAppliedError,
    NotFoundError,
    RefusedError,
    ServiceError,
    TransientError,
)
from shared.adapters.workbench import Workbench
from shared.core.models import InstanceRef
from simulators.stack import LocalStack
from tests.integration.conftest import new_instance
from tests.integration.faults import inject, no_leftover_faults, short_holds, stack

__all__ = ["no_leftover_faults", "short_holds", "stack"]  # the fault stack and its autouse fixtures (faults.py)

pytestmark = pytest.mark.wire


# ---- Workbench: what leaves the adapter ---------------------------------------------------------

BOUNDARY = [  # the fault, then the project's error and status on gRPC and on REST
    pytest.param("http", 404, None, NotFoundError, "NOT_FOUND", "NOT_FOUND", id="404"),
    pytest.param("http", 403, None, RefusedError, "PERMISSION_DENIED", "PERMISSION_DENIED", id="403"),
    pytest.param("http", 400, "FAILED_PRECONDITION", RefusedError, "FAILED_PRECONDITION", "FAILED_PRECONDITION",
                 id="400-failed-precondition"),
    pytest.param("http", 409, "ABORTED", BusyError, "ABORTED", "ABORTED", id="409-aborted"),
    pytest.param("http", 503, None, TransientError, "UNAVAILABLE", "UNAVAILABLE", id="503"),
    pytest.param("http", 500, None, MaybeAppliedError, "INTERNAL", "INTERNAL", id="500"),
    pytest.param("timeout", 0, None, MaybeAppliedError, "DEADLINE_EXCEEDED", "ReadTimeout", id="timeout"),
]


@pytest.mark.parametrize("transport", ["grpc", "rest"])
@pytest.mark.parametrize(("kind", "status", "grpc_status", "error", "on_grpc", "on_rest"), BOUNDARY)
def test_the_adapter_raises_the_projects_error_named_as_the_api_answered(
    stack: LocalStack, transport: str, kind: str, status: int, grpc_status: str | None, error: type[ServiceError],
    on_grpc: str, on_rest: str,
) -> None:
    """The real client over each transport, one attempt: no google.api_core or requests class leaves the adapter;
    REST's 409 Conflict saying ABORTED is as busy as gRPC's Aborted, its timeout (ReadTimeout) may have applied."""
    full, name = new_instance(stack, f"edge-{transport}")
    endpoint = stack.workbench.grpc_endpoint if transport == "grpc" else stack.workbench.endpoint
    workbench = Workbench(endpoint=endpoint, timeout=timedelta(seconds=0.5))
    inject(stack, name, "get", kind, status, 1, grpc_status)
    with pytest.raises(ServiceError) as raised:
        workbench.get(InstanceRef.parse(full), retry=False)
    assert type(raised.value) is error
    assert raised.value.status == (on_grpc if transport == "grpc" else on_rest)
    assert "http://" not in str(raised.value) and len(raised.value.detail) <= 200
