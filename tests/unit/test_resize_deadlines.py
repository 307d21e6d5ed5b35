"""A resize whose step is still running when the worker's time runs out, on the fakes and one FakeClock.

Such a step has not failed: nothing more is sent behind it (a revert would race a start), and the report says
what a read of the instance shows it becoming (shared/app/resize.py). Production's budget (420 s) and steps
that outlast it cost nothing here. The wire keeps the family's other cases (tests/integration/
test_resize_failures.py): the stop still running, with the Approve pressed again that finishes the resize;
the alert's own button named in the report; a machine-type change still running (FakeWorkbench's update has
no op_never_done).
"""

from __future__ import annotations

import pytest

from shared.core.blocks import resize_request_blocks
from shared.core.models import Action, InstanceRef, InstanceState, Requester, RestartRequest, Trigger
from shared.core.payloads import ResizePayload
from tests.fakes.rig import ALERTS, Rig
from tests.fakes.workbench import WorkbenchFault

ORGANIZER = Requester("U0ORG", "org@contest.example", True)
BUDGET_S = 420.0  # Settings.worker_budget's default: production's
SLOW_S = BUDGET_S + 120  # a step that outlasts the whole budget, then finishes


def approved(rig: Rig, ref: InstanceRef, machine_type: str = "e2-highmem-4") -> RestartRequest:
    """An organizer's Approve on the request message `bigger` posted for the owner, as slack_app publishes it."""
    asker = rig.owner(ref)
    line = f"<@{asker}> asks for more memory for *{ref.name}*: → {machine_type}"
    blocks = resize_request_blocks(line, ref, machine_type, asker, "en")
    ts = rig.slack.post(ALERTS, line, blocks)
    assert ts
    return RestartRequest(
        action=Action.RESIZE, trigger=Trigger.BUTTON, instance=ref.full_name, requested_at=rig.clock.now(),
        event_id=f"button-resize-{ref.name}", requester=ORGANIZER, alert_ts=ts, alert_channel=ALERTS,
        alert_blocks=tuple(blocks), payload=ResizePayload(machine_type=machine_type, asked_by=asker))


def thread(rig: Rig, ts: str) -> list[str]:
    return [m.text for m in rig.slack.in_channel(ALERTS) if m.thread_ts == ts]


def resize(rig: Rig, request: RestartRequest) -> str:
    """Push the Approve, and the worker runs out its budget: what the resize said last in its thread."""
    [outcome] = rig.push(request)
    assert outcome.ack, outcome
    said = thread(rig, request.alert_ts)
    assert said and said[-1].startswith((":x:", ":warning:")), said  # a failure, or a step still running
    assert rig.clock.monotonic() >= BUDGET_S  # the report came when the budget ran out, not before
    return said[-1]


@pytest.fixture
def rig(monkeypatch: pytest.MonkeyPatch) -> Rig:
    built = Rig.build(monkeypatch, visibility="on-done", stop_seconds=0.3, start_seconds=0.3)
    built.slack.users[ORGANIZER.email] = ORGANIZER.slack_user_id
    return built


def test_a_stop_still_running_at_the_deadline_is_reported_as_where_it_ends(rig: Rig) -> None:
    rig.workbench.api.stop_seconds = SLOW_S
    ref = rig.instance("wb-slowstop")
    report = resize(rig, approved(rig, ref))
    assert rig.workbench.state(ref) is InstanceState.STOPPING  # the report came while the stop was running
    assert "still STOPPING" in report and "left STOPPED on e2-standard-4" in report, report
    assert "running" not in report and "Nothing was changed" not in report, report
    assert "press Approve again" in report, report
    rig.workbench.settle(SLOW_S)
    assert rig.workbench.state(ref) is InstanceState.STOPPED
    assert rig.workbench.get(ref).machine_type == "e2-standard-4"
    assert [verb for verb, name in rig.workbench.calls if name == ref.name and verb in ("stop", "PATCH", "start")
            ] == ["stop"]  # nothing sent behind the stop's back


@pytest.mark.parametrize(
    ("fault", "machine"),
    [(None, "e2-highmem-4"), (WorkbenchFault("PATCH", "http", status=400), "e2-standard-4")],
    ids=["new-type", "old-type-after-a-failed-update"],
)
def test_a_start_still_running_at_the_deadline_is_left_alone_and_reported(
    rig: Rig, fault: WorkbenchFault | None, machine: str
) -> None:
    rig.workbench.api.start_seconds = SLOW_S
    ref = rig.instance("wb-slowstart")
    if fault:
        rig.workbench.inject(fault)
    request = approved(rig, ref)
    report = resize(rig, request)
    assert rig.workbench.state(ref) is InstanceState.STARTING
    assert f"still STARTING on {machine}" in report and "STOPPED" not in report, report
    rig.workbench.settle(SLOW_S)
    assert rig.workbench.state(ref) is InstanceState.ACTIVE and rig.workbench.get(ref).machine_type == machine
    assert [verb for verb, name in rig.workbench.calls if name == ref.name and verb in ("stop", "PATCH", "start")
            ] == ["stop", "PATCH", "start"]  # no revert behind the start
    assert thread(rig, request.alert_ts)[-1] == report  # and nothing said after it


def test_a_step_that_fails_outside_the_apis_answers_is_reported_with_the_state_it_left(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step can fail with what no adapter translates (google.auth's TransportError when a token can't be
    refreshed; a bug): it is that step's failure all the same, reported with the state left behind, and the
    old type is started again. Not the dispatcher's "couldn't read the instance", which would leave the
    participant's notebook stopped on the new type with no one told."""
    from google.auth.exceptions import TransportError  # noqa: PLC0415

    ref = rig.instance("wb-noauth")
    starts = rig.workbench.start

    def start(started: InstanceRef) -> object:
        if rig.workbench.get(started).machine_type == "e2-highmem-4":
            raise TransportError("metadata server unreachable")  # type: ignore[no-untyped-call]
        return starts(started)

    monkeypatch.setattr(rig.workbench, "start", start)
    request = approved(rig, ref)
    [outcome] = rig.push(request)
    assert outcome.ack and outcome.decision == "resize" and "failed at start" in outcome.detail, outcome
    report = thread(rig, request.alert_ts)[-1]
    assert report.startswith(":x:") and "metadata server unreachable" in report, report
    rig.workbench.settle()
    assert rig.workbench.state(ref) is InstanceState.ACTIVE and rig.workbench.get(ref).machine_type == "e2-standard-4"
