"""A person is never queued behind a machine (issue 15, items 1 and 2), over the wire.

An automatic incident that waits for fresh health holds its instance's ordering key for one poll at most,
then re-publishes itself behind whatever was queued meanwhile (shared/core/waiting.py). The stack's clocks: a
health grace of 15 s and a poll of 1 s, so a wait that held the key would hold it for 15 s. No assertion here is
of a wall-clock figure: each is of what happened and in which order, with a grace long enough that a busy
machine still sees the wait begin before it ends.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta

import pytest

from simulators.polling import PATIENCE_S
from simulators.slack import SlackRequester
from simulators.stack import SIGNING_SECRET, LocalStack
from tests.integration.conftest import new_instance
from tests.integration.helpers import (
    alert_text,
    alerts_for,
    audits_for,
    kill,
    labels,
    stack_with_organizer,
    wait_for,
)

pytestmark = pytest.mark.wire

GRACE_S = 15.0  # at 8 s a loaded run could see the first delivery handled after the grace: reset, never waiting
# The owner's test waits longer, so that the owner's command always lands inside the wait: at 8 s, a loaded run
# (make test's 6 workers on 2 cores) once saw the incident's grace end first, so its continuation reset the instance
# and the owner's request found it already restarted: still one reset, but not the race that test is about. It
# costs nothing: the wait ends when the owner's restart answers it, not when the grace runs out.
# At 60 s, a run at load 27-37 (ten benches beside the suite, 2026-12-05) handled the first delivery after the
# grace: reset without waiting. The wait ends when the owner's restart answers it, so a long grace is free.
PATIENT_GRACE_S = 4 * PATIENCE_S


def waiting_stack(grace_s: float) -> AbstractContextManager[LocalStack]:
    return stack_with_organizer(env={"HEALTH_GRACE_SECONDS": str(grace_s), "HEALTH_POLL_SECONDS": "1"})


@pytest.fixture(scope="module")
def stack(label_visibility: str) -> Iterator[LocalStack]:
    with waiting_stack(GRACE_S) as running:
        yield running


@pytest.fixture(scope="module")
def patient(label_visibility: str) -> Iterator[LocalStack]:
    with waiting_stack(PATIENT_GRACE_S) as running:
        yield running


def decisions(stack: LocalStack, name: str) -> list[str]:
    return [str(r.get("decision")) for r in audits_for(stack, name)]


@pytest.mark.both_label_variants
def test_the_owners_restart_is_not_queued_behind_an_incident_waiting_for_health(patient: LocalStack) -> None:
    stack, slack = patient, SlackRequester(SIGNING_SECRET, patient.functions["slack_app"][0].url)
    full, name = new_instance(stack, "wb-wait")
    user = f"U{name.upper().replace('-', '')}"
    kill(stack, full, name, health=False)  # the agent says nothing: the incident waits out the grace
    assert wait_for(lambda: "yielded" in decisions(stack, name), timeout=PATIENT_GRACE_S)  # it is waiting
    response = slack.slash_command(user, name, response_url=stack.slack.new_response_url())
    assert response.status == 200 and f"Restarting *{name}*" in response.body, response.body
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
    # Not queued behind the incident: reset by the owner's request while the incident still waited (its grace is
    # far off), which the decisions and alerts below show; no wall-clock figure decides it. That the key is held
    # for one poll at most is tested on a FakeClock (tests/unit/test_waiting.py).
    # The waiting incident's next continuation folds into that restart: exactly one reset, no second alert.
    assert stack.wait_idle()
    assert stack.workbench.resets(full) == 1
    seen = decisions(stack, name)
    assert seen[-1] == "skip-duplicate" and seen.count("reset") == 1, seen
    automatic = [alert_text(a) for a in alerts_for(stack, name) if "Restarted in" in str(a) and "by <@" not in str(a)]
    assert not automatic, (automatic, [alert_text(a) for a in alerts_for(stack, name)], seen)
    assert "medic-inflight" not in labels(stack, full)


@pytest.mark.both_label_variants
def test_a_kill_dated_a_day_ahead_is_acted_on_at_its_receipt_and_holds_nothing(stack: LocalStack) -> None:
    # Warm first: a cold worker on a loaded machine (make test's 6 workers on 2 cores, each starting its stacks)
    # once took longer than the grace to handle its first delivery, so the incident was reset without ever waiting,
    # and "yielded" never came. A warm one answers in a second or two whatever the load.
    warm, warm_name = new_instance(stack, "wb-ahead")
    kill(stack, warm, warm_name)
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(warm) == 1, timeout=PATIENCE_S)
    full, name = new_instance(stack, "wb-ahead")
    kill(stack, full, name, health=False, at=datetime.now(UTC) + timedelta(days=1) - timedelta(minutes=1))
    assert wait_for(lambda: "yielded" in decisions(stack, name))
    # Meanwhile nothing waits on it: another instance's kill is reset at once (the owner's own request is the
    # test above).
    other, other_name = new_instance(stack, "wb-ahead")
    kill(stack, other, other_name)
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(other) == 1, timeout=PATIENCE_S)
    # The grace counts from the receipt, not from the day ahead (which would hold it for a day): no fresh health
    # by then, so it is reset. How soon after the grace is the machine's speed, not asserted here; the grace's
    # end on the receipt's clock is tested on a FakeClock (tests/unit/test_waiting.py).
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=GRACE_S + PATIENCE_S)
    assert stack.wait_idle()
    assert decisions(stack, name).count("reset") == 1
    assert "medic-waiting" not in labels(stack, full)  # the wait's name went with the restart's record
