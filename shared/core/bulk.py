"""The bulk request on the restart topic (issue 28): start all / stop all, as an organizer's press in the Home tab
publishes it and as the worker hands a run on to its next invocation, because a run of 50 notebooks outlasts one.

It travels under its own ordering key (BULK_KEY), so two runs never overlap and no instance's own requests wait
behind one; its JSON says its kind (BULK_KIND) so the worker routes it before the restart request's decoder.
Strict like every message the worker reads: a field that does not fit raises ValueError and the message is acked
with a logged reason. The organizer flag is never carried: the worker asks Slack who `requester` is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from shared.core.fleet_ops import BulkAction, Run
from shared.core.wire import aware_time as _moment
from shared.core.wire import short_text as _text
from shared.core.wire import versioned_object

BULK_KIND = "medic-bulk"
BULK_VERSION = 1
BULK_KEY = "fleet"  # the ordering key of every bulk request: one run at a time
BULK_ATTRIBUTE = "medic-kind"  # as fleet_ops.SCHEDULE_ATTRIBUTE: a route before decoding
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

    def to_json(self) -> bytes:
        data = {"kind": BULK_KIND, "version": BULK_VERSION, "action": self.action.value,
                "requested_at": self.requested_at.isoformat(), "event_id": self.event_id,
                "requester": self.requester, "include_opted_out": self.include_opted_out,
                "include_paused": self.include_paused, "channel": self.channel, "ts": self.ts, "run": self.run,
                "hands": self.hands}
        return json.dumps(data, separators=(",", ":"), sort_keys=True).encode()

    def handed_on(self, run: Run, channel: str, ts: str) -> BulkRequest:
        """The continuation: the same request with the run as it stands and where its progress is shown."""
        return BulkRequest(self.action, self.requested_at, self.event_id, self.requester, self.include_opted_out,
                           self.include_paused, channel, ts, run.to_dict(), self.hands + 1)


MAX_HANDS = 40  # at 7 minutes an invocation, over four hours: a run still going then is reported, not continued


def decode(raw: bytes) -> BulkRequest:
    """Strict: anything that does not fit raises ValueError; a newer version too."""
    if len(raw) > MAX_BYTES:
        raise ValueError(f"bulk request of {len(raw)} bytes; at most {MAX_BYTES}")
    data = versioned_object(raw, BULK_KIND, BULK_VERSION, "bulk request")
    try:
        request = BulkRequest(
            BulkAction(data["action"]), _moment(data["requested_at"]), _text(data["event_id"], 200),
            _text(data.get("requester", ""), 64), _flag(data.get("include_opted_out", False)),
            _flag(data.get("include_paused", False)), _text(data.get("channel", ""), 64),
            _text(data.get("ts", ""), 64), _run(data.get("run")), int(data.get("hands", 0)))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"bulk request field: {exc}"[:300]) from None
    if request.run is not None:
        Run.from_dict(request.run)  # its own strict check, here, so a bad one is rejected before anything is done
    return request


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError("a boolean")
    return value


def _run(value: Any) -> dict[str, Any] | None:
    if value is not None and not isinstance(value, dict):
        raise TypeError("run: an object")
    return value
