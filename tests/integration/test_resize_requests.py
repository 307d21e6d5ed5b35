"""Asking for a bigger machine over the wire: `/restart-notebook bigger`, the alert's offer after repeated kills,
what is never offered (a smaller machine, one without the GPUs), who may approve, and a Deny.

The stack is tests/integration/more_memory.py's (module-scoped, per label variant).
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

import pytest

from shared.core.resize_asks import ledger
from simulators.entries import oom_entry
from simulators.polling import PATIENCE_S
from simulators.slack import SlackRequester
from simulators.stack import PROJECT, RESTART_TOPIC, LocalStack
from tests.integration.conftest import new_instance
from tests.integration.helpers import ORGANIZER, ZONE
from tests.integration.more_memory import (
    bigger_request,
    dms,
    press,
    slack,
    stack,
    thread,
)

__all__ = ["slack", "stack"]  # the module's stack and its Slack app (more_memory.py)

pytestmark = pytest.mark.wire


def test_bigger_is_refused_in_its_own_words_not_a_restarts(stack: LocalStack, slack: SlackRequester) -> None:
    """`bigger` restarts nothing: its refusals must not tell anyone how to restart (which would do it)."""
    _, first = new_instance(stack, "wb-two", owner="two@contest.example", slack_user="U0TWO")
    _, second = new_instance(stack, "wb-two", owner="two@contest.example", slack_user="U0TWO")
    _, other = new_instance(stack, "wb-other")
    url = stack.slack.new_response_url()
    several = slack.slash_command("U0TWO", "bigger", response_url=url).body
    assert "name the one to enlarge: `/restart-notebook bigger NAME`" in several, several
    assert first in several and second in several and "restart:" not in several
    not_mine = slack.slash_command("U0TWO", f"bigger {other}", response_url=url).body
    assert "can't ask for a bigger machine for it" in not_mine and "restart" not in not_mine, not_mine
    organizer = slack.slash_command(ORGANIZER[0], "bigger", response_url=url).body
    assert organizer == "Name the notebook to enlarge: `/restart-notebook bigger NAME`.", organizer


def test_bigger_request_reaches_organizers_and_only_they_approve(stack: LocalStack, slack: SlackRequester) -> None:
    full, name = new_instance(stack, "wb-grow", slack_user="U0GROW")
    request = bigger_request(stack, slack, "U0GROW", name)
    assert "+$0.047/h" in request["text"]

    before = len(stack.pubsub.published(RESTART_TOPIC))
    url = press(stack, slack, "U0GROW", "medic_resize", request)
    assert stack.slack.wait_for(lambda: any("Only organizers" in r["text"] for r in stack.slack.responses(url)))
    assert len(stack.pubsub.published(RESTART_TOPIC)) == before

    press(stack, slack, ORGANIZER[0], "medic_resize", request)
    assert stack.workbench.wait_until(
        lambda: stack.workbench.get(full)["gceSetup"]["machineType"].endswith("/e2-highmem-4")
        and stack.workbench.get(full)["state"] == "ACTIVE", timeout=PATIENCE_S)
    assert stack.wait_idle()
    calls = [c for c in stack.workbench.calls if name in c[1] and c[0] in ("POST", "PATCH")]
    assert [c[0] + " " + c[1].rsplit(":", 1)[-1] if c[0] == "POST" else "PATCH" for c in calls] == [
        "PATCH", "POST stop", "PATCH", "POST start"], calls  # the request's ledger label (issue 44), then the resize
    assert ledger(stack.workbench.get(full)["labels"], datetime.now(UTC)) == [request["ts"]]
    steps = thread(stack, request["ts"])
    assert [s.split()[0] for s in steps[:3]] == [":stop_button:", ":gear:", ":arrow_forward:"]
    assert "now runs on e2-highmem-4" in steps[-1]
    # The owner (who asked) hears it is being stopped, then that it is back: once each, nothing twice.
    told = [m["text"] for m in dms(stack, "U0GROW")]
    assert len(told) == 2 and "stopping it now to move it to e2-highmem-4" in told[0], told
    assert "now has more memory" in told[1], told
    [decided] = [m for m in stack.alerts() if m["ts"] == request["ts"]]
    assert not any(b["type"] == "actions" for b in decided["blocks"])


@pytest.mark.parametrize(
    ("machine", "gpus", "expected"),
    [
        ("n2-highmem-16", None, "the largest machine on the ladder"),
        ("e2-highmem-16", None, "e2-highmem-16 is not on the ladder"),
        ("n1-highmem-32", None, "n1-highmem-32 is not on the ladder"),  # memory unknown: was offered 16 GiB
        ("n1-standard-8", {"NVIDIA_TESLA_T4": 1}, "n1-standard-8 is not on the ladder"),  # was offered an E2
        ("g2-standard-8", None, "g2-standard-8 is not on the ladder"),
    ],
    ids=["top-rung", "off-ladder", "unknown-memory", "n1-with-t4", "g2"],
)
def test_bigger_offers_nothing_that_would_shrink_the_machine_or_drop_its_gpus(
    stack: LocalStack, slack: SlackRequester, machine: str, gpus: dict[str, int] | None, expected: str
) -> None:
    _, name = new_instance(stack, "wb-nobig", machine_type=machine, accelerators=gpus)
    before = len(stack.alerts())
    answer = slack.slash_command(f"U{name.upper().replace('-', '')}", f"bigger {name}",
                                 response_url=stack.slack.new_response_url())
    assert expected in answer.body, answer.body
    assert "asked the organizers" not in answer.body
    assert ("largest" in answer.body) == (machine == "n2-highmem-16"), answer.body
    assert len(stack.alerts()) == before  # no request reached the organizers


def test_repeated_kills_of_a_gpu_notebook_offer_no_machine_without_its_gpus(stack: LocalStack) -> None:
    now = int(time.time())
    earlier = {"medic-kills": f"{now - 5 * 3600}_{now - 3 * 3600}", "medic-last-kill": str(now - 3 * 3600)}
    full, name = new_instance(stack, "wb-gpu", slack_user="U0GPU", labels=earlier, machine_type="g2-standard-8")
    stack.workbench.oom_kill(full, jupyter_survives=False, health_delay_s=0.2)
    stack.sink(oom_entry(PROJECT, ZONE, name))
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
    assert stack.wait_idle()
    [alert] = [m for m in stack.alerts() if name in json.dumps(m.get("blocks", []))]
    assert "medic_restart" in json.dumps(alert["blocks"])
    assert "medic_resize" not in json.dumps(alert["blocks"])  # was: g2-standard-8 → e2-highmem-8


def test_repeated_kills_make_the_alert_offer_more_memory(stack: LocalStack) -> None:
    now = int(time.time())
    earlier = {"medic-kills": f"{now - 5 * 3600}_{now - 3 * 3600}", "medic-last-kill": str(now - 3 * 3600)}
    full, name = new_instance(stack, "wb-often", slack_user="U0OFTEN", labels=earlier)
    entry = oom_entry(PROJECT, ZONE, name)
    stack.workbench.oom_kill(full, jupyter_survives=False, health_delay_s=0.2)
    stack.sink(entry)
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
    assert stack.wait_idle()
    [alert] = [m for m in stack.alerts() if name in json.dumps(m.get("blocks", []))]
    assert "medic_resize" in json.dumps(alert["blocks"])
    assert "Give it more memory: e2-standard-4 → e2-highmem-4 (+$0.047/h)" in json.dumps(alert["blocks"],
                                                                                      ensure_ascii=False)
    [offer] = [e for b in alert["blocks"] if b["type"] == "actions" for e in b["elements"]
               if e["action_id"] == "medic_resize"]
    assert "It is stopped and started again" in offer["confirm"]["text"]["text"]


def test_deny_tells_the_participant_and_changes_nothing(stack: LocalStack, slack: SlackRequester) -> None:
    full, name = new_instance(stack, "wb-deny", slack_user="U0DENY")
    request = bigger_request(stack, slack, "U0DENY", name)
    press(stack, slack, ORGANIZER[0], "medic_resize_deny", request)
    assert stack.slack.wait_for(lambda: any("declined" in m["text"] for m in dms(stack, "U0DENY")))
    [decided] = [m for m in stack.alerts() if m["ts"] == request["ts"]]
    assert "Denied by <@U0ORG>" in json.dumps(decided["blocks"])
    assert stack.workbench.get(full)["gceSetup"]["machineType"].endswith("/e2-standard-4")
