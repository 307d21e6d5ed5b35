"""The health sweep's two lines of `make doctor` (issue 42): its Cloud Scheduler job exists, is ENABLED and
publishes to the sweep topic (`sweep.job`), and the guard's heartbeat of every ACTIVE notebook is fresh
(`heartbeat.<notebook>`: fresh, stale, missing or unreadable, each with its fix).

The heartbeat is read with the guard's other guest attributes (tools/doctor/guard.py, one read per notebook) and
parsed by the bot's own reader (shared/core/heartbeat.py), so the doctor calls fresh exactly what the sweep does.
"""

from __future__ import annotations

from datetime import datetime

from shared.core.causes import CauseConfig, diagnose
from shared.core.heartbeat import HEARTBEAT_KEY, Freshness, Heartbeat, freshness, parse
from tools.doctor.deployment import Deployment
from tools.doctor.model import CheckResult, Instance, Observed, ReadError, SchedulerJob, fail, ok, warn
from tools.doctor.verdicts import absent_or_unread

SILENT_AFTER = CauseConfig().silent_after  # HEARTBEAT_SILENT_SECONDS' default: the sweep's own limit
GUARD_DOCS = "docs/policy.md, \"The guard's heartbeat and the cause of an outage\""


def sweep_job_checks(dep: Deployment, seen: Observed) -> list[CheckResult]:
    """`sweep.job`: without it (or paused) no notebook is swept, and outages without a kill line go unseen."""
    job, name = seen.sweep_job, dep.names.sweep_job
    location = name.split("/")[3]
    if not isinstance(job, SchedulerJob):
        return [absent_or_unread("sweep.job", job, f"the health sweep's Cloud Scheduler job {name} does not exist: "
                                 "no notebook is swept", f"Cloud Scheduler job {name}",
                                 "roles/cloudscheduler.viewer on the project")]
    if job.state != "ENABLED":
        return [fail("sweep.job", f"the health sweep's job is {job.state}: no notebook is swept until it runs",
                     f"gcloud scheduler jobs resume {name.rsplit('/', 1)[-1]} --location {location}")]
    if job.topic != dep.names.sweep_topic:
        return [fail("sweep.job", f"the health sweep's job publishes to {job.topic or 'nothing'}, not to "
                     f"{dep.names.sweep_topic}", "terraform -chdir=infra apply (infra/sweep.tf)")]
    return [ok("sweep.job", f"the health sweep's job is ENABLED ({job.schedule}) and publishes to "
               f"{dep.names.sweep_topic}")]


def heartbeat_checks(instances: list[Instance] | ReadError | None, guards: dict[str, dict[str, str] | ReadError],
                     now: datetime) -> list[CheckResult]:
    """`heartbeat.<notebook>`, one line per ACTIVE notebook (a stopped one writes none; its guard line says so)."""
    if not isinstance(instances, list):
        return []
    return [_heartbeat(i, guards.get(i.name), now) for i in sorted(instances, key=lambda i: i.name)
            if i.state == "ACTIVE" and not isinstance(guards.get(i.name), ReadError)]


def _heartbeat(instance: Instance, found: dict[str, str] | ReadError | None, now: datetime) -> CheckResult:
    key, name = f"heartbeat.{instance.name}", instance.name
    attributes = found if isinstance(found, dict) else {}
    beat = parse(attributes.get(HEARTBEAT_KEY), now)
    seen = freshness(beat, now, SILENT_AFTER)
    if seen is Freshness.MISSING:
        return warn(key, f"{name}: no heartbeat: its guard predates it, is not installed, or guest attributes are "
                    "off; the sweep judges it on Workbench's health alone",
                    f"apply infra/contest with the guard on, then stop and start the notebook ({GUARD_DOCS})")
    if not isinstance(beat, Heartbeat):
        return fail(key, f"{name}: its heartbeat is not the guard's shape (written by something else in the VM)",
                    "stop and start the notebook (the guard writes it again every minute); if it stays, "
                    "ask its owner what writes guest attributes under notebook-medic/")
    age = int((now - beat.at).total_seconds() // 60)
    if seen is Freshness.STALE:
        return fail(key, f"{name}: its last heartbeat is {age} min old (#{beat.seq}): the VM or its guard stopped "
                    "answering; the sweep resets it as unresponsive",
                    "look at its serial console and `journalctl -u notebook-medic-heartbeat`; stop and start it")
    found_cause = diagnose(beat, None, attributes.get("gpu-state", ""), jupyter_down=False, running_since=None,
                           now=now, config=CauseConfig())
    said = (f"heartbeat #{beat.seq} {age} min ago: server {'answering' if beat.server_answering else 'silent'}, "
            f"{instance_unit(beat)}, disks {', '.join(f'{d.mount} {d.percent:.0f} %' for d in beat.disks)}, "
            f"{beat.kernels if beat.kernels is not None else '?'} kernels")
    if found_cause is not None:
        return fail(key, f"{name}: {said}; down: {found_cause.cause.value}",
                    f"the sweep acts on it within one interval ({GUARD_DOCS})")
    return ok(key, f"{name}: {said}")


def instance_unit(beat: Heartbeat) -> str:
    return f"jupyter unit {beat.unit_state or '?'}" + (f"/{beat.unit_result}" if beat.unit_result else "")
