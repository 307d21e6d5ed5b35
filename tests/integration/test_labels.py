"""The worker's label writes over the wire: what people change on an instance is never undone by the bot.

The worker reads an instance's labels before a reset and writes its record after it, minutes later, with
update_instance's "labels" mask. On the live API that update merges (a key left out is kept, an empty value
deletes it) and the service keeps four labels of its own; a replacing API is the other plausible reading.
The bot sends every label that isn't its own as read, its own with their values and the ones it drops empty
(History.to_labels): right under both. The record must still be built over the freshest labels (those the
reset's end returned), or an organizer's `medic-auto=off` set in the console meanwhile would be reverted.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from shared.adapters.workbench import Workbench
from shared.core import envelope
from shared.core.history import BOT_KEYS
from shared.core.models import Action, InstanceRef, Requester, RestartRequest, Trigger
from shared.core.payloads import RestartPayload, WarnPayload
from simulators.polling import PATIENCE_S
from simulators.slack import SlackRequester
from simulators.stack import ALERT_CHANNEL, RESTART_TOPIC, SIGNING_SECRET, LocalStack
from simulators.workbench import SYSTEM_LABEL_KEYS, classify
from tests.integration.conftest import new_instance
from tests.integration.helpers import (
    ORGANIZER,
    alert_text,
    assert_incident_closed,
    kill,
    labels,
    restart_deliveries,
    stack_with_organizer,
    wait_alert,
    workbench_calls,
)

pytestmark = pytest.mark.wire

RESET_S = 2.0  # long enough for a console edit to land while the reset runs
ENV = {"WORKBENCH_TIMEOUT_SECONDS": "1.5", "WORKBENCH_RETRY_SECONDS": "2.5", "SLOW_RESTART_ALERT_SECONDS": "30"}


@pytest.fixture(scope="module", params=["grpc", "rest"])
def stack(request: pytest.FixtureRequest, label_visibility: str) -> Iterator[LocalStack]:
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


@pytest.mark.both_label_variants
def test_console_edit_made_while_the_reset_runs_survives_the_record(stack: LocalStack) -> None:
    full, name = new_instance(stack, "console-edit", labels={"team": "red"})
    kill(stack, full, name)
    assert stack.workbench.wait_until(lambda: reset_running(stack, full), timeout=PATIENCE_S)
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


@pytest.mark.both_label_variants
def test_console_edit_made_while_a_failing_reset_runs_survives_the_record(stack: LocalStack) -> None:
    """A reset that ends in error returns no Instance: the record is written over a read made after it."""
    full, name = new_instance(stack, "console-edit-failed", labels={"team": "red"})
    stack.workbench.inject_fault(method="reset", path_contains=f"/instances/{name}:reset", kind="op_error")
    kill(stack, full, name)
    assert stack.workbench.wait_until(lambda: reset_running(stack, full), timeout=PATIENCE_S)
    console_edit(stack, full, **{"medic-auto": "off", "team": "blue"})
    wait_alert(stack, name, "Restart failed")
    assert_incident_closed(stack, full, name, resets=1, says="Restart failed")
    after = labels(stack, full)
    assert after["medic-auto"] == "off" and after["team"] == "blue", after
    assert "medic-last-kill" in after and "medic-restarts" in after  # the attempt is still recorded


@pytest.mark.both_label_variants
def test_labels_the_api_adds_of_its_own_do_not_hold_up_a_write(stack: LocalStack) -> None:
    """The service's own labels on every instance: the write is confirmed on the bot's keys. Confirmed only on an
    exact match, no intent would ever be, and every restart would wait for redeliveries."""
    full, name = new_instance(stack, "system-labels")
    system = {k: v for k, v in labels(stack, full).items() if k in SYSTEM_LABEL_KEYS}
    kill(stack, full, name)
    assert_incident_closed(stack, full, name, resets=1, says="Restarted in")
    [delivery] = restart_deliveries(stack, name)  # the intent confirmed at once: no redelivery
    assert delivery.acked
    assert {k: v for k, v in labels(stack, full).items() if k in SYSTEM_LABEL_KEYS} == system


@pytest.mark.both_label_variants
def test_the_bot_removes_its_own_keys_and_touches_no_one_elses(stack: LocalStack) -> None:
    """Live, a key left out of an update stays. A restart leaves no `medic-inflight` behind (so
    /restart-notebook is not "already restarting" for the next ten minutes), a key an earlier version wrote is
    removed, and every write sends the person's and the service's labels exactly as they were (a merge leaves
    them alone; a replacing API would keep them): deletes are its own keys, sent empty."""
    full, name = new_instance(stack, "own-keys", labels={"team": "red", "medic-team": "cardio", "medic-pending": "x"})
    before = labels(stack, full)
    kill(stack, full, name)
    assert_incident_closed(stack, full, name, resets=1, says="Restarted in")
    after = labels(stack, full)
    assert not {"medic-inflight", "medic-inflight-event", "medic-pending"} & after.keys(), after
    assert {k: after[k] for k in before if k != "medic-pending"} == {k: v for k, v in before.items()
                                                                     if k != "medic-pending"}
    writes = [sent for target, sent in stack.workbench.label_writes if target == full]
    assert len(writes) >= 2  # the intent, the record
    for sent in writes:
        assert {k: sent[k] for k in before if k in sent and k not in BOT_KEYS} == {
            k: v for k, v in before.items() if k not in BOT_KEYS}, sent
        assert all(value or key in BOT_KEYS for key, value in sent.items()), sent
    assert writes[-1]["medic-inflight"] == ""


@pytest.mark.both_label_variants
def test_a_paused_instance_resumes(app: LocalStack) -> None:
    """Resume deletes `medic-auto=paused`: left out of the update, it would stay, and Resume would never work."""
    full, _ = new_instance(app, "resume", labels={"medic-auto": "paused", "team": "red"})
    slack = SlackRequester(SIGNING_SECRET, app.functions["slack_app"][0].url)
    url = app.slack.new_response_url()
    slack.block_action(ORGANIZER[0], "medic_resume", full, response_url=url, channel_id=ALERT_CHANNEL)
    assert app.slack.wait_for(lambda: any("Restarts resumed by" in r["text"] for r in app.slack.responses(url)),
                              timeout=PATIENCE_S), app.slack.responses(url)
    assert app.wait_idle()
    after = labels(app, full)
    assert "medic-auto" not in after and after["team"] == "red", after


# ---- GCP's 64 labels -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def app(label_visibility: str) -> Iterator[LocalStack]:
    with stack_with_organizer(env=ENV) as running:
        yield running


def crowd(count: int) -> dict[str, str]:
    """Labels of the instance's own, `count` with the service's 4 (SYSTEM_LABEL_KEYS): GCP's 64 count them all."""
    return {f"team-{i}": "x" for i in range(count - len(SYSTEM_LABEL_KEYS))}


def persons(stack: LocalStack, full: str) -> dict[str, str]:
    return {k: v for k, v in labels(stack, full).items() if k not in SYSTEM_LABEL_KEYS}


@pytest.mark.both_label_variants
def test_restart_a_person_asks_for_goes_ahead_unrecorded_on_a_crowded_instance(app: LocalStack) -> None:
    """63 labels + the intent's 2 > 64. A person asked: one restart, which they chose, made without the intent;
    the alert says why nothing was recorded. The record after it (one label) fits and is written.

    The request is published as slack_app publishes a /restart-notebook: what is under test is the worker's write
    against the API's 64, not the command's 1.2 s read budget (a slow machine ran it out: tests/integration/
    test_slack_app_budget.py answers the command in time; tests/unit/test_fault_matrix_decisions.py has this row on a
    fake clock)."""
    full, name = new_instance(app, "crowded-manual", labels=crowd(63))
    request = RestartRequest(action=Action.RESTART, trigger=Trigger.SLASH_COMMAND, instance=full,
                             requested_at=datetime.now(UTC), event_id="slash-crowded-manual",
                             requester=Requester(ORGANIZER[0], ORGANIZER[1], True),
                             response_url=app.slack.new_response_url(), payload=RestartPayload())
    app.publish(RESTART_TOPIC, envelope.encode(request), {"action": "restart", "instance": name},
                       ordering_key=full)
    alert = wait_alert(app, name, "Restarted by")
    assert "carries 63 labels" in alert_text(alert)
    assert app.wait_idle()
    assert app.workbench.resets(full) == 1
    after = labels(app, full)
    assert "medic-last-restart" in after and "medic-inflight" not in after
    assert {k: v for k, v in after.items() if not k.startswith("medic-") and k not in SYSTEM_LABEL_KEYS} == crowd(63)


def test_pause_with_no_room_for_its_label_says_how_many_to_remove(app: LocalStack) -> None:
    """Pausing is writing medic-auto=paused: on 64 labels of the instance's own the API would refuse it. The
    organizer who pressed Pause reads what the alerts say (how many labels to remove), not the exception."""
    full, name = new_instance(app, "crowded-pause", labels=crowd(64))
    slack = SlackRequester(SIGNING_SECRET, app.functions["slack_app"][0].url)
    url = app.slack.new_response_url()
    slack.block_action(ORGANIZER[0], "medic_pause", full, response_url=url, channel_id=ALERT_CHANNEL)
    assert app.slack.wait_for(lambda: any(":x:" in r["text"] for r in app.slack.responses(url)), timeout=PATIENCE_S)
    said = next(r["text"] for r in app.slack.responses(url) if ":x:" in r["text"])
    assert said == (f":x: I could not pause restarts of *{name}*: `{name}` carries 64 labels; notebook-medic needs "
                    "9 free of GCP's 64 for its own: remove at least 9, or it can't keep count of restarts on this "
                    "instance."), said
    assert app.wait_idle()
    assert workbench_calls(app, name, "patch") == 0 and persons(app, full) == crowd(64)


def test_memory_warning_with_no_room_for_its_quiet_period_says_it_will_repeat(app: LocalStack) -> None:
    """The quiet period between warnings is a label: with no room for it, every memory alert warns again. The
    channel line says so, and how many labels to remove."""
    full, name = new_instance(app, "crowded-memory", labels=crowd(64))
    request = RestartRequest(action=Action.WARN, trigger=Trigger.MEMORY, instance=full,
                             requested_at=datetime.now(UTC), event_id="memory-crowded",
                             payload=WarnPayload(memory_percent=95.0, incident_open=True))
    app.publish(RESTART_TOPIC, envelope.encode(request), {"action": "warn", "instance": name}, ordering_key=full)
    line = wait_alert(app, name, "is at 95% memory")["text"]
    assert "I can't record this warning on the instance" in line and "repeats at every memory alert" in line, line
    assert f"`{name}` carries 64 labels" in line and "remove at least 9" in line, line
    assert persons(app, full) == crowd(64)


def test_crash_loop_with_no_room_for_its_pause_is_not_announced_as_a_pause(app: LocalStack) -> None:
    """The pause is the label medic-auto=paused: on an instance with no room for it, nothing is paused and the
    owner's /restart-notebook still works. The alert and the owner's DM say what happened, not a pause: no
    "Restarts of this instance are paused", no Resume button, no "/restart-notebook can't restart it"."""
    now = int(time.time())
    runs = [now - 540, now - 360, now - 180]  # three automatic restarts in a row: the next kill trips the pause
    history = {"medic-restarts": "_".join(map(str, runs)), "medic-kills": "_".join(str(t - 30) for t in runs),
               "medic-last-restart": str(runs[-1] + 40), "medic-last-kill": str(runs[-1] - 30),
               "medic-mem-warned": str(now - 7200)}  # 59 + 5 = 64 labels: no room for a 65th, medic-auto
    full, name = new_instance(app, "crowded-loop", labels={**crowd(59), **history})
    kill(app, full, name)
    alert = alert_text(wait_alert(app, name, "Crash loop"))
    assert "Not restarted, and not paused" in alert and "so its owner can still restart it" in alert, alert
    assert "carries 59 labels" in alert and "remove at least 4" in alert, alert
    assert "Restarts of this instance are paused" not in alert, alert
    assert "medic_resume" not in alert and "medic_pause" in alert, alert  # the buttons of an instance not paused
    assert app.wait_idle()
    [dm] = [m["text"] for m in app.slack.messages(f"U{name.upper().replace('-', '')}")]
    assert "keeps running out of memory" in dm and "still restarts it" in dm and "can't restart" not in dm, dm
    assert app.workbench.resets(full) == 0
    assert persons(app, full) == {**crowd(59), **history}
