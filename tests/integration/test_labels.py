"""The worker's label writes over the wire: what people change on an instance is never undone by the bot.

The worker reads an instance's labels before a reset and writes its record after it, minutes later, with
update_instance's "labels" mask, which replaces the whole map: the record must be built over the freshest
labels (those the reset's end returned), or an organizer's `medic-auto=off` set in the console meanwhile
would be silently reverted.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from shared.models import InstanceRef
from shared.workbench import Workbench
from simulators.stack import LocalStack
from simulators.workbench import classify
from tests.integration.conftest import new_instance
from tests.integration.helpers import assert_incident_closed, kill, labels, restart_deliveries, wait_alert

pytestmark = pytest.mark.wire

RESET_S = 2.0  # long enough for a console edit to land while the reset runs
ENV = {"WORKBENCH_TIMEOUT_SECONDS": "1.5", "WORKBENCH_RETRY_SECONDS": "2.5", "SLOW_RESTART_ALERT_SECONDS": "30"}


@pytest.fixture(scope="module", params=["grpc", "rest"])
def stack(request: pytest.FixtureRequest) -> Iterator[LocalStack]:
    with LocalStack(env=ENV, workbench_transport=request.param, workbench_options={"reset_seconds": RESET_S}) as s:
        yield s


def console_edit(stack: LocalStack, full: str, **changes: str) -> None:
    """What an organizer does in the console: read the instance's labels, change some, save them all."""
    console = Workbench(endpoint=stack.workbench.endpoint)
    ref = InstanceRef.parse(full)
    console.set_labels(ref, {**console.get(ref).labels, **changes}, own=tuple(changes))


def reset_running(stack: LocalStack, full: str) -> bool:
    return stack.workbench.resets(full) == 1 and stack.workbench.get(full)["state"] == "STARTING"


def gets_since(stack: LocalStack, name: str, start: int) -> int:
    """GetInstance requests for this instance from the start'th call on."""
    calls = list(stack.workbench.calls)[start:]
    gets = [path.split("?")[0] for method, path in calls if classify(method, path) == "get"]
    return sum(1 for path in gets if path.endswith(f"/instances/{name}"))


def test_console_edit_made_while_the_reset_runs_survives_the_record(stack: LocalStack) -> None:
    full, name = new_instance(stack, "console-edit", labels={"team": "red"})
    kill(stack, full, name)
    assert stack.workbench.wait_until(lambda: reset_running(stack, full), timeout=20)
    console_edit(stack, full, **{"medic-auto": "off", "team": "blue"})
    after_edit = len(stack.workbench.calls)
    assert reset_running(stack, full), "the reset ended before the edit: the test shows nothing"
    assert_incident_closed(stack, full, name, resets=1, says="Restarted in")
    after = labels(stack, full)
    assert after["medic-auto"] == "off" and after["team"] == "blue", after
    assert "medic-last-restart" in after and "medic-kills" in after
    # The labels came with the reset's end (gRPC: the operation's Instance; REST: the read that confirms it
    # after its ParseError): the record costs no read of its own.
    assert gets_since(stack, name, after_edit) == (0 if stack.workbench_transport == "grpc" else 1)


def test_console_edit_made_while_a_failing_reset_runs_survives_the_record(stack: LocalStack) -> None:
    """A reset that ends in error returns no Instance: the record is written over a read made after it."""
    full, name = new_instance(stack, "console-edit-failed", labels={"team": "red"})
    stack.workbench.inject_fault(method="reset", path_contains=f"/instances/{name}:reset", kind="op_error")
    kill(stack, full, name)
    assert stack.workbench.wait_until(lambda: reset_running(stack, full), timeout=20)
    console_edit(stack, full, **{"medic-auto": "off", "team": "blue"})
    wait_alert(stack, name, "Restart failed")
    assert_incident_closed(stack, full, name, resets=1, says="Restart failed")
    after = labels(stack, full)
    assert after["medic-auto"] == "off" and after["team"] == "blue", after
    assert "medic-last-kill" in after and "medic-restarts" in after  # the attempt is still recorded


def test_labels_the_api_adds_of_its_own_do_not_hold_up_a_write(stack: LocalStack) -> None:
    """An API that adds labels of its own to what an update sends: the write is confirmed on the bot's keys.
    Confirmed only on an exact match, no intent would ever be, and every restart would wait for redeliveries."""
    full, name = new_instance(stack, "system-labels")
    stack.workbench.system_labels = {"goog-managed": "true"}
    try:
        kill(stack, full, name)
        assert_incident_closed(stack, full, name, resets=1, says="Restarted in")
    finally:
        stack.workbench.system_labels = {}
    [delivery] = restart_deliveries(stack, name)  # the intent confirmed at once: no redelivery
    assert delivery.acked
    assert labels(stack, full)["goog-managed"] == "true"
