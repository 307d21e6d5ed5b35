"""The health sweep (issue 42): of a fleet listing, which notebooks are down with no kill line naming them, and why.

A kill line is only one way for JupyterLab to go down; a full disk, a stopped proxy agent, a server that no longer
starts after a `pip install` or a VM that stopped answering leave no line in the kernel's log. Every few minutes the
bot lists the contest's notebooks and reads, for each, what Workbench already reports: the instance's state, its
`health_state` and the health agent's `health_info` (docs/fidelity.md, "Workbench health"). This module is the pure
part: one listing in, one finding per notebook out. What is down becomes an incident on the restart topic, where the
one worker decides with the one policy (backoff, pause, a person); what is not down is left alone, and says why.

Health is written by the VM's own agent, so by its root: a participant can make their own notebook look down (it is
then restarted, at the policy's pace) or well (it is then left alone); never another's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import StrEnum

from shared.core import disk_report, heartbeat
from shared.core.causes import CauseConfig, Diagnosis, diagnose
from shared.core.history import AutoMode, History
from shared.core.models import InstanceState, InstanceView

# Workbench's health agent reports about every 30 s (facts.md: `report-event-health`); ten minutes of silence is
# twenty missed reports, far past a slow agent and short of an afternoon lost.
DEFAULT_SILENT_AFTER = timedelta(minutes=10)

# On their way somewhere: Workbench is acting on them, or will; nothing of theirs is down yet.
IN_TRANSITION = frozenset({
    InstanceState.STARTING, InstanceState.PROVISIONING, InstanceState.STOPPING, InstanceState.UPGRADING,
    InstanceState.INITIALIZING, InstanceState.SUSPENDING,
})
AT_REST = frozenset({InstanceState.STOPPED, InstanceState.SUSPENDED})


class Finding(StrEnum):
    """What the sweep found of one notebook: the first three are outages, the rest are left alone."""

    JUPYTER_DOWN = "jupyter-down"  # the health agent says JupyterLab (or its API) is down
    UNHEALTHY = "unhealthy"  # health_state UNHEALTHY: a critical daemon of the VM is not running
    SILENT = "silent"  # ACTIVE, but no health report for too long: the VM or its agent stopped answering
    FINE = "fine"
    STOPPED = "stopped"  # at rest (idle shutdown, an organizer's stop): told "stopped", never "down"
    IN_TRANSITION = "in-transition"  # starting, stopping, being provisioned or upgraded
    WARMING_UP = "warming-up"  # running again only lately: its agent has not reported since
    NO_AGENT = "no-agent"  # no health agent installed: nothing to read, doctor says so
    OPTED_OUT = "opted-out"  # medic-auto=off: an organizer takes care of it
    PAUSED = "paused"  # automatic restarts paused (a crash loop, or an organizer): a person has it
    NO_REPORT = "no-report"  # no health report, and nothing says how long it has run: no evidence either way
    CAUSED = "caused"  # health looks fine, and the guard's evidence names an outage (causes.diagnose)
    GONE = "gone"  # deleted, or a state this release does not know


OUTAGES = frozenset({Finding.JUPYTER_DOWN, Finding.UNHEALTHY, Finding.SILENT, Finding.CAUSED})
# Whose guard's evidence is read: the outages (for their cause) and those that look fine (a heartbeat may say
# otherwise). The rest (stopped, starting, warming up, opted out, paused) are left alone whatever a guard wrote.
READ_EVIDENCE = frozenset({Finding.JUPYTER_DOWN, Finding.UNHEALTHY, Finding.SILENT, Finding.FINE})


@dataclass(frozen=True)
class SweepConfig:
    silent_after: timedelta = DEFAULT_SILENT_AFTER
    # Cloud Scheduler's cadence (infra/sweep.tf): a tick older than this is dropped, the next one being due.
    interval: timedelta = timedelta(minutes=3)
    cause: CauseConfig = field(default_factory=CauseConfig)
    # getGuestAttributes reads per tick and per minute, outages first: Compute's default read quota is 1,500
    # requests a minute per project (compute.googleapis.com/read_requests, cloud.google.com/compute/docs/
    # api-rate-limits); 1,000 notebooks a 3-minute tick read at 500 a minute leave two thirds of it to the rest.
    evidence_reads: int = 1000
    evidence_per_minute: int = 500
    evidence_concurrency: int = 8


@dataclass(frozen=True)
class Observation:
    """One notebook as the sweep saw it: the finding, and the health report it rests on (None: no report at all)."""

    instance: InstanceView
    finding: Finding
    reported_at: datetime | None
    diagnosis: Diagnosis | None = None  # why, from the guard's evidence (None: it says nothing of it)

    @property
    def is_outage(self) -> bool:
        return self.finding in OUTAGES

    @property
    def incident_key(self) -> str:
        """The same outage seen by two sweeps (overlapping, or one redelivered) has one key: the instance and the
        report it rests on, so the worker folds the second into the first."""
        at = "never" if self.reported_at is None else self.reported_at.strftime("%Y%m%dT%H%M%S")
        why = "" if self.diagnosis is None else f":{self.diagnosis.cause.value}"
        return f"sweep:{self.instance.ref.full_name}:{self.finding.value}{why}:{at}"


def observe(instance: InstanceView, now: datetime, config: SweepConfig) -> Observation:
    """The finding for one notebook of a listing at `now`."""
    reported = instance.health_updated
    return Observation(instance, _finding(instance, reported, now, config), reported)


def survey(instances: Iterable[InstanceView], now: datetime, config: SweepConfig) -> list[Observation]:
    """Every notebook of a listing, outages first (then by name), so that a sweep cut short acts on what matters."""
    seen = [observe(instance, now, config) for instance in instances]
    return sorted(seen, key=lambda o: (not o.is_outage, o.instance.ref.full_name))


def _finding(instance: InstanceView, reported: datetime | None, now: datetime, config: SweepConfig) -> Finding:
    if instance.state in AT_REST:
        return Finding.STOPPED
    if instance.state in IN_TRANSITION:
        return Finding.IN_TRANSITION
    if instance.state is not InstanceState.ACTIVE:
        return Finding.GONE
    auto = History.from_labels(instance.labels).auto_mode
    if auto is AutoMode.OFF:
        return Finding.OPTED_OUT
    if auto is AutoMode.PAUSED:
        return Finding.PAUSED
    if instance.health_state == "AGENT_NOT_INSTALLED":
        return Finding.NO_AGENT
    if reported is None or now - reported >= config.silent_after:
        # A report older than the notebook's last change of state predates it (a stale report kept across a stop
        # and a start): the notebook has not yet been running long enough to be missed.
        since = instance.state_since
        if since is not None and now - since < config.silent_after:
            return Finding.WARMING_UP
        if reported is None and since is None:
            return Finding.NO_REPORT  # never called silent on no evidence
        return Finding.SILENT
    if "-1" in (instance.health_info.get("jupyterlab_status"), instance.health_info.get("jupyterlab_api_status")):
        return Finding.JUPYTER_DOWN
    if instance.health_state == "UNHEALTHY":
        return Finding.UNHEALTHY
    return Finding.FINE


def with_evidence(observation: Observation, attributes: Mapping[str, str], now: datetime,
                  config: SweepConfig) -> Observation:
    """The observation with the cause the guard's guest attributes show (heartbeat, disk-report, gpu-state).

    A cause found on a notebook that looks fine makes it an outage (CAUSED), its incident's time the heartbeat's:
    a restart since that beat answers it. Evidence on a notebook the sweep leaves alone changes nothing."""
    if observation.finding not in READ_EVIDENCE:
        return observation
    beat = heartbeat.parse(attributes.get(heartbeat.HEARTBEAT_KEY), now)
    found = cause_shown(observation, attributes, now, config)
    if found is None:
        return observation
    finding = Finding.CAUSED if observation.finding is Finding.FINE else observation.finding
    at = beat.at if isinstance(beat, heartbeat.Heartbeat) else observation.reported_at
    return replace(observation, finding=finding, reported_at=at, diagnosis=found)


def cause_shown(observation: Observation, attributes: Mapping[str, str], now: datetime,
                config: SweepConfig) -> Diagnosis | None:
    """The cause the guard's guest attributes show for the notebook as observed (causes.diagnose), whatever the
    finding: the sweep's reading of them (with_evidence), and a help ticket's (ticket_guard.py)."""
    beat = heartbeat.parse(attributes.get(heartbeat.HEARTBEAT_KEY), now)
    try:
        disk = disk_report.parse(attributes["disk-report"]) if attributes.get("disk-report") else None
    except ValueError:
        disk = None
    return diagnose(beat, disk, attributes.get("gpu-state", "")[:1000], jupyter_down=observation.is_outage,
                    running_since=observation.instance.state_since, now=now, config=config.cause)


def to_read(seen: list[Observation], budget: int, tick: int) -> list[Observation]:
    """Whose evidence this tick reads, at most `budget`: every outage first, then the notebooks that look fine,
    taken from a point that moves with the tick, so a fleet larger than the budget is read in turn."""
    outages = [o for o in seen if o.finding in READ_EVIDENCE and o.is_outage]
    fine = [o for o in seen if o.finding is Finding.FINE]
    room = max(0, budget - len(outages))
    start = (tick * room) % len(fine) if fine and room else 0
    return (outages + (fine[start:] + fine[:start])[:room])[:budget]
