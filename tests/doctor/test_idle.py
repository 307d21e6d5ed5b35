"""make doctor's idle-shutdown line (issue 23): what each notebook does when left idle, read from the instance's
metadata as the real client library returns it, and a warning for those on Workbench's 180-minute default."""

from __future__ import annotations

from google.cloud import notebooks_v2

from shared.adapters.instances import to_view
from tools.doctor.idle import idle_checks
from tools.doctor.model import Instance, Observed, ReadError, Status

ZONE = "asia-northeast1-a"


def instance(name: str, idle: str | None) -> notebooks_v2.Instance:
    metadata = {"proxy-mode": "mail", "proxy-user-mail": f"{name}@contest.example"}
    if idle is not None:
        metadata["idle-timeout-seconds"] = idle
    return notebooks_v2.Instance(name=f"projects/contest-prj/locations/{ZONE}/instances/{name}",
                                 gce_setup=notebooks_v2.GceSetup(metadata=metadata))


def fleet(*settings: str | None) -> Observed:
    views = [to_view(instance(f"wb-{i}", idle)) for i, idle in enumerate(settings)]
    return Observed(instances=[Instance(v.ref.name, v.ref.zone, v.state.value, v.owner_email, v.labels,
                                        v.health_state, v.health_info, v.health_updated, v.idle_timeout_s)
                               for v in views])


def test_every_notebook_set_on_purpose_is_one_ok_line() -> None:
    [line] = idle_checks(fleet("36000", "36000", "86400"))
    assert line.status is Status.OK
    assert line.what == "idle shutdown set on every notebook: 2 after 600 idle minutes, 1 after 1440 idle minutes"


def test_a_notebook_on_workbenchs_default_is_named_with_the_fix() -> None:
    [line] = idle_checks(fleet("36000", None, "not-a-number"))
    assert line.status is Status.WARN
    assert "2 on Workbench's default of 180 minutes" in line.what and "wb-1, wb-2" in line.what
    assert "idle_shutdown_minutes" in line.fix and "--metadata=idle-timeout-seconds=" in line.fix


def test_no_fleet_read_says_nothing_here() -> None:
    assert idle_checks(Observed(instances=ReadError("denied"))) == []
    assert idle_checks(Observed(instances=[])) == []
