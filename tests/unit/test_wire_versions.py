"""The restart topic's wire format is versioned (shared/core/envelope.py): the flat messages this release published
before the envelope (wire version 0) still decode, for every action, and the envelope round-trips every one.

TODAY holds literal JSON captured from the publishers' shapes at commit 99bea94 (RestartRequest.to_json of what
intake, memory_intake, the Slack command and buttons, and the worker's continuations build), before the envelope
existed: never regenerate it from the current code, or it would test nothing.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from shared.core import envelope
from shared.core.models import Action, RestartRequest, Trigger

TODAY = {
    'restart-oom': '{"action":"restart","alert_blocks":[],"alert_channel":"","alert_ts":"","asked_by":"","authorize":false,"chain":"","event_id":"ins-1","folded":0,"incident_open":true,"instance":"projects/contest-prj/locations/asia-northeast1-a/instances/wb-alice","jupyter_was_down":false,"kill":{"anon_rss_kb":3145728,"constraint":"memcg","dated_at":null,"form":"modern","insert_id":"ins-1","instance":"projects/contest-prj/locations/asia-northeast1-a/instances/wb-alice","killed_at":"2026-11-30T21:00:00.123456Z","limit_kb":4194304,"line":"Out of memory: Killed process 4242 (python3)","named_by":"label","pid":4242,"process":"python3","total_vm_kb":4194304,"unit":"/system.slice/jupyter.service","vm_id":"1234567890123"},"machine_type":"","memory_percent":null,"note":"","owner_may_start":false,"raw_entry":"","received_at":"2026-11-30T21:00:00.123456Z","refused":false,"requested_at":"2026-11-30T21:00:00.123456Z","requester":null,"response_url":"","slack_request":"","target":"","trigger":"oom","vm_id":"","writer":"","yields":0}',  # noqa: E501
    'restart-oom-continuation': '{"action":"restart","alert_blocks":[],"alert_channel":"","alert_ts":"","asked_by":"","authorize":false,"chain":"17000001","event_id":"ins-1","folded":0,"incident_open":true,"instance":"projects/contest-prj/locations/asia-northeast1-a/instances/wb-alice","jupyter_was_down":true,"kill":{"anon_rss_kb":3145728,"constraint":"memcg","dated_at":null,"form":"modern","insert_id":"ins-1","instance":"projects/contest-prj/locations/asia-northeast1-a/instances/wb-alice","killed_at":"2026-11-30T21:00:00.123456Z","limit_kb":4194304,"line":"Out of memory: Killed process 4242 (python3)","named_by":"label","pid":4242,"process":"python3","total_vm_kb":4194304,"unit":"/system.slice/jupyter.service","vm_id":"1234567890123"},"machine_type":"","memory_percent":null,"note":"","owner_may_start":false,"raw_entry":"","received_at":"2026-11-30T21:00:00.123456Z","refused":false,"requested_at":"2026-11-30T21:00:00.123456Z","requester":null,"response_url":"","slack_request":"","target":"","trigger":"oom","vm_id":"","writer":"","yields":3}',  # noqa: E501
    'interrupted': '{"action":"interrupted","alert_blocks":[],"alert_channel":"","alert_ts":"","asked_by":"","authorize":false,"chain":"","event_id":"ins-2","folded":0,"incident_open":true,"instance":"projects/contest-prj/locations/asia-northeast1-a/instances/wb-alice","jupyter_was_down":false,"kill":{"anon_rss_kb":3145728,"constraint":"memcg","dated_at":null,"form":"watcher","insert_id":"ins-1","instance":"projects/contest-prj/locations/asia-northeast1-a/instances/wb-alice","killed_at":"2026-11-30T21:00:00.123456Z","limit_kb":4194304,"line":"Out of memory: Killed process 4242 (python3)","named_by":"label","pid":4242,"process":"python3","total_vm_kb":4194304,"unit":"/system.slice/jupyter.service","vm_id":"1234567890123"},"machine_type":"","memory_percent":null,"note":"","owner_may_start":false,"raw_entry":"","received_at":"2026-11-30T21:00:00.123456Z","refused":false,"requested_at":"2026-11-30T21:00:00.123456Z","requester":null,"response_url":"","slack_request":"","target":"","trigger":"watcher","vm_id":"","writer":"","yields":0}',  # noqa: E501
    'alert-unresolved': '{"action":"alert","alert_blocks":[],"alert_channel":"","alert_ts":"","asked_by":"","authorize":false,"chain":"","event_id":"ins-3","folded":4,"incident_open":true,"instance":"","jupyter_was_down":false,"kill":null,"machine_type":"","memory_percent":null,"note":"no VM has the entry\'s id","owner_may_start":false,"raw_entry":"{\\"textPayload\\": \\"Out of memory\\"}","received_at":"2026-11-30T21:00:00.123456Z","refused":true,"requested_at":"2026-11-30T21:00:00.123456Z","requester":null,"response_url":"","slack_request":"","target":"","trigger":"unresolved","vm_id":"","writer":"wb-mallory","yields":0}',  # noqa: E501
    'warn': '{"action":"warn","alert_blocks":[],"alert_channel":"","alert_ts":"","asked_by":"","authorize":false,"chain":"","event_id":"memory-0.abc","folded":0,"incident_open":true,"instance":"projects/contest-prj/locations/asia-northeast1-a/instances/wb-alice","jupyter_was_down":false,"kill":null,"machine_type":"","memory_percent":93.5,"note":"","owner_may_start":false,"raw_entry":"","received_at":null,"refused":false,"requested_at":"2026-11-30T21:00:00.123456Z","requester":null,"response_url":"","slack_request":"","target":"","trigger":"memory","vm_id":"1234567890123","writer":"","yields":0}',  # noqa: E501
    'restart-slash': '{"action":"restart","alert_blocks":[],"alert_channel":"","alert_ts":"","asked_by":"","authorize":false,"chain":"","event_id":"slack-1234.5678","folded":0,"incident_open":true,"instance":"projects/contest-prj/locations/asia-northeast1-a/instances/wb-alice","jupyter_was_down":false,"kill":null,"machine_type":"","memory_percent":null,"note":"","owner_may_start":false,"raw_entry":"","received_at":null,"refused":false,"requested_at":"2026-11-30T21:00:00.123456Z","requester":{"email":"alice@contest.example","is_organizer":false,"slack_user_id":"U0ALICE"},"response_url":"https://hooks.slack.com/commands/T0/1/abc","slack_request":"0123456789a","target":"","trigger":"slash-command","vm_id":"","writer":"","yields":0}',
    'start-slash': '{"action":"start","alert_blocks":[],"alert_channel":"","alert_ts":"","asked_by":"","authorize":false,"chain":"","event_id":"slack-1234.5679","folded":0,"incident_open":true,"instance":"projects/contest-prj/locations/asia-northeast1-a/instances/wb-alice","jupyter_was_down":false,"kill":null,"machine_type":"","memory_percent":null,"note":"","owner_may_start":false,"raw_entry":"","received_at":null,"refused":false,"requested_at":"2026-11-30T21:00:00.123456Z","requester":{"email":"alice@contest.example","is_organizer":false,"slack_user_id":"U0ALICE"},"response_url":"https://hooks.slack.com/commands/T0/2/abc","slack_request":"0123456789b","target":"","trigger":"slash-command","vm_id":"","writer":"","yields":0}',
    'asked-slash': '{"action":"restart","alert_blocks":[],"alert_channel":"","alert_ts":"","asked_by":"","authorize":true,"chain":"","event_id":"slack-1234.5680","folded":0,"incident_open":true,"instance":"","jupyter_was_down":false,"kill":null,"machine_type":"","memory_percent":null,"note":"","owner_may_start":false,"raw_entry":"","received_at":null,"refused":false,"requested_at":"2026-11-30T21:00:00.123456Z","requester":{"email":"","is_organizer":false,"slack_user_id":"U0ALICE"},"response_url":"https://hooks.slack.com/commands/T0/3/abc","slack_request":"0123456789c","target":"wb-alice","trigger":"slash-command","vm_id":"","writer":"","yields":0}',
    'restart-button': '{"action":"restart","alert_blocks":[{"text":{"text":"wb-alice was killed","type":"mrkdwn"},"type":"section"}],"alert_channel":"C0ALERTS","alert_ts":"1700000000.000100","asked_by":"","authorize":false,"chain":"","event_id":"button-1.2-U0ORG1","folded":0,"incident_open":true,"instance":"projects/contest-prj/locations/asia-northeast1-a/instances/wb-alice","jupyter_was_down":false,"kill":null,"machine_type":"","memory_percent":null,"note":"","owner_may_start":false,"raw_entry":"","received_at":null,"refused":false,"requested_at":"2026-11-30T21:00:00.123456Z","requester":{"email":"org@contest.example","is_organizer":true,"slack_user_id":"U0ORG1"},"response_url":"https://hooks.slack.com/actions/T0/4/abc","slack_request":"0123456789d","target":"","trigger":"button","vm_id":"","writer":"","yields":0}',
    'stop-button': '{"action":"stop","alert_blocks":[{"text":{"text":"wb-alice was killed","type":"mrkdwn"},"type":"section"}],"alert_channel":"C0ALERTS","alert_ts":"1700000000.000100","asked_by":"","authorize":false,"chain":"","event_id":"button-1.3-U0ORG1","folded":0,"incident_open":true,"instance":"projects/contest-prj/locations/asia-northeast1-a/instances/wb-alice","jupyter_was_down":false,"kill":null,"machine_type":"","memory_percent":null,"note":"","owner_may_start":true,"raw_entry":"","received_at":null,"refused":false,"requested_at":"2026-11-30T21:00:00.123456Z","requester":{"email":"org@contest.example","is_organizer":true,"slack_user_id":"U0ORG1"},"response_url":"https://hooks.slack.com/actions/T0/5/abc","slack_request":"0123456789e","target":"","trigger":"button","vm_id":"","writer":"","yields":0}',
    'pause-button': '{"action":"pause","alert_blocks":[{"text":{"text":"wb-alice was killed","type":"mrkdwn"},"type":"section"}],"alert_channel":"C0ALERTS","alert_ts":"1700000000.000100","asked_by":"","authorize":false,"chain":"","event_id":"button-1.4-U0ORG1","folded":0,"incident_open":true,"instance":"projects/contest-prj/locations/asia-northeast1-a/instances/wb-alice","jupyter_was_down":false,"kill":null,"machine_type":"","memory_percent":null,"note":"","owner_may_start":false,"raw_entry":"","received_at":null,"refused":false,"requested_at":"2026-11-30T21:00:00.123456Z","requester":{"email":"org@contest.example","is_organizer":true,"slack_user_id":"U0ORG1"},"response_url":"","slack_request":"0123456789f","target":"","trigger":"button","vm_id":"","writer":"","yields":0}',  # noqa: E501
    'resume-button-asked': '{"action":"resume","alert_blocks":[{"text":{"text":"wb-alice was killed","type":"mrkdwn"},"type":"section"}],"alert_channel":"C0ALERTS","alert_ts":"1700000000.000100","asked_by":"","authorize":true,"chain":"","event_id":"button-1.5-U0ORG1","folded":0,"incident_open":true,"instance":"projects/contest-prj/locations/asia-northeast1-a/instances/wb-alice","jupyter_was_down":false,"kill":null,"machine_type":"","memory_percent":null,"note":"","owner_may_start":false,"raw_entry":"","received_at":null,"refused":false,"requested_at":"2026-11-30T21:00:00.123456Z","requester":{"email":"","is_organizer":false,"slack_user_id":"U0ORG1"},"response_url":"","slack_request":"01234567890","target":"","trigger":"button","vm_id":"","writer":"","yields":0}',  # noqa: E501
    'resize-button': '{"action":"resize","alert_blocks":[{"text":{"text":"wb-alice was killed","type":"mrkdwn"},"type":"section"}],"alert_channel":"C0ALERTS","alert_ts":"1700000000.000100","asked_by":"U0ALICE","authorize":false,"chain":"","event_id":"button-1.6-U0ORG1","folded":0,"incident_open":true,"instance":"projects/contest-prj/locations/asia-northeast1-a/instances/wb-alice","jupyter_was_down":false,"kill":null,"machine_type":"e2-highmem-4","memory_percent":null,"note":"","owner_may_start":false,"raw_entry":"","received_at":null,"refused":false,"requested_at":"2026-11-30T21:00:00.123456Z","requester":{"email":"org@contest.example","is_organizer":true,"slack_user_id":"U0ORG1"},"response_url":"https://hooks.slack.com/actions/T0/6/abc","slack_request":"0123456789a","target":"","trigger":"button","vm_id":"","writer":"","yields":0}',
}


@pytest.mark.parametrize("name", sorted(TODAY))
def test_todays_messages_still_decode(name: str) -> None:
    request = envelope.decode(TODAY[name].encode())
    assert request == RestartRequest.from_json(TODAY[name].encode())  # as today's decoder reads it
    assert request.instance or request.trigger in (Trigger.UNRESOLVED, Trigger.SLASH_COMMAND)


def test_todays_fields_land_where_each_action_reads_them() -> None:
    def read(name: str) -> RestartRequest:
        return envelope.decode(TODAY[name].encode())

    assert read("warn").memory_percent == 93.5 and read("warn").vm_id == "1234567890123"
    assert (read("resize-button").machine_type, read("resize-button").asked_by) == ("e2-highmem-4", "U0ALICE")
    assert read("stop-button").owner_may_start and read("asked-slash").target == "wb-alice"
    assert (read("restart-oom-continuation").chain, read("restart-oom-continuation").yields) == ("17000001", 3)
    assert read("alert-unresolved").writer == "wb-mallory" and read("alert-unresolved").folded == 4
    assert read("restart-oom").kill_time is not None and read("interrupted").action is Action.INTERRUPTED


def test_every_action_has_a_message_of_todays_shape() -> None:
    actions = {envelope.decode(raw.encode()).action for raw in TODAY.values()}
    assert actions == set(Action)


@pytest.mark.parametrize("name", sorted(TODAY))
def test_the_envelope_carries_each_action_with_only_its_payload(name: str) -> None:
    request = envelope.decode(TODAY[name].encode())
    wire = envelope.encode(request)
    data = json.loads(wire)
    assert data["version"] == envelope.WIRE_VERSION and data["payload"]["type"] == envelope.payload_kind(request)
    assert envelope.decode(wire) == request


def test_a_payload_foreign_to_its_action_is_refused() -> None:
    warn = json.loads(envelope.encode(envelope.decode(TODAY["warn"].encode())))
    with pytest.raises(ValueError, match="no machine_type"):
        envelope.decode(json.dumps(warn | {"payload": warn["payload"] | {"machine_type": "e2-highmem-4"}}).encode())
    with pytest.raises(ValueError, match="does not carry"):
        envelope.decode(json.dumps(warn | {"payload": {"type": "resize", "machine_type": "e2-highmem-4"}}).encode())
    with pytest.raises(ValueError, match="wire version"):
        envelope.decode(json.dumps(warn | {"version": 2}).encode())


def test_a_field_with_no_place_in_the_payload_is_not_published_silently_lost() -> None:
    stop = envelope.decode(TODAY["stop-button"].encode())
    with pytest.raises(ValueError, match="machine_type"):
        envelope.encode(replace(stop, machine_type="e2-highmem-4"))
