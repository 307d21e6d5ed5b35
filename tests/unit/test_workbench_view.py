"""to_view: what the bot reads from a notebooks_v2.Instance, including values newer than its protos."""

from __future__ import annotations

from google.cloud import notebooks_v2

from shared.adapters.workbench import to_view
from shared.core.models import InstanceState

NAME = "projects/contest-prj/locations/asia-northeast1-a/instances/wb-alice"


def instance(**fields: object) -> notebooks_v2.Instance:
    return notebooks_v2.Instance(
        name=NAME,
        state=notebooks_v2.State.ACTIVE,
        health_state=notebooks_v2.HealthState.UNHEALTHY,
        health_info={"jupyterlab_status": "-1"},
        labels={"medic-kills": "1796000000"},
        gce_setup=notebooks_v2.GceSetup(
            machine_type="https://www.googleapis.com/compute/v1/projects/p/zones/z/machineTypes/e2-standard-4",
            metadata={"proxy-mode": "mail", "proxy-user-mail": " Alice@Contest.example "},
        ),
        **fields,
    )


def test_reads_owner_state_health_machine_and_labels() -> None:
    view = to_view(instance())
    assert view.ref.name == "wb-alice" and view.ref.zone == "asia-northeast1-a"
    assert view.state is InstanceState.ACTIVE and view.health_state == "UNHEALTHY"
    assert view.owner_email == "alice@contest.example"
    assert view.machine_type == "e2-standard-4"
    assert view.labels == {"medic-kills": "1796000000"} and view.health_info == {"jupyterlab_status": "-1"}


def test_an_instance_without_gce_setup_has_no_owner_and_no_machine() -> None:
    bare = notebooks_v2.Instance(name=NAME, state=notebooks_v2.State.STOPPED)
    view = to_view(bare)
    assert view.owner_email is None and view.machine_type == "" and view.state is InstanceState.STOPPED
    assert view.health_state == "HEALTH_STATE_UNSPECIFIED"


def test_enum_values_newer_than_the_protos_do_not_crash() -> None:
    newer = instance()
    pb = notebooks_v2.Instance.pb(newer)
    pb.state = 42  # proto3 enums are open: the API may send a state this library has no name for
    pb.health_state = 43
    view = to_view(newer)
    assert view.state is InstanceState.STATE_UNSPECIFIED and view.health_state == "43"


def test_reads_the_gpus_a_resize_must_keep() -> None:
    accelerator = notebooks_v2.AcceleratorConfig(
        type_=notebooks_v2.AcceleratorConfig.AcceleratorType.NVIDIA_TESLA_T4, core_count=2)
    gpu = instance()
    gpu.gce_setup.accelerator_configs = [accelerator]
    view = to_view(gpu)
    assert view.accelerators == (("NVIDIA_TESLA_T4", 2),)
    assert to_view(instance()).accelerators == ()
