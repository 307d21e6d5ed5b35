"""Which Slack request is which (shared/app/slack/guard.py), and the record of those acted on (medic-acted)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from shared.app.slack import slack_request_digest
from shared.core.history import ACTED, LAST_RESTART, MAX_ACTED, MAX_LABELS, History

COMMAND = {"command": "/restart-notebook", "text": "wb-x", "user_id": "U1", "trigger_id": "13345.98.abc"}
T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
BUTTON = {"type": "block_actions", "container": {"message_ts": "1700000000.000100"},
          "actions": [{"action_id": "medic_restart", "value": "x", "action_ts": "1700000001.000200"}]}


def test_a_request_is_known_by_its_own_ids() -> None:
    assert slack_request_digest(COMMAND) == slack_request_digest(dict(COMMAND))
    assert slack_request_digest(COMMAND) != slack_request_digest({**COMMAND, "trigger_id": "13345.98.abd"})
    assert slack_request_digest({**COMMAND, "text": "status"}) == slack_request_digest(COMMAND)  # Slack's id decides
    other_press = {**BUTTON, "actions": [{**BUTTON["actions"][0], "action_ts": "1700000002.000200"}]}  # type: ignore[dict-item]
    assert slack_request_digest(BUTTON) != slack_request_digest(other_press)
    other_message = {**BUTTON, "container": {"message_ts": "1700000000.000101"}}
    assert slack_request_digest(BUTTON) != slack_request_digest(other_message)
    assert slack_request_digest(BUTTON) != slack_request_digest(COMMAND)


def test_a_request_without_slacks_ids_is_known_by_all_of_it() -> None:
    bare = {k: v for k, v in COMMAND.items() if k != "trigger_id"}
    assert slack_request_digest(bare) == slack_request_digest(dict(bare))
    assert slack_request_digest(bare) != slack_request_digest({**bare, "text": "wb-y"})
    assert slack_request_digest({"actions": "not a list"}) != slack_request_digest({"actions": []})


def test_the_record_keeps_the_last_few_and_fits_a_label() -> None:
    digests = [slack_request_digest({**COMMAND, "trigger_id": str(n)}) for n in range(8)]
    history = History()
    for digest in (*digests, digests[-1]):
        history = history.with_acted(digest)
    assert history.acted == tuple(digests[-MAX_ACTED:])
    labels = history.to_labels({"team": "red"})
    assert re.fullmatch(r"[a-z0-9_-]{1,63}", labels[ACTED]) and labels["team"] == "red"
    assert History.from_labels(labels).acted == history.acted
    mangled = {ACTED: f"{digests[0]}_NOT-A-DIGEST_{'f' * 40}_{digests[1]}"}
    assert History.from_labels(mangled).acted == (digests[0], digests[1])


def test_on_a_crowded_instance_the_record_of_requests_gives_way_first() -> None:
    """GCP allows 64 labels: the restart's own record keeps its room (ROOM_NEEDED), medic-acted takes what is left."""
    digest = slack_request_digest(COMMAND)
    crowded = {f"team-{n}": "x" for n in range(MAX_LABELS - 1)}
    history = History(last_restart=T0).with_acted(digest)
    labels = history.to_labels(crowded)
    assert len(labels) == MAX_LABELS and ACTED not in labels and LAST_RESTART in labels
    roomy = history.to_labels({"team": "red"})
    assert History.from_labels(roomy).acted == (digest,)
