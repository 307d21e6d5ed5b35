"""Start all / stop all and the contest's schedule, as pure decisions: which notebooks, the confirmation, a bounded
number in flight, what each Workbench failure means (retry later or final), the progress and summary texts, the
scheduled stop's warning, and the schedule message Cloud Scheduler publishes to the restart topic.

What an answer means (the sources the classification follows):
- 409 ABORTED "unable to queue the operation": the instance is between states and nothing was queued; wait and try
  again (gcloud's own handling: lib/googlecloudsdk/command_lib/run/integrations/run_apps_operations.py, "wait
  until the current process is complete and try again"; terraform-provider-google issues 24278, 17593;
  /work/shared/reference/facts.md). Retried after BUSY_WAIT, at most MAX_TRIES times.
- a rate quota (429 RESOURCE_EXHAUSTED, or 403 rateLimitExceeded / userRateLimitExceeded, cloud.google.com/compute/
  api-quota: "wait a minute then try your request again"): retried after RATE_WAIT.
- a resource quota (Compute Engine's operation error QUOTA_EXCEEDED with QuotaExceededInfo, gcloud's generated
  compute_v1_messages.py; "Quota 'CPUS' exceeded"): final for this run, since only a raised quota or fewer running
  notebooks changes it, and retrying would only spend the other notebooks' turns.
- a stockout (capacity.py): retried with a doubling wait for the run's stockout_patience from the first, however
  many tries; its owner told each time (capacity.waiting), the summary naming the zones Google offered.
- 503 UNAVAILABLE / DEADLINE_EXCEEDED: retried after BUSY_WAIT. NOT_FOUND and any other refusal: final.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from shared.core import capacity, messages
from shared.core.fleet import FleetRow
from shared.core.history import AutoMode

MAX_IN_FLIGHT = 5  # Workbench operations at once: a burst of 50 starts meets the API's per-minute quota and 409s
MAX_TRIES = 5
BUSY_WAIT = timedelta(seconds=30)
RATE_WAIT = timedelta(seconds=60)
NAMES_MAX = 2500  # characters of names in a confirmation (Block Kit: 3000 in a section's text)
STOP_WARNING_DEFAULT = timedelta(minutes=15)

# Workbench states an operation applies to; anything else is "already there" or not ours to touch.
_STARTABLE = frozenset({"STOPPED", "SUSPENDED"})
_STOPPABLE = frozenset({"ACTIVE", "STARTING", "PROVISIONING", "INITIALIZING", "UPGRADING"})


class BulkAction(StrEnum):
    START = "start"
    STOP = "stop"


@dataclass(frozen=True)
class Plan:
    """What start all / stop all would do: `chosen` are acted on; `left_alone` kept as they are (with why)."""

    action: BulkAction
    chosen: tuple[str, ...]
    left_alone: tuple[tuple[str, str], ...]  # (name, "opted-out" | "paused")
    already: tuple[str, ...]  # in the state asked for, or between states the other way
    gpus: tuple[str, ...] = ()  # a stop's chosen notebooks with GPUs: their start may meet a stockout


def plan(action: BulkAction, rows: Iterable[FleetRow], *, include_opted_out: bool = False,
         include_paused: bool = False, keep_gpus: bool = False) -> Plan:
    """The notebooks the action applies to; opted-out and paused ones are left alone unless asked, and GPU ones by a
    stop that keeps them (`keep_gpus`: a stopped GPU VM may not come back)."""
    chosen: list[str] = []
    left: list[tuple[str, str]] = []
    already: list[str] = []
    gpus: list[str] = []
    applies = _STARTABLE if action is BulkAction.START else _STOPPABLE
    for row in sorted(rows, key=lambda r: r.name):
        if row.state not in applies:
            already.append(row.name)
        elif row.mode is AutoMode.OFF and not include_opted_out:
            left.append((row.name, "opted-out"))
        elif row.mode is AutoMode.PAUSED and not include_paused:
            left.append((row.name, "paused"))
        elif keep_gpus and action is BulkAction.STOP and row.gpu:
            left.append((row.name, "GPU"))
        else:
            chosen.append(row.name)
            gpus += [row.name] if row.gpu else []
    return Plan(action, tuple(chosen), tuple(left), tuple(already), tuple(gpus) if action is BulkAction.STOP else ())


def names_text(names: Sequence[str], say: messages.For, limit: int = NAMES_MAX) -> str:
    """Names joined, cut to `limit` characters with how many more: a confirmation must fit one section."""
    shown: list[str] = []
    used = 0
    for name in names:
        if used + len(name) + 2 > limit:
            return say("fleet.more", names=", ".join(shown), count=len(names) - len(shown))
        shown.append(name)
        used += len(name) + 2
    return ", ".join(shown)


def confirmation(chosen: Plan, say: messages.For) -> str:
    """How many and which, and what is left as it is: the text of the confirm dialog and of the message."""
    if not chosen.chosen:
        lines = [say("fleet.confirm.none")]
    elif chosen.action is BulkAction.START:
        lines = [say("fleet.confirm.start", count=len(chosen.chosen), names=names_text(chosen.chosen, say))]
    else:
        lines = [say("fleet.confirm.stop", count=len(chosen.chosen), names=names_text(chosen.chosen, say))]
    if chosen.left_alone:
        left = [f"{name} ({why})" for name, why in chosen.left_alone]
        lines.append(say("fleet.confirm.left_alone", count=len(left), names=names_text(left, say)))
    if chosen.gpus:
        lines.append(say("fleet.confirm.gpu", count=len(chosen.gpus), names=names_text(chosen.gpus, say)))
    return "\n".join(lines)


class Failure(StrEnum):
    """Why an operation failed, as the summary words it."""

    BUSY = "busy"  # 409 ABORTED: retry later
    RATE = "rate"  # a rate quota: retry later
    STOCKOUT = "stockout"  # ZONE_RESOURCE_POOL_EXHAUSTED: retry later
    UNAVAILABLE = "unavailable"  # 503, a deadline: retry later
    QUOTA = "quota"  # a resource quota: final
    GONE = "gone"  # NOT_FOUND: final
    REFUSED = "refused"  # any other refusal: final


_RETRY_AFTER = {Failure.BUSY: BUSY_WAIT, Failure.RATE: RATE_WAIT, Failure.UNAVAILABLE: BUSY_WAIT}
_RATE_WORDS = ("ratelimitexceeded", "userratelimitexceeded", "rate_limit_exceeded", "rate limit", "quota metric",
               "per minute", "per second", "per 100 seconds")
# A resource quota as Compute Engine words it: the operation error code, or "Quota 'CPUS' exceeded".
_RESOURCE_QUOTA = re.compile(r"quota_exceeded|quota '[^']{1,80}' exceeded")


def classify(status: str, detail: str) -> Failure:
    """The failure an API answer is: `status` the service's status name (ABORTED, RESOURCE_EXHAUSTED...), `detail`
    its message (the adapters' ServiceError carries both). A per-minute quota ("Quota exceeded for quota metric
    ... per minute") is a rate, retried; a resource quota is final."""
    text = detail.lower()
    if capacity.is_stockout(detail):
        return Failure.STOCKOUT
    if _RESOURCE_QUOTA.search(text) and not any(word in text for word in _RATE_WORDS):
        return Failure.QUOTA
    if status == "RESOURCE_EXHAUSTED" or any(word in text for word in _RATE_WORDS):
        return Failure.RATE
    if status == "ABORTED" or "unable to queue the operation" in text:
        return Failure.BUSY
    if status in ("UNAVAILABLE", "DEADLINE_EXCEEDED", "INTERNAL"):
        return Failure.UNAVAILABLE
    if status == "NOT_FOUND":
        return Failure.GONE
    return Failure.REFUSED


@dataclass
class _Attempt:
    tries: int = 0
    not_before: datetime | None = None
    last: tuple[Failure, str] | None = None
    stockout_since: datetime | None = None  # the first stockout: the patience runs from it


@dataclass
class Run:
    """One start all / stop all as it goes: at most `limit` operations in flight, failures retried when they mean
    "later", each notebook ending done or failed with its reason. Pure: the caller sends what next() gives, reports
    each answer with finished(), and waits until wake() when next() gives nothing."""

    action: BulkAction
    names: tuple[str, ...]
    limit: int = MAX_IN_FLIGHT
    max_tries: int = MAX_TRIES
    stockout_patience: capacity.Patience = field(default_factory=capacity.Patience)
    attempts: dict[str, _Attempt] = field(default_factory=dict)
    in_flight: set[str] = field(default_factory=set)
    done: list[str] = field(default_factory=list)
    failed: dict[str, tuple[Failure, str, int]] = field(default_factory=dict)  # name -> (why, detail, tries)

    def __post_init__(self) -> None:
        self.attempts = {name: _Attempt() for name in self.names}

    def _waiting(self) -> list[str]:
        ended = set(self.done) | self.failed.keys() | self.in_flight
        return [name for name in self.names if name not in ended]

    def next(self, now: datetime) -> list[str]:
        """The notebooks to send now (oldest first), marked in flight: never more than `limit` at once."""
        ready = [name for name in self._waiting()
                 if (not_before := self.attempts[name].not_before) is None or not_before <= now]
        chosen = ready[:max(0, self.limit - len(self.in_flight))]
        for name in chosen:
            self.in_flight.add(name)
            self.attempts[name].tries += 1
        return chosen

    def finished(self, name: str, now: datetime, failure: Failure | None = None, detail: str = "") -> None:
        """One operation's answer: None is done; a failure that means later waits its turn again, until max_tries."""
        self.in_flight.discard(name)
        attempt = self.attempts[name]
        if failure is None:
            self.done.append(name)
            return
        attempt.last = (failure, detail)
        if failure is Failure.STOCKOUT:  # tried for a set time, not a number of tries
            attempt.stockout_since = attempt.stockout_since or now
            attempt.not_before = capacity.next_try(attempt.stockout_since, now, attempt.tries, self.stockout_patience)
            if attempt.not_before is None:
                self.failed[name] = (failure, detail, attempt.tries)
            return
        wait = _RETRY_AFTER.get(failure)
        if wait is None or attempt.tries >= self.max_tries:
            self.failed[name] = (failure, detail, attempt.tries)
            return
        attempt.not_before = now + wait * attempt.tries  # linear backoff: the 2nd try 30 s, the 3rd 60 s, ...

    def wake(self) -> datetime | None:
        """When the next retry is due, if nothing is in flight or ready: how long the caller may sleep."""
        due = [self.attempts[name].not_before for name in self._waiting()]
        return min((moment for moment in due if moment is not None), default=None)

    @property
    def over(self) -> bool:
        return not self.in_flight and not self._waiting()

    def to_dict(self) -> dict[str, Any]:
        """The run between two worker invocations (a run outlasts one: 50 notebooks, 5 at a time): what is in flight
        when the budget ends is sent again on resumption, which a start or stop of a notebook already there absorbs."""
        return {"action": self.action.value, "names": list(self.names), "limit": self.limit,
                "max_tries": self.max_tries, "done": list(self.done),
                "stockout_patience_s": self.stockout_patience.total.total_seconds(),
                "stockout_since": {name: _iso(a.stockout_since) for name, a in self.attempts.items()
                                   if a.stockout_since},
                "tries": {name: a.tries for name, a in self.attempts.items() if a.tries},
                "not_before": {name: _iso(a.not_before) for name, a in self.attempts.items() if a.not_before},
                "failed": {name: [why.value, detail, tries] for name, (why, detail, tries) in self.failed.items()}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Run:
        """Strict, like every message the worker reads: a field that does not fit raises ValueError."""
        try:
            run = cls(BulkAction(data["action"]), tuple(str(n) for n in data["names"]), limit=int(data["limit"]),
                      max_tries=int(data["max_tries"]), stockout_patience=capacity.Patience(
                          timedelta(seconds=float(data.get("stockout_patience_s", 7200)))))
            for name, moment in data.get("stockout_since", {}).items():
                run.attempts[name].stockout_since = _parse(moment)
            run.done = [name for name in data["done"] if name in run.attempts]
            for name, tries in data["tries"].items():
                run.attempts[name].tries = int(tries)
            for name, moment in data["not_before"].items():
                run.attempts[name].not_before = _parse(moment)
            run.failed = {name: (Failure(why), str(detail), int(tries))
                          for name, (why, detail, tries) in data["failed"].items() if name in run.attempts}
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"bulk run state: {exc!r}"[:300]) from None
        return run


def progress_text(run: Run, say: messages.For) -> str:
    """The one message edited as the run goes."""
    counts = {"total": len(run.names), "done": len(run.done), "running": len(run.in_flight),
              "waiting": len(run._waiting()), "failed": len(run.failed)}
    if run.action is BulkAction.START:
        return say("fleet.progress.start", **counts)
    return say("fleet.progress.stop", **counts)


def reason_text(failure: Failure, detail: str, tries: int, say: messages.For) -> str:
    if failure is Failure.STOCKOUT:  # read whole: the zones Google offers end its words
        return capacity.reason(detail, tries, say)
    detail = messages.escape(detail[:200])
    if failure is Failure.QUOTA:
        return say("fleet.reason.quota", detail=detail)
    if failure is Failure.BUSY:
        return say("fleet.reason.busy", tries=tries)
    if failure is Failure.RATE:
        return say("fleet.reason.rate", tries=tries)
    if failure is Failure.UNAVAILABLE:
        return say("fleet.reason.unavailable", tries=tries, detail=detail)
    if failure is Failure.GONE:
        return say("fleet.reason.gone")
    return say("fleet.reason.refused", detail=detail)


def summary_text(run: Run, say: messages.For) -> str:
    """The run's end: how many of how many, then every failure with its reason."""
    if run.action is BulkAction.START:
        lines = [say("fleet.summary.start", done=len(run.done), total=len(run.names))]
    else:
        lines = [say("fleet.summary.stop", done=len(run.done), total=len(run.names))]
    if run.failed:
        lines.append(say("fleet.summary.failures", count=len(run.failed)))
        lines += [say("fleet.failure", name=name, reason=reason_text(why, detail, tries, say))
                  for name, (why, detail, tries) in sorted(run.failed.items())]
    return "\n".join(lines)


def warned(rows: Iterable[FleetRow], *, include_opted_out: bool = False,
           include_paused: bool = False) -> list[tuple[str, str]]:
    """(notebook, owner email) of every notebook the scheduled stop will stop: exactly those are warned (an
    opted-out one the stop leaves alone is not told it stops). A notebook without an owner has no one to tell."""
    rows = list(rows)
    chosen = set(plan(BulkAction.STOP, rows, include_opted_out=include_opted_out, include_paused=include_paused).chosen)
    return [(row.name, row.owner) for row in sorted(rows, key=lambda r: r.name) if row.name in chosen and row.owner]


def warning_at(stop_at: datetime, lead: timedelta = STOP_WARNING_DEFAULT) -> datetime:
    return stop_at - lead


def owner_zone(slack_tz: str | None, fallback: ZoneInfo) -> ZoneInfo:
    """The zone an owner reads times in: their Slack profile's `tz` when it names a zone this Python knows, else
    DISPLAY_TIMEZONE (`fallback`). Slack's value is outside input: a name that is no zone is not one."""
    if slack_tz:
        try:
            return ZoneInfo(slack_tz)
        except (ZoneInfoNotFoundError, ValueError):
            pass
    return fallback


def stop_warning(name: str, stop_at: datetime, now: datetime, say: messages.For, tz: ZoneInfo) -> str:
    """The owner's warning before the scheduled stop, in their language and time zone (the caller picks both: the
    owner's Slack tz when known, else DISPLAY_TIMEZONE)."""
    minutes = max(0, round((stop_at - now).total_seconds() / 60))
    return say("fleet.warning", name=name, time=stop_at.astimezone(tz).strftime("%H:%M"), minutes=minutes)


# --- The schedule message: Cloud Scheduler -> the restart topic -> the worker ----------------------------------
SCHEDULE_MAX_BYTES = 4_000  # one firing's few fields
SCHEDULE_ATTRIBUTE = "medic-kind"  # for the console and filters: the worker reads the envelope's "type"
STALE_AFTER = timedelta(hours=1)  # Cloud Scheduler's cron repeats every year: next year's firing is not this contest's
EARLY_BY = timedelta(minutes=5)


class ScheduledAction(StrEnum):
    START_ALL = "start-all"
    WARN_STOP = "warn-stop"
    STOP_ALL = "stop-all"


@dataclass(frozen=True)
class ScheduleMessage:
    """What one Scheduler job publishes, the envelope's "schedule" payload (envelope.py; infra/contest/schedule/main.tf
    builds the same JSON with jsonencode)."""

    action: ScheduledAction
    at: datetime  # when the job is meant to fire
    stop_at: datetime | None  # WARN_STOP: the stop it warns of
    contest: str
    include_opted_out: bool = False
    include_paused: bool = False

    def due(self, now: datetime) -> bool:
        """Whether a delivery at `now` is this firing: not early, not a year late (a stale one is logged, acked)."""
        return self.at - EARLY_BY <= now <= self.at + STALE_AFTER


def _iso(moment: datetime) -> str:
    return moment.astimezone(ZoneInfo("UTC")).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse(text: Any) -> datetime:
    if not isinstance(text, str):
        raise TypeError("a time must be a string")
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        raise ValueError(f"time without a zone: {text[:40]!r}")
    return moment
