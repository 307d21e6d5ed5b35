"""The bulk request on the restart topic (issue 28): start all / stop all, as an organizer's press in the Home tab
publishes it and as the worker hands a run on to its next invocation, because a run of 50 notebooks outlasts one.

It travels under its own ordering key (BULK_KEY), so two runs never overlap and no instance's own requests wait
behind one; on the wire it is the envelope's "bulk" payload (envelope.py writes and reads it).
A run's progress message carries its state as Slack message metadata (RUN_EVENT: its action, the press's event id
and Pub/Sub message id, over or not), read back before a fresh run begins (admit): a press while a run of its kind
is under way is told so, and a replayed press (a new message for a press already run) runs nothing (issue 44: 100
presses made 100 runs and 101 posts).
Strict like every message the worker reads: a field that does not fit is rejected by envelope.decode and the message
is acked with a logged reason. The organizer flag is never carried: the worker asks Slack who `requester` is, on every
message of the run (issue 44). A continuation also carries a seal, an HMAC of its body under a key derived from a
secret only the worker and the Slack app hold (`seal_key`): a scheduled run names no requester, and a continuation
nobody sealed is refused (issue 44: a forged one skipped the organizer check and stopped two notebooks).
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from shared.core.fleet_ops import BulkAction, Run

BULK_KEY = "fleet"  # the ordering key of every bulk request: one run at a time
BULK_ATTRIBUTE = "medic-kind"  # as fleet_ops.SCHEDULE_ATTRIBUTE: for the console and filters; the worker reads "type"
MAX_BYTES = 60_000  # a run's state for a few hundred notebooks; Pub/Sub takes 10 MB, the worker 1 MB


@dataclass(frozen=True)
class BulkRequest:
    """`requester` the Slack user id who pressed (empty: the contest's schedule); `channel`/`ts` the progress message
    once posted; `run` the run's state when this is a continuation (fleet_ops.Run.to_dict)."""

    action: BulkAction
    requested_at: datetime
    event_id: str
    requester: str = ""
    include_opted_out: bool = False
    include_paused: bool = False
    channel: str = ""
    ts: str = ""
    run: dict[str, Any] | None = field(default=None, compare=False)
    hands: int = 0  # how many invocations handed this run on: bounded (MAX_HANDS)
    message_id: str = ""  # a continuation's: the Pub/Sub message id of the press that began the run (run_metadata)
    sealed: bool = field(default=False, compare=False)  # decoded with a seal that holds under the key given
    keep_gpus: bool = False  # a stop that leaves the GPU notebooks running (issue 47: they may not come back)

    def handed_on(self, run: Run, channel: str, ts: str, message_id: str) -> BulkRequest:
        """The continuation: the same request with the run as it stands, where its progress is shown, and the
        Pub/Sub message id of the press that began it."""
        return BulkRequest(self.action, self.requested_at, self.event_id, self.requester, self.include_opted_out,
                           self.include_paused, channel, ts, run.to_dict(), self.hands + 1, message_id,
                           keep_gpus=self.keep_gpus)


MAX_HANDS = 40  # at 7 minutes an invocation, over four hours: a run still going then is reported, not continued
RUN_EVENT = "medic_bulk_run"  # the progress message's metadata event_type
RUN_LIFE = timedelta(hours=5)  # longer than MAX_HANDS invocations: a run not over by then has stopped for good


@dataclass(frozen=True)
class RunSeen:
    """A run as its progress message's metadata says it (run_metadata)."""

    ts: str
    action: str
    event_id: str
    message_id: str
    over: bool
    opened: datetime


@dataclass(frozen=True)
class Begin:
    """No run of this kind under way and the press not run yet: begin (`resumes`: this very Pub/Sub message's run,
    begun before its redelivery: its progress message is reused)."""

    resumes: RunSeen | None = None


@dataclass(frozen=True)
class Busy:
    """A run of the same kind is under way: the press is told so, and runs nothing."""

    run: RunSeen


@dataclass(frozen=True)
class Replayed:
    """A press already run (the same event id in another Pub/Sub message): a replay, or a duplicate publish."""

    run: RunSeen


def run_metadata(request: BulkRequest, message_id: str, opened: datetime, *, over: bool) -> dict[str, Any]:
    """chat.postMessage / chat.update `metadata` of a run's progress message: what admit() reads back. Sent with
    every update, so that it stands whether an update without metadata keeps the message's or not."""
    return {"event_type": RUN_EVENT,
            "event_payload": {"action": request.action.value, "event_id": request.event_id[:200],
                              "message_id": message_id[:128], "over": over, "opened": int(opened.timestamp())}}


def read_runs(messages: list[dict[str, Any]], bot_id: str) -> list[RunSeen]:
    """The runs among a channel's messages: the bot's own (`bot_id`) carrying RUN_EVENT; anything malformed is none."""
    runs = []
    for message in messages:
        metadata, ts = message.get("metadata"), message.get("ts")
        if not bot_id or message.get("bot_id") != bot_id or not isinstance(ts, str) or not isinstance(metadata, dict):
            continue
        payload = metadata.get("event_payload")
        if metadata.get("event_type") != RUN_EVENT or not isinstance(payload, dict):
            continue
        action, event, message_id = payload.get("action"), payload.get("event_id"), payload.get("message_id")
        opened, over = payload.get("opened"), payload.get("over")
        if not (isinstance(action, str) and isinstance(event, str) and isinstance(message_id, str)
                and isinstance(over, bool) and isinstance(opened, int | float) and 0 <= opened < 2**34):
            continue
        runs.append(RunSeen(ts, action, event, message_id, over, datetime.fromtimestamp(opened, tz=UTC)))
    return runs


def admit(runs: list[RunSeen], request: BulkRequest, message_id: str, now: datetime) -> Begin | Busy | Replayed:
    """Whether a fresh run may begin: the same press in another message is a replay; the same message again (Pub/Sub's
    redelivery after a failure) resumes its run; a run of the same action under way (begun within RUN_LIFE and not
    over) keeps this one out."""
    recent = [run for run in runs if now - RUN_LIFE < run.opened <= now + timedelta(minutes=1)]
    for run in recent:
        if run.event_id == request.event_id:
            return Begin(run) if run.message_id == message_id and message_id and not run.over else Replayed(run)
    running = [run for run in recent if run.action == request.action.value and not run.over]
    return Busy(running[0]) if running else Begin()


def seal_key(secret: str) -> bytes:
    """The continuations' key, derived from a Secret Manager secret the worker holds (its Slack bot token): never the
    secret itself, and no other use of it can produce a seal."""
    return hmac.new(secret.encode(), b"notebook-medic bulk continuation v1", hashlib.sha256).digest()


def seal(body: bytes, key: bytes) -> str:
    """A continuation's seal: the HMAC of its canonical body (envelope.py writes it) under `key`."""
    return hmac.new(key, body, hashlib.sha256).hexdigest()


def holds(said: str, body: bytes, key: bytes) -> bool:
    """Whether a continuation's seal is the one `key` gives its body."""
    return hmac.compare_digest(said, seal(body, key))
