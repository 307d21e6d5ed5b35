"""How an automatic incident waits (for fresh health, or out a crash-loop backoff) without holding its instance.

Pub/Sub delivers one message per ordering key (the instance) at a time. An incident that waited inside its
delivery for the health grace (3 min), or answered 503 to be redelivered, kept every later message for the
instance behind it: the owner's /restart-notebook and an organizer's button waited on a machine. So a waiting
incident holds the key for at most one short poll (`hold`), then re-publishes itself (a continuation, same
ordering key: it goes behind whatever was queued meanwhile) and acks. A person's request waits at most one hold
plus a read and a publish.

One wait per instance. Each kill line of an incident, and each forged copy of one, would otherwise start a wait
of its own, each holding the key for a poll. The wait names itself on the instance (label medic-waiting: its
kill time and its chain); a line whose kill is no later folds into it, since its outcome answers that kill too
(it waits for health newer than a kill at least as late). A later kill takes the wait over, and the earlier
chain folds at its next delivery.

Bounded: the kill time is never later than when the entry was received (`as_received`), so the policy's health
grace, counted from it, ends every wait for health; a backoff ends by itself (BACKOFF_CAP_SECONDS); and a chain
that somehow outlives both stops at `max_yields` with an alert (the worker's Endings.hand_on_key).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from shared.core.history import event_key
from shared.core.models import RestartRequest, Trigger
from shared.core.payloads import KillPayload, RestartPayload
from shared.core.policy import Decision, PolicyConfig, Verdict

# The most a waiting incident holds its instance's key per delivery, whatever HEALTH_POLL_SECONDS says: a
# person's request is acted on within 30 s of being queued (this, a read, a publish, and a margin).
MAX_HOLD = timedelta(seconds=10)
MIN_HOLD = timedelta(milliseconds=100)  # HEALTH_POLL_SECONDS=0 must not spin


@dataclass(frozen=True)
class Marker:
    """The wait an instance's automatic incident is in: its kill (whole seconds, as labels keep) and its chain."""

    killed_at: datetime
    chain: str  # event_key() of the chain's first Pub/Sub message id

    @classmethod
    def parse(cls, text: str) -> Marker | None:
        """The label's value, or None for anything else (a mangled label reads as no wait)."""
        match = re.fullmatch(r"([0-9]{10})-([0-9a-f]{16})", text)
        if not match:
            return None
        return cls(datetime.fromtimestamp(int(match[1]), tz=UTC), match[2])

    @property
    def label(self) -> str:
        return f"{int(self.killed_at.timestamp())}-{self.chain}"


def as_received(request: RestartRequest) -> RestartRequest:
    """The kill taken no later than its entry was received (received_at: Logging's receiveTimestamp, else the
    Pub/Sub publish time; without it, requested_at, never later): a line dated ahead (a VM clock, or a forger:
    Cloud Logging takes timestamps up to a day ahead) would otherwise wait for health newer than a moment to
    come. intake.py clamps it already; the worker holds to it for any request on the topic, whoever wrote it."""
    killed_at = request.kill_time
    received = request.payload.received_at if isinstance(request.payload, KillPayload) else None
    limit = min(received or request.requested_at, request.requested_at)
    if request.kill is None or killed_at is None or killed_at <= limit:
        return request
    return request.with_kill(replace(request.kill, killed_at=limit))


def _restart(request: RestartRequest) -> RestartPayload:
    """The restart's payload, which holds its wait's continuation; a request of another kind has none to hold."""
    return request.payload if isinstance(request.payload, RestartPayload) else RestartPayload()


def yields(request: RestartRequest) -> int:
    """How many times this request's wait has re-published itself (0 for a request that never waited)."""
    return _restart(request).yields


def chain_of(request: RestartRequest) -> str:
    """The Pub/Sub message that began this wait: the one this request came in, unless it is a continuation."""
    return _restart(request).chain or request.delivery_id or request.event_id


def own_marker(request: RestartRequest) -> Marker:
    killed_at = request.kill_time or request.requested_at
    return Marker(killed_at.replace(microsecond=0), event_key(chain_of(request)))


def join(request: RestartRequest, current: Marker | None, now: datetime, policy: PolicyConfig) -> Marker | None:
    """The wait this request leads (its own marker), or None: it folds into `current`, a live wait for a kill
    at least as late. A wait past any it could be in (`expired`) is a chain that died: it is taken over."""
    mine = own_marker(request)
    if current is None or current.chain == mine.chain:
        return mine
    if current.killed_at >= mine.killed_at and not expired(current, now, policy):
        return None
    return mine


def expired(marker: Marker, now: datetime, policy: PolicyConfig) -> bool:
    """Longer ago than any wait lasts: the grace for health, then a backoff, then a hold and the clock skew."""
    return now > marker.killed_at + policy.health_grace + policy.backoff_cap + MAX_HOLD + policy.clock_skew


def answers(request: RestartRequest, decision: Decision, marker: Marker | None) -> bool:
    """Whether acting on this decision ends the marked wait: a restart answers every kill before it; any other
    outcome of a kill at least as late as the marked one answers it too (it saw health after both)."""
    if marker is None:
        return False
    if decision.verdict in (Verdict.RESET, Verdict.FOLLOW):
        return True
    if request.trigger is not Trigger.OOM:  # the watcher's interrupt (a time, no kill) saw no health for the kill
        return False
    killed_at = request.kill_time
    return killed_at is not None and killed_at.replace(microsecond=0) >= marker.killed_at


def hold(decision: Decision, policy: PolicyConfig) -> float:
    """Seconds to wait in this delivery before looking again: the policy's recheck, at most a poll and MAX_HOLD."""
    wait = min(decision.recheck_after or policy.health_poll, policy.health_poll, MAX_HOLD)
    return max(wait, MIN_HOLD).total_seconds()


def max_yields(policy: PolicyConfig) -> int:
    """More continuations than any wait needs: the grace and a whole backoff, at one hold each, and a margin."""
    longest = policy.health_grace + policy.backoff_cap + policy.clock_skew
    step = max(min(policy.health_poll, MAX_HOLD), MIN_HOLD)
    return math.ceil(longest / step) + 3


def continuation(request: RestartRequest, *, resumes: str | None = None) -> RestartRequest:
    """The restart re-published to go on waiting: its chain, one more yield, and (a follow's) the message whose
    intent it follows (`resumes`; kept when None). TypeError for a request of another kind: only restarts wait."""
    restart = request.payload_as(RestartPayload)
    restart = replace(restart, chain=chain_of(request), yields=restart.yields + 1,
                      resumes=restart.resumes if resumes is None else resumes)
    return replace(request, payload=restart, delivery_id="")
