"""The health sweep's shell (issue 42): list the contest's notebooks, find the outages (shared/core/sweep.py), and
queue each on the restart topic, where the one worker decides with the one policy.

Run every few minutes by Cloud Scheduler through a topic of its own (infra/sweep.tf). It reads only what Workbench
already holds (instances.list, one call a page per zone), and publishes only outages, and a filesystem check for
each notebook whose grown disk awaits one (its label: shared/core/disk_growth.py, issue 43): a healthy fleet costs one
list per zone and nothing else. A tick that arrives late (a redelivery, a backlog) is dropped: the next one is
already on its way and reads the fleet as it is then. A zone Workbench cannot list now is said in the audit and
left to the next tick; an outage is never lost, since it is read again from Workbench on every tick until the
worker has answered it (a restart since the report it rests on folds the later ticks: policy._decide_sweep).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from shared.adapters.audit import audit
from shared.adapters.clock import Clock
from shared.core import disk_growth
from shared.core.downtime import SWEEP_OUTAGE
from shared.core.models import Action, InstanceView, RestartRequest, Trigger
from shared.core.payloads import DiskGrowPayload, RestartPayload
from shared.core.sweep import Finding, Observation, SweepConfig, survey, to_read, with_evidence

log = logging.getLogger(__name__)


class Fleet(Protocol):
    def list(self, project: str, zones: tuple[str, ...]) -> list[InstanceView]: ...


class Guests(Protocol):
    def guest_attributes(self, project: str, zone: str, name: str) -> dict[str, str]: ...


class Queue(Protocol):
    def publish(self, request: RestartRequest) -> str: ...


@dataclass(frozen=True)
class SweepResult:
    """What one tick did: every notebook's finding counted, the outages queued, the zones it could not read."""

    findings: Counter[Finding] = field(default_factory=Counter)
    queued: tuple[str, ...] = ()  # the instances whose outage was published
    unlisted: tuple[str, ...] = ()  # zones Workbench did not list this tick
    unqueued: tuple[str, ...] = ()  # outages whose publish failed: the next tick reads them again
    evidence_read: int = 0  # notebooks whose guard's guest attributes were read (getGuestAttributes)
    evidence_failed: int = 0  # ... and could not be: judged on Workbench's health alone this tick
    late: bool = False  # the tick was too old to act on


def sweep(
    tick_time: datetime, *, workbench: Fleet, queue: Queue, project: str, zones: tuple[str, ...], clock: Clock,
    config: SweepConfig, max_tick_age: timedelta, guests: Guests | None = None,
) -> SweepResult:
    """One tick: `tick_time` is when Cloud Scheduler's message was published (kept by every redelivery)."""
    now = clock.now()
    if now - tick_time > max_tick_age:
        audit("health sweep skipped: its tick is late", severity=logging.WARNING, decision="dropped",
              reason=f"{int((now - tick_time).total_seconds())} s old, over {int(max_tick_age.total_seconds())} s")
        return SweepResult(late=True)
    instances: list[InstanceView] = []
    unlisted: list[str] = []
    for zone in zones:  # one zone at a time: one that fails leaves the others' outages to act on
        try:
            instances.extend(workbench.list(project, (zone,)))
        except Exception as exc:  # noqa: BLE001 - whatever Workbench answered, the next tick reads this zone again
            unlisted.append(zone)
            log.warning("health sweep: %s could not be listed: %s", zone, exc)
    seen = survey(instances, now, config)
    checks = queue_disk_checks(instances, queue, now, tick=int(tick_time.timestamp()))
    read, failed = 0, 0
    if guests is not None:
        seen, read, failed = read_evidence(seen, guests, project, clock, config, tick=int(tick_time.timestamp()))
    queued, unqueued = [], []
    for observation in (o for o in seen if o.is_outage):
        found(observation)
        try:
            queue.publish(incident(observation, now))
            queued.append(observation.instance.ref.name)
        except Exception as exc:  # noqa: BLE001 - one failed publish must not cost the other outages theirs
            unqueued.append(observation.instance.ref.name)
            log.warning("health sweep: the outage of %s was not queued: %s", observation.instance.ref.name, exc)
    result = SweepResult(Counter(o.finding for o in seen), tuple(queued), tuple(unlisted), tuple(unqueued),
                         read, failed)
    audit("health sweep", decision="swept", notebooks=len(seen), outages=len(queued) + len(unqueued),
          evidence_read=read, evidence_failed=failed, disk_checks=checks,
          queued=",".join(queued)[:1000], unqueued=",".join(unqueued)[:1000], unlisted=",".join(unlisted),
          **{f"found_{finding.value.replace('-', '_')}": count for finding, count in result.findings.items()},
          severity=logging.WARNING if unlisted or unqueued else logging.INFO)
    return result


def queue_disk_checks(instances: list[InstanceView], queue: Queue, now: datetime, *, tick: int) -> int:
    """A DISK_CHECK for each notebook whose grown disk's filesystem is still to be seen grown (its label
    disk_growth.GROWN_LABEL: issue 43), the worker's to decide; how many were queued. A failed publish is left to
    the next tick, which finds the label again."""
    queued = 0
    for view in instances:
        pending = disk_growth.read(view.labels)
        if pending is None:
            continue
        try:
            queue.publish(RestartRequest(
                action=Action.DISK_CHECK, trigger=Trigger.SWEEP, instance=view.ref.full_name, requested_at=now,
                event_id=f"disk-check:{view.ref.name}:{tick}",
                payload=DiskGrowPayload(boot=pending.boot, size_gb=pending.new_gb)))
            queued += 1
        except Exception as exc:  # noqa: BLE001 - one failed publish must not cost the others theirs
            log.warning("health sweep: the filesystem check of %s was not queued: %s", view.ref.name, exc)
    return queued


def found(observation: Observation) -> None:
    """The sweep's own sighting of one outage, before it is queued: where the report's downtime by cause starts it
    (shared/core/downtime.py), at the bot's time, whatever the notebook's health report claims for its own."""
    view = observation.instance
    audit("health sweep found an outage", decision=SWEEP_OUTAGE, instance=view.ref.name, owner=view.owner_email,
          cause=observation.finding.value if observation.diagnosis is None else observation.diagnosis.cause.value,
          event_id=observation.incident_key, trigger=Trigger.SWEEP.value)


def incident(observation: Observation, now: datetime) -> RestartRequest:
    """The restart request for one outage: automatic, its cause read again by the worker when it looks."""
    return RestartRequest(
        action=Action.RESTART, trigger=Trigger.SWEEP, instance=observation.instance.ref.full_name,
        requested_at=now, event_id=observation.incident_key,
        payload=RestartPayload(
            reported_at=observation.reported_at,
            cause="" if observation.diagnosis is None else observation.diagnosis.cause.value,
            evidence="" if observation.diagnosis is None else observation.diagnosis.evidence),
    )


def read_evidence(seen: list[Observation], guests: Guests, project: str, clock: Clock, config: SweepConfig,
                  tick: int) -> tuple[list[Observation], int, int]:
    """The guard's guest attributes of the notebooks to_read chooses, `evidence_concurrency` at a time and at most
    `evidence_per_minute` a minute (the clock waits out the rest of a minute between batches); each observation
    with the cause they show. A read that fails leaves its notebook to Workbench's health alone, this tick."""
    chosen = to_read(seen, config.evidence_reads, tick // max(1, int(config.interval.total_seconds())))
    found: dict[str, Mapping[str, str]] = {}
    failed = 0
    per_minute = max(1, config.evidence_per_minute)

    def one(observation: Observation) -> tuple[str, Mapping[str, str] | None]:
        ref = observation.instance.ref
        try:
            return ref.full_name, guests.guest_attributes(ref.project or project, ref.zone, ref.name)
        except Exception as exc:  # noqa: BLE001 - one VM's answer must not cost the others theirs
            log.warning("health sweep: the guest attributes of %s were not read: %s", ref.name, exc)
            return ref.full_name, None

    with ThreadPoolExecutor(max_workers=max(1, config.evidence_concurrency)) as pool:
        for start in range(0, len(chosen), per_minute):
            began = clock.monotonic()
            for name, attributes in pool.map(one, chosen[start:start + per_minute]):
                if attributes is None:
                    failed += 1
                else:
                    found[name] = attributes
            if start + per_minute < len(chosen):
                clock.sleep(max(0.0, 60.0 - (clock.monotonic() - began)))
    now = clock.now()
    judged = [with_evidence(o, found[o.instance.ref.full_name], now, config)
              if o.instance.ref.full_name in found else o for o in seen]
    return sorted(judged, key=lambda o: (not o.is_outage, o.instance.ref.full_name)), len(found), failed
