"""The Workbench simulator, driven by the real google-cloud-notebooks REST client over a socket."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
import pytest
import requests
from google.api_core import exceptions as gexc
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import notebooks_v2
from google.cloud.notebooks_v2.services.notebook_service.transports import NotebookServiceGrpcTransport
from google.protobuf import json_format

from simulators.workbench import SYSTEM_LABEL_KEYS, WorkbenchSimulator
from tests.simulators.conftest import BAD_LABELS, FAST, FAST_POLLING, GOOD_LABELS, PROJECT, ZONE, own

pytestmark = pytest.mark.wire

REPO_ROOT = Path(__file__).resolve().parents[2]


def make_client(sim: WorkbenchSimulator) -> notebooks_v2.NotebookServiceClient:
    return notebooks_v2.NotebookServiceClient(
        transport="rest",
        credentials=AnonymousCredentials(),
        client_options=ClientOptions(api_endpoint=sim.endpoint),
    )


@pytest.fixture
def plain_sim() -> Iterator[WorkbenchSimulator]:
    """Only fields the installed protos know: op.result() works."""
    s = WorkbenchSimulator(unknown_fields=False, **FAST).start()
    yield s
    s.stop()


@pytest.fixture
def client(sim: WorkbenchSimulator) -> notebooks_v2.NotebookServiceClient:
    return make_client(sim)


@pytest.fixture
def plain_client(plain_sim: WorkbenchSimulator) -> notebooks_v2.NotebookServiceClient:
    return make_client(plain_sim)


@pytest.fixture
def plain_client_factory() -> Iterator[Any]:
    """Simulators (only known fields) with options of a test's own, and their clients; stopped after it."""
    made: list[WorkbenchSimulator] = []

    def make(**options: Any) -> tuple[WorkbenchSimulator, notebooks_v2.NotebookServiceClient]:
        sim = WorkbenchSimulator(unknown_fields=False, **{**FAST, **options}).start()
        made.append(sim)
        return sim, make_client(sim)

    yield make
    for sim in made:
        sim.stop()


def raw_get(sim: WorkbenchSimulator, path: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(sim.endpoint + path, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def error_status(exc: gexc.GoogleAPICallError) -> str:
    assert exc.response is not None
    return str(exc.response.json()["error"]["status"])


# --- get / list ---------------------------------------------------------------------------
def test_get_instance_owner_is_in_metadata_not_instance_owners(
    sim: WorkbenchSimulator, client: notebooks_v2.NotebookServiceClient
) -> None:
    full = sim.add_instance(PROJECT, ZONE, "alice-nb", owner_email="alice@example.com",
                            labels={"team": "ml"})
    inst = client.get_instance(name=full)  # unknown fields present: plain GET tolerates them
    assert inst.name == full
    assert inst.state == notebooks_v2.State.ACTIVE
    assert inst.health_state == notebooks_v2.HealthState.HEALTHY
    assert inst.gce_setup.metadata["proxy-mode"] == "mail"
    assert inst.gce_setup.metadata["proxy-user-mail"] == "alice@example.com"
    assert list(inst.instance_owners) == []
    assert inst.creator == f"terraform@{PROJECT}.iam.gserviceaccount.com"
    assert inst.gce_setup.machine_type.endswith("/machineTypes/e2-standard-4")
    assert own(inst.labels) == {"team": "ml"}
    assert inst.health_info["jupyterlab_status"] == "1"
    assert inst.proxy_uri and inst.id and inst.create_time and inst.update_time
    # what actually went over the wire
    status, body = raw_get(sim, f"/v2/{full}")
    assert status == 200
    assert body["enableDeletionProtection"] is False
    assert "minCpuPlatform" in body["gceSetup"]
    assert "instanceOwners" not in body


def test_enum_encoding_follows_alt_parameter(sim: WorkbenchSimulator) -> None:
    full = sim.add_instance(PROJECT, ZONE, "nb", owner_email=None)
    _, as_names = raw_get(sim, f"/v2/{full}")
    _, as_ints = raw_get(sim, f"/v2/{full}?%24alt=json%3Benum-encoding%3Dint")
    assert (as_names["state"], as_names["healthState"]) == ("ACTIVE", "HEALTHY")
    assert (as_ints["state"], as_ints["healthState"]) == (3, 1)
    assert as_ints["gceSetup"]["bootDisk"]["diskType"] == 3
    assert as_names["gceSetup"]["metadata"]["proxy-mode"] == "service_account"
    assert "proxy-user-mail" not in as_names["gceSetup"]["metadata"]
    assert sim.get(full)["state"] == "ACTIVE"


def test_list_paginates_and_supports_all_zones(
    sim: WorkbenchSimulator, client: notebooks_v2.NotebookServiceClient
) -> None:
    names = [sim.add_instance(PROJECT, ZONE, f"nb-{i}", owner_email=f"u{i}@example.com")
             for i in range(5)]
    names.append(sim.add_instance(PROJECT, "us-central1-a", "far", owner_email="x@example.com"))
    sim.add_instance("other-project", ZONE, "not-mine", owner_email="y@example.com")

    pager = client.list_instances(request={"parent": f"projects/{PROJECT}/locations/{ZONE}",
                                           "page_size": 2})
    listed = [(i.name, i.gce_setup.metadata["proxy-user-mail"]) for i in pager]
    assert listed == [(n, f"u{k}@example.com") for k, n in enumerate(names[:5])]
    assert sim.count_calls("list") == 3  # 2 + 2 + 1

    everywhere = client.list_instances(parent=f"projects/{PROJECT}/locations/-")
    assert sorted(i.name for i in everywhere) == sorted(names)

    empty = client.list_instances(parent=f"projects/{PROJECT}/locations/asia-east1-a")
    assert list(empty) == []


def test_unknown_instance_and_malformed_paths_are_404(
    sim: WorkbenchSimulator, client: notebooks_v2.NotebookServiceClient
) -> None:
    missing = f"projects/{PROJECT}/locations/{ZONE}/instances/ghost"
    with pytest.raises(gexc.NotFound) as info:
        client.get_instance(name=missing)
    assert error_status(info.value) == "NOT_FOUND"
    with pytest.raises(gexc.NotFound):
        client.reset_instance(request={"name": missing})
    status, body = raw_get(sim, "/v2/projects/proj/instances")
    assert status == 404
    assert body["error"] == {"code": 404, "status": "NOT_FOUND", "message": body["error"]["message"]}
    assert raw_get(sim, "/v1/whatever")[0] == 404
    assert sim.count_calls("unknown") == 2


# --- reset and the ParseError trap --------------------------------------------------------
def test_reset_result_raises_parse_error_when_response_has_unknown_fields(
    sim: WorkbenchSimulator, client: notebooks_v2.NotebookServiceClient
) -> None:
    full = sim.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com")
    op = client.reset_instance(request={"name": full})
    assert op.metadata.verb == "reset" and op.metadata.target == full
    # The reset succeeds on the server, yet the client cannot parse the finished operation.
    with pytest.raises(json_format.ParseError, match="has no field named"):
        op.result(timeout=5, polling=FAST_POLLING)
    assert sim.get(full)["state"] == "ACTIVE"
    assert sim.resets(full) == 1
    with pytest.raises(json_format.ParseError):
        client.get_operation(request={"name": op.operation.name})
    # The raw operation is well-formed and done.
    _, raw = raw_get(sim, f"/v2/{op.operation.name}")
    assert raw["done"] is True
    assert raw["response"]["@type"] == "type.googleapis.com/google.cloud.notebooks.v2.Instance"
    assert raw["response"]["enableDeletionProtection"] is False
    assert raw["metadata"]["@type"] == (
        "type.googleapis.com/google.cloud.notebooks.v2.OperationMetadata"
    )
    assert {"createTime", "endTime", "target", "verb", "apiVersion"} <= raw["metadata"].keys()
    assert raw["metadata"]["requestedCancellation"] is False


def test_reset_result_works_without_unknown_fields(
    plain_sim: WorkbenchSimulator, plain_client: notebooks_v2.NotebookServiceClient
) -> None:
    full = plain_sim.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com")
    op = plain_client.reset_instance(request={"name": full})
    assert op.operation.name.startswith(f"projects/{PROJECT}/locations/{ZONE}/operations/operation-")
    assert not op.operation.done
    result = op.result(timeout=5, polling=FAST_POLLING)
    assert isinstance(result, notebooks_v2.Instance)
    assert result.name == full
    assert result.state == notebooks_v2.State.ACTIVE
    assert op.metadata.end_time is not None
    assert plain_sim.count_calls("reset") == 1 and plain_sim.resets(full) == 1
    assert plain_sim.count_calls("get_operation") >= 1


def test_zero_length_reset_comes_back_done_in_its_answer() -> None:
    sim = WorkbenchSimulator(**{**FAST, "reset_seconds": 0.0}, unknown_fields=False).start()
    try:
        full = sim.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com")
        op = make_client(sim).reset_instance(request={"name": full})
        assert op.operation.done  # nothing left to poll
        assert op.result(timeout=1).state == notebooks_v2.State.ACTIVE
        assert sim.count_calls("get_operation") == 0
    finally:
        sim.stop()


def test_reset_state_transitions_over_time(
    sim: WorkbenchSimulator, client: notebooks_v2.NotebookServiceClient
) -> None:
    full = sim.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com")
    sim.oom_kill(full, jupyter_survives=False, health_delay_s=0)
    assert client.get_instance(name=full).health_state == notebooks_v2.HealthState.UNHEALTHY

    client.reset_instance(request={"name": full})
    during = client.get_instance(name=full)
    assert during.state == notebooks_v2.State.STARTING
    assert during.health_state == notebooks_v2.HealthState.AGENT_NOT_RUNNING
    assert dict(during.health_info) == {}

    assert sim.wait_until(lambda: sim.get(full)["state"] == "ACTIVE", timeout=3)
    assert sim.get(full)["healthState"] == "AGENT_NOT_RUNNING"  # agent not reporting yet
    assert sim.wait_until(lambda: sim.get(full).get("healthState") == "HEALTHY", timeout=3)
    after = client.get_instance(name=full)
    assert after.health_info["jupyterlab_status"] == "1"
    assert after.health_info["jupyterlab_api_status"] == "1"
    updated = datetime.strptime(after.health_info["updated"], "%Y-%m-%d %H:%M:%S.%f")
    assert updated.replace(tzinfo=UTC) >= after.update_time  # refreshed after completion

    # A second reset while one is running is refused, as the live API refuses it: 409 ABORTED, not queued.
    client.reset_instance(request={"name": full})
    with pytest.raises(gexc.Conflict) as info:
        client.reset_instance(request={"name": full})
    assert error_status(info.value) == "ABORTED" and "unable to queue the operation" in str(info.value.message)
    assert sim.resets(full) == 2 and sim.count_calls("reset") == 3


def test_stop_and_start_with_preconditions(
    sim: WorkbenchSimulator, client: notebooks_v2.NotebookServiceClient
) -> None:
    full = sim.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com")
    with pytest.raises(gexc.BadRequest) as info:
        client.start_instance(request={"name": full})
    # REST maps on the HTTP status: FAILED_PRECONDITION arrives as BadRequest, not its subclass.
    assert not isinstance(info.value, gexc.FailedPrecondition)
    assert error_status(info.value) == "FAILED_PRECONDITION"

    client.stop_instance(request={"name": full})
    assert client.get_instance(name=full).state == notebooks_v2.State.STOPPING
    assert sim.wait_until(lambda: sim.get(full)["state"] == "STOPPED", timeout=3)
    stopped = sim.get(full)
    assert "healthState" not in stopped and "healthInfo" not in stopped

    with pytest.raises(gexc.BadRequest) as info:
        client.reset_instance(request={"name": full})
    assert error_status(info.value) == "FAILED_PRECONDITION"
    with pytest.raises(gexc.BadRequest):
        client.stop_instance(request={"name": full})

    client.start_instance(request={"name": full})
    assert client.get_instance(name=full).state == notebooks_v2.State.STARTING
    assert sim.wait_until(lambda: sim.get(full).get("healthState") == "HEALTHY", timeout=3)
    assert sim.get(full)["state"] == "ACTIVE"
    assert (sim.count_calls("stop"), sim.count_calls("start")) == (2, 2)
    assert sim.resets(full) == 0


# --- update ---------------------------------------------------------------------------
def test_update_labels_applies_only_masked_fields(
    plain_sim: WorkbenchSimulator, plain_client: notebooks_v2.NotebookServiceClient
) -> None:
    full = plain_sim.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com",
                                  labels={"old": "1"})
    op = plain_client.update_instance(request={
        "instance": {"name": full, "labels": {"medic-reset": "2024-01-01"},
                     "gce_setup": {"machine_type": "n2-highmem-64"}},
        "update_mask": {"paths": ["labels"]},
    })
    assert op.metadata.verb == "update"
    result = op.result(timeout=5, polling=FAST_POLLING)
    assert own(result.labels) == {"old": "1", "medic-reset": "2024-01-01"}  # merged: a key left out is kept
    after = plain_sim.get(full)
    assert own(after["labels"]) == {"old": "1", "medic-reset": "2024-01-01"}
    assert after["gceSetup"]["machineType"].endswith("/e2-standard-4")  # not in the mask
    assert plain_sim.count_calls("patch") == 1 == plain_sim.count_calls("update")
    assert plain_sim.calls[0][0] == "PATCH"


@pytest.mark.parametrize("labels", BAD_LABELS)
def test_update_refuses_labels_gcp_refuses(
    plain_sim: WorkbenchSimulator, plain_client: notebooks_v2.NotebookServiceClient, labels: dict[str, str]
) -> None:
    full = plain_sim.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com", labels={"team": "ml"})
    with pytest.raises(gexc.BadRequest) as info:
        plain_client.update_instance(request={"instance": {"name": full, "labels": labels},
                                              "update_mask": {"paths": ["labels"]}})
    assert error_status(info.value) == "INVALID_ARGUMENT"
    assert "instance.labels" in str(info.value.message)
    assert own(plain_sim.get(full)["labels"]) == {"team": "ml"}


@pytest.mark.parametrize("labels", GOOD_LABELS)
def test_update_takes_labels_gcp_takes(
    plain_sim: WorkbenchSimulator, plain_client: notebooks_v2.NotebookServiceClient, labels: dict[str, str]
) -> None:
    full = plain_sim.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com")
    op = plain_client.update_instance(request={"instance": {"name": full, "labels": labels},
                                               "update_mask": {"paths": ["labels"]}})
    assert own(op.result(timeout=5, polling=FAST_POLLING).labels) == labels


def test_update_rejects_unknown_mask_and_running_machine_type_change(
    plain_sim: WorkbenchSimulator, plain_client: notebooks_v2.NotebookServiceClient
) -> None:
    full = plain_sim.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com")
    with pytest.raises(gexc.BadRequest) as info:
        plain_client.update_instance(request={"instance": {"name": full, "creator": "me"},
                                              "update_mask": {"paths": ["creator"]}})
    assert error_status(info.value) == "INVALID_ARGUMENT"

    change = {"instance": {"name": full, "gce_setup": {"machine_type": "n2-standard-8"}},
              "update_mask": {"paths": ["gce_setup.machine_type"]}}
    with pytest.raises(gexc.BadRequest) as info:
        plain_client.update_instance(request=change)
    assert error_status(info.value) == "FAILED_PRECONDITION"

    plain_client.stop_instance(request={"name": full}).result(timeout=5, polling=FAST_POLLING)
    result = plain_client.update_instance(request=change).result(timeout=5, polling=FAST_POLLING)
    assert result.gce_setup.machine_type.endswith("/machineTypes/n2-standard-8")


def test_update_refuses_a_machine_type_the_instance_cannot_have(
    plain_sim: WorkbenchSimulator, plain_client: notebooks_v2.NotebookServiceClient
) -> None:
    """As the live API: a name no machine type has, or a family without GPUs under accelerator_configs."""
    gpu = plain_sim.add_instance(PROJECT, ZONE, "gpu", owner_email="a@example.com", machine_type="n1-standard-8",
                                 accelerators={"NVIDIA_TESLA_T4": 1}, state="STOPPED")
    plain = plain_sim.add_instance(PROJECT, ZONE, "cpu", owner_email="b@example.com", state="STOPPED")
    read = plain_client.get_instance(name=gpu)
    assert [(a.type_.name, a.core_count) for a in read.gce_setup.accelerator_configs] == [("NVIDIA_TESLA_T4", 1)]

    def change(full: str, machine_type: str) -> notebooks_v2.Instance:
        return plain_client.update_instance(request={
            "instance": {"name": full, "gce_setup": {"machine_type": machine_type}},
            "update_mask": {"paths": ["gce_setup.machine_type"]},
        }).result(timeout=5, polling=FAST_POLLING)

    for full, machine_type in [(plain, "a bigger one"), (plain, "e2-highmem"), (gpu, "e2-highmem-8"),
                               (gpu, "n2-highmem-16"), (gpu, "n2-custom-8-65536")]:
        with pytest.raises(gexc.BadRequest) as info:
            change(full, machine_type)
        assert error_status(info.value) == "INVALID_ARGUMENT", machine_type
        assert "Invalid value for field 'instance.gce_setup.machine_type'" in str(info.value)
    assert "does not support accelerators" in str(info.value)
    assert plain_sim.get(gpu)["gceSetup"]["machineType"].endswith("/n1-standard-8")
    assert change(gpu, "n1-highmem-8").gce_setup.machine_type.endswith("/machineTypes/n1-highmem-8")
    assert change(plain, "e2-highmem-4").gce_setup.machine_type.endswith("/machineTypes/e2-highmem-4")


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


# --- health -----------------------------------------------------------------------------
def test_oom_kill_refreshes_health_after_the_delay(
    sim: WorkbenchSimulator, client: notebooks_v2.NotebookServiceClient
) -> None:
    full = sim.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com")
    before = dict(client.get_instance(name=full).health_info)
    sim.oom_kill(full, jupyter_survives=False, health_delay_s=0.2)
    # Right after the kill the health info still describes the time before it.
    assert dict(client.get_instance(name=full).health_info) == before
    assert sim.wait_until(lambda: sim.get(full)["healthState"] == "UNHEALTHY", timeout=3)
    inst = client.get_instance(name=full)
    assert inst.health_state == notebooks_v2.HealthState.UNHEALTHY
    assert inst.health_info["jupyterlab_status"] == "-1"
    assert inst.health_info["jupyterlab_api_status"] == "-1"
    assert inst.health_info["docker_status"] == "1"
    updated = datetime.strptime(inst.health_info["updated"], "%Y-%m-%d %H:%M:%S.%f")
    assert abs((datetime.now(UTC).replace(tzinfo=None) - updated).total_seconds()) < 2
    assert inst.state == notebooks_v2.State.ACTIVE

    sim.oom_kill(full, jupyter_survives=True, health_delay_s=0)
    survived = client.get_instance(name=full)
    assert survived.health_state == notebooks_v2.HealthState.HEALTHY
    assert {v for k, v in survived.health_info.items() if k != "updated"} == {"1"}

    sim.set_health(full, "AGENT_NOT_RUNNING", None)
    assert client.get_instance(name=full).health_state == (
        notebooks_v2.HealthState.AGENT_NOT_RUNNING
    )
    assert dict(client.get_instance(name=full).health_info) == {}


def test_latency_is_added_to_every_request() -> None:
    with WorkbenchSimulator(latency_s=0.15, **FAST) as sim:
        full = sim.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com")
        client = make_client(sim)
        started = time.monotonic()
        client.get_instance(name=full)
        client.get_instance(name=full)
        assert time.monotonic() - started >= 0.3
        assert sim.count_calls("get") == 2
        assert sim.calls == [("GET", f"/v2/{full}")] * 2


def test_cli_serves_seeded_instances() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "simulators.workbench", "--port", "0", "--grpc-port", "0", "--seed", "demo"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO_ROOT,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline().strip()
        found = re.fullmatch(r"Workbench simulator on (http://127\.0\.0\.1:\d+) \(REST\) and "
                             r"grpc://(127\.0\.0\.1:\d+) \(gRPC\)", first)
        assert found, first
        rest = notebooks_v2.NotebookServiceClient(
            transport="rest",
            credentials=AnonymousCredentials(),
            client_options=ClientOptions(api_endpoint=found[1]),
        )
        channel = grpc.insecure_channel(found[2])
        over_grpc = notebooks_v2.NotebookServiceClient(transport=NotebookServiceGrpcTransport(channel=channel))
        for client in (rest, over_grpc):
            listed = {i.name.rsplit("/", 1)[-1]: i for i in
                      client.list_instances(parent="projects/demo-project/locations/-")}
            assert {"alice-nb", "bob-nb", "carol-nb", "shared-nb"} <= listed.keys()
            assert listed["bob-nb"].health_state == notebooks_v2.HealthState.UNHEALTHY
            assert listed["carol-nb"].state == notebooks_v2.State.STOPPED
        channel.close()
    finally:
        proc.terminate()
        proc.wait(timeout=5)
    assert proc.returncode == 0


# --- live label semantics (docs/fidelity.md, Workbench) ------------------------------------------------
def update_labels(client: notebooks_v2.NotebookServiceClient, full: str, labels: dict[str, str]) -> Any:
    return client.update_instance(request={"instance": {"name": full, "labels": labels},
                                           "update_mask": {"paths": ["labels"]}})


def test_label_update_merges_and_an_empty_value_deletes(
    plain_sim: WorkbenchSimulator, plain_client: notebooks_v2.NotebookServiceClient
) -> None:
    """magic-modules mergeMaps: a key left out of the update is kept; one sent empty is deleted."""
    full = plain_sim.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com",
                                  labels={"team": "ml", "medic-inflight": "1795147200"})
    update_labels(plain_client, full, {"medic-kills": "1", "medic-inflight": ""}).result(
        timeout=5, polling=FAST_POLLING)
    assert own(plain_sim.get(full)["labels"]) == {"team": "ml", "medic-kills": "1"}
    assert plain_sim.label_writes == [(full, {"medic-kills": "1", "medic-inflight": ""})]


def test_replace_variant_replaces_the_whole_map_and_keeps_empty_values(plain_client_factory: Any) -> None:
    sim, client = plain_client_factory(label_updates="replace")
    full = sim.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com", labels={"team": "ml", "x": "1"})
    update_labels(client, full, {"team": "ml", "x": ""}).result(timeout=5, polling=FAST_POLLING)
    assert own(sim.get(full)["labels"]) == {"team": "ml", "x": ""}


def test_system_labels_are_on_every_instance_count_toward_64_and_are_never_removed(
    plain_sim: WorkbenchSimulator, plain_client: notebooks_v2.NotebookServiceClient
) -> None:
    full = plain_sim.add_instance(PROJECT, ZONE, "nb-sys", owner_email="a@example.com")
    system = plain_sim.get(full)["labels"]
    assert set(system) == set(SYSTEM_LABEL_KEYS)
    assert system["consumer-project-id"] == PROJECT and system["resource-name"] == "nb-sys"
    assert system["consumer-project-number"].isdigit()
    update_labels(plain_client, full, {"resource-name": "", "notebooks-product": "mine"}).result(
        timeout=5, polling=FAST_POLLING)
    assert plain_sim.get(full)["labels"] == system  # the change is ignored: the service keeps its own
    with pytest.raises(gexc.BadRequest, match="at most 64"):  # 61 + the 4 system labels
        update_labels(plain_client, full, {f"k{i}": "x" for i in range(61)})


@pytest.mark.parametrize("visible", ["on-done", "at-once"])
def test_a_label_update_is_seen_when_its_operation_ends_or_at_once(
    plain_client_factory: Any, monkeypatch: pytest.MonkeyPatch, visible: str
) -> None:
    """Undocumented (docs/fidelity.md): both are simulated. MEDIC_SIM_LABELS chooses for an unset simulator."""
    monkeypatch.setenv("MEDIC_SIM_LABELS", visible)
    sim, client = plain_client_factory(update_seconds=2.0)  # long enough to look before it ends, under load
    full = sim.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com")
    op = update_labels(client, full, {"team": "cv"})
    assert not op.done()
    assert own(sim.get(full)["labels"]) == ({"team": "cv"} if visible == "at-once" else {})
    op.result(timeout=5, polling=FAST_POLLING)
    assert own(sim.get(full)["labels"]) == {"team": "cv"}
    monkeypatch.setenv("MEDIC_SIM_LABELS", "at-once")
    pinned, pinned_client = plain_client_factory(update_seconds=2.0, labels_visible="on-done")  # the argument wins
    other = pinned.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com")
    update_labels(pinned_client, other, {"team": "cv"})
    assert own(pinned.get(other)["labels"]) == {}


@pytest.mark.parametrize("verb", ["reset", "stop", "machine_type"])
def test_an_operation_on_an_instance_between_states_is_409_aborted(
    plain_sim: WorkbenchSimulator, plain_client: notebooks_v2.NotebookServiceClient, verb: str
) -> None:
    """terraform-provider-google 24278/17593: "unable to queue the operation", on REST a 409 whose body says
    ABORTED (google.api_core maps REST on the HTTP status: Conflict). A label update is taken meanwhile."""
    full = plain_sim.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com", state="STARTING")
    with pytest.raises(gexc.Conflict) as info:
        if verb == "machine_type":
            plain_client.update_instance(request={
                "instance": {"name": full, "gce_setup": {"machine_type": "n2-standard-8"}},
                "update_mask": {"paths": ["gce_setup.machine_type"]}})
        else:
            getattr(plain_client, f"{verb}_instance")(request={"name": full})
    assert error_status(info.value) == "ABORTED" and "unable to queue the operation" in str(info.value.message)
    assert not plain_sim.operations()
    update_labels(plain_client, full, {"team": "cv"}).result(timeout=5, polling=FAST_POLLING)


def test_a_409_aborted_fault_is_injectable(
    plain_sim: WorkbenchSimulator, plain_client: notebooks_v2.NotebookServiceClient
) -> None:
    full = plain_sim.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com")
    plain_sim.inject_fault(method="reset", kind="http", status=409, grpc_status="ABORTED")
    with pytest.raises(gexc.Conflict) as info:
        plain_client.reset_instance(request={"name": full})
    assert error_status(info.value) == "ABORTED"
    plain_client.reset_instance(request={"name": full})
    assert plain_sim.resets(full) == 1


def test_health_is_reported_on_the_agents_cadence(plain_client_factory: Any) -> None:
    """Live, the agent reports about every 30 s (`report-event-health`): health_info.updated moves on at each
    report, and a kill shows at the next one, not at once. The cadence is a parameter (1 s here)."""
    sim, _ = plain_client_factory(health_interval_s=1.0)
    full = sim.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com")
    first = sim.get(full)["healthInfo"]["updated"]
    assert sim.wait_until(lambda: sim.get(full)["healthInfo"]["updated"] != first, timeout=3)
    sim.oom_kill(full, jupyter_survives=False)  # just after a report: the next is about a second away
    assert sim.get(full)["healthState"] == "HEALTHY"  # not reported yet
    assert sim.wait_until(lambda: sim.get(full)["healthState"] == "UNHEALTHY", timeout=2)
    assert sim.get(full)["healthInfo"]["jupyterlab_status"] == "-1"
