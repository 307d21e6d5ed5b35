"""OOM recovery over the wire: sink -> Pub/Sub -> on_oom -> restart topic -> restart_worker -> Workbench, Slack."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta

import pytest

from shared.core import envelope
from shared.core.models import Action, RestartRequest, Trigger
from shared.core.payloads import RestartPayload
from simulators.entries import noise_entry, oom_entry
from simulators.polling import PATIENCE_S
from simulators.stack import ALERT_CHANNEL, OOM_TOPIC, PROJECT, RESTART_TOPIC, LocalStack
from tests.integration.conftest import new_instance

pytestmark = pytest.mark.wire
ZONE = "asia-northeast1-a"


def alerts_for(stack: LocalStack, name: str) -> list[dict]:
    return [m for m in stack.alerts() if name in json.dumps(m.get("blocks", [])) or name in m.get("text", "")]


@pytest.mark.parametrize(("form", "ops_agent"), [("modern", True), ("legacy", False), ("cgroup", True)])
def test_kill_with_jupyter_down_is_reset_once_and_reported(stack: LocalStack, form: str, ops_agent: bool) -> None:
    full, name = new_instance(stack, f"wb-{form}")
    entry = oom_entry(PROJECT, ZONE, name, form=form, ops_agent=ops_agent, pid=4242)
    stack.workbench.oom_kill(full, jupyter_survives=False, health_delay_s=0.2)
    stack.sink(entry)
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
    assert stack.wait_idle()
    assert stack.workbench.resets(full) == 1
    [alert] = alerts_for(stack, name)
    assert "Restarted in" in alert["text"]
    body = json.dumps(alert["blocks"])
    assert "4242" in body and "logs/query" in body and "medic_restart" in body
    dm = stack.slack.messages(f"U{name.upper().replace('-', '')}")
    assert dm and "ran out of memory" in dm[-1]["text"] and "it is back" in dm[-1]["text"]
    labels = stack.workbench.get(full)["labels"]
    assert "medic-last-restart" in labels and "medic-inflight" not in labels
    # on_oom's audit says who named the VM and which VM wrote the entry (a forged kill can be traced).
    [queued] = [r for r in stack.audit_records("on_oom") if r.get("instance") == name]
    assert queued["named_by"] == "label" and queued["vm_id"] == entry["resource"]["labels"]["instance_id"]


def test_kill_in_oom_kill_allocating_task_mode_is_forwarded_and_reset(stack: LocalStack) -> None:
    """vm.oom_kill_allocating_task=1 words the line "Out of memory (oom_kill_allocating_task): Killed process":
    the sink's filter must select it, or on_oom never hears of the kill."""
    full, name = new_instance(stack, "wb-allocating")
    entry = oom_entry(PROJECT, ZONE, name, pid=5151)
    entry["jsonPayload"]["message"] = entry["jsonPayload"]["message"].replace(
        "Out of memory: Killed", "Out of memory (oom_kill_allocating_task): Killed")
    stack.workbench.oom_kill(full, jupyter_survives=False, health_delay_s=0.2)
    assert stack.sink(entry), "the sink's filter dropped a kill"
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
    assert stack.wait_idle()
    [alert] = alerts_for(stack, name)
    assert "5151" in json.dumps(alert["blocks"])


def test_kill_that_jupyter_survives_is_not_reset(stack: LocalStack) -> None:
    """Told to the owner (what was killed, that JupyterLab and the other kernels stayed up, that the kernel restarts
    by itself); the organizers' channel hears nothing (a count in `status`)."""
    full, name = new_instance(stack, "wb-survivor")
    entry = oom_entry(PROJECT, ZONE, name)
    owner = f"U{name.upper().replace('-', '')}"
    stack.workbench.oom_kill(full, jupyter_survives=True, health_delay_s=0.2)
    stack.sink(entry)
    assert stack.slack.wait_for(lambda: bool(stack.slack.messages(owner)), timeout=PATIENCE_S)
    assert stack.wait_idle()
    assert stack.workbench.resets(full) == 0
    assert alerts_for(stack, name) == []
    [dm] = stack.slack.messages(owner)
    assert "stayed up" in dm["text"] and "Kernel Restarting" in dm["text"]


@pytest.mark.both_label_variants
def test_health_that_never_arrives_resets_after_grace(stack: LocalStack) -> None:
    full, name = new_instance(stack, "wb-silent")
    stack.sink(oom_entry(PROJECT, ZONE, name))  # no oom_kill(): health_info never refreshes
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
    assert stack.wait_idle()
    [alert] = alerts_for(stack, name)
    assert "no health report arrived" in json.dumps(alert["blocks"])


@pytest.mark.parametrize(
    "line",
    [
        "python invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0, oom_score_adj=0",
        "oom_reaper: reaped process 23817 (python), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        "MemoryError: Unable to allocate 64.0 GiB",
    ],
)
def test_lines_that_are_not_kills_never_restart(stack: LocalStack, line: str) -> None:
    """The sink's filter drops them; were one to reach on_oom anyway (published by hand here), it is ignored."""
    full, name = new_instance(stack, "wb-noise")
    stack.workbench.oom_kill(full, jupyter_survives=False, health_delay_s=0.0)
    entry = noise_entry(PROJECT, ZONE, name, line)
    before = len(stack.pubsub.published(OOM_TOPIC))
    assert stack.sink(entry) == ""
    assert len(stack.pubsub.published(OOM_TOPIC)) == before, "the local sink forwarded what the real one drops"
    stack.publish(OOM_TOPIC, json.dumps(entry).encode(), {"logging.googleapis.com/timestamp": "now"})
    assert stack.wait_idle()
    assert stack.workbench.resets(full) == 0
    assert not alerts_for(stack, name)
    assert not stack.pubsub.published(f"projects/{PROJECT}/topics/notebook-restarts") or all(
        name not in m.data.decode() for m in stack.pubsub.published(f"projects/{PROJECT}/topics/notebook-restarts")
    )


@pytest.mark.both_label_variants
def test_same_entry_ten_times_is_one_reset(stack: LocalStack) -> None:
    full, name = new_instance(stack, "wb-dup")
    entry = oom_entry(PROJECT, ZONE, name)
    stack.workbench.oom_kill(full, jupyter_survives=False, health_delay_s=0.2)
    for _ in range(10):
        stack.sink(entry)
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
    assert stack.wait_idle()
    assert stack.workbench.resets(full) == 1
    assert len(alerts_for(stack, name)) == 1


@pytest.mark.parametrize(
    "payload",
    [b"not json at all", b"[1, 2, 3]", b'{"jsonPayload": {"message": 7}}', b"\xff\xfe", b"{" * 100_000],
)
def test_malformed_entries_are_acked_without_side_effects(stack: LocalStack, payload: bytes) -> None:
    before = len(stack.pubsub.deliveries)
    resets = stack.workbench.count_calls("reset")
    stack.publish(OOM_TOPIC, payload)  # what no sink publishes: straight onto the topic
    assert stack.wait_idle()
    new = stack.pubsub.deliveries[before:]
    assert new and all(d.acked for d in new), new
    assert stack.workbench.count_calls("reset") == resets


def test_unresolvable_kill_alerts_with_the_raw_entry(stack: LocalStack) -> None:
    entry = oom_entry(PROJECT, ZONE, "ghost", with_name_label=False, ops_agent=False)
    entry["textPayload"] = entry["textPayload"]  # legacy agent: no syslog prefix, so no host either
    stack.sink(entry)
    assert stack.slack.wait_for(
        lambda: any("could not tie" in m.get("text", "") for m in stack.slack.messages(ALERT_CHANNEL))
    )
    assert stack.wait_idle()
    # One grouped note per cause and window: the kill is in it, or counted in one an earlier line opened.
    told = [r for r in stack.audit_records()
            if r.get("event_id") == entry["insertId"] and r.get("decision") == "unresolved"]
    assert told and told[0]["trigger"] == "unresolved", told


def test_malformed_restart_request_is_acked(stack: LocalStack) -> None:
    topic = f"projects/{PROJECT}/topics/notebook-restarts"
    before = len(stack.pubsub.deliveries)
    stack.publish(topic, base64.b64encode(b"junk"), ordering_key="x")
    stack.publish(topic, json.dumps({"action": "restart", "trigger": "oom"}).encode(), ordering_key="x")
    assert stack.wait_idle()
    assert all(d.acked for d in stack.pubsub.deliveries[before:])


@pytest.mark.both_label_variants
def test_second_kill_that_takes_down_what_the_first_spared_is_reset_once(stack: LocalStack) -> None:
    """Kill 1: JupyterLab survives (notify-only, its kill recorded). Kill 2, another process moments later,
    within the incident cooldown: JupyterLab goes down. It must be reset, not folded into kill 1 in silence."""
    full, name = new_instance(stack, "wb-second-kill")
    owner = f"U{name.upper().replace('-', '')}"
    stack.workbench.oom_kill(full, jupyter_survives=True, health_delay_s=0.2)
    stack.sink(oom_entry(PROJECT, ZONE, name, pid=1111))
    assert stack.slack.wait_for(lambda: bool(stack.slack.messages(owner)), timeout=PATIENCE_S)
    assert stack.wait_idle()
    assert stack.workbench.resets(full) == 0
    assert "medic-last-kill" in stack.workbench.get(full)["labels"]  # kill 2 falls in kill 1's cooldown

    stack.workbench.oom_kill(full, jupyter_survives=False, health_delay_s=0.2)
    stack.sink(oom_entry(PROJECT, ZONE, name, pid=2222))
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
    assert stack.wait_idle()
    assert stack.workbench.resets(full) == 1
    [restarted] = alerts_for(stack, name)  # kill 1 was told to the owner only
    assert "Restarted in" in restarted["text"] and "2222" in json.dumps(restarted["blocks"])
    assert "1111" in stack.slack.messages(owner)[0]["text"]


@pytest.mark.both_label_variants
def test_lines_of_a_kill_jupyter_survived_are_one_message(stack: LocalStack) -> None:
    full, name = new_instance(stack, "wb-survivor-dup")
    entry = oom_entry(PROJECT, ZONE, name)
    owner = f"U{name.upper().replace('-', '')}"
    stack.workbench.oom_kill(full, jupyter_survives=True, health_delay_s=0.2)
    for _ in range(5):
        stack.sink(entry)
    assert stack.slack.wait_for(lambda: bool(stack.slack.messages(owner)), timeout=PATIENCE_S)
    assert stack.wait_idle()
    assert stack.workbench.resets(full) == 0
    assert alerts_for(stack, name) == []
    [dm] = stack.slack.messages(owner)
    assert "stayed up" in dm["text"]


@pytest.mark.parametrize(
    ("shape", "label"),
    [("journald", True), ("serial", True), ("serial", False), ("legacy-agent-json", True), ("legacy-agent", False)],
)
def test_kill_in_every_live_shape_is_reset(stack: LocalStack, shape: str, label: bool) -> None:
    """The Ops Agent's journald receiver (jsonPayload.MESSAGE), the serial console's escaped line (named by its VM id
    through Compute Engine when the label is missing), the legacy agent's shapes: each reaches a reset."""
    full, name = new_instance(stack, f"wb-{shape}")
    entry = oom_entry(PROJECT, ZONE, name, shape=shape, with_name_label=label, pid=6161)
    stack.workbench.oom_kill(full, jupyter_survives=False, health_delay_s=0.2)
    assert stack.sink(entry), "the sink's filter dropped a kill"
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
    assert stack.wait_idle()
    [queued] = [r for r in stack.audit_records("on_oom") if r.get("instance") == name]
    assert queued["named_by"] == ("label" if label else "instance id")


@pytest.mark.both_label_variants
def test_kill_dated_a_day_ahead_is_acted_on_at_its_receipt(stack: LocalStack) -> None:
    """Logging takes timestamps up to a day ahead. Counted from the entry's own time, the health grace would never
    end: the worker would answer 503 for a day, holding the instance's ordering key. Counted from Logging's receipt,
    the grace (4 s here) ends and the silent instance is reset; the owner's later kill is handled as usual."""
    full, name = new_instance(stack, "wb-ahead")
    entry = oom_entry(PROJECT, ZONE, name, at=datetime.now(UTC) + timedelta(days=1) - timedelta(minutes=1))
    stack.sink(entry)  # no oom_kill(): health never refreshes, as from a VM that is really down
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
    assert stack.wait_idle()
    [queued] = [r for r in stack.audit_records("on_oom") if r.get("instance") == name]
    assert "taken at its receipt" in queued["clock"] and queued["dated_at"].startswith(entry["timestamp"][:16])
    waits = [r for r in stack.worker_records() if r.get("instance") == name and r.get("decision") == "reset-not-seen"]
    assert len(waits) <= 3, "the request held the instance's key, waiting on a time a day ahead"


@pytest.mark.parametrize("forgery", ["another-vms-id", "foreign-project", "unconfigured-zone", "unknown-id"])
def test_forged_kill_resets_nothing_and_holds_no_key(stack: LocalStack, forgery: str) -> None:
    """A participant's VM may write a kill line naming anyone (roles/logging.logWriter). Written from their own VM
    (its instance_id), or naming another project or a zone the bot doesn't serve, it resets nothing and is reported
    once; the victim's own kill right after is handled at once (nothing holds its ordering key)."""
    victim_full, victim = new_instance(stack, "wb-victim")
    _, attacker = new_instance(stack, "wb-attacker")
    stack.workbench.oom_kill(victim_full, jupyter_survives=False, health_delay_s=0.2)
    entry = oom_entry(PROJECT, ZONE, victim, pid=6666)
    labels = entry["resource"]["labels"]
    if forgery == "another-vms-id":
        labels["instance_id"] = oom_entry(PROJECT, ZONE, attacker)["resource"]["labels"]["instance_id"]
    elif forgery == "foreign-project":
        labels["project_id"] = "someone-elses-prj"
    elif forgery == "unconfigured-zone":
        labels["zone"] = "europe-west1-b"
    else:
        labels["instance_id"] = "1234567890123456789"
    before = len(stack.alerts())
    assert stack.sink(entry)
    assert stack.wait_idle()
    assert stack.workbench.resets(victim_full) == 0
    records = stack.audit_records("on_oom")
    [refused] = [r for r in records if r.get("decision") == "refused" and r.get("named") == victim]
    assert refused["reason"] and not refused.get("instance"), "queued on no instance's ordering key"
    # The organizers hear of it in the grouped note of unresolved kills (one message per window, counted).
    told = [r for r in stack.audit_records()
            if r.get("event_id") == entry["insertId"] and r.get("decision") == "unresolved"]
    said = refused["reason"].replace(refused["vm_id"], "(VM id: in the audit log)")  # the channel never shows it
    assert told and all(r["trigger"] == "unresolved" and said in r["outcome"] for r in told), told
    assert len(stack.alerts()) <= before + 1, "at most one note to the organizers"

    stack.sink(oom_entry(PROJECT, ZONE, victim, pid=7777))  # the victim's own VM, a moment later
    assert stack.workbench.wait_until(lambda: stack.workbench.resets(victim_full) == 1, timeout=PATIENCE_S)
    assert stack.wait_idle()


@pytest.mark.parametrize(
    ("project", "zone", "says"),
    [("someone-elses-prj", "asia-northeast1-a", "not this bot's"), (PROJECT, "europe-west1-b", "WORKBENCH_ZONES")],
)
def test_the_worker_refuses_a_request_about_another_project_or_zone(
    stack: LocalStack, project: str, zone: str, says: str
) -> None:
    """on_oom refuses these; the worker checks again whatever put the request on the topic."""
    name = "wb-elsewhere"
    request = RestartRequest(action=Action.RESTART, trigger=Trigger.OOM, requested_at=datetime.now(UTC),
                             instance=f"projects/{project}/locations/{zone}/instances/{name}", event_id=f"far-{zone}",
                             payload=RestartPayload())
    gets = stack.workbench.count_calls("get")
    stack.publish(RESTART_TOPIC, envelope.encode(request), {"instance": name}, ordering_key=name)
    assert stack.wait_idle()
    rejected = [r for r in stack.audit_records() if r.get("event_id") == request.event_id]
    assert rejected and all(r["decision"] == "rejected" and says in r["outcome"] for r in rejected), rejected
    assert stack.workbench.count_calls("get") == gets, "nothing about it was even read"
