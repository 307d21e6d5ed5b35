"""`/restart-notebook`: parsing what was typed, and who may do what. Pure functions of data.

Ownership is decided here, server-side, from the instance's own metadata
(`proxy-user-mail`) and the caller's Slack profile email: the one rule IAM
cannot express ("restart your own instance only"). Emails are compared as
identities (shared/core/identity.py), and only a member of the app's own workspace
who is a person, not deactivated, with a confirmed email, is anyone at all.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from shared.core.announce import usable_text
from shared.core.history import AutoMode, History, StopHold
from shared.core.identity import same_person
from shared.core.models import Action, InstanceState, InstanceView, is_valid_instance_name
from shared.core.policy import PolicyConfig, believable, crashloop_count, live_inflight, may_start


class Verb(StrEnum):
    RESTART = "restart"
    STATUS = "status"
    HELP = "help"
    BIGGER = "bigger"  # ask the organizers for a machine with more memory
    BIGGER_DISK = "bigger-disk"  # ask the organizers for a bigger data (or `boot`) disk (issue 43)
    USAGE = "usage"  # input it can't use: answer with usage
    START_ALL = "start-all"  # `start all`, organizers: every notebook (two words: "start-all" can name a notebook)
    STOP_ALL = "stop-all"  # `stop all`
    ANNOUNCE = "announce"  # `announce <text>`, organizers: a DM to every notebook owner (shared/core/announce.py)


@dataclass(frozen=True)
class Command:
    verb: Verb
    target: str | None = None  # an instance name, validated
    problem: str = ""  # why the input was not usable (already safe to show)
    text: str = ""  # ANNOUNCE: the organizer's text, within announce.TEXT_MAX ("" when empty or too long)
    boot: bool = False  # BIGGER_DISK: the boot disk rather than the data (home) disk


def parse_command(raw: str) -> Command:
    """The text after the command. Names are checked against Workbench's naming rules before any API call."""
    words = raw.strip().split()
    if not words:
        return Command(Verb.RESTART)
    if words[0].lower() == "announce":  # before the length check: an announcement is longer than a name
        return Command(Verb.ANNOUNCE, text=usable_text(raw.strip()[len("announce"):]))
    if len(raw) > 200:
        return Command(Verb.USAGE, problem="too long")
    if words[0].lower() == "bigger" and len(words) <= 2:
        if len(words) == 1:
            return Command(Verb.BIGGER)
        if is_valid_instance_name(words[1]):
            return Command(Verb.BIGGER, target=words[1])
        return Command(Verb.USAGE, problem="not a valid instance name")
    if words[0].lower() == "bigger-disk":
        return _bigger_disk(words[1:])
    if len(words) == 2 and words[1].lower() == "all" and words[0].lower() in ("start", "stop"):
        return Command(Verb.START_ALL if words[0].lower() == "start" else Verb.STOP_ALL)
    if len(words) > 1:
        return Command(Verb.USAGE, problem="too many words")
    word = words[0]
    lowered = word.lower()
    if lowered in ("help", "-h", "--help", "?"):
        return Command(Verb.HELP)
    if lowered == "status":
        return Command(Verb.STATUS)
    if is_valid_instance_name(word):
        return Command(Verb.RESTART, target=word)
    return Command(Verb.USAGE, problem="not a valid instance name")


def _bigger_disk(words: list[str]) -> Command:
    """`bigger-disk [boot|data] [NAME]`: which disk (the data disk unless `boot`) of which notebook."""
    boot = bool(words) and words[0].lower() == "boot"
    if words and words[0].lower() in ("boot", "data"):
        words = words[1:]
    if len(words) > 1:
        return Command(Verb.USAGE, problem="too many words")
    if words and not is_valid_instance_name(words[0]):
        return Command(Verb.USAGE, problem="not a valid instance name")
    return Command(Verb.BIGGER_DISK, target=words[0] if words else None, boot=boot)


class Answer(StrEnum):
    ALLOW = "allow"
    CHOOSE = "choose"  # several instances: name one
    REFUSED = "refused"  # Caller.refused: not a member who may act here at all
    NO_EMAIL = "no-email"
    NO_INSTANCE = "no-instance"  # the caller owns none
    NOT_FOUND = "not-found"
    AMBIGUOUS = "ambiguous"
    NOT_YOURS = "not-yours"
    NOT_RESTARTABLE = "not-restartable"
    PAUSED = "paused"
    ALREADY_RESTARTING = "already-restarting"
    TOO_SOON = "too-soon"
    START = "start"  # the caller's notebook is STOPPED and they may start it: the request starts it (Action.START)
    HELD = "held"  # STOPPED by an organizer, who did not let its owner start it again
    REPLAYED = "replayed"  # this very Slack request was acted on already (its digest is in the instance's labels)
    NOT_ORGANIZER = "not-organizer"  # a button: only organizers press them


class Refusal(StrEnum):
    """Why a Slack user is nobody to this bot, whatever their email says."""

    DEACTIVATED = "deactivated"
    BOT = "bot"
    FOREIGN_TEAM = "another workspace"
    UNCONFIRMED_EMAIL = "email not confirmed"
    UNKNOWN_WORKSPACE = "the app's own workspace is unknown"


@dataclass(frozen=True)
class Caller:
    slack_user_id: str
    email: str | None  # the profile email as an identity (shared/core/identity.py), or None
    is_organizer: bool
    refused: Refusal | None = None  # set: nobody, refused before anything is read or decided
    email_not_plain: bool = False  # the profile has an email, but not a plain ASCII one: it names nobody
    locale: str = ""  # users.info's `locale` (include_locale), "ja-JP"; "" when Slack gave none


def refusal(user: dict[str, Any], workspace: str | None) -> Refusal | None:
    """Why this users.info `user` may not act here, or None. A user of another workspace (Slack Connect), a
    bot, a deactivated account, or an email Slack says is unconfirmed is refused; `is_email_confirmed` is
    checked only where Slack reports it (the field is optional in Slack's own types)."""
    if not workspace:
        return Refusal.UNKNOWN_WORKSPACE
    if user.get("deleted") is not False:  # Slack always sends both flags: absent or not false is not known good
        return Refusal.DEACTIVATED
    if user.get("is_bot") is not False:
        return Refusal.BOT
    if user.get("team_id") != workspace:
        return Refusal.FOREIGN_TEAM
    if "is_email_confirmed" in user and user["is_email_confirmed"] is not True:
        return Refusal.UNCONFIRMED_EMAIL
    return None


@dataclass(frozen=True)
class Authorization:
    answer: Answer
    instance: InstanceView | None = None
    choices: tuple[InstanceView, ...] = ()
    retry_after: timedelta | None = None
    # ALREADY_RESTARTING: when the restart in flight began, if the labels say; TOO_SOON: when the last restart was
    # sent, if its end was not seen (medic-unconfirmed): it may not have finished, so not "restarted a moment ago"
    since: datetime | None = None

    @property
    def allowed(self) -> bool:
        return self.answer in (Answer.ALLOW, Answer.START)

    @property
    def action(self) -> Action:
        """What an allowed request asks the worker for: a start for a stopped notebook, else a restart."""
        return Action.START if self.answer is Answer.START else Action.RESTART


def is_owner(caller: Caller, instance: InstanceView) -> bool:
    return caller.refused is None and same_person(caller.email, instance.owner_email)


def find_target(caller: Caller, target: str | None, instances: list[InstanceView]) -> Authorization:
    """Which instance a command is about, and whether the caller may act on it (ownership only). `target` is a name,
    or an instance's full resource name (the Home tab's row buttons: one notebook even when two zones share a name),
    checked against the listed instances like a name."""
    if caller.refused is not None:
        return Authorization(Answer.REFUSED)
    if not caller.email and not caller.is_organizer:
        return Authorization(Answer.NO_EMAIL)
    if target is None:
        own = tuple(i for i in instances if is_owner(caller, i))
        if not own:
            return Authorization(Answer.NO_INSTANCE)
        if len(own) > 1:
            return Authorization(Answer.CHOOSE, choices=own)
        return Authorization(Answer.ALLOW, own[0])
    named = [i for i in instances if target in (i.ref.name, i.ref.full_name)]
    if not named:
        return Authorization(Answer.NOT_FOUND)
    mine = [i for i in named if is_owner(caller, i)]
    if not caller.is_organizer and not mine:
        return Authorization(Answer.NOT_YOURS)  # never says whose it is
    candidates = mine or named
    if len(candidates) > 1:
        return Authorization(Answer.AMBIGUOUS, choices=tuple(candidates))
    return Authorization(Answer.ALLOW, candidates[0])


def authorize_restart(
    caller: Caller,
    target: str | None,
    instances: list[InstanceView],
    *,
    now: datetime,
    policy: PolicyConfig,
    min_interval: timedelta,
    request: str = "",
) -> Authorization:
    """Whether `/restart-notebook` may restart now: the one decision both the Slack app (when its reads finish
    inside Slack's window) and the worker (when they did not, shared/app/worker/asked.py) act on. `request` is
    the Slack request's digest (guard.slack_request_digest): one the instance records as acted on is a replay."""
    found = find_target(caller, target, instances)
    if not found.allowed or found.instance is None:
        return found
    if request and request in History.from_labels(found.instance.labels).acted:
        return Authorization(Answer.REPLAYED, found.instance)
    return _restartable(caller, found.instance, now, policy, min_interval)


def authorize_press(caller: Caller, request: str = "", acted: Collection[str] = ()) -> Answer:
    """Whether an alert's button may be acted on: only an organizer's press, and only once (`request` in `acted`,
    the digests the instance records, is a replay). Used by the Slack app and by the worker alike."""
    if caller.refused is not None:
        return Answer.REFUSED
    if not caller.is_organizer:
        return Answer.NOT_ORGANIZER
    if request and request in acted:
        return Answer.REPLAYED
    return Answer.ALLOW


def _restartable(
    caller: Caller, instance: InstanceView, now: datetime, policy: PolicyConfig, min_interval: timedelta
) -> Authorization:
    history = believable(History.from_labels(instance.labels), now, policy)  # a time set ahead refuses nothing
    inflight = live_inflight(history, now, policy)
    if inflight is not None:
        return Authorization(Answer.ALREADY_RESTARTING, instance, since=inflight)
    if instance.state in (InstanceState.STARTING, InstanceState.PROVISIONING, InstanceState.INITIALIZING):
        return Authorization(Answer.ALREADY_RESTARTING, instance)
    if instance.state is InstanceState.STOPPED:  # started, not restarted: by its owner unless an organizer holds it
        if not may_start(caller.is_organizer, history):
            return Authorization(Answer.HELD, instance, since=history.stopped.since if history.stopped else None)
        return Authorization(Answer.START, instance)
    if instance.state is not InstanceState.ACTIVE:
        return Authorization(Answer.NOT_RESTARTABLE, instance)
    if history.auto_mode is AutoMode.PAUSED and not caller.is_organizer:
        return Authorization(Answer.PAUSED, instance)
    if not caller.is_organizer and history.last_restart is not None:
        ready = history.last_restart + min_interval
        if now < ready:
            return Authorization(Answer.TOO_SOON, instance, retry_after=ready - now, since=history.unconfirmed_since)
    return Authorization(Answer.ALLOW, instance)


@dataclass(frozen=True)
class StatusRow:
    instance: InstanceView
    owner: str
    last_kill: datetime | None
    restarts: int
    paused: bool
    attention: int  # larger: needs a person sooner
    stopped: StopHold | None = None  # an organizer's stop (held, or open to the owner); None: any other or running

    # The last day's OOM kills (kernels lost, JupyterLab up or not) and the guard's interrupts (kernels kept): a
    # kernel-only kill or an interrupt alerts no one (docs/policy.md, "The OOM guard"), so `status` counts them.
    kills_today: int = 0
    interrupts_today: int = 0


def status_rows(instances: list[InstanceView], now: datetime, policy: PolicyConfig) -> list[StatusRow]:
    """Rows for `status`, instances that need attention first."""
    rows = []
    for instance in instances:
        history = History.from_labels(instance.labels)
        restarts = crashloop_count(history, now, policy)
        paused = history.auto_mode is AutoMode.PAUSED
        attention = (
            (100 if paused else 0)
            + (50 if instance.state is not InstanceState.ACTIVE else 0)
            + (30 if instance.health_state == "UNHEALTHY" else 0)
            + 10 * restarts
            + (5 if history.last_kill and now - history.last_kill < policy.crashloop_window else 0)
        )
        stopped = history.stopped if instance.state is InstanceState.STOPPED else None
        day = timedelta(days=1)
        rows.append(StatusRow(instance, instance.owner_email or "", history.last_kill, restarts, paused, attention,
                              stopped=stopped, kills_today=history.kills_within(day, now),
                              interrupts_today=history.interrupts_within(day, now)))
    return sorted(rows, key=lambda r: (-r.attention, r.instance.ref.name))
