"""A participant's request for help (issue 46), as a ticket in the organizers' channel: the request on the restart
topic, the ticket's state, who may move it where, how many a participant may open, and when a waiting one is
re-posted, escalated or reminded (pure: the Slack app and the worker do the I/O).

Where a ticket's state lives: on its own Slack message, as message metadata (event_type EVENT_TYPE), read back with
conversations.history (include_all_metadata), as alert_groups.py keeps its groups. Slack keeps it across restarts of
every function, and the message to update is there anyway. Every change to tickets (one opened, a press, the
scheduler's tick) travels under one ordering key (TICKET_KEY), so the worker's read-then-write of a ticket is never
raced by another change; a transition is taken only from the state it starts from (`transition`), so a press
replayed, pressed twice or pressed on a stale message changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from shared.core.models import SLACK_USER_RE
from shared.core.wire import aware_time, short_text

MAX_BYTES = 8_000  # a ticket request on the restart topic: its free text (TEXT_MAX) and a response_url
FIELDS = ("op", "at", "by", "ts", "category", "text", "event_id", "response_url")
TICKET_KEY = "tickets"  # the ordering key of every change to tickets
EVENT_TYPE = "medic_ticket"  # the ticket message's metadata event_type
SHORTCUT = "medic_get_help"  # the global shortcut's callback_id (manifest.yaml)
ACTION_HELP = "medic_help_open"  # "Get help" on the bot's DMs and the Home tab: opens the modal
MODAL_HELP = "medic_help_modal"  # the modal's callback_id
MODAL_RESOLVE = "medic_ticket_resolve"  # the organizer's note on Resolve; private_metadata: the ticket's ts
ACTION_CLAIM = "medic_ticket_claim"  # value: the ticket message's ts
ACTION_RESOLVE = "medic_ticket_resolve"
ACTION_HANDOVER = "medic_ticket_handover"
TICKET_ACTIONS = (ACTION_CLAIM, ACTION_RESOLVE, ACTION_HANDOVER)
CATEGORIES = ("slow", "data", "error", "start", "other")  # the modal's choices (messages: ticket.category.<c>)
TEXT_MAX = 1000  # the modal's free text (its plain_text_input max_length)
NOTE_MAX = 500
LANGS = ("", "en", "ja")  # a ticket's `lang`: "" is MESSAGE_LANGUAGE
# How far back the worker reads tickets: the next number (further back once, when none is that recent), the hour's
# limit, the timers.
LOOKBACK = timedelta(days=14)


class Op(StrEnum):
    OPEN = "open"  # a participant's modal submitted
    CLAIM = "claim"
    RESOLVE = "resolve"
    HANDOVER = "handover"
    TICK = "tick"  # the scheduler's tick: the timers


class Kind(StrEnum):
    HELP = "help"  # a participant's request, its message the ticket itself
    ALERT = "alert"  # an alert that needs a person (a pause): the alert's own message, its buttons beside the alert's


class State(StrEnum):
    OPEN = "open"
    CLAIMED = "claimed"
    RESOLVED = "resolved"


@dataclass(frozen=True)
class TicketRequest:
    """One change to tickets, as the Slack app (or the sweep's tick) publishes it. `by` is who pressed or asked, a
    claim the worker checks with Slack; `ts` the ticket message a press names; `event_id` the modal's view id."""

    op: Op
    at: datetime
    by: str = ""
    ts: str = ""
    category: str = ""
    text: str = ""
    event_id: str = ""
    response_url: str = ""


def to_fields(request: TicketRequest) -> dict[str, Any]:
    """The request's payload on the restart topic (shared/core/envelope.py writes the envelope around it)."""
    return {"op": request.op.value, "at": request.at.isoformat(), "by": request.by, "ts": request.ts,
            "category": request.category, "text": request.text, "event_id": request.event_id,
            "response_url": request.response_url}


def from_fields(data: dict[str, Any]) -> TicketRequest:
    """Strict: anything that does not fit raises ValueError (the envelope's MalformedMessageError: rejected, acked)."""
    if foreign := sorted(set(data) - set(FIELDS)):
        raise ValueError(f"a ticket request has no {', '.join(foreign)}")
    try:
        request = TicketRequest(Op(short_text(data["op"], 20)), aware_time(data["at"]),
                                short_text(data.get("by", ""), 32), short_text(data.get("ts", ""), 32),
                                short_text(data.get("category", ""), 20), short_text(data.get("text", ""), TEXT_MAX),
                                short_text(data.get("event_id", ""), 200),
                                short_text(data.get("response_url", ""), 2000))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"ticket request field: {exc}"[:300]) from None
    if request.op is not Op.TICK and not SLACK_USER_RE.fullmatch(request.by):
        raise ValueError("a ticket request names the Slack user who asked")
    if request.op is Op.OPEN and request.category not in CATEGORIES:
        raise ValueError("a ticket's category is not one of the modal's")
    return request


@dataclass(frozen=True)
class Ticket:
    """A ticket as its message's metadata says. `touched` is its last change or reminder; `nudged` how far the timers
    went while it waited unclaimed (1 re-posted, 2 escalated); `handlers` every organizer who claimed or resolved."""

    number: int
    participant: str
    category: str
    text: str
    opened: datetime
    state: State = State.OPEN
    claimer: str = ""
    claimed: datetime | None = None
    resolved: datetime | None = None
    touched: datetime | None = None
    nudged: int = 0
    handlers: tuple[str, ...] = ()
    instance: str = ""
    facts: str = ""  # the notebook as the worker read it when the ticket opened (ticket_blocks.facts)
    event_id: str = ""
    kind: Kind = Kind.HELP
    lang: str = ""  # the participant's language for their DMs (their Slack locale's, "" for MESSAGE_LANGUAGE)
    ts: str = ""  # the message's own ts (not in the metadata: Slack gives it)

    def metadata(self) -> dict[str, Any]:
        """chat.postMessage's / chat.update's `metadata` (event_type, event_payload of strings and numbers)."""
        moments = {"opened": self.opened, "claimed": self.claimed, "resolved": self.resolved, "touched": self.touched}
        payload: dict[str, Any] = {"number": self.number, "participant": self.participant, "category": self.category,
                                   "text": self.text, "state": self.state.value, "claimer": self.claimer,
                                   "nudged": self.nudged, "handlers": ",".join(self.handlers),
                                   "instance": self.instance, "facts": self.facts, "event_id": self.event_id,
                                   "kind": self.kind.value, "lang": self.lang}
        payload |= {name: moment.isoformat() for name, moment in moments.items() if moment is not None}
        return {"event_type": EVENT_TYPE, "event_payload": payload}


def from_message(message: dict[str, Any], bot_id: str) -> Ticket | None:
    """The ticket a message holds, or None: not ours (any app may attach any event_type to its own messages, so only
    our bot's count), not a ticket, or metadata of a shape we never write."""
    metadata = message.get("metadata")
    if not bot_id or message.get("bot_id") != bot_id or not isinstance(metadata, dict):
        return None
    payload = metadata.get("event_payload")
    if metadata.get("event_type") != EVENT_TYPE or not isinstance(payload, dict):
        return None
    try:
        ticket = Ticket(
            number=_number(payload["number"]), participant=short_text(payload["participant"], 32),
            category=short_text(payload["category"], 20), text=short_text(payload.get("text", ""), TEXT_MAX),
            opened=aware_time(payload["opened"]), state=State(short_text(payload["state"], 20)),
            claimer=short_text(payload.get("claimer", ""), 32), claimed=_maybe_time(payload.get("claimed")),
            resolved=_maybe_time(payload.get("resolved")), touched=_maybe_time(payload.get("touched")),
            nudged=_number(payload.get("nudged", 0)),
            handlers=tuple(h for h in short_text(payload.get("handlers", ""), 400).split(",") if h),
            instance=short_text(payload.get("instance", ""), 64), facts=short_text(payload.get("facts", ""), 1500),
            event_id=short_text(payload.get("event_id", ""), 200),
            kind=Kind(short_text(payload.get("kind", "help"), 8)), lang=short_text(payload.get("lang", ""), 2),
            ts=short_text(message.get("ts", ""), 32))
    except (KeyError, TypeError, ValueError):
        return None
    return ticket if ticket.category in CATEGORIES and ticket.lang in LANGS else None


def tickets_in(messages: list[dict[str, Any]], bot_id: str) -> list[Ticket]:
    """The tickets among a channel's messages, as conversations.history lists them (newest first)."""
    return [t for t in (from_message(m, bot_id) for m in messages) if t is not None]


def opened(request: TicketRequest, number: int, instance: str, facts: str, lang: str = "") -> Ticket:
    """A new ticket for a participant's submitted modal; `lang` their DMs' language ("" for MESSAGE_LANGUAGE)."""
    return Ticket(number=number, participant=request.by, category=request.category, text=request.text,
                  opened=request.at, touched=request.at, instance=instance, facts=facts[:1500],
                  event_id=request.event_id, lang=lang)


def needs_a_person(opened: datetime, instance: str, owner: str) -> Ticket:
    """An alert that needs a person (a pause) as a ticket on its own message: no number (it is the alert), its owner
    (a Slack user id, or "") told when an organizer claims or resolves it."""
    return Ticket(number=0, participant=owner, category="other", text="", opened=opened, touched=opened,
                  instance=instance, kind=Kind.ALERT)


def next_number(known: list[Ticket]) -> int:
    """One past the highest number read back; serialized by TICKET_KEY, so no two tickets are given the same."""
    return 1 + max((t.number for t in known), default=0)


def over_limit(known: list[Ticket], participant: str, now: datetime, per_hour: int) -> bool:
    """Whether `participant` opened `per_hour` tickets in the hour before now already."""
    return sum(1 for t in known if t.kind is Kind.HELP and t.participant == participant
               and now - t.opened < timedelta(hours=1)) >= per_hour


def transition(ticket: Ticket, op: Op, by: str, now: datetime) -> Ticket | None:
    """The ticket after an organizer's press, or None when the press changes nothing: claim only an open ticket
    (the same claimer again, or another while it is claimed, is nothing), hand over only a claimed one (back to
    open), resolve anything not resolved. A replay finds the state its first press left and changes nothing."""
    if ticket.state is State.RESOLVED:
        return None
    handlers = ticket.handlers if by in ticket.handlers else (*ticket.handlers, by)
    if op is Op.CLAIM and ticket.state is State.OPEN:
        return replace(ticket, state=State.CLAIMED, claimer=by, claimed=ticket.claimed or now, touched=now,
                       handlers=handlers)
    if op is Op.HANDOVER and ticket.state is State.CLAIMED:
        return replace(ticket, state=State.OPEN, claimer="", touched=now, nudged=0)
    if op is Op.RESOLVE:
        return replace(ticket, state=State.RESOLVED, claimer=ticket.claimer or by, resolved=now, touched=now,
                       handlers=handlers)
    return None


@dataclass(frozen=True)
class Timers:
    """When a waiting ticket is acted on (settings: shared/adapters/ticket_config.py)."""

    repost_after: timedelta = timedelta(minutes=10)  # unclaimed this long: re-posted with the organizers' mention
    escalate_after: timedelta = timedelta(minutes=20)  # then this much longer: escalated
    remind_after: timedelta = timedelta(minutes=30)  # claimed and untouched this long: the claimer reminded


class Nudge(StrEnum):
    REPOST = "repost"
    ESCALATE = "escalate"
    REMIND = "remind"


def due(ticket: Ticket, now: datetime, timers: Timers) -> Nudge | None:
    """What the tick does for a ticket now, if anything; each at most once per wait (`nudged`, `touched`)."""
    if ticket.state is State.OPEN:
        waited = now - (ticket.touched or ticket.opened)
        if ticket.nudged == 0 and waited >= timers.repost_after:
            return Nudge.REPOST
        if ticket.nudged == 1 and waited >= timers.repost_after + timers.escalate_after:
            return Nudge.ESCALATE
        return None
    if ticket.state is State.CLAIMED and now - (ticket.touched or ticket.opened) >= timers.remind_after:
        return Nudge.REMIND
    return None


def nudged(ticket: Ticket, nudge: Nudge, now: datetime) -> Ticket:
    """The ticket as the tick leaves it: the step taken counted (an open ticket's wait keeps counting from its last
    change), a reminder starting the claimer's wait again."""
    if nudge is Nudge.REMIND:
        return replace(ticket, touched=now)
    return replace(ticket, nudged=ticket.nudged + 1)


def _number(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 10_000_000:
        raise TypeError("a count")
    return value


def _maybe_time(value: Any) -> datetime | None:
    return None if value in (None, "") else aware_time(value)
