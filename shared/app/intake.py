"""From a Logging sink's CloudEvent to a request on the restart topic (the on_oom function's work)."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from shared.adapters.audit import audit
from shared.adapters.clock import SYSTEM, Clock
from shared.adapters.config import Settings
from shared.adapters.errors import ServiceError, TransientError
from shared.adapters.google_errors import describe_error
from shared.adapters.queue import RestartQueue
from shared.app.intakes import Intake, IntakeOutcome, VmNames, check_writer
from shared.core.flood import Floods
from shared.core.models import ZONE_RE, Action, OomKill, RestartRequest, Trigger, iso
from shared.core.oom_parse import (
    GPU_FREED_FORM,
    GUARD_FORMS,
    EntryOrigin,
    KillEntry,
    NotAKill,
    UnresolvedKill,
    name_by_vm,
    read_kill_entry,
)
from shared.core.payloads import AlertPayload, InterruptedPayload, RestartPayload
from shared.core.pubsub_event import Rejected, delivery_time, entry_from_cloudevent

RETRY_FOLDED_FOR = timedelta(minutes=10)  # a folded kill older than this is answered by the lines after it
# One decision at a time over this process's flood budgets: functions-framework serves requests on threads
# (gunicorn's), and two lines deciding at once each found their writer's bucket popped by the other and started a
# full one (15 alerts in 18 s where 12 was the most: a loaded run, pushes side by side;
# tests/unit/test_flood_threads.py).
BUDGETS_LOCK = threading.Lock()


def acknowledge_unreadable_bodies() -> None:
    """For the CloudEvent function importing this: a body nobody can read is logged and answered 200, as the
    function's own rejections end. Eventarc pushes from Pub/Sub, where any other answer is a failure that
    redelivers the same unreadable body again and again. Binary mode fails in cloudevents'
    DataUnmarshallerError; structured mode (application/cloudevents+json) in json.loads' own RecursionError
    or UnicodeDecodeError, which the framework does not catch."""
    import functions_framework  # noqa: PLC0415 - only the functions need it, and only at start-up
    from cloudevents.exceptions import DataUnmarshallerError  # noqa: PLC0415

    def unreadable_event(error: Exception) -> tuple[str, int]:
        return (reject_unreadable(error).detail, 200)

    for error in (DataUnmarshallerError, RecursionError, UnicodeDecodeError):
        functions_framework.errorhandler(error)(unreadable_event)


def reject_unreadable(error: Exception) -> IntakeOutcome:
    """A body the framework could not unmarshal before the function ran (JSON nested past the parser's
    depth, bytes that are not UTF-8): logged as a rejection, and then acknowledged like one.

    Eventarc wraps a Pub/Sub message whose data is base64, so such a body never comes from the sink;
    retrying it would fail the same way forever.
    """
    reason = f"the event body could not be read ({type(error).__name__})"
    audit("event rejected", severity=logging.WARNING, decision="rejected", reason=reason)
    return IntakeOutcome(Intake.REJECTED, reason)


@dataclass(frozen=True)
class Refusal:
    """A kill line whose claims don't hold (another VM's id, a foreign project or zone, no id at all): never acted on,
    only shown to the organizers with the reason."""

    reason: str
    line: str
    raw_entry: str
    killed_at: datetime
    insert_id: str
    named: str  # the instance the entry names ("" when none)
    writer: str = ""  # the name of the VM whose id the entry carries, when a VM has it ("" when none does)
    checked: bool = True  # False: Compute Engine could not be asked, so nothing is known against the line


@dataclass(frozen=True)
class Unverified:
    """A kill naming an instance whose VM Compute Engine could not be asked about (quota, 5xx, a timeout, no
    permission): nothing is known against the line, so it is not refused, and nothing for it, so it is acted on
    only the safer way: the worker resets only if the instance's own health says JupyterLab is down (policy.py)."""

    kill: OomKill
    reason: str


def vet(read: KillEntry, *, settings: Settings, vm_names: VmNames) -> OomKill | UnresolvedKill | Refusal:
    """Hold a kill to the instance it names: the project is ours, the zone one of ours, and Compute Engine says the
    VM that wrote the entry (resource.labels.instance_id) is that instance's. A kill naming no VM is named by that
    id. Compute Engine's errors propagate (the caller retries a transient one); anything unproven is refused, an
    id past the Compute adapter's lookups a minute too (intakes.check_writer, memory_intake's check too).

    Any VM's service account can write an entry naming any instance, with any id (docs/checked-facts.md): the
    check proves the entry came from the named VM only against writers who don't know the victim's VM id, which
    participants can't list without compute.instances.list. docs/security.md, "Forged kill lines"."""
    result, origin = read.kill, read.origin
    if isinstance(result, UnresolvedKill) and not result.nameless:
        return result  # unreadable beyond a name: the organizers get it raw, as before
    project, zone, vm_id = origin.project, origin.zone, origin.vm_id
    named = result.instance.name if isinstance(result, OomKill) else ""

    def refuse(reason: str) -> Refusal:
        return Refusal(reason, result.line, origin.raw_entry, result.killed_at, result.insert_id, named)

    out_of_scope = settings.in_scope(project, zone)
    if out_of_scope or not ZONE_RE.fullmatch(zone):
        return refuse(out_of_scope or f"the zone {zone[:40]!r} is not a zone")
    writer = check_writer(vm_names, project, zone, vm_id, named)
    if not writer.name:  # no id, an id unchecked, or one no VM has
        return refuse(writer.refused)
    if isinstance(result, UnresolvedKill):
        named_by_id = name_by_vm(read, writer.name)
        return refuse(named_by_id.reason) if isinstance(named_by_id, NotAKill) else named_by_id  # NotAKill: a watcher's
    if not writer.holds:
        return replace(refuse(writer.refused), writer=writer.name)
    return result


def handle_event(
    event_type: str,
    event_id: str,
    event_time: str,
    data: Any,
    *,
    queue: RestartQueue,
    settings: Settings,
    vm_names: VmNames,
    clock: Clock = SYSTEM,
    floods: Floods | None = None,
) -> IntakeOutcome:
    """Parse, vet, then publish a request; raises only when publishing fails, or when Compute Engine fails
    transiently on a line only the VM id can name (the event is then redelivered). `floods`: how many alerts
    each writing VM, and unverified kills each instance, may cause a minute (a line over it is only logged).
    The function answers the outcome as intakes.answer says."""
    now = clock.now()
    delivered = delivery_time(event_time, now)
    entry = entry_from_cloudevent(event_type, data)
    result = entry if isinstance(entry, Rejected) else read_kill_entry(entry, fallback_time=delivered)
    if isinstance(result, Rejected):
        audit("event rejected", severity=logging.WARNING, decision="rejected", reason=result.reason,
              event_id=event_id[:128])
        return IntakeOutcome(Intake.REJECTED, result.reason)
    if isinstance(result, NotAKill):
        audit("not an OOM kill", decision="ignored", reason=result.reason, event_id=result.insert_id or event_id[:128])
        return IntakeOutcome(Intake.NOT_A_KILL, result.reason)
    origin = result.origin  # from here on, what the parse read: never the entry again
    young = now - origin.killed_at <= settings.policy.max_event_age
    vetted = _vetted_or_raised(result, settings=settings, vm_names=vm_names, retry=young)
    queued = _queued(vetted, origin, event_id)
    if queued.kind in (Intake.UNRESOLVED, Intake.REFUSED):
        writer = _writer(vetted, origin, settings, vm_names)
        alert = replace(queued.request.payload_as(AlertPayload), writer=writer, refused=queued.kind is Intake.REFUSED)
        queued = replace(queued, request=replace(queued.request, payload=alert))
    held = _held_back(vetted, queued, origin.vm_id, floods, now)
    if isinstance(held, IntakeOutcome):
        return held
    queued = held
    try:
        message_id = queue.publish(queued.request)
    except Exception as exc:
        if now - queued.request.requested_at > settings.policy.max_event_age:
            # Retrying forever helps no one. The sealed ERROR entry is the kill's trace in the report; the organizers
            # were paged before it came to this, by the OOM topic's oldest unacknowledged kill (infra/dropped_kills.tf).
            audit("kill dropped: publishing failed and the event is too old to retry", severity=logging.ERROR,
                  decision="dropped", reason=_failure(exc), event_id=queued.request.event_id,
                  instance=queued.request.instance.rsplit("/", 1)[-1])
            return IntakeOutcome(Intake.TOO_OLD, _failure(exc))
        raise
    _audit_queued(queued, message_id)
    return IntakeOutcome(queued.kind, queued.detail, message_id)


def _audit_queued(queued: _Queued, message_id: str) -> None:
    """The audit line of a published request; an alert's says how many of its writer's lines held back since its
    last one it counts (`folded`), so that on_oom's log adds up to what the alert says."""
    kind = queued.kind
    what = {Intake.KILL: "OOM kill queued", Intake.INTERRUPT: "watcher's line queued: a cell stopped, its kernel kept",
            Intake.GPU_FREED: "GPU guard's line queued: GPU memory held by a gone kernel's process freed",
            Intake.UNVERIFIED: "OOM kill queued unverified: its VM could not be checked",
            Intake.UNRESOLVED: "unresolved kill queued for an alert",
            Intake.REFUSED: "kill refused: it does not hold up; queued for an alert"}[kind]
    payload = queued.request.payload
    folded = {"folded": payload.folded} if isinstance(payload, AlertPayload) else {}
    audit(what, severity=logging.WARNING if kind in (Intake.REFUSED, Intake.UNVERIFIED) else logging.INFO,
          decision="refused" if kind is Intake.REFUSED else "queued", kind=kind.value, reason=queued.detail,
          event_id=queued.request.event_id, instance=queued.request.instance.rsplit("/", 1)[-1],
          message_id=message_id, **folded, **queued.provenance)


def _held_back(vetted: OomKill | UnresolvedKill | Refusal | Unverified, queued: _Queued, vm_id: str,
               floods: Floods | None, now: datetime) -> IntakeOutcome | _Queued:
    """The request to publish, or why none is: a watcher's line over its instance's for the minute (logged, counted
    by the next); an unverified kill over its instance's for the minute (logged; the
    next that passes carries the earliest kill time of those held, and a real kill leaves JupyterLab down for it
    to see); a kill only its VM id names, which Compute Engine could not check and is too old to retry (an ERROR;
    the dropped-kills alert fired while it waited unacknowledged); a line over its writer's alerts for the minute
    (logged, and counted by its writer's next alert, AlertPayload.folded)."""
    request = queued.request
    if isinstance(vetted, Refusal) and not vetted.checked:
        audit("kill dropped: only its VM id names it, Compute Engine could not be asked, and the event is too old "
              "to retry", severity=logging.ERROR, decision="dropped", reason=vetted.reason,
              event_id=request.event_id, vm_id=vm_id)
        return IntakeOutcome(Intake.TOO_OLD, vetted.reason)
    if floods is None or queued.kind is Intake.KILL:
        return queued
    with BUDGETS_LOCK:
        if queued.kind in (Intake.INTERRUPT, Intake.GPU_FREED):  # the guard's lines: one budget, forgeable alike
            return _kernel_kept_within_budget(queued, vm_id, floods, now)
        return _within_budget(vetted, queued, vm_id, floods, now)


def _kernel_kept_within_budget(queued: _Queued, vm_id: str, floods: Floods, now: datetime) -> IntakeOutcome | _Queued:
    """The watcher's line (a cell stopped, its kernel kept) against its instance's budget: never urgent, so one over
    it is only logged, and the next that passes says how many were held back since (its payload's `folded`)."""
    request = queued.request
    instance = request.instance.rsplit("/", 1)[-1]
    held = floods.kernel_kept.take(instance, now.timestamp())
    if held is None:
        audit("watcher line folded: its instance had its interrupts for the minute; the next one counts it",
              decision="folded", kind=queued.kind.value, reason=queued.detail, event_id=request.event_id,
              instance=instance, vm_id=vm_id)
        return IntakeOutcome(Intake.FOLDED, queued.detail)
    folded = replace(request.payload_as(InterruptedPayload), folded=min(held, 10_000))
    return replace(queued, request=replace(request, payload=folded))


def _within_budget(vetted: OomKill | UnresolvedKill | Refusal | Unverified, queued: _Queued, vm_id: str,
                   floods: Floods, now: datetime) -> IntakeOutcome | _Queued:
    """_held_back's budgets: an unverified kill against its instance's, a line to alert on against its writer's."""
    request = queued.request
    if isinstance(vetted, Unverified):
        passed = floods.unverified.admit(vetted.kill.instance.name, now.timestamp(), killed_at=request.kill_time)
        if passed is not None:
            floods.redelivering.pop(vetted.kill.instance.name, None)
            earliest = passed[1] or vetted.kill.killed_at
            return replace(queued, request=request.with_kill(replace(vetted.kill, killed_at=earliest)))
        first = floods.keep_redelivering(vetted.kill.instance.name, request.event_id)
        audit("unverified kill folded: its instance had its unverified kills for the minute", decision="folded",
              severity=logging.WARNING, reason=vetted.reason, event_id=request.event_id, redelivered=first,
              instance=vetted.kill.instance.name, vm_id=vm_id)
        if first and now - vetted.kill.killed_at <= RETRY_FOLDED_FOR:
            # The first held back since the last that passed comes again (Eventarc redelivers it), so that one line
            # of the interval passes even if no other comes: a real kill among them is never left behind.
            return IntakeOutcome(Intake.HELD, "unverified kill held back; redelivered to pass a later interval")
        return IntakeOutcome(Intake.FOLDED, queued.detail)
    alert = request.payload_as(AlertPayload)
    source = alert.writer or "an id no VM has"
    held = floods.alerts.take(source, now.timestamp())
    if held is None:
        audit("kill line not alerted: its writer is over its alerts for the minute; the next alert counts it",
              severity=logging.WARNING, decision="refused", kind=queued.kind.value, reason=queued.detail,
              writer=source, event_id=request.event_id, vm_id=vm_id)
        return IntakeOutcome(Intake.FLOODED, queued.detail)
    return replace(queued, request=replace(request, payload=replace(alert, folded=min(held, 10_000))))


def _vetted_or_raised(read: KillEntry, *, settings: Settings, vm_names: VmNames,
                      retry: bool) -> OomKill | UnresolvedKill | Refusal | Unverified:
    """vet(), with Compute Engine's failures decided. Its failure (quota, 5xx, a timeout, no permission) says
    nothing about the line, so it never refuses one: a kill that names its instance goes on unverified, at once
    (the adapter has retried within its call; the worker acts on it only if JupyterLab is down); one that only
    the VM id can name is raised while young, so Eventarc redelivers it, and once too old, dropped with an ERROR
    (the dropped-kills alert fired while it waited unacknowledged). A forger gains nothing from a Compute outage:
    an unverified line resets only a notebook whose JupyterLab is already down, which its owner's /restart-notebook
    would reset too."""
    try:
        return vet(read, settings=settings, vm_names=vm_names)
    except Exception as exc:  # whatever Compute Engine's failure, it is no statement about the line
        reason = f"Compute Engine could not be asked for the VM: {describe_error(exc)}"
        if isinstance(read.kill, OomKill):
            return Unverified(read.kill, reason)
        if retry and isinstance(exc, TransientError):
            raise
        return Refusal(reason, read.kill.line, read.origin.raw_entry, read.kill.killed_at, read.kill.insert_id, "",
                       checked=False)


@dataclass(frozen=True)
class _Queued:
    request: RestartRequest
    kind: Intake  # KILL, INTERRUPT (the watcher's line), UNVERIFIED, UNRESOLVED or REFUSED
    detail: str
    provenance: dict[str, Any]


def _queued(vetted: OomKill | UnresolvedKill | Refusal | Unverified, origin: EntryOrigin, event_id: str) -> _Queued:
    """The request for a vetted kill: a restart, or an alert that says why not.

    The event's age counts from the kill's time, which is never later than Logging's receipt: neither a VM clock
    running ahead nor a forged timestamp keeps a kill young, retried here or waited on by the worker."""
    if isinstance(vetted, Unverified):
        queued = _queued(vetted.kill, origin, event_id)
        payload = queued.request.payload
        if isinstance(payload, RestartPayload | InterruptedPayload):
            payload = replace(payload, unverified=vetted.reason[:300])
        return replace(queued, request=replace(queued.request, payload=payload), kind=Intake.UNVERIFIED,
                       provenance={**queued.provenance, "unverified": vetted.reason})
    occurred, received = vetted.killed_at, origin.received_at
    if isinstance(vetted, OomKill):
        # The watcher's interrupt is vetted as a kill is, and queued as what it is: no restart can come of it.
        action, trigger, payload = ((Action.INTERRUPTED, Trigger.WATCHER, InterruptedPayload(vetted, received))
                                    if vetted.form in GUARD_FORMS
                                    else (Action.RESTART, Trigger.OOM, RestartPayload(vetted, received)))
        request = RestartRequest(action=action, trigger=trigger, instance=vetted.instance.full_name,
                                 requested_at=occurred, event_id=vetted.insert_id or event_id, payload=payload)
        provenance: dict[str, Any] = {"named_by": vetted.named_by, "vm_id": vetted.vm_id}
        if vetted.dated_at is not None:
            provenance |= {"dated_at": iso(vetted.dated_at), "received_at": iso(received),
                           "clock": "the entry is dated after Cloud Logging received it: taken at its receipt"}
        kind = (Intake.KILL if action is not Action.INTERRUPTED
                else Intake.GPU_FREED if vetted.form == GPU_FREED_FORM else Intake.INTERRUPT)
        return _Queued(request, kind, f"{vetted.process} pid {vetted.pid} on {vetted.instance.name}", provenance)
    request = RestartRequest(action=Action.ALERT, trigger=Trigger.UNRESOLVED, instance="", requested_at=occurred,
                             event_id=vetted.insert_id or event_id,
                             payload=AlertPayload(raw_entry=_without_vm_id(vetted.raw_entry, origin),
                                                  note=_without_vm_id(vetted.reason, origin), received_at=received))
    if isinstance(vetted, Refusal):
        return _Queued(request, Intake.REFUSED, vetted.reason, {"named": vetted.named, "vm_id": origin.vm_id})
    return _Queued(request, Intake.UNRESOLVED, vetted.reason, {})


def _without_vm_id(raw: str, origin: EntryOrigin) -> str:
    """The entry as the organizers' channel shows it: without the writer's VM id, the one value a forger needs
    to pass the VM check (the alert names the writer's VM instead; the audit record keeps the id)."""
    vm_id = origin.vm_id
    return raw.replace(vm_id, "(VM id: in the audit log)") if vm_id else raw


def _writer(vetted: OomKill | UnresolvedKill | Refusal | Unverified, origin: EntryOrigin, settings: Settings,
            vm_names: VmNames) -> str:
    """The name of the VM that wrote a line the bot can't act on (its id's VM), "" when no VM has the id or it
    could not be asked: the alert's group (each writer fills only its own) and the writer it names."""
    if isinstance(vetted, Refusal) and vetted.writer:
        return vetted.writer
    project, zone = origin.project, origin.zone
    if settings.in_scope(project, zone) or not ZONE_RE.fullmatch(zone):
        return ""
    try:
        return check_writer(vm_names, project, zone, origin.vm_id, "").name
    except Exception:  # noqa: BLE001 - unknown writer: the group of lines no VM can be named for
        return ""


def _failure(exc: Exception) -> str:
    """A publish failure in one word: Pub/Sub's status (NOT_FOUND, DEADLINE_EXCEEDED), else the exception's class."""
    return exc.status if isinstance(exc, ServiceError) else type(exc).__name__
