"""The Workbench simulator's gRPC face, driven by the real client on its default transport."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from google.api_core import exceptions as gexc
from google.cloud import notebooks_v2
from google.cloud.notebooks_v2.services.notebook_service.transports import NotebookServiceGrpcTransport
from google.protobuf import unknown_fields

import simulators.workbench
from simulators.workbench import WorkbenchSimulator
from tests.simulators.conftest import BAD_LABELS, FAST_POLLING, GOOD_LABELS, PROJECT, ZONE, own

pytestmark = pytest.mark.wire


@pytest.fixture
def client(sim: WorkbenchSimulator) -> Iterator[notebooks_v2.NotebookServiceClient]:
    channel = grpc.insecure_channel(sim.grpc_endpoint.removeprefix("grpc://"))
    yield notebooks_v2.NotebookServiceClient(transport=NotebookServiceGrpcTransport(channel=channel))
    channel.close()


def add(sim: WorkbenchSimulator, name: str, **kwargs: Any) -> str:
    return sim.add_instance(PROJECT, ZONE, name, owner_email=f"{name}@example.com", **kwargs)


def test_get_and_list_speak_protobuf(sim: WorkbenchSimulator, client: notebooks_v2.NotebookServiceClient) -> None:
    full = add(sim, "a", labels={"team": "ml"})
    add(sim, "b")
    instance = client.get_instance(name=full)
    assert instance.state is notebooks_v2.State.ACTIVE
    assert instance.gce_setup.metadata["proxy-user-mail"] == "a@example.com"
    assert own(instance.labels) == {"team": "ml"}
    assert instance.health_state is notebooks_v2.HealthState.HEALTHY
    pages = client.list_instances(request={"parent": f"projects/{PROJECT}/locations/{ZONE}", "page_size": 1})
    assert [i.name.rsplit("/", 1)[-1] for i in pages] == ["a", "b"]  # two pages, followed by the pager
    assert sim.grpc_requests == len(sim.calls) == 3


def test_fields_the_protos_do_not_know_arrive_as_unknown_fields(
    sim: WorkbenchSimulator, client: notebooks_v2.NotebookServiceClient
) -> None:
    """As from the live API: on REST they are the ParseError trap; on gRPC protobuf keeps them aside."""
    full = add(sim, "u")
    instance = notebooks_v2.Instance.pb(client.get_instance(name=full))
    assert [f.data for f in unknown_fields.UnknownFieldSet(instance)] == [b"false"]  # enableDeletionProtection
    assert [f.data for f in unknown_fields.UnknownFieldSet(instance.gce_setup)] == [b'"AUTOMATIC"']


def test_reset_operation_polls_to_its_instance_without_the_rest_parse_error(
    sim: WorkbenchSimulator, client: notebooks_v2.NotebookServiceClient
) -> None:
    """unknown_fields=True breaks op.result() on REST (docs/checked-facts.md); on gRPC the same answer parses."""
    full = add(sim, "r")
    with sim.timeline_held():  # still running when looked at, however slow the machine
        operation = client.reset_instance(request={"name": full})
        assert not operation.done(retry=None)
        assert client.get_instance(name=full).state is notebooks_v2.State.STARTING
    instance = operation.result(timeout=5, polling=FAST_POLLING)
    assert instance.state is notebooks_v2.State.ACTIVE
    assert list(unknown_fields.UnknownFieldSet(notebooks_v2.Instance.pb(instance)))  # carried inside the LRO too
    assert operation.metadata.verb == "reset"
    assert client.get_operation(request={"name": operation.operation.name}).done
    assert sim.resets(full) == 1


def test_list_operations_pages_through_every_operation_of_the_zone(
    sim: WorkbenchSimulator, client: notebooks_v2.NotebookServiceClient
) -> None:
    """What a worker that crashed mid-restart reads to learn whether its reset reached the API."""
    first, second = add(sim, "o1"), add(sim, "o2")
    client.reset_instance(request={"name": first})
    client.update_instance(
        request={"instance": {"name": second, "labels": {"k": "v"}}, "update_mask": {"paths": ["labels"]}}
    )
    location = f"projects/{PROJECT}/locations/{ZONE}"
    page = client.list_operations(request={"name": location, "page_size": 1})
    assert len(page.operations) == 1 and page.next_page_token
    rest = client.list_operations(request={"name": location, "page_token": page.next_page_token})
    assert not rest.next_page_token
    found = []
    for operation in [*page.operations, *rest.operations]:
        metadata = notebooks_v2.OperationMetadata.pb(notebooks_v2.OperationMetadata())
        assert operation.metadata.Unpack(metadata)
        found.append((metadata.target, metadata.verb))
    assert found == [(first, "reset"), (second, "update")]  # oldest first
    other = client.list_operations(request={"name": f"projects/{PROJECT}/locations/us-east1-b"})
    assert not other.operations


def test_update_applies_only_the_masked_labels(
    sim: WorkbenchSimulator, client: notebooks_v2.NotebookServiceClient
) -> None:
    full = add(sim, "u", labels={"team": "ml"})
    operation = client.update_instance(
        request={
            "instance": {"name": full, "labels": {"medic-kills": "1"}, "gce_setup": {"machine_type": "x"}},
            "update_mask": {"paths": ["labels"]},
        }
    )
    updated = operation.result(timeout=5, polling=FAST_POLLING)
    assert own(updated.labels) == {"team": "ml", "medic-kills": "1"}  # merged: a key left out is kept
    assert sim.get(full)["gceSetup"]["machineType"].endswith("/e2-standard-4")  # not in the mask: untouched
    with pytest.raises(gexc.InvalidArgument, match="update_mask"):
        client.update_instance(request={"instance": {"name": full}, "update_mask": {"paths": []}})


@pytest.mark.parametrize("labels", BAD_LABELS)
def test_update_refuses_labels_gcp_refuses_with_invalid_argument(
    sim: WorkbenchSimulator, client: notebooks_v2.NotebookServiceClient, labels: dict[str, str]
) -> None:
    full = add(sim, "u", labels={"team": "ml"})
    with pytest.raises(gexc.InvalidArgument, match=r"instance\.labels"):
        client.update_instance(
            request={"instance": {"name": full, "labels": labels}, "update_mask": {"paths": ["labels"]}}
        )
    assert own(sim.get(full)["labels"]) == {"team": "ml"}


@pytest.mark.parametrize("labels", GOOD_LABELS)
def test_update_takes_labels_gcp_takes(
    sim: WorkbenchSimulator, client: notebooks_v2.NotebookServiceClient, labels: dict[str, str]
) -> None:
    full = add(sim, "u")
    operation = client.update_instance(
        request={"instance": {"name": full, "labels": labels}, "update_mask": {"paths": ["labels"]}}
    )
    assert own(operation.result(timeout=5, polling=FAST_POLLING).labels) == labels


@pytest.mark.parametrize(
    ("call", "error"),
    [
        pytest.param(lambda c, full: c.get_instance(name=full + "-missing"), gexc.NotFound, id="not-found"),
        pytest.param(
            lambda c, full: c.start_instance(request={"name": full}), gexc.FailedPrecondition, id="start-active"
        ),
        pytest.param(
            lambda c, full: c.delete_instance(request={"name": full}), gexc.MethodNotImplemented, id="unimplemented"
        ),
    ],
)
def test_errors_arrive_as_grpc_status_codes(
    sim: WorkbenchSimulator, client: notebooks_v2.NotebookServiceClient, call: Any, error: type[Exception]
) -> None:
    full = add(sim, "e")
    with pytest.raises(error):
        call(client, full)


def test_a_machine_type_without_gpus_on_an_instance_with_accelerators_is_invalid_argument(
    sim: WorkbenchSimulator, client: notebooks_v2.NotebookServiceClient
) -> None:
    full = add(sim, "g", machine_type="n1-standard-8", accelerators={"NVIDIA_TESLA_T4": 1}, state="STOPPED")
    [accelerator] = client.get_instance(name=full).gce_setup.accelerator_configs
    assert accelerator.type_ is notebooks_v2.AcceleratorConfig.AcceleratorType.NVIDIA_TESLA_T4
    assert accelerator.core_count == 1
    for machine_type in ("e2-highmem-8", "not a machine type"):
        with pytest.raises(gexc.InvalidArgument, match=r"instance\.gce_setup\.machine_type"):
            client.update_instance(request={"instance": {"name": full, "gce_setup": {"machine_type": machine_type}},
                                            "update_mask": {"paths": ["gce_setup.machine_type"]}})
    assert sim.get(full)["gceSetup"]["machineType"].endswith("/n1-standard-8")


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (429, gexc.TooManyRequests),
        (403, gexc.PermissionDenied),
        (500, gexc.InternalServerError),
        (503, gexc.ServiceUnavailable),
    ],
)
def test_injected_http_faults_map_to_their_grpc_codes(
    sim: WorkbenchSimulator, client: notebooks_v2.NotebookServiceClient, status: int, error: type[Exception]
) -> None:
    full = add(sim, "f")
    sim.inject_fault(method="get", path_contains="/instances/f", kind="http", status=status)
    with pytest.raises(error, match="Simulated fault"):
        client.get_instance(name=full)
    assert client.get_instance(name=full).name == full  # the fault was for one call


def test_timeout_fault_is_a_deadline_exceeded(
    sim: WorkbenchSimulator, client: notebooks_v2.NotebookServiceClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(simulators.workbench.model, "TIMEOUT_FAULT_SECONDS", 1.0)
    full = add(sim, "t")
    sim.inject_fault(method="reset", kind="timeout")
    with pytest.raises(gexc.DeadlineExceeded):  # the client gave up: the held call, 1 s later, succeeds
        client.reset_instance(request={"name": full}, timeout=0.3)
    assert sim.wait_until(lambda: sim.resets(full) == 1, timeout=3)  # held, then applied all the same


def test_failed_operation_carries_its_error(
    sim: WorkbenchSimulator, client: notebooks_v2.NotebookServiceClient
) -> None:
    full = add(sim, "o")
    sim.inject_fault(method="reset", kind="op_error", grpc_status="FAILED_PRECONDITION")
    operation = client.reset_instance(request={"name": full})
    with pytest.raises(gexc.FailedPrecondition, match="Simulated failure of the reset operation"):
        operation.result(timeout=5, polling=FAST_POLLING)
    assert client.get_instance(name=full).state is notebooks_v2.State.ACTIVE  # back as it was


def test_an_operation_on_an_instance_between_states_is_aborted(
    sim: WorkbenchSimulator, client: notebooks_v2.NotebookServiceClient
) -> None:
    """The live API's 409 "unable to queue the operation" is gRPC's ABORTED (google.api_core's Aborted)."""
    full = add(sim, "between", state="STOPPING")
    with pytest.raises(gexc.Aborted, match="unable to queue the operation"):
        client.start_instance(request={"name": full})
    sim.inject_fault(method="update", kind="http", status=409, grpc_status="ABORTED")
    with pytest.raises(gexc.Aborted):
        client.update_instance(request={"instance": {"name": full, "labels": {"a": "b"}},
                                        "update_mask": {"paths": ["labels"]}})
