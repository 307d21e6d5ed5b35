"""The Workbench simulator, driven by the real google-cloud-notebooks REST client over a socket."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import grpc
import pytest
from google.api_core import exceptions as gexc
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import notebooks_v2
from google.cloud.notebooks_v2.services.notebook_service.transports import NotebookServiceGrpcTransport
from google.protobuf import json_format

from simulators.workbench import WorkbenchSimulator
from tests.simulators.conftest import (
    BAD_LABELS,
    FAST,
    FAST_POLLING,
    GOOD_LABELS,
    PROJECT,
    ZONE,
    error_status,
    make_client,
    own,
    raw_get,
)

pytestmark = pytest.mark.wire

REPO_ROOT = Path(__file__).resolve().parents[2]


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

    with sim.timeline_held():  # seen while it runs, however slow the machine
        client.reset_instance(request={"name": full})
        during = client.get_instance(name=full)
    assert during.state == notebooks_v2.State.STARTING
    assert during.health_state == notebooks_v2.HealthState.AGENT_NOT_RUNNING
    assert dict(during.health_info) == {}

    assert sim.wait_until(lambda: sim.get(full)["state"] == "ACTIVE")
    assert sim.get(full)["healthState"] == "AGENT_NOT_RUNNING"  # agent not reporting yet
    assert sim.wait_until(lambda: sim.get(full).get("healthState") == "HEALTHY")
    after = client.get_instance(name=full)
    assert after.health_info["jupyterlab_status"] == "1"
    assert after.health_info["jupyterlab_api_status"] == "1"
    updated = datetime.strptime(after.health_info["updated"], "%Y-%m-%d %H:%M:%S.%f")
    assert updated.replace(tzinfo=UTC) >= after.update_time  # refreshed after completion

    # A second reset while one is running is refused, as the live API refuses it: 409 ABORTED, not queued.
    with sim.timeline_held():
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

    with sim.timeline_held():
        client.stop_instance(request={"name": full})
        assert client.get_instance(name=full).state == notebooks_v2.State.STOPPING
    assert sim.wait_until(lambda: sim.get(full)["state"] == "STOPPED")
    stopped = sim.get(full)
    assert "healthState" not in stopped and "healthInfo" not in stopped

    with pytest.raises(gexc.BadRequest) as info:
        client.reset_instance(request={"name": full})
    assert error_status(info.value) == "FAILED_PRECONDITION"
    with pytest.raises(gexc.BadRequest):
        client.stop_instance(request={"name": full})

    with sim.timeline_held():
        client.start_instance(request={"name": full})
        assert client.get_instance(name=full).state == notebooks_v2.State.STARTING
    assert sim.wait_until(lambda: sim.get(full).get("healthState") == "HEALTHY")
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


# --- health -----------------------------------------------------------------------------
def test_oom_kill_refreshes_health_after_the_delay(
    sim: WorkbenchSimulator, client: notebooks_v2.NotebookServiceClient
) -> None:
    full = sim.add_instance(PROJECT, ZONE, "nb", owner_email="a@example.com")
    before = dict(client.get_instance(name=full).health_info)
    killed_at = datetime.now(UTC).replace(tzinfo=None)
    sim.oom_kill(full, jupyter_survives=False, health_delay_s=0.2)
    # Right after the kill the health info still describes the time before it.
    assert dict(client.get_instance(name=full).health_info) == before
    assert sim.wait_until(lambda: sim.get(full)["healthState"] == "UNHEALTHY")
    inst = client.get_instance(name=full)
    assert inst.health_state == notebooks_v2.HealthState.UNHEALTHY
    assert inst.health_info["jupyterlab_status"] == "-1"
    assert inst.health_info["jupyterlab_api_status"] == "-1"
    assert inst.health_info["docker_status"] == "1"
    updated = datetime.strptime(inst.health_info["updated"], "%Y-%m-%d %H:%M:%S.%f")
    assert killed_at + timedelta(seconds=0.2) <= updated <= datetime.now(UTC).replace(tzinfo=None)  # after the delay
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
