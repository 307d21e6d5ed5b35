"""An instance's restart history, kept as labels on the instance itself.

Like a Kubernetes controller records status on the object it manages, the bot
writes what it did onto the Workbench instance (update_instance, mask "labels").
That is read-after-write consistent, shared by every function instance,
survives cold starts, and is visible and editable in the console: an organizer
can clear `medic-*` labels or set `medic-auto=off` to opt an instance out.

Label values allow only [a-z0-9_-] and 63 characters, so times are epoch
seconds and lists are joined with "_".

Label updates MERGE on the live API (a key left out is kept; an empty value
deletes it: docs/fidelity.md), and the service keeps labels of its own on every
instance (SYSTEM_KEYS). So an empty value reads as no label, and the bot removes
a key of its own by sending it empty, never by leaving it out.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum

from shared.core.day_down import DayDown

AUTO = "medic-auto"
RESTARTS = "medic-restarts"
KILLS = "medic-kills"
LAST_RESTART = "medic-last-restart"
LAST_KILL = "medic-last-kill"
INFLIGHT = "medic-inflight"
INFLIGHT_EVENT = "medic-inflight-event"
MEMORY_WARNED = "medic-mem-warned"
TOLD = "medic-told"  # the last outage told and not reset (a full disk; a server still failing after one reset)
DISK_WARNED = "medic-disk-warned"  # the owner's last disk warning (issue 43): its quiet period, where room is
GPU_WARNED = "medic-gpu-warned"  # the owner's last GPU memory warning (issue 47): likewise
UNCONFIRMED = "medic-unconfirmed"
WAITING = "medic-waiting"  # the automatic incident that waits for health, yielding the ordering key (waiting.py)
STOPPED = "medic-stopped"  # an organizer's stop through the bot: who may start the notebook again (StopHold)

# Kernels the guard's watcher interrupted before the kill (issue 32): a count for `status` and the bigger-machine
# offer, nothing a decision about a kill reads; like ACTED, written only where there is room.
INTERRUPTS = "medic-interrupts"
# The bigger-machine offer posted for the kernels lost and kept today (issue 44): when, and its message, which later
# kills and interrupts update rather than post again; like INTERRUPTS, written only where there is room.
OFFER = "medic-offer"
# Today's minutes down by side (issue 42 part 4, day_down.DayDown): the Home tab's live glance, written where room is.
DOWN = "medic-down"
ACTED = "medic-acted"  # digests of the last Slack requests acted on: a replayed signed request acts once
MAX_ACTED = 5  # 5 x 11 hex digits + 4 separators fits a label value's 63 characters
MAX_LIST = 5  # 5 x 10 digits + 4 separators fits a label value's 63 characters
# The keys this bot writes, and those earlier versions wrote: the only ones it removes. Another `medic-*` label
# (say `medic-team=cardio`) is a person's, as is AUTO, which the bot rewrites only to change the mode.
OWN_KEYS = frozenset(
    {RESTARTS, KILLS, LAST_RESTART, LAST_KILL, INFLIGHT, INFLIGHT_EVENT, MEMORY_WARNED, DISK_WARNED, UNCONFIRMED,
     WAITING, ACTED, STOPPED, INTERRUPTS, OFFER, TOLD, DOWN, GPU_WARNED}
)
RETIRED_KEYS = frozenset({"medic-alert-ts", "medic-pending"})
BOT_KEYS = OWN_KEYS | RETIRED_KEYS | {AUTO}
# Set by Workbench on every instance and kept whatever an update says (magic-modules
# WorkbenchInstanceProvidedLabels): never the bot's to change, and they count toward GCP's 64 like any other.
SYSTEM_KEYS = frozenset({"consumer-project-id", "consumer-project-number", "notebooks-product", "resource-name"})
# What a person may type to opt an instance out: anything that obviously means off.
OFF_VALUES = frozenset({"off", "false", "no", "0", "disabled"})
MAX_LABELS = 64  # GCP's limit on one resource's labels: the API refuses a write of more (INVALID_ARGUMENT)
# Every label of ours at once, medic-auto included; UNCONFIRMED and WAITING are never written beside INFLIGHT
# and INFLIGHT_EVENT, so two of those four at most.
# STOPPED is written only on a stopped instance, where no restart is recorded beside it, and cleared by the start.
ROOM_NEEDED = len(OWN_KEYS - {UNCONFIRMED, WAITING, ACTED, INTERRUPTS, OFFER, STOPPED, DISK_WARNED, DOWN,
                               GPU_WARNED}) + 1
# ACTED, INTERRUPTS, OFFER, DISK_WARNED, GPU_WARNED, DOWN: where room is


@dataclass(frozen=True)
class StopHold:
    """An organizer's stop as the instance records it: `held` (only an organizer starts it again) or open to its
    owner, since when, and the alert the Stop was pressed on (its thread hears the start). A value a person wrote
    by hand that the bot does not know reads as held: someone meant to keep the notebook stopped."""

    held: bool
    since: datetime | None = None
    alert_ts: str = ""

    def label(self) -> str:
        when = str(int(self.since.timestamp())) if self.since is not None else ""
        parts = ["held" if self.held else "open", when, self.alert_ts.replace(".", "_")]
        return "-".join(parts).rstrip("-")[:63]

    @classmethod
    def parse(cls, text: str) -> StopHold | None:
        if not text:
            return None
        parts = text.split("-")
        ts = parts[2].replace("_", ".") if len(parts) > 2 and re.fullmatch(r"[0-9]{1,12}_[0-9]{1,8}", parts[2]) else ""
        return cls(held=parts[0] != "open", since=_time(parts[1]) if len(parts) > 1 else None, alert_ts=ts)



@dataclass(frozen=True)
class Offer:
    """The day's bigger-machine offer in the organizers' channel: when it was posted and its message's ts."""

    since: datetime
    ts: str

    def label(self) -> str:
        return f"{int(self.since.timestamp())}-{self.ts.replace('.', '_')}"[:63]

    @classmethod
    def parse(cls, text: str) -> Offer | None:
        found = re.fullmatch(r"([0-9]{1,10})-([0-9]{1,12})_([0-9]{1,8})", text)
        since = _time(found[1]) if found else None
        return cls(since, f"{found[2]}.{found[3]}") if found and since is not None else None


class AutoMode(StrEnum):
    ON = "on"
    OFF = "off"  # an organizer opted the instance out
    PAUSED = "paused"  # the bot stopped automatic restarts after a crash loop


@dataclass(frozen=True)
class History:
    auto_mode: AutoMode = AutoMode.ON
    auto_restarts: tuple[datetime, ...] = ()  # automatic restarts, oldest first
    kills: tuple[datetime, ...] = ()  # incidents seen (not every duplicate line), oldest first
    last_restart: datetime | None = None  # any restart, manual included, when it finished
    last_kill: datetime | None = None  # the kill time of the last incident handled
    inflight_since: datetime | None = None  # a reset the bot started and has not seen finish
    inflight_event: str = ""  # policy.restart_key() of the request that started it: its Pub/Sub message
    memory_warned: datetime | None = None  # the owner's last memory-pressure warning
    told: datetime | None = None  # the last outage told instead of reset (remedies.py: once per told_quiet)
    disk_warned: datetime | None = None  # the owner's last disk warning (issue 43)
    gpu_warned: datetime | None = None  # the owner's last GPU memory warning (issue 47)
    # When the last restart was sent, if its end was not seen (the reset still running when the worker's time
    # ran out): last_restart is when the bot stopped watching it, not when it finished. Words only: no decision
    # reads it. Cleared by the next restart's intent.
    unconfirmed_since: datetime | None = None
    # waiting.Marker's label text: which wait for health the incident's kill lines fold into. A restart in flight
    # answers every kill before it, so the marker is not written beside it.
    waiting: str = ""
    acted: tuple[str, ...] = ()  # acted_digest() of the last MAX_ACTED Slack requests acted on, oldest first
    stopped: StopHold | None = None  # an organizer's stop through the bot; None: stopped otherwise, or running

    interrupts: tuple[datetime, ...] = ()  # the watcher's interrupts and refusals (kernels kept), oldest first
    offer: Offer | None = None  # the day's bigger-machine offer, which later kills and interrupts update
    down: DayDown | None = None  # the day's minutes down by side, as the worker saw its outages end

    @classmethod
    def from_labels(cls, labels: dict[str, str]) -> History:
        """Tolerant: a label an organizer mangled reads as absent, never as an error; so does an empty one (what
        a merging API leaves of nothing, and what a replacing one keeps of a key the bot deleted). An intent older
        than the last restart recorded is over (see settled)."""
        labels = present(labels)
        return cls(
            auto_mode=_auto_mode(labels.get(AUTO)),
            auto_restarts=_times(labels.get(RESTARTS, "")),
            kills=_times(labels.get(KILLS, "")),
            last_restart=_time(labels.get(LAST_RESTART, "")),
            last_kill=_time(labels.get(LAST_KILL, "")),
            inflight_since=_time(labels.get(INFLIGHT, "")),
            memory_warned=_time(labels.get(MEMORY_WARNED, "")),
            told=_time(labels.get(TOLD, "")),
            disk_warned=_time(labels.get(DISK_WARNED, "")),
            gpu_warned=_time(labels.get(GPU_WARNED, "")),
            inflight_event=_label_text(labels.get(INFLIGHT_EVENT, "")),
            unconfirmed_since=_time(labels.get(UNCONFIRMED, "")),
            waiting=_label_text(labels.get(WAITING, "")),
            acted=tuple(d for d in labels.get(ACTED, "").split("_") if re.fullmatch(r"[0-9a-f]{11}", d))[-MAX_ACTED:],
            stopped=StopHold.parse(labels.get(STOPPED, "")),

            interrupts=_times(labels.get(INTERRUPTS, "")),
            offer=Offer.parse(labels.get(OFFER, "")),
            down=DayDown.parse(labels.get(DOWN, "")),
        ).settled()

    def settled(self) -> History:
        """Without an intent written before the last restart recorded: that restart, or a later one, is over.
        Only an intent's update that landed after the record leaves one: its confirmation gave up, the
        redelivery did not see it yet and restarted under an intent of its own, and the late update ended after
        that one's record. Whether the live API lets overlapping updates end out of order is undocumented
        (docs/fidelity.md); kept, the marker would refuse every /restart-notebook as "already restarting" until
        it timed out. Whole seconds, strictly earlier: an intent written in the second a restart ended is live."""
        if self.inflight_since is None or self.last_restart is None:
            return self
        if self.inflight_since.replace(microsecond=0) < self.last_restart.replace(microsecond=0):
            return self.without_inflight()
        return self

    def to_labels(self, existing: dict[str, str]) -> dict[str, str]:
        """The labels update that records this history over `existing` (the labels as read).

        Right whether the API merges an update into the labels (the live API: a key left out is kept, an empty
        value deletes) or replaces them with it: every label that isn't ours is sent as read (a merge leaves it
        as it is, a replacement keeps it; system labels included), each of ours with its value, and each of ours
        the instance carries that this history has no value for with an empty one (a merge deletes it; a
        replacement keeps it empty, which reads as absent). Leaving a key of ours out would keep it for ever on
        the live API. A label read empty is not sent: a merge keeps it and a replacement drops it, and either way
        it reads as absent (sent empty, a merge would delete a person's empty label).
        AUTO is shared with people: kept as written while it reads as this history's mode (`false` stays
        `false`, a value the bot doesn't know stays too), rewritten only when the mode changes, sent empty when
        it goes back to on."""
        existing = present(existing)
        labels = {k: v for k, v in existing.items() if k not in BOT_KEYS}
        if AUTO in existing and _auto_mode(existing[AUTO]) is self.auto_mode:
            labels[AUTO] = existing[AUTO]
        elif self.auto_mode is not AutoMode.ON:
            labels[AUTO] = self.auto_mode.value
        if self.auto_restarts:
            labels[RESTARTS] = _join(self.auto_restarts)
        if self.kills:
            labels[KILLS] = _join(self.kills)
        for key, moment in (
            (LAST_RESTART, self.last_restart),
            (LAST_KILL, self.last_kill),
            (INFLIGHT, self.inflight_since),
            (MEMORY_WARNED, self.memory_warned),
            (TOLD, self.told),
            (UNCONFIRMED, self.unconfirmed_since if self.inflight_since is None else None),
        ):
            if moment is not None:
                labels[key] = str(int(moment.timestamp()))
        if self.inflight_since is not None and self.inflight_event:
            labels[INFLIGHT_EVENT] = self.inflight_event
        if self.waiting and self.inflight_since is None:
            labels[WAITING] = self.waiting
        if self.stopped is not None:
            labels[STOPPED] = self.stopped.label()
        if self.acted and len(labels) < MAX_LABELS:  # the first to go on a crowded instance (ROOM_NEEDED)
            labels[ACTED] = "_".join(self.acted)
        for key, warned in ((DISK_WARNED, self.disk_warned), (GPU_WARNED, self.gpu_warned)):
            if warned is not None and len(labels) < MAX_LABELS:  # lost on a crowded instance: Monitoring still
                labels[key] = str(int(warned.timestamp()))  # notifies once per climb
        if self.interrupts and len(labels) < MAX_LABELS:  # a count: lost on a crowded instance, nothing else is
            labels[INTERRUPTS] = _join(self.interrupts)
        if self.offer is not None and len(labels) < MAX_LABELS:  # lost on a crowded instance: the offer posts again
            labels[OFFER] = self.offer.label()
        if self.down is not None and len(labels) < MAX_LABELS:  # lost on a crowded instance: the report has it
            labels[DOWN] = self.down.label()
        return labels | {key: "" for key in BOT_KEYS & existing.keys() - labels.keys()}

    def with_acted(self, digest: str) -> History:
        """A Slack request acted on, recorded with what it does (the restart's intent, the mode, the stop)."""
        return replace(self, acted=(*(d for d in self.acted if d != digest), digest)[-MAX_ACTED:])

    def without_acted(self, digest: str) -> History:
        """The record taken back with the action it came with (a reset the API refused): the redelivery of the
        same message must act, not be taken for a replay of itself."""
        return replace(self, acted=tuple(d for d in self.acted if d != digest))

    def resumed(self) -> History:
        """An organizer resumed automatic restarts: a fresh start, or the next kill would pause it again."""
        return replace(self, auto_mode=AutoMode.ON, auto_restarts=())

    def with_kill(self, killed_at: datetime) -> History:
        return replace(self, kills=_tail((*self.kills, killed_at)), last_kill=killed_at)

    def with_inflight(self, started_at: datetime, event_key: str) -> History:
        """The intent, written before the reset: a crash mid-restart is recognised on redelivery."""
        return replace(self, inflight_since=started_at, inflight_event=event_key, unconfirmed_since=None)

    def with_intent(
        self, started_at: datetime, event_key: str, *, killed_at: datetime | None, automatic: bool
    ) -> History:
        """The intent, carrying the restart's count and its kill: right even if nothing after the reset is written."""
        history = self.with_inflight(started_at, event_key)
        if killed_at is not None:
            history = history.with_kill(killed_at)
        if automatic:
            history = replace(history, auto_restarts=_tail((*history.auto_restarts, started_at)))
        return history

    def without_inflight(self) -> History:
        return replace(self, inflight_since=None, inflight_event="")

    def with_restart(
        self, started_at: datetime, finished_at: datetime, *, automatic: bool, confirmed: bool = True
    ) -> History:
        """A finished restart; manual ones count in last_restart but not toward the crash-loop pause. One not
        `confirmed` (its end not seen by `finished_at`) is recorded alike, and marked so that what is said of it
        stays true."""
        restarts = _tail((*self.auto_restarts, started_at)) if automatic else self.auto_restarts
        return replace(self.without_inflight(), auto_restarts=restarts, last_restart=finished_at,
                       unconfirmed_since=None if confirmed else started_at)

    def as_of(self, latest: datetime) -> History:
        """Without the times that can't have been recorded by `latest` (a label set ahead by hand): read as they
        are, a restart in flight or just finished never ends, and every kill until then is skipped as its
        duplicate. The kills are kept: a kill is only compared with kills, within a short window, and the next
        kill handled replaces the last one."""
        def seen(moment: datetime | None) -> datetime | None:
            return moment if moment is not None and moment <= latest else None

        inflight = seen(self.inflight_since)
        return replace(
            self,
            auto_restarts=tuple(moment for moment in self.auto_restarts if moment <= latest),
            last_restart=seen(self.last_restart),
            inflight_since=inflight,
            inflight_event=self.inflight_event if inflight is not None else "",
            memory_warned=seen(self.memory_warned),
            told=seen(self.told),
            disk_warned=seen(self.disk_warned),
            gpu_warned=seen(self.gpu_warned),
            unconfirmed_since=seen(self.unconfirmed_since),
        )

    def kills_within(self, window: timedelta, now: datetime) -> int:
        return sum(1 for moment in self.kills if now - moment <= window)

    def with_interrupt(self, interrupted_at: datetime) -> History:
        return replace(self, interrupts=_tail((*self.interrupts, interrupted_at)))

    def interrupts_within(self, window: timedelta, now: datetime) -> int:
        return sum(1 for moment in self.interrupts if now - moment <= window)


def _tail(moments: tuple[datetime, ...]) -> tuple[datetime, ...]:
    """The latest MAX_LIST moments, each once: labels keep whole seconds, so a moment recorded twice is one."""
    return tuple(sorted({moment.replace(microsecond=0) for moment in moments}))[-MAX_LIST:]


def _join(moments: tuple[datetime, ...]) -> str:
    return "_".join(str(int(moment.timestamp())) for moment in moments)


# Every time we write is a worker's "now": none can be older than this bot (2020 predates it and Workbench
# Instances) or later than 2100. A value outside was mangled. Checking the bounds before converting also keeps
# fromtimestamp() far from what it can't represent (ValueError past year 9999, OverflowError/OSError past time_t),
# so within them it cannot raise.
_EARLIEST = int(datetime(2020, 1, 1, tzinfo=UTC).timestamp())
_LATEST = int(datetime(2100, 1, 1, tzinfo=UTC).timestamp())  # exclusive


def present(labels: dict[str, str]) -> dict[str, str]:
    """The labels an instance has: an empty value is none (what a merging update leaves of a deleted key)."""
    return {key: value for key, value in labels.items() if value}


def foreign_count(labels: dict[str, str]) -> int:
    """The labels that aren't the bot's, system labels included (they count toward GCP's 64 like any other):
    what leaves it too little room under MAX_LABELS."""
    return sum(1 for key in present(labels) if key not in BOT_KEYS)


def changes_anything(update: dict[str, str], existing: dict[str, str]) -> bool:
    """Whether sending `update` (History.to_labels) would change labels read as `existing`."""
    return update != present(existing)


def _auto_mode(text: str | None) -> AutoMode:
    """The mode a medic-auto value says: the obvious spellings of off are off; a value the bot doesn't know
    reads as on, as no label does (and to_labels keeps it)."""
    if text is None:
        return AutoMode.ON
    if text in OFF_VALUES:
        return AutoMode.OFF
    return AutoMode.PAUSED if text == AutoMode.PAUSED.value else AutoMode.ON


def _time(text: str) -> datetime | None:
    """Epoch seconds as we write them, or None: a mangled label must never fail every request for the instance."""
    if not re.fullmatch(r"[0-9]{1,10}", text):  # ASCII only: str.isdigit() also passes "²", which int() refuses
        return None
    seconds = int(text)
    return datetime.fromtimestamp(seconds, tz=UTC) if _EARLIEST <= seconds < _LATEST else None


def _label_text(text: str) -> str:
    return text if re.fullmatch(r"[a-z0-9_-]{1,63}", text) else ""


def acted_digest(slack_request: str) -> str:
    """A label-safe digest of a Slack request's own id (a command's trigger_id; a button's action_ts and message ts)."""
    return hashlib.sha256(slack_request.encode()).hexdigest()[:11]


def event_key(event_id: str) -> str:
    """A label-safe digest of an event id (insertIds and message ids aren't label-safe)."""
    return hashlib.sha256(event_id.encode()).hexdigest()[:16]


def _times(text: str) -> tuple[datetime, ...]:
    return tuple(sorted(t for t in (_time(part) for part in text.split("_")) if t is not None))
