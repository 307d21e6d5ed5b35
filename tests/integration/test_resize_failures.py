"""A resize that fails or outlasts the worker's budget, over the wire: the old machine left as it was and said,
and a step still running at the deadline reported as where it ends, with the button that finishes it.

Two stacks: tests/integration/more_memory.py's, and `slow`, whose worker budget ends while a step still runs.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator

import pytest

from simulators.entries import oom_entry
from simulators.polling import PATIENCE_S
from simulators.slack import SlackRequester
from simulators.stack import PROJECT, SIGNING_SECRET, LocalStack
from tests.integration.conftest import new_instance
from tests.integration.helpers import ORGANIZER, ZONE, stack_with_organizer
from tests.integration.more_memory import (
    bigger_request,
    dms,
    lifecycle_calls,
    press,
    slack,
    stack,
    thread,
)

__all__ = ["slack", "stack"]  # the module's stack and its Slack app (more_memory.py)

pytestmark = pytest.mark.wire


SLOW_BUDGET_S = 5.0  # the worker's budget on the `slow` stack
SLOW_S = 8.0  # a stop or start that outlasts that budget, then finishes
_FAILING = itertools.count(1)


@pytest.fixture(scope="module")
def slow(label_visibility: str) -> Iterator[LocalStack]:
    """A worker whose budget ends while a step is still running; each test makes its step slow."""
    with stack_with_organizer(
        workbench_options={"stop_seconds": 0.3, "start_seconds": 0.3},
        env={"WORKER_BUDGET_SECONDS": str(SLOW_BUDGET_S)},
    ) as running:
        yield running


@pytest.fixture(scope="module")
def slow_slack(slow: LocalStack) -> SlackRequester:
    """Signed requests to the `slow` stack's Slack app."""
    return SlackRequester(SIGNING_SECRET, slow.functions["slack_app"][0].url)


@pytest.mark.parametrize(
    ("fault", "left", "expected", "state"),
    [
        ({"method": "stop", "kind": "op_error"}, "e2-standard-4", "Nothing was changed", "ACTIVE"),
        ({"method": "patch", "kind": "http", "status": 400}, "e2-standard-4", "running again on its old", "ACTIVE"),
        ({"method": "start", "kind": "op_error"}, "e2-standard-4", "running again on its old", "ACTIVE"),
        ({"method": "start", "kind": "op_error", "count": 2}, "e2-standard-4", "STOPPED on e2-standard-4",
         "STOPPED"),
    ],
    ids=["stop-fails", "update-fails", "start-fails", "start-fails-after-the-revert-too"],
)
def test_a_failed_step_leaves_the_old_machine_running_and_says_so(
    stack: LocalStack, slack: SlackRequester, fault: dict, left: str, expected: str, state: str
) -> None:
    user = f"U0FAIL{next(_FAILING)}"  # a person of their own: one person asks for 3 bigger machines a day at most
    full, name = new_instance(stack, "wb-fail", slack_user=user)
    request = bigger_request(stack, slack, user, name)
    stack.workbench.inject_fault(path_contains=name, **{"count": 1, **fault})
    press(stack, slack, ORGANIZER[0], "medic_resize", request)
    assert stack.slack.wait_for(lambda: any("Resize failed" in t for t in thread(stack, request["ts"])))
    assert stack.wait_idle()
    report = next(t for t in thread(stack, request["ts"]) if "Resize failed" in t)
    assert expected in report, report
    instance = stack.workbench.get(full)
    assert instance["gceSetup"]["machineType"].endswith(f"/{left}") and instance["state"] == state
    # "You'll hear from me when they decide": the participant who asked hears that it did not work out.
    assert stack.slack.wait_for(lambda: any("did not finish" in m["text"] for m in dms(stack, user)))


@pytest.mark.parametrize(
    ("fault", "calls"),
    [
        ({"method": "patch", "kind": "http", "status": 400}, ["PATCH"]),
        ({"method": "start", "kind": "op_error"}, ["PATCH", "POST start", "PATCH"]),
    ],
    ids=["update-fails", "start-fails"],
)
def test_a_failed_resize_of_a_stopped_notebook_leaves_it_stopped(
    stack: LocalStack, slack: SlackRequester, fault: dict, calls: list[str]
) -> None:
    """Put back as it was: a notebook that was not running is not started (and billed) by a failed resize."""
    full, name = new_instance(stack, "wb-asleep", slack_user="U0ASLEEP", state="STOPPED")
    request = bigger_request(stack, slack, "U0ASLEEP", name)
    stack.workbench.inject_fault(path_contains=name, count=1, **fault)
    press(stack, slack, ORGANIZER[0], "medic_resize", request)
    assert stack.slack.wait_for(lambda: any("Resize failed" in t for t in thread(stack, request["ts"])))
    assert stack.wait_idle()
    report = next(t for t in thread(stack, request["ts"]) if "Resize failed" in t)
    assert "STOPPED on e2-standard-4" in report, report
    instance = stack.workbench.get(full)
    assert instance["state"] == "STOPPED" and instance["gceSetup"]["machineType"].endswith("/e2-standard-4")
    assert lifecycle_calls(stack, name) == calls
    assert not any("stopping it now" in m["text"] for m in dms(stack, "U0ASLEEP"))  # nothing was stopped


def resize_report(stack: LocalStack, ts: str) -> str:
    """The line that ends a resize that did not finish (a failure, or a step still running)."""
    assert stack.slack.wait_for(
        lambda: any(t.startswith((":x:", ":warning:")) for t in thread(stack, ts)))
    return next(t for t in thread(stack, ts) if t.startswith((":x:", ":warning:")))


def test_a_stop_still_running_at_the_deadline_is_reported_as_where_it_ends(
    slow: LocalStack, slow_slack: SlackRequester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(slow.workbench, "stop_seconds", SLOW_S)
    full, name = new_instance(slow, "wb-slowstop", slack_user="U0SLOWSTOP")
    request = bigger_request(slow, slow_slack, "U0SLOWSTOP", name)
    press(slow, slow_slack, ORGANIZER[0], "medic_resize", request)
    report = resize_report(slow, request["ts"])
    assert slow.workbench.get(full)["state"] == "STOPPING"  # the report came while the stop was running
    assert "still STOPPING" in report and "left STOPPED on e2-standard-4" in report, report
    assert "running" not in report and "Nothing was changed" not in report, report
    assert "press Approve again" in report, report

    assert slow.workbench.wait_until(lambda: slow.workbench.get(full)["state"] == "STOPPED")
    assert slow.wait_idle()
    instance = slow.workbench.get(full)
    assert instance["state"] == "STOPPED" and instance["gceSetup"]["machineType"].endswith("/e2-standard-4")
    assert lifecycle_calls(slow, name) == ["POST stop"]  # nothing sent behind the stop's back

    # What the report said to do works: Approve is still on the request, and finishes the resize.
    [kept] = [m for m in slow.alerts() if m["ts"] == request["ts"]]
    assert report in json.dumps(kept["blocks"], ensure_ascii=False)
    press(slow, slow_slack, ORGANIZER[0], "medic_resize", kept)
    assert slow.slack.wait_for(lambda: "now runs on e2-highmem-4" in thread(slow, request["ts"])[-1])
    instance = slow.workbench.get(full)
    assert instance["state"] == "ACTIVE" and instance["gceSetup"]["machineType"].endswith("/e2-highmem-4")
    [closed] = [m for m in slow.alerts() if m["ts"] == request["ts"]]
    assert not any(b["type"] == "actions" for b in closed["blocks"])


def test_a_report_from_the_alerts_button_names_that_button_to_press_again(
    slow: LocalStack, slow_slack: SlackRequester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The alert has no Approve: its "Give it more memory" button is what finishes the resize."""
    now = int(time.time())
    earlier = {"medic-kills": f"{now - 5 * 3600}_{now - 3 * 3600}", "medic-last-kill": str(now - 3 * 3600)}
    full, name = new_instance(slow, "wb-slowoffer", slack_user="U0SLOWOFFER", labels=earlier)
    slow.workbench.oom_kill(full, jupyter_survives=False, health_delay_s=0.2)
    slow.sink(oom_entry(PROJECT, ZONE, name))
    assert slow.workbench.wait_until(lambda: slow.workbench.resets(full) == 1, timeout=PATIENCE_S)
    assert slow.wait_idle()
    [alert] = [m for m in slow.alerts() if name in json.dumps(m.get("blocks", []))]
    monkeypatch.setattr(slow.workbench, "stop_seconds", SLOW_S)
    press(slow, slow_slack, ORGANIZER[0], "medic_resize", alert)
    report = resize_report(slow, alert["ts"])
    assert "press Give it more memory: e2-standard-4 → e2-highmem-4 again" in report, report
    assert "Approve" not in report, report
    [kept] = [m for m in slow.alerts() if m["ts"] == alert["ts"]]  # pressed again while still STOPPING
    url = press(slow, slow_slack, ORGANIZER[0], "medic_resize", kept)
    assert slow.slack.wait_for(lambda: len(slow.slack.responses(url)) == 2, timeout=PATIENCE_S)
    again = slow.slack.responses(url)[-1]["text"]
    assert "Press Give it more memory: e2-standard-4 → e2-highmem-4 again once it is ACTIVE" in again, again
    assert slow.workbench.wait_until(lambda: slow.workbench.get(full)["state"] == "STOPPED")
    assert slow.wait_idle()


# A start still running at the deadline (on the new type, or on the old one after a failed update) is left alone
# and reported: tests/unit/test_resize_deadlines.py, on a fake clock.


def test_a_machine_type_change_still_running_at_the_deadline_starts_nothing(
    slow: LocalStack, slow_slack: SlackRequester
) -> None:
    full, name = new_instance(slow, "wb-slowpatch", slack_user="U0SLOWPATCH")
    request = bigger_request(slow, slow_slack, "U0SLOWPATCH", name)
    slow.workbench.inject_fault(method="patch", path_contains=name, kind="op_never_done")
    press(slow, slow_slack, ORGANIZER[0], "medic_resize", request)
    report = resize_report(slow, request["ts"])
    assert "changing the machine type" in report and "STOPPED on e2-standard-4" in report, report
    assert slow.wait_idle()
    time.sleep(1.0)  # a start sent at the deadline (0.3 s here) would have finished by now
    instance = slow.workbench.get(full)
    assert instance["state"] == "STOPPED" and instance["gceSetup"]["machineType"].endswith("/e2-standard-4")
    assert lifecycle_calls(slow, name) == ["POST stop", "PATCH"]
