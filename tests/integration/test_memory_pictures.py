"""The memory picture over the wire (issue 27): after a kill's restart, its curve from the Monitoring simulator,
drawn by the worker, shared with files_upload_v2 into the alert's thread and the owner's DM; after a memory
warning, the same up to now. Monitoring without data, Monitoring down and an upload Slack refuses each leave
one line in the picture's place, and the incident ends as it would without pictures: restarted once, alerted,
recorded. A help ticket (issue 46) brings the notebook's last hour into the ticket's thread."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import pytest
from PIL import Image

from shared.core import tickets
from shared.core.ticket_blocks import CATEGORY_ACTION, HELP_BLOCK, TEXT_ACTION, TEXT_BLOCK
from simulators.incidents import memory_incident
from simulators.monitoring import feed_from_incident
from simulators.slack import DEFAULT_SCOPES, SlackRequester
from simulators.stack import ALERT_CHANNEL, PROJECT, SIGNING_SECRET, LocalStack
from tests.integration.conftest import new_instance
from tests.integration.helpers import ZONE, assert_incident_closed, kill, reset_times, wait_alert

pytestmark = pytest.mark.wire


@pytest.fixture(scope="module")
def stack(label_visibility: str) -> Iterator[LocalStack]:
    with LocalStack(memory_charts=True, memory_alerts=True, slack_app=True,
                    env={"MEMORY_WARNING_QUIET_SECONDS": "600"}) as running:
        yield running


@pytest.fixture(autouse=True)
def healthy_monitoring(stack: LocalStack) -> Iterator[None]:
    yield
    stack.metrics.down = False
    stack.feed_monitoring = True
    stack.slack.scopes = DEFAULT_SCOPES


def thread_of(stack: LocalStack, channel: str, ts: str) -> list[dict[str, Any]]:
    return [m for m in stack.slack.messages(channel) if m.get("thread_ts") == ts and m["ts"] != ts]


def restarted(stack: LocalStack, name: str) -> dict[str, Any]:
    return wait_alert(stack, name, "Restarted in")


def wait_reply(stack: LocalStack, channel: str, ts: str, test: Any) -> dict[str, Any]:
    found: list[dict[str, Any]] = []

    def seen() -> bool:
        found[:] = [m for m in thread_of(stack, channel, ts) if test(m)]
        return bool(found)

    assert stack.slack.wait_for(seen), [m.get("text") for m in thread_of(stack, channel, ts)]
    return found[0]


def wait_dm(stack: LocalStack, user: str, test: Any) -> dict[str, Any]:
    found: list[dict[str, Any]] = []

    def seen() -> bool:
        found[:] = [m for m in stack.slack.messages(user) if test(m)]
        return bool(found)

    assert stack.slack.wait_for(seen), [m.get("text") for m in stack.slack.messages(user)]
    return found[0]


def picture(stack: LocalStack, message: dict[str, Any]) -> tuple[Image.Image, dict[str, Any]]:
    (file,) = message["files"]
    image = Image.open(io.BytesIO(stack.slack.files.data[file["id"]]))
    assert image.format == "PNG" and file["mimetype"] == "image/png"
    return image, file


def test_a_kill_brings_its_curve_to_the_alert_thread_and_the_owner_after_the_restart(stack: LocalStack) -> None:
    full, name = new_instance(stack, "pic-kill", slack_user="U0PICKILL")
    kill(stack, full, name)
    alert = restarted(stack, name)
    shared = wait_reply(stack, ALERT_CHANNEL, alert["ts"], lambda m: m.get("files"))
    image, file = picture(stack, shared)
    assert image.size == (800, 400)
    assert f"Memory of {name} before the kill" == file["title"]
    assert "python (pid" in file["alt_txt"] and "out-of-memory kill came at" in file["alt_txt"]
    owners = wait_dm(stack, "U0PICKILL", lambda m: m.get("files"))
    assert owners["ts"] > wait_dm(stack, "U0PICKILL", lambda m: "restarted" in m.get("text", ""))["ts"]
    # The picture follows the restart: Monitoring is read after the reset was sent and the alert posted.
    (reset_at,) = reset_times(stack, full)
    vm_reads = [at for at, request in stack.metrics.requests if request.filter.count(stack.compute.vm_id(full))]
    assert vm_reads and min(vm_reads) > reset_at
    posted = [c.time for c in stack.slack.calls_to("chat.postMessage")
              if c.args.get("channel") == ALERT_CHANNEL and name in json.dumps(c.args.get("blocks", []))]
    assert posted and min(vm_reads) > min(posted)
    request = next(r for _, r in stack.metrics.requests if "memory/percent_used" in r.filter
                   and stack.compute.vm_id(full) in r.filter)
    assert request.aggregation.alignment_period.total_seconds() == 60
    assert f'resource.labels.instance_id = "{stack.compute.vm_id(full)}"' in request.filter
    assert (request.interval.end_time - request.interval.start_time).total_seconds() >= 3600


@pytest.mark.parametrize(("fault", "says"), [
    ("no-data", "Cloud Monitoring has no memory data"),
    ("down", "Cloud Monitoring could not be read (UNAVAILABLE)"),
    ("upload-refused", "Slack did not take the picture (missing_scope)"),
])
def test_without_a_picture_one_line_says_why_and_the_incident_ends_as_ever(
    stack: LocalStack, fault: str, says: str
) -> None:
    full, name = new_instance(stack, f"pic-{fault}", slack_user=f"U0PIC{fault.upper().replace('-', '')}")
    stack.feed_monitoring = fault != "no-data"
    stack.metrics.down = fault == "down"
    if fault == "upload-refused":
        stack.slack.scopes = tuple(s for s in DEFAULT_SCOPES if s != "files:write")
    kill(stack, full, name)
    alert = restarted(stack, name)
    line = wait_reply(stack, ALERT_CHANNEL, alert["ts"], lambda m: "No memory curve" in m.get("text", ""))
    assert says in line["text"] and "\n" not in line["text"] and not line.get("files")
    user = f"U0PIC{fault.upper().replace('-', '')}"
    assert says in wait_dm(stack, user, lambda m: "No memory curve" in m.get("text", ""))["text"]
    assert stack.wait_idle()
    assert_incident_closed(stack, full, name, resets=1, says="Restarted in")
    assert len(thread_of(stack, ALERT_CHANNEL, alert["ts"])) == 1  # that line, nothing else


def test_a_memory_warning_brings_the_curve_up_to_now(stack: LocalStack) -> None:
    _, name = new_instance(stack, "pic-warn", slack_user="U0PICWARN")
    stack.monitoring(memory_incident(PROJECT, ZONE, name, percent=93.2))
    line = wait_alert(stack, name, "93%")
    shared = wait_reply(stack, ALERT_CHANNEL, line["ts"], lambda m: m.get("files"))
    image, file = picture(stack, shared)
    assert image.size == (800, 400) and file["title"] == f"Memory of {name} over the last hour"
    assert "now" in file["alt_txt"] and "kill" not in file["alt_txt"]
    owners = wait_dm(stack, "U0PICWARN", lambda m: m.get("files"))
    assert json.dumps(owners["files"][0]["alt_txt"]) == json.dumps(file["alt_txt"])


def test_a_help_ticket_brings_the_notebooks_last_hour_into_its_thread(stack: LocalStack) -> None:
    """Issue 46: the ticket's memory picture, its VM's id read by name through the worker's Compute client."""
    _, name = new_instance(stack, "pic-help", slack_user="U0PICHELP")
    feed_from_incident(stack.metrics, memory_incident(PROJECT, ZONE, name, percent=91.0))  # no warning published
    slack = SlackRequester(SIGNING_SECRET, stack.functions["slack_app"][0].url)
    answer = slack.view_submission("U0PICHELP", tickets.MODAL_HELP, {
        HELP_BLOCK: {CATEGORY_ACTION: {"type": "radio_buttons", "selected_option": {"value": "slow"}}},
        TEXT_BLOCK: {TEXT_ACTION: {"type": "plain_text_input", "value": "so slow"}}})
    assert answer.status == 200, answer.body
    assert stack.slack.wait_for(lambda: any(
        (m.get("metadata") or {}).get("event_type") == tickets.EVENT_TYPE for m in stack.alerts()))
    [ticket] = [m for m in stack.alerts() if (m.get("metadata") or {}).get("event_type") == tickets.EVENT_TYPE]
    shared = wait_reply(stack, ALERT_CHANNEL, ticket["ts"], lambda m: m.get("files"))
    image, file = picture(stack, shared)
    assert image.size == (800, 400) and file["title"] == f"Memory of {name} over the last hour"
    assert "kill" not in file["alt_txt"]


def test_a_gpu_notebooks_kill_brings_its_gpu_memory_beside_its_memory(stack: LocalStack) -> None:
    """Issue 47: a notebook with an NVIDIA T4 (acceleratorConfigs) has its GPU memory picture too, from the Ops
    Agent's NVML series in the Monitoring stand-in, in the thread and the owner's DM."""
    full, name = new_instance(stack, "pic-gpu", slack_user="U0PICGPU", machine_type="n1-standard-8",
                              accelerators={"NVIDIA_TESLA_T4": 1})
    kill(stack, full, name)
    alert = restarted(stack, name)
    shared = wait_reply(stack, ALERT_CHANNEL, alert["ts"], lambda m: any(
        f["name"].startswith("gpu-") for f in m.get("files", [])))
    image, file = picture(stack, shared)
    assert image.size == (800, 400) and file["title"] == f"GPU memory of {name} over the last hour"
    assert "of 15.0 GiB" in file["alt_txt"]
    wait_dm(stack, "U0PICGPU", lambda m: any(f["name"].startswith("gpu-") for f in m.get("files", [])))
    assert any("gpu/memory/bytes_used" in r.filter for _, r in stack.metrics.requests)
