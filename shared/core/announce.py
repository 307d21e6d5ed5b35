"""The organizers' announcement to every notebook owner (issue 28, item 4): who it reaches, the request on the restart
topic, how each owner's DM is worded and framed, when a rate limit is waited out or handed on, and the summary.

An organizer's text is sent by DM to each distinct owner of the fleet's notebooks, in the owner's language, as plain
text escaped for mrkdwn (an organizer's `<!channel>` pings nobody). The request travels under a key of its own
(ANNOUNCE_KEY): one announcement at a time, never waiting behind start/stop all presses (issue 44: an announcement
queued behind 100 of them waited), the envelope's "announce" payload (envelope.py writes and reads it, strictly, as
the bulk request); the organizer flag
is never carried (the worker asks Slack who `requester` is). A run longer than the worker's budget is handed on with
the owners still to reach (`owners` and `done`), so no owner is sent the text twice across a handoff.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum

from shared.core import messages
from shared.core.identity import identity
from shared.core.messages import Lang
from shared.core.models import InstanceView

ANNOUNCE_KEY = "announce"  # the ordering key of every announcement and its continuations
TEXT_MAX = 1900  # the text rides in the Send button's value, which Slack caps at 2000 characters
MAX_BYTES = 200_000  # a few thousand owners' emails; Pub/Sub takes 10 MB, the worker 1 MB
MAX_HANDS = 40  # as bulk.MAX_HANDS: an announcement still going after that many handoffs is reported, not continued
ACTION_SEND = "medic_announce_send"  # value: the text
ACTION_CANCEL = "medic_announce_cancel"
ACTION_OPEN = "medic_announce_open"  # the Home tab's "Announce…": opens the modal
MODAL_WRITE = "medic_announce_write"  # the modal's callback_id: the text typed
MODAL_CONFIRM = "medic_announce_confirm"  # the confirmation view's callback_id: Send is its submit
LEDGER_EVENT = "medic_announcement"  # the metadata event_type of the organizers' progress message
# How far back the worker looks for an announcement's progress message: a confirmation's Send stays pressable in
# the client long after the press, and a replay says its own, later, requested_at.
LEDGER_WINDOW = timedelta(hours=24)
# What an owner email must look like to be asked about (as slack_notify's): proxy-user-mail is anyone's to write.
_EMAIL = re.compile(r"[^@\s<>&|]{1,64}@[^@\s<>&|]{1,255}\.[^@\s<>&|.]+")


@dataclass(frozen=True)
class Audience:
    """`owners` the distinct owner identities (sorted: the order DMs go in); `unowned` notebooks without one."""

    owners: tuple[str, ...]
    unowned: tuple[str, ...]


def audience(instances: Iterable[InstanceView]) -> Audience:
    """Each person who owns a notebook once, however many they own; notebooks whose owner email names nobody (none,
    or not shaped like an email: nobody Slack could find)."""
    owners: set[str] = set()
    unowned: list[str] = []
    for view in instances:
        owner = identity(view.owner_email or "")
        if owner and _EMAIL.fullmatch(owner):
            owners.add(owner)
        else:
            unowned.append(view.ref.name)
    return Audience(tuple(sorted(owners)), tuple(sorted(unowned)))


def usable_text(raw: str) -> str:
    """The organizer's text, trimmed; "" when empty or longer than TEXT_MAX (the caller answers with usage)."""
    text = raw.strip()
    return text if 0 < len(text) <= TEXT_MAX else ""


class Miss(StrEnum):
    """Why an owner was not reached."""

    NO_USER = "no-user"  # no Slack user for the email (users_not_found; Slack does not find deactivated ones)
    DEACTIVATED = "deactivated"
    DM_FAILED = "dm-failed"


@dataclass(frozen=True)
class AnnounceRequest:
    """`owners` None on the organizer's press (the worker reads the fleet); a continuation carries them, with `done`
    how many of them were dealt with and `missed` (owner, Miss, Slack's error) so far; `ledger_ts` the progress
    message in the organizers' channel."""

    text: str
    requested_at: datetime
    event_id: str
    requester: str
    response_url: str = ""
    owners: tuple[str, ...] | None = None
    unowned: int = 0
    done: int = 0
    missed: tuple[tuple[str, str, str], ...] = ()
    ledger_ts: str = ""
    hands: int = 0

    def handed_on(self, owners: tuple[str, ...], done: int, missed: tuple[tuple[str, str, str], ...],
                  ledger_ts: str) -> AnnounceRequest:
        """The continuation: the same announcement with who is left, and where its progress is shown."""
        return replace(self, owners=owners, done=done, missed=missed, ledger_ts=ledger_ts, hands=self.hands + 1)


def language(locale: object, default: Lang) -> Lang:
    """The owner's language: their Slack locale when it is one of ours ("ja-JP" is ja), else MESSAGE_LANGUAGE."""
    if isinstance(locale, str) and locale[:2].lower() in ("en", "ja"):
        return locale[:2].lower()
    return default


def framed(text: str, contest: str, lang: Lang) -> str:
    """The DM: one line naming who sends it, in the owner's language, then the organizer's text as plain text."""
    return messages.text("announce.header", lang, contest=messages.escape(contest)) + "\n" + messages.escape(text)


def confirmation(reach: Audience, text: str, say: messages.For) -> str:
    """What the organizer reads before Send: how many people it reaches, notebooks without an owner, the text."""
    lines = [say("announce.confirm", count=len(reach.owners))]
    if reach.unowned:
        lines.append(say("announce.unowned", count=len(reach.unowned)))
    lines.append(">>> " + messages.escape(text))
    return "\n".join(lines)


def wait_or_hand_on(retry_after_s: float, left_s: float) -> bool:
    """After a 429: True to wait Retry-After out here, False to hand the rest on (the wait would pass the budget)."""
    return 0 <= retry_after_s < left_s


def reason_text(miss: str, error: str, say: messages.For) -> str:
    if miss == Miss.NO_USER:
        return say("announce.miss.no_user")
    if miss == Miss.DEACTIVATED:
        return say("announce.miss.deactivated")
    return say("announce.miss.failed", error=messages.escape(error))


def progress_text(done: int, total: int, say: messages.For) -> str:
    return say("announce.progress", done=done, total=total)


def summary_text(total: int, missed: tuple[tuple[str, str, str], ...], say: messages.For, *,
                 unfinished: bool = False) -> str:
    """Reached N of M, and each owner not reached with the reason; `unfinished` when the handoffs ran out."""
    lines = [say("announce.summary", reached=total - len(missed), total=total)]
    if unfinished:
        lines.append(say("announce.unfinished"))
    lines += [say("announce.missed", owner=messages.escape(owner), reason=reason_text(miss, error, say))
              for owner, miss, error in missed]
    return "\n".join(lines)
