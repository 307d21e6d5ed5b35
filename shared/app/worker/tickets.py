"""The worker's side of help tickets (issue 46): a participant's ticket opened in the organizers' channel with their
notebook's state, an organizer's Claim / Resolve / Hand over carried out on the ticket's own message, and the
scheduler's tick that re-posts, escalates and reminds (shared/core/tickets.py says what, this says it to Slack).

Every change arrives under tickets.TICKET_KEY, one at a time, and reads the ticket's state from its message before it
writes (chat.update with the new metadata), so a replayed press or a redelivered tick finds the state it left and
does nothing again. Who pressed is asked of Slack here (the Slack app's own reader, callers.py), never taken from the
message: only an organizer moves a ticket. Slack unreadable is a TransientError (redelivered); the participant is
told each change by DM.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime
from typing import Any

from shared.adapters.audit import audit
from shared.adapters.clock import Clock
from shared.adapters.config import Settings
from shared.adapters.errors import ServiceError, TransientError
from shared.adapters.slack_notify import SlackNotifier
from shared.adapters.ticket_config import TicketSettings, load_ticket_settings
from shared.adapters.workbench import Workbench
from shared.app.worker.asked import Asked
from shared.app.worker.disk_reports import Guest
from shared.app.worker.outcomes import Ended, WorkOutcome
from shared.app.worker.pictures import Pictures
from shared.app.worker.reporter import REASONS_WITH_WORDS, reason_words
from shared.core import messages, ticket_guard, tickets
from shared.core.announce import language
from shared.core.causes import Diagnosis
from shared.core.commands import Caller, is_owner
from shared.core.messages import Lang
from shared.core.models import InstanceView
from shared.core.ticket_blocks import (
    STATE_WORDS,
    alert_ticket_blocks,
    facts,
    has_ticket_buttons,
    plain,
    ticket_blocks,
    with_help,
)
from shared.core.tickets import Kind, Nudge, Op, Ticket, TicketRequest
from shared.core.verdicts import Reason

log = logging.getLogger(__name__)
Held = tuple[Ticket, dict[str, Any]]  # a ticket and the message it was read from
NUDGES_PER_TICK = 20  # the most re-posts, escalations and reminders one tick makes; the rest wait for the next


class TicketDesk:
    """One per Worker. `slack` is the worker's SlackNotifier; `asked` reads who pressed (its Callers); `guest` the
    guard's guest attributes and a VM's id (the Compute adapter; None: the ticket says the guard was not read);
    `pictures` draws the memory picture into the ticket's thread (the worker's, off with MEMORY_CHARTS=false)."""

    def __init__(self, *, settings: Settings, clock: Clock, slack: SlackNotifier, workbench: Workbench,
                 asked: Asked, config: TicketSettings | None = None, guest: Guest | None = None,
                 pictures: Pictures | None = None) -> None:
        self.settings, self.clock, self.slack, self.workbench, self.asked = settings, clock, slack, workbench, asked
        self.guest, self.pictures = guest, pictures
        self.config = config or load_ticket_settings()
        self.say = messages.For(settings.message_language)
        self.channel = settings.slack_alert_channel

    def requested(self, request: TicketRequest) -> WorkOutcome:
        """One change to tickets, as the envelope read it from the restart topic (a malformed one never gets here)."""
        if request.op is Op.OPEN:
            return self.open(request)
        if request.op is Op.TICK:
            return self.tick()
        return self.press(request)

    # ---- a participant's ticket -------------------------------------------------------------------------------

    def open(self, request: TicketRequest) -> WorkOutcome:
        """The ticket posted with the notebook's state and the participant told its number; once per submission
        (a redelivery finds it by its event id), and not past the participant's hourly limit."""
        known = [t for t, _ in self.known()]
        if request.event_id and any(t.event_id == request.event_id for t in known):
            return _done(Ended.REPLAYED, "this ticket is open already")
        callers = self.asked.callers
        caller = callers.caller(request.by, callers.workspace())  # Slack's failure: redelivered
        if caller.refused is not None:  # another workspace's member, a bot, a deactivated account
            return _done(Ended.DENIED, f"Slack user refused: {caller.refused.value}")
        lang = language(caller.locale, self.settings.message_language)  # their DMs: as the announcement's
        if tickets.over_limit(known, request.by, request.at, self.config.per_hour):
            self._tell(request.by, messages.For(lang)("ticket.dm.limit", most=self.config.per_hour), lang)
            return _done(Ended.DENIED, f"over {self.config.per_hour} tickets an hour")
        view, said = self._notebook(caller)
        ticket = tickets.opened(request, self._next_number(known), view.ref.name if view else "", said, lang)
        text, blocks = ticket_blocks(ticket, self.say, self.settings.tz)
        ts = self.slack.post(self.channel, text, blocks, metadata=ticket.metadata())
        if ts is None:
            raise TransientError("the ticket could not be posted")
        self._tell(request.by, messages.For(lang)("ticket.dm.opened", number=ticket.number), lang)
        _audit(replace(ticket, ts=ts), Op.OPEN, request.by, request.at)
        if view is not None:
            self._picture(view, ts)
        return _done(Ended.ACTED, f"ticket #{ticket.number} opened")

    def _notebook(self, caller: Caller) -> tuple[InstanceView | None, str]:
        """The participant's notebook (their first, when they own several) and the facts line about it; a read that
        fails says so on the ticket rather than hold it back."""
        try:
            owned = [v for v in self.workbench.list(self.settings.project, self.settings.workbench_zones)
                     if is_owner(caller, v)]
        except ServiceError as exc:
            log.warning("a ticket's notebook could not be read: %s", exc)
            return None, self.say("ticket.unread", error=plain(type(exc).__name__, 80))
        view = min(owned, key=lambda v: v.ref.name) if owned else None
        said = facts(view, self.say, self.settings.tz)
        return view, said if view is None else f"{said}\n{self._guard(view)}"

    def _guard(self, view: InstanceView) -> str:
        """The guard's last heartbeat and the cause it shows, as the sweep reads them; a failed read said so."""
        if self.guest is None:
            return self.say("ticket.guard.unread", error="-")
        ref = view.ref
        try:
            attributes = self.guest.guest_attributes(ref.project, ref.zone, ref.name)
        except ServiceError as exc:
            log.warning("%s: guest attributes unreadable for a ticket: %s", ref.name, exc)
            return self.say("ticket.guard.unread", error=plain(exc.status, 80))
        now, sweep = self.clock.now(), self.settings.policy.sweep
        return ticket_guard.guard_line(ticket_guard.seen(view, attributes, now, sweep), now, self.say, self._cause)

    def _picture(self, view: InstanceView, ts: str) -> None:
        """The notebook's last hour of memory in the ticket's thread, as under a kill's alert; extra, after the ticket
        and its DM: whatever fails here is logged and changes nothing (no Monitoring data: one line says so)."""
        if self.pictures is None or self.pictures.reader is None or self.guest is None:
            return
        ref = view.ref
        try:
            vm_id = self.guest.vm_id_by_name(ref.project, ref.zone, ref.name)
            shown = self.pictures.memory_picture(ref, view.machine_type, vm_id, None)
            if shown:
                self.pictures.share(shown, ref.name, "memory", self.clock.now(), (self.channel, ts))
        except Exception:  # the picture is extra: the ticket is posted and its participant told already
            log.exception("%s: a ticket's memory picture failed", ref.name)

    def _cause(self, diagnosis: Diagnosis, evidence: str) -> str:
        """A cause in the words of the outage's alert (reporter.reason_words, messages/causes.py)."""
        return reason_words(self.say, self.settings.policy, REASONS_WITH_WORDS[Reason(diagnosis.cause.value)],
                            who="notebook-medic", evidence=evidence)

    # ---- an organizer's press ---------------------------------------------------------------------------------

    def press(self, request: TicketRequest) -> WorkOutcome:
        """Claim, Resolve or Hand over by an organizer, taken only from the state it starts from."""
        callers = self.asked.callers
        caller = callers.caller(request.by, callers.workspace())
        if caller.refused is not None or not caller.is_organizer:
            self._answer(request, self.say("deny.organizers_only"))
            return _done(Ended.DENIED, "tickets are moved by organizers")
        held = self._ticket(request.ts)
        if held is None:
            self._answer(request, self.say("ticket.gone"))
            return _done(Ended.REJECTED, "no ticket at that message")
        ticket, message = held
        after = tickets.transition(ticket, request.op, request.by, request.at)
        if after is None:
            state = self.say(STATE_WORDS[ticket.state])
            self._answer(request, self.say("ticket.unchanged", number=ticket.number, state=state)
                         if ticket.kind is Kind.HELP else self.say("ticket.unchanged.alert", state=state))
            return _done(Ended.REPLAYED, f"ticket #{ticket.number} is {ticket.state.value}")
        self._write(after, message)
        lang = language(after.lang, self.settings.message_language)
        told = self._told(after, request, messages.For(lang))
        if after.participant and told:
            self._tell(after.participant, told, lang)
        _audit(after, request.op, request.by, request.at)
        return _done(Ended.ACTED, f"ticket #{after.number} {request.op.value}")

    @staticmethod
    def _told(ticket: Ticket, request: TicketRequest, say: messages.For) -> str:
        """What the participant (an alert's owner) reads of a press, in their words; "" for nothing."""
        who = f"<@{request.by}>"
        if ticket.kind is Kind.ALERT:
            if request.op is Op.RESOLVE:
                return say("ticket.dm.alert_resolved", who=who, instance=ticket.instance,
                           note=plain(request.text) or "-")
            if request.op is Op.CLAIM:
                return say("ticket.dm.alert_claimed", who=who, instance=ticket.instance)
            return ""  # handed over: the owner waits as before
        if request.op is Op.RESOLVE:
            return say("ticket.dm.resolved", number=ticket.number, who=who, note=plain(request.text) or "-")
        if request.op is Op.HANDOVER:
            return say("ticket.dm.handover", number=ticket.number)
        return say("ticket.dm.claimed", number=ticket.number, who=who)

    def _tell(self, user: str, text: str, lang: Lang) -> None:
        """A DM to the participant in their language, "Get help" under it as under every DM the bot sends."""
        self.slack.to_user(user, text, with_help(text, messages.For(lang)))

    def _answer(self, request: TicketRequest, text: str) -> None:
        """The presser's own answer (ephemeral, through the press's response_url), when there is one."""
        if request.response_url:
            self.slack.respond(request.response_url, text)

    # ---- the scheduler's tick ---------------------------------------------------------------------------------

    def tick(self) -> WorkOutcome:
        """Every ticket's timer looked at: unclaimed ones re-posted with the organizers' mention, then escalated;
        claimed ones left untouched reminded to their claimer. Each step is written on the ticket before the next
        tick reads it, so it is taken once."""
        now = self.clock.now()
        done: list[str] = []
        for ticket, message in self.known():
            nudge = tickets.due(ticket, now, self.config.timers)
            if nudge is None or (ticket.kind is Kind.ALERT and not has_ticket_buttons(message.get("blocks"))):
                continue  # an alert whose own buttons were pressed: a person acted on it
            if len(done) >= NUDGES_PER_TICK:
                break
            self._nudge(ticket, message, nudge, now)
            done.append(f"#{ticket.number} {nudge.value}")
        return _done(Ended.ACTED, ", ".join(done) or "no ticket waits")

    def _nudge(self, ticket: Ticket, message: dict[str, Any], nudge: Nudge, now: datetime) -> None:
        waited = messages.human_duration((now - (ticket.touched or ticket.opened)).total_seconds(), self.say.lang)
        target = {Nudge.REMIND: ticket.claimer, Nudge.REPOST: self.channel}.get(
            nudge, self.config.escalate_to or self.channel)
        self.slack.post(target, self._nudge_text(ticket, nudge, waited))
        self._write(tickets.nudged(ticket, nudge, now), message)
        _audit(ticket, Op.TICK, nudge.value, now)

    def _nudge_text(self, ticket: Ticket, nudge: Nudge, waited: str) -> str:
        """What a timer's step says: of a participant's ticket, or of an alert that needs a person."""
        group, number, instance = self._group(), ticket.number, ticket.instance
        who = f"<@{ticket.participant}>"
        if ticket.kind is Kind.ALERT:
            if nudge is Nudge.REMIND:
                return self.say("ticket.remind.alert", instance=instance, waited=waited)
            if nudge is Nudge.REPOST:
                return self.say("ticket.repost.alert", group=group, instance=instance, waited=waited)
            return group + self.say("ticket.escalate.alert", instance=instance, waited=waited, channel=self.channel)
        if nudge is Nudge.REMIND:
            return self.say("ticket.remind", number=number, waited=waited)
        if nudge is Nudge.REPOST:
            return self.say("ticket.repost", group=group, number=number, participant=who, waited=waited)
        return group + self.say("ticket.escalate", number=number, participant=who, waited=waited, channel=self.channel)

    def _group(self) -> str:
        """The organizers' user group's mention, when there is one (a mention, not a ping of the channel)."""
        group = self.settings.organizer_usergroup
        return f"<!subteam^{group}> " if group else ""

    # ---- the tickets on Slack ---------------------------------------------------------------------------------

    def known(self) -> list[Held]:
        """The channel's tickets of the last LOOKBACK with their messages, newest first."""
        oldest = (self.clock.now() - tickets.LOOKBACK).timestamp()
        listed = self.slack.history(self.channel, oldest=oldest)
        if listed is None:
            raise TransientError("the organizers' channel could not be read")
        bot = self.slack.bot_id()
        return [(t, m) for t, m in ((tickets.from_message(m, bot), m) for m in listed) if t is not None]

    def _next_number(self, known: list[Ticket]) -> int:
        """One past the highest number of the last LOOKBACK; when it holds no help ticket, one past the highest
        among the channel's older messages (at most five pages of history, read only then), so numbering goes on
        after a quiet fortnight rather than starting again at 1."""
        if any(t.kind is Kind.HELP for t in known):
            return tickets.next_number(known)
        older = self.slack.history(self.channel, oldest=0.0)
        if older is None:
            raise TransientError("the organizers' channel could not be read for the last ticket's number")
        return tickets.next_number(tickets.tickets_in(older, self.slack.bot_id()))

    def _ticket(self, ts: str) -> Held | None:
        message = self.slack.message(self.channel, ts) if ts else {}
        if message is None:
            raise TransientError("the ticket's message could not be read")
        ticket = tickets.from_message(message, self.slack.bot_id())
        return None if ticket is None else (ticket, message)

    def _write(self, ticket: Ticket, message: dict[str, Any]) -> None:
        """The ticket's message as its state now is: a help ticket drawn again, an alert's own blocks kept."""
        if ticket.kind is Kind.ALERT:
            text = str(message.get("text", "")) or ticket.instance
            blocks = alert_ticket_blocks(_blocks(message), ticket, self.say, self.settings.tz)
        else:
            text, blocks = ticket_blocks(ticket, self.say, self.settings.tz)
        if not self.slack.update(self.channel, ticket.ts, text, blocks, metadata=ticket.metadata()):
            raise TransientError(f"ticket #{ticket.number} could not be updated")


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    found = message.get("blocks")
    return [b for b in found if isinstance(b, dict)] if isinstance(found, list) else []


def _done(ended: Ended, detail: str) -> WorkOutcome:
    return WorkOutcome(ack=True, ended=ended, detail=detail)


def _audit(ticket: Ticket, op: Op, by: str, at: datetime) -> None:
    """The ticket's audit line: what `make report` counts (shared/core/ticket_report.py: tickets per participant, time
    to claim and resolve, who handled them). `by` is the organizer who pressed, the participant who opened, or the
    tick's step; `notebook`, not `instance`, so the report's notebook rows do not read it as one of theirs."""
    audit(f"ticket {op.value}", ticket_step=op.value, ticket=ticket.number, ticket_ts=ticket.ts,
          participant=ticket.participant, by=by, state=ticket.state.value, notebook=ticket.instance or None,
          since_opened_s=round((at - ticket.opened).total_seconds(), 1))
