"""The organizers' announcement in the worker (issue 28, item 4): the request (shared/core/announce.py) carried out,
one DM to each notebook owner, because a few hundred DMs with Slack's rate limits need the worker's budget.

A fresh request asks Slack who pressed (the organizer rule of callers.py, as bulk.py: the message's word is not
taken) and reads the fleet for its owners. The progress message in the organizers' channel is the ledger: its
metadata (announce.LEDGER_EVENT) says how many owners were dealt with, so a replayed or redelivered message resumes
where the last one stopped and sends no one the text twice; a message whose ledger says all done sends nothing.
Each owner: users.lookupByEmail, conversations.open, chat.postMessage in their language (announce.language), audited.
A 429 is waited out on the Clock for its Retry-After, or, past the budget, the rest is handed on under the bulk key.
The summary (reached N of M, each miss and why) replaces the ledger's text and answers the organizer's response_url.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

from shared.adapters.audit import audit
from shared.adapters.clock import Clock
from shared.adapters.config import Settings
from shared.adapters.errors import ServiceError
from shared.adapters.slack_dm import DirectMessages, RateLimitedError
from shared.adapters.slack_notify import SlackNotifier
from shared.adapters.workbench import Workbench
from shared.app.worker.asked import Asked
from shared.app.worker.bulk import HAND_ON_MARGIN, BytesPublisher
from shared.app.worker.errors import TryAgainLater
from shared.app.worker.outcomes import Ended, WorkOutcome
from shared.core import announce, bulk, envelope, messages
from shared.core.announce import AnnounceRequest, Miss
from shared.core.models import SLACK_USER_RE
from shared.core.ticket_blocks import with_help

log = logging.getLogger(__name__)
T = TypeVar("T")
Missed = tuple[tuple[str, str, str], ...]


class _HandOnError(Exception):
    """A 429 whose Retry-After passes the budget: the rest goes to the next invocation."""


class AnnounceRunner:
    """One per Worker; it keeps nothing of an announcement between calls (the ledger and the continuation do)."""

    def __init__(self, *, settings: Settings, clock: Clock, workbench: Workbench, slack: SlackNotifier,
                 queue: BytesPublisher | None, asked: Asked, direct: DirectMessages | None = None) -> None:
        self.settings, self.clock, self.workbench, self.slack = settings, clock, workbench, slack
        self.queue, self.asked, self._direct = queue, asked, direct
        self.say = messages.For(settings.message_language)

    @property
    def direct(self) -> DirectMessages:
        if self._direct is None:
            self._direct = DirectMessages(token=self.settings.slack_bot_token, base_url=self.settings.slack_api_url,
                                          timeout_s=self.settings.slack_timeout.total_seconds())
        return self._direct

    def requested(self, request: AnnounceRequest) -> WorkOutcome:
        """An announcement: an organizer's Send (checked with Slack here), a replay of one, or one handed on."""
        budget = self.settings.worker_budget
        pace = Pace(self.clock, self.clock.monotonic() + max(budget * 0.75, budget - HAND_ON_MARGIN).total_seconds())
        # Sent or handed on, the requester is asked about (issue 44: a forged continuation DMed a link under the
        # organizers' banner); one of another shape than a Slack user id is never asked about, nor written anywhere.
        if not SLACK_USER_RE.fullmatch(request.requester):
            return _ended(Ended.DENIED, "an announcement naming no Slack user")
        try:
            caller = self.asked.callers.caller(request.requester, self.asked.callers.workspace())
        except ServiceError as exc:  # redelivered, as a bulk request's check
            raise TryAgainLater(f"Slack: {exc}"[:300]) from exc
        if not caller.is_organizer:
            log.warning("an announcement of Slack user %s, who is no organizer: refused", request.requester)
            return _ended(Ended.DENIED, "announcements are for organizers")
        try:
            return self._run(request, pace)
        except _HandOnError:  # before any owner was dealt with: Pub/Sub brings it back later
            raise TryAgainLater("Slack rate limit past the budget before the first DM") from None

    def _run(self, request: AnnounceRequest, pace: Pace) -> WorkOutcome:
        channel = self.settings.slack_alert_channel
        bot_id = self.slack.bot_id()
        if not bot_id:  # without it no ledger can be told from another app's message: sending could repeat one
            raise TryAgainLater("Slack: auth.test did not name the bot")
        oldest = (min(request.requested_at, self.clock.now()) - announce.LEDGER_WINDOW).timestamp()
        ledger = pace.call(self.direct.ledger, channel, announce.LEDGER_EVENT, request.event_id, oldest, bot_id)
        owners = request.owners
        if owners is None:
            reach = announce.audience(self.workbench.list(self.settings.project, self.settings.workbench_zones))
            owners = reach.owners
        done, missed, ts = request.done, request.missed, request.ledger_ts
        if ledger.get("summarized") is True:  # a replay, or a message redelivered after its end: nothing to do
            audit("announcement replayed", decision=Ended.REPLAYED.value, event_id=request.event_id,
                  trigger="announce", outcome="every owner was dealt with already: nothing sent")
            return WorkOutcome(ack=True, ended=Ended.REPLAYED, detail="announcement already sent")
        if ledger and int(ledger.get("done", 0)) >= done:  # the ledger is ahead of a redelivered message
            done, ts = min(int(ledger.get("done", 0)), len(owners)), str(ledger["ts"])
            missed = tuple((str(a), str(b), str(c)) for a, b, c in ledger.get("missed", []))
        if not ts:
            head = self.say("announce.asked", who=f"<@{request.requester}>")
            ts = pace.call(lambda: self.direct.post(channel, head + "\n" + announce.progress_text(
                0, len(owners), self.say), self._meta(request, 0, ())))
        return self._deliver(request, pace, owners, done, missed, ts)

    def _deliver(self, request: AnnounceRequest, pace: Pace, owners: tuple[str, ...], done: int, missed: Missed,
                 ts: str) -> WorkOutcome:
        """Each owner from `done` on; handed on when a 429 would pass the budget, summarized at the end."""
        channel = self.settings.slack_alert_channel
        try:
            while done < len(owners):
                if self.clock.monotonic() >= pace.end:
                    raise _HandOnError
                miss = self._dm(pace, owners[done], request.text)
                missed += ((owners[done], *miss),) if miss else ()
                audit("announcement " + ("missed" if miss else "delivered"), trigger="announce", owner=owners[done],
                      event_id=f"{request.event_id}:{done}"[:240], decision="missed" if miss else "sent",
                      outcome=" ".join(miss) if miss else "sent", requester_slack_id=request.requester)
                done += 1
                text = self.say("announce.asked", who=f"<@{request.requester}>") + "\n" + announce.progress_text(
                    done, len(owners), self.say)
                pace.call(self.direct.update, channel, ts, text, self._meta(request, done, missed))
        except _HandOnError:
            if request.hands < announce.MAX_HANDS and self.queue is not None:
                self.queue.publish_bytes(envelope.encode(request.handed_on(owners, done, missed, ts)),
                                         key=announce.ANNOUNCE_KEY,
                                         attributes={bulk.BULK_ATTRIBUTE: "announce"})
                return WorkOutcome(ack=True, ended=Ended.YIELDED, detail=f"{done} of {len(owners)} dealt with")
        return self._summary(request, pace, owners, done, missed, ts)

    def _summary(self, request: AnnounceRequest, pace: Pace, owners: tuple[str, ...], done: int, missed: Missed,
                 ts: str) -> WorkOutcome:
        unfinished = done < len(owners)
        missed += tuple((owner, Miss.DM_FAILED.value, "not sent: out of time") for owner in owners[done:])
        text = announce.summary_text(len(owners), missed, self.say, unfinished=unfinished)
        try:
            pace.call(self.direct.update, self.settings.slack_alert_channel, ts, text,
                      self._meta(request, len(owners), missed, summarized=True))
        except (_HandOnError, ServiceError) as exc:
            log.warning("the announcement's summary was not shown in the channel: %s", exc)
        if request.response_url:
            self.slack.respond(request.response_url, text)
        outcome = f"reached {len(owners) - len(missed)} of {len(owners)}"
        audit("announcement finished", decision=Ended.ACTED.value, outcome=outcome, trigger="announce",
              event_id=request.event_id, requester_slack_id=request.requester,
              missed=[f"{owner}: {why}" for owner, why, _ in missed] or None)
        return WorkOutcome(ack=True, ended=Ended.ACTED, detail=outcome)

    def _dm(self, pace: Pace, owner: str, text: str) -> tuple[str, str] | None:
        """One owner told; the reason they were not (Miss, Slack's error), or None. A 429 is waited out or raised."""
        try:
            user = pace.call(lambda: self.direct.lookup(owner))
            if user is None:
                return Miss.NO_USER.value, ""
            if user.get("deleted") is True:
                return Miss.DEACTIVATED.value, ""
            lang = announce.language(user.get("locale"), self.settings.message_language)
            channel = pace.call(lambda: self.direct.open(str(user.get("id", ""))))
            framed = announce.framed(text, self.settings.project, lang)  # "Get help" under it, in their language
            pace.call(lambda: self.direct.post(channel, framed, blocks=with_help(framed, messages.For(lang))))
        except ServiceError as exc:
            return Miss.DM_FAILED.value, exc.status[:100]
        return None

    def _meta(self, request: AnnounceRequest, done: int, missed: Missed, *, summarized: bool = False
              ) -> dict[str, object]:
        """The ledger: how many owners were dealt with, who was missed and why, and whether the summary was shown."""
        return {"event_type": announce.LEDGER_EVENT, "event_payload": {
            "event_id": request.event_id, "done": done, "missed": [list(m) for m in missed],
            "summarized": summarized}}


class Pace:
    """One invocation's Slack calls against its budget's `end` (on the Clock's monotonic scale)."""

    def __init__(self, clock: Clock, end: float) -> None:
        self.clock, self.end = clock, end

    def call(self, call: Callable[..., T], *args: Any) -> T:
        """The call, again after each 429's Retry-After while that fits the budget (on the Clock); else _HandOnError."""
        while True:
            try:
                return call(*args)
            except RateLimitedError as exc:
                if not announce.wait_or_hand_on(exc.retry_after_s, self.end - self.clock.monotonic()):
                    raise _HandOnError from exc
                log.info("Slack rate limit: waiting %.1f s as Retry-After says", exc.retry_after_s)
                self.clock.sleep(exc.retry_after_s)


def _ended(ended: Ended, detail: str) -> WorkOutcome:
    audit("announcement ended", severity=logging.WARNING, decision=ended.value, reason=detail, trigger="announce")
    return WorkOutcome(ack=True, ended=ended, detail=detail)
