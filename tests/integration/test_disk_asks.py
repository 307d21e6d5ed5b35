"""Issue 43 part 3 over the wire: `/restart-notebook bigger-disk` asks, the worker posts the ask to the organizers
with its monthly price difference (DISK_PRICES; limits on the instance's labels), an organizer approves, the worker
grows the disk with resizeDisk in the Workbench simulator and tells the organizer, the request's message and the
owner; the health sweep's ticks then follow the filesystem through the guard's disk report until it shows the room
(or DISK_GROWTH_WAIT_SECONDS pass), told in the request's thread and to the owner; a resize that fails changes
nothing and says why. slack_app only publishes (it writes no instance)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from shared.core.disk_asks import DISK_LEDGER
from shared.core.disk_growth import GROWN_LABEL as DISK_GROWN
from shared.core.guest import GUARD_NAMESPACE
from simulators.incidents import disk_incident
from simulators.polling import PATIENCE_S
from simulators.slack import SlackRequester
from simulators.stack import ALERT_CHANNEL, PROJECT, LocalStack
from tests.integration.conftest import new_instance
from tests.integration.helpers import ORGANIZER, ZONE, stack_with_organizer
from tests.integration.more_memory import closed, press, replies, slack

__all__ = ["slack"]  # more_memory's fixture, on this module's stack
pytestmark = pytest.mark.wire
WAIT_S = PATIENCE_S


@pytest.fixture(scope="module")
def stack(label_visibility: str) -> Iterator[LocalStack]:
    # the disk warning comes through on_memory_alert; a disk of 300 GB is at the most an ask proposes
    # health_sweep: its ticks queue the filesystem checks; pd-standard priced (the simulator's data disk, Workbench's
    # default), the boot disk's pd-balanced not
    with stack_with_organizer(memory_alerts=True, health_sweep=True,
                              env={"MAX_DISK_GB": "300", "DISK_PRICES": "pd-standard=0.04",
                                   "DISK_GROWTH_WAIT_SECONDS": "1800"}) as running:
        yield running


def data_gb(stack: LocalStack, full: str) -> int:
    return int(stack.workbench.get(full)["gceSetup"]["dataDisks"][0]["diskSizeGb"])


def ask(stack: LocalStack, slack: SlackRequester, user: str, name: str) -> tuple[str, str]:
    """The command's answer and the URL the worker answers on."""
    url = stack.slack.new_response_url()
    return slack.slash_command(user, "bigger-disk", response_url=url).body, url


def answered(stack: LocalStack, url: str, words: str) -> str:
    assert stack.slack.wait_for(lambda: any(words in r for r in replies(stack, url)), timeout=WAIT_S), \
        replies(stack, url)
    return next(r for r in replies(stack, url) if words in r)


def request_of(stack: LocalStack, name: str) -> dict:
    found = [m for m in stack.alerts() if f"*{name}*" in m.get("text", "") and "bigger data" in m.get("text", "")]
    return found[-1]


@pytest.mark.both_label_variants  # the limits read the ledger label back
def test_an_approved_ask_grows_the_data_disk_and_everyone_is_told(stack: LocalStack, slack: SlackRequester) -> None:
    full, name = new_instance(stack, "wb-disk", slack_user="U0DISKA")
    said, url = ask(stack, slack, "U0DISKA", name)
    assert "Asking the organizers for a bigger data (home) disk" in said
    assert "from 100 GB to 150 GB" in answered(stack, url, "I asked the organizers")
    request = request_of(stack, name)
    assert "100 GB → 150 GB (+50 GB)" in request["text"]
    assert "+$2.00 a month (pd-standard at $0.04 per GB a month" in request["text"]
    assert stack.slack.wait_for(lambda: DISK_LEDGER in stack.workbench.get(full)["labels"], timeout=WAIT_S)
    _, url2 = ask(stack, slack, "U0DISKA", name)  # one open ask per notebook
    assert "still with the organizers" in answered(stack, url2, "still with the organizers")
    approval = press(stack, slack, ORGANIZER[0], "medic_disk_grow", request)
    assert "is now 150 GB" in answered(stack, approval, "is now 150 GB")
    assert data_gb(stack, full) == 150
    assert "is now 150 GB" in closed(stack, request["ts"])
    def said() -> list[tuple[object, object]]:  # the worker audits after it answers: waited for, not raced
        return [(r.get("action"), r.get("decision")) for r in stack.audit_records() if r.get("instance") == name]

    wanted = {("disk-ask", "acted"), ("disk-grow", "acted"), ("disk-ask", "folded")}
    assert stack.slack.wait_for(lambda: wanted <= set(said()), timeout=WAIT_S), said()
    assert stack.slack.wait_for(lambda: any("grew the data (home) disk" in m.get("text", "")
                                            for m in stack.slack.messages("U0DISKA")), timeout=WAIT_S)
    filesystem_grows(stack, full, name, request["ts"])
    _, url3 = ask(stack, slack, "U0DISKA", name)  # the first closed: a second may go; a third is over the day's
    answered(stack, url3, "I asked the organizers")
    _, url4 = ask(stack, slack, "U0DISKA", name)
    answered(stack, url4, "still with the organizers")


def filesystem_grows(stack: LocalStack, full: str, name: str, thread: str) -> None:
    """The guard's next disk report shows the grown filesystem; the sweep's next tick tells thread and owner."""
    stack.sweep()  # the report still shows the old filesystem: nothing said yet
    assert stack.slack.wait_for(lambda: any(r.get("action") == "disk-check" and r.get("instance") == name
                                            for r in stack.audit_records()), timeout=WAIT_S)
    assert not [m for m in stack.alerts() if f"*{name}*" in m.get("text", "")
                and ("grew:" in m["text"] or "not grown within" in m["text"])]
    gib = 1024 ** 3
    grown = {"v": 1, "complete": True, "culprits": [], "folders": [], "models": [], "disks": [
        {"mount": "/", "size": 147 * gib, "used": 20 * gib, "avail": 127 * gib},
        {"mount": "/home/jupyter", "size": 147 * gib, "used": 95 * gib, "avail": 52 * gib}]}
    stack.compute.set_guest_attributes(full, GUARD_NAMESPACE, {"disk-report": json.dumps(grown)})
    stack.sweep()

    def told(where: str) -> list[dict[str, Any]]:
        return [m for m in stack.slack.messages(where) if "grew: 147 GB, 52 GB free" in m.get("text", "")]

    assert stack.slack.wait_for(lambda: told(ALERT_CHANNEL) and told("U0DISKA"), timeout=WAIT_S)
    assert [m.get("thread_ts") for m in told(ALERT_CHANNEL)] == [thread]  # in the request's thread
    assert DISK_GROWN not in stack.workbench.get(full)["labels"]


def test_a_failed_resize_says_why_and_changes_nothing(stack: LocalStack, slack: SlackRequester) -> None:
    full, name = new_instance(stack, "wb-diskf", slack_user="U0DISKF")
    _, url = ask(stack, slack, "U0DISKF", name)
    answered(stack, url, "I asked the organizers")
    request = request_of(stack, name)
    stack.workbench.inject_fault(method="POST", path_contains=":resizeDisk", kind="op_error", status=500)
    approval = press(stack, slack, ORGANIZER[0], "medic_disk_grow", request)
    failed = answered(stack, approval, "was not grown")
    assert "still 100 GB" in failed
    assert data_gb(stack, full) == 100
    assert "was not grown" in closed(stack, request["ts"])


def test_a_resize_over_the_disk_quota_says_why_and_changes_nothing(stack: LocalStack, slack: SlackRequester) -> None:
    full, name = new_instance(stack, "wb-diskq", slack_user="U0DISKQ")
    _, url = ask(stack, slack, "U0DISKQ", name)
    answered(stack, url, "I asked the organizers")
    stack.workbench.disk_quota_gb = 1  # the project's disks are over it already: any growth is refused
    try:
        approval = press(stack, slack, ORGANIZER[0], "medic_disk_grow", request_of(stack, name))
        assert "DISKS_TOTAL_GB" in answered(stack, approval, "was not grown")
    finally:
        stack.workbench.disk_quota_gb = None
    assert data_gb(stack, full) == 100


def test_a_participant_cannot_approve(stack: LocalStack, slack: SlackRequester) -> None:
    full, name = new_instance(stack, "wb-disko", slack_user="U0DISKO")
    _, url = ask(stack, slack, "U0DISKO", name)
    answered(stack, url, "I asked the organizers")
    refused = press(stack, slack, "U0DISKO", "medic_disk_grow", request_of(stack, name))
    answered(stack, refused, "organizers")
    assert data_gb(stack, full) == 100


def test_the_disk_warnings_button_asks_for_the_disk_it_names_and_only_for_its_owner(
        stack: LocalStack, slack: SlackRequester) -> None:
    full, name = new_instance(stack, "wb-diskw", slack_user="U0DISKW")
    stack.slack.add_user("U0DISKX", "mallory", "mallory@contest.example")
    stack.monitoring(disk_incident(PROJECT, ZONE, name, percent=93.4, device="/dev/sda1"))  # the boot disk
    assert stack.slack.wait_for(lambda: any(grows(m) for m in stack.slack.messages("U0DISKW")), timeout=WAIT_S)
    warning = next(m for m in stack.slack.messages("U0DISKW") if grows(m))
    value = f"{full}|boot"
    stranger = stack.slack.new_response_url()
    slack.block_action("U0DISKX", "medic_disk_ask", value, response_url=stranger, message_ts=warning["ts"],
                       channel_id="D0DISKX", message=warning)
    answered(stack, stranger, "Only organizers")  # not theirs: refused by the worker, nothing posted
    url = stack.slack.new_response_url()
    slack.block_action("U0DISKW", "medic_disk_ask", value, response_url=url, message_ts=warning["ts"],
                       channel_id="D0DISKW", message=warning)
    assert "from 150 GB to 230 GB" in answered(stack, url, "I asked the organizers")
    [request] = [m for m in stack.alerts() if f"*{name}*" in m.get("text", "") and "bigger boot" in m.get("text", "")]
    assert "150 GB → 230 GB" in request["text"]


def grows(message: dict[str, Any]) -> bool:
    """A DM with the disk warning's "Grow the disk" button (beside "Get help")."""
    return any(e.get("action_id") == "medic_disk_ask" for b in message.get("blocks") or []
               for e in b.get("elements") or [])


def test_a_disk_at_max_disk_gb_is_not_asked_for(stack: LocalStack, slack: SlackRequester) -> None:
    full, name = new_instance(stack, "wb-diskm", slack_user="U0DISKM")
    body = json.dumps({"dataDisk": {"diskSizeGb": "300"}}).encode()
    stack.workbench.handle("POST", f"/v2/{full}:resizeDisk", body)  # grown by hand to MAX_DISK_GB
    assert stack.slack.wait_for(lambda: data_gb(stack, full) == 300, timeout=WAIT_S)
    _, url = ask(stack, slack, "U0DISKM", name)
    assert "300 GB is the most" in answered(stack, url, "MAX_DISK_GB")
    assert not [m for m in stack.alerts() if f"*{name}*" in m.get("text", "")]  # nothing posted


def test_a_denied_ask_a_disk_grown_meanwhile_and_approve_pressed_twice(stack: LocalStack, slack: SlackRequester
                                                                      ) -> None:
    _, name = new_instance(stack, "wb-diskd", slack_user="U0DISKD")
    _, url = ask(stack, slack, "U0DISKD", name)
    answered(stack, url, "I asked the organizers")
    press(stack, slack, ORGANIZER[0], "medic_resize_deny", request_of(stack, name))  # bigger's own Deny
    assert stack.slack.wait_for(lambda: any("declined a bigger disk" in m.get("text", "")
                                            for m in stack.slack.messages("U0DISKD")), timeout=WAIT_S)
    full, name = new_instance(stack, "wb-diskg", slack_user="U0DISKG")
    _, url = ask(stack, slack, "U0DISKG", name)
    answered(stack, url, "I asked the organizers")
    request = request_of(stack, name)
    stack.workbench.handle("POST", f"/v2/{full}:resizeDisk", json.dumps({"dataDisk": {"diskSizeGb": "200"}}).encode())
    assert stack.slack.wait_for(lambda: data_gb(stack, full) == 200, timeout=WAIT_S)  # grown by hand meanwhile
    assert "already 200 GB" in answered(stack, press(stack, slack, ORGANIZER[0], "medic_disk_grow", request),
                                        "already")
    assert data_gb(stack, full) == 200
    full, name = new_instance(stack, "wb-disk2", slack_user="U0DISK2")
    _, url = ask(stack, slack, "U0DISK2", name)
    answered(stack, url, "I asked the organizers")
    request = request_of(stack, name)
    answered(stack, press(stack, slack, ORGANIZER[0], "medic_disk_grow", request), "is now 150 GB")
    assert "already 150 GB" in answered(stack, press(stack, slack, ORGANIZER[0], "medic_disk_grow", request),
                                        "already")  # the second press of the same Approve
    assert "is now 150 GB" in closed(stack, request["ts"])  # the outcome the first press wrote stays
