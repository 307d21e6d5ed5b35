"""The Workbench simulator's injected faults, seen through the real REST client: HTTP errors by verb, path and
count, timeouts, operations that end in error or never end, and the faults' own argument checks."""

from __future__ import annotations

import time

import pytest
import requests
from google.api_core import exceptions as gexc
from google.cloud import notebooks_v2

from simulators.workbench import WorkbenchSimulator
from tests.simulators.conftest import (
    FAST,
    FAST_POLLING,
    PROJECT,
    ZONE,
    error_status,
    make_client,
    own,
)

pytestmark = pytest.mark.wire


# --- faults -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("status", "exc_class", "grpc_status"),
    [
        (400, gexc.BadRequest, "INVALID_ARGUMENT"),
        # REST maps on the HTTP status: 403 is Forbidden, the parent of PermissionDenied.
        (403, gexc.Forbidden, "PERMISSION_DENIED"),
        (404, gexc.NotFound, "NOT_FOUND"),
        (429, gexc.TooManyRequests, "RESOURCE_EXHAUSTED"),
        (500, gexc.InternalServerError, "INTERNAL"),
        (503, gexc.ServiceUnavailable, "UNAVAILABLE"),
    ],
)
def test_http_fault_surfaces_as_api_core_exception(
    sim: WorkbenchSimulator,
    client: notebooks_v2.NotebookServiceClient,
    status: int,
    exc_class: type[gexc.GoogleAPICallError],
    grpc_status: str,
) -> None:
    full = sim.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com")
    sim.inject_fault(kind="http", status=status)
    with pytest.raises(exc_class) as info:
        client.get_instance(name=full)
    assert type(info.value) is exc_class  # exactly: never the gRPC-named subclass
    assert info.value.code == status
    assert error_status(info.value) == grpc_status
    assert client.get_instance(name=full).name == full  # count=1: used up


def test_http_fault_matching_by_verb_path_and_count(
    sim: WorkbenchSimulator, client: notebooks_v2.NotebookServiceClient
) -> None:
    a = sim.add_instance(PROJECT, ZONE, "a", owner_email="a@example.com")
    b = sim.add_instance(PROJECT, ZONE, "b", owner_email="b@example.com")
    sim.inject_fault(method="reset", path_contains="/instances/a", kind="http", status=429,
                     count=2)
    client.get_instance(name=a)  # other verb: untouched
    client.reset_instance(request={"name": b})  # other path: untouched
    for _ in range(2):
        with pytest.raises(gexc.TooManyRequests):
            client.reset_instance(request={"name": a})
    assert sim.resets(a) == 0 and sim.count_calls("reset") == 3
    client.reset_instance(request={"name": a})
    assert sim.resets(a) == 1

    sim.inject_fault(method="GET", kind="http", status=400, grpc_status="FAILED_PRECONDITION",
                     count=-1)
    for _ in range(3):
        with pytest.raises(gexc.BadRequest) as info:
            client.get_instance(name=a)
        assert error_status(info.value) == "FAILED_PRECONDITION"
    sim.clear_faults()
    assert client.get_instance(name=a).name == a


def test_timeout_fault_fires_the_client_timeout_and_stop_interrupts_it() -> None:
    sim = WorkbenchSimulator(**FAST).start()
    client = make_client(sim)
    full = sim.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com")
    sim.inject_fault(method="get", kind="timeout")
    started = time.monotonic()
    # The REST transport hands `timeout` to requests: it surfaces as a requests exception,
    # not as google.api_core.exceptions.DeadlineExceeded.
    with pytest.raises(requests.exceptions.Timeout):
        client.get_instance(name=full, timeout=0.3)
    assert time.monotonic() - started < 20  # the client's 0.3 s, not the fault's 30 s
    assert client.get_instance(name=full, timeout=2).name == full

    sim.inject_fault(kind="timeout", count=-1)
    with pytest.raises(requests.exceptions.Timeout):
        client.get_instance(name=full, timeout=0.2)
    started = time.monotonic()
    sim.stop()  # the handler still sleeping in the fault wakes up at once
    assert time.monotonic() - started < 20  # not the fault's 30 s


def test_op_error_makes_result_raise_and_leaves_instance_as_before(
    plain_sim: WorkbenchSimulator, plain_client: notebooks_v2.NotebookServiceClient
) -> None:
    full = plain_sim.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com")
    plain_sim.oom_kill(full, jupyter_survives=False, health_delay_s=0)
    plain_sim.inject_fault(kind="op_error")
    op = plain_client.reset_instance(request={"name": full})
    with pytest.raises(gexc.GoogleAPICallError) as info:
        op.result(timeout=5, polling=FAST_POLLING)
    assert isinstance(info.value, gexc.InternalServerError)  # code 13 by default
    assert op.operation.done and op.operation.error.code == 13
    after = plain_sim.get(full)
    assert (after["state"], after["healthState"]) == ("ACTIVE", "UNHEALTHY")

    plain_sim.inject_fault(kind="op_error", grpc_status="FAILED_PRECONDITION")
    with pytest.raises(gexc.FailedPrecondition):  # LRO errors map on the gRPC code
        plain_client.reset_instance(request={"name": full}).result(timeout=5, polling=FAST_POLLING)
    assert plain_sim.resets(full) == 2


def test_op_error_on_update_leaves_labels_alone(
    plain_sim: WorkbenchSimulator, plain_client: notebooks_v2.NotebookServiceClient
) -> None:
    full = plain_sim.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com",
                                  labels={"keep": "me"})
    plain_sim.inject_fault(method="update", kind="op_error", status=503)
    op = plain_client.update_instance(request={"instance": {"name": full, "labels": {}},
                                               "update_mask": {"paths": ["labels"]}})
    with pytest.raises(gexc.ServiceUnavailable):  # 503 -> gRPC 14 UNAVAILABLE
        op.result(timeout=5, polling=FAST_POLLING)
    assert own(plain_sim.get(full)["labels"]) == {"keep": "me"}


def test_op_error_on_reset_keeps_labels_updated_while_it_ran(
    plain_sim: WorkbenchSimulator, plain_client: notebooks_v2.NotebookServiceClient
) -> None:
    """The failed reset takes back state and health, not what someone wrote meanwhile."""
    full = plain_sim.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com", labels={"team": "ml"})
    plain_sim.inject_fault(kind="op_error")
    op = plain_client.reset_instance(request={"name": full})
    plain_client.update_instance(request={"instance": {"name": full, "labels": {"team": "cv"}},
                                          "update_mask": {"paths": ["labels"]}}).result(timeout=5, polling=FAST_POLLING)
    with pytest.raises(gexc.InternalServerError):
        op.result(timeout=5, polling=FAST_POLLING)
    assert own(plain_sim.get(full)["labels"]) == {"team": "cv"}


def test_op_never_done_keeps_instance_starting(
    plain_sim: WorkbenchSimulator, plain_client: notebooks_v2.NotebookServiceClient
) -> None:
    full = plain_sim.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com")
    plain_sim.inject_fault(method="reset", kind="op_never_done")
    op = plain_client.reset_instance(request={"name": full})
    with pytest.raises(TimeoutError):  # concurrent.futures.TimeoutError
        op.result(timeout=0.5, polling=FAST_POLLING)
    assert not op.done()
    assert plain_sim.get(full)["state"] == "STARTING"


def test_fault_arguments_are_validated(sim: WorkbenchSimulator) -> None:
    with pytest.raises(ValueError, match="kind"):
        sim.inject_fault(kind="explode")
    with pytest.raises(ValueError, match="status"):
        sim.inject_fault(kind="http")
