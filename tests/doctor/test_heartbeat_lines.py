"""`make doctor`'s health-sweep lines (issue 42): the sweep's Cloud Scheduler job (read over REST from the
Cloud Scheduler stand-in, simulators/cloud_scheduler.py) and the guard's heartbeat of every ACTIVE notebook (read
with the guard's attributes from the Compute simulator): each broken in turn turns its line, and only its line,
⚠/✗ with the fix."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import pytest

from shared.core.heartbeat import HEARTBEAT_KEY
from simulators import cloud_scheduler
from tests.doctor.conftest import FLEET, diagnose, not_ok
from tests.doctor.test_guard import full
from tools.doctor.guard import NAMESPACE
from tools.doctor.local import LocalDeployment, guard_ok_now, heartbeat_now
from tools.doctor.model import Status

pytestmark = pytest.mark.wire


@contextmanager
def heartbeat_of(local: LocalDeployment, name: str, beat: str | None) -> Iterator[None]:
    """The notebook's guard all well but for its heartbeat (None: none written), put back afterwards."""
    vm = full(local, name)
    values = {k: v for k, v in guard_ok_now().items() if k != HEARTBEAT_KEY}
    local.stack.compute.clear_guest_attributes(vm, NAMESPACE)
    local.stack.compute.set_guest_attributes(vm, NAMESPACE, values | ({} if beat is None else {HEARTBEAT_KEY: beat}))
    try:
        yield
    finally:
        local.stack.compute.clear_guest_attributes(vm, NAMESPACE)
        local.stack.compute.set_guest_attributes(vm, NAMESPACE, guard_ok_now())


def beat_with(**changes: object) -> str:
    return json.dumps(json.loads(heartbeat_now()) | changes)


def test_every_running_notebook_has_a_fresh_heartbeat_line_and_the_sweeps_job_is_enabled(
        local: LocalDeployment) -> None:
    results = diagnose(local)
    lines = {key: r for key, r in results.items() if key.startswith("heartbeat.")}
    assert len(lines) == FLEET and all(r.status is Status.OK for r in lines.values()), lines
    assert "server answering, jupyter unit active/success" in lines["heartbeat.nb-00"].what
    assert results["sweep.job"].status is Status.OK and "ENABLED (*/3 * * * *)" in results["sweep.job"].what


@pytest.mark.parametrize(("beat", "status", "said", "fix"), [
    (None, Status.WARN, "no heartbeat", "stop and start the notebook"),
    (beat_with(at=int((datetime.now(UTC) - timedelta(hours=1)).timestamp())), Status.FAIL, "min old",
     "journalctl -u notebook-medic-heartbeat"),
    ('{"v": 1, "at": "soon"}', Status.FAIL, "not the guard's shape", "guest attributes under notebook-medic/"),
    (beat_with(server=0, unit="failed", result="exit-code"), Status.FAIL, "down: server-failing",
     "the sweep acts on it"),
])
def test_a_heartbeat_stale_missing_forged_or_saying_down_is_its_own_line(
        local: LocalDeployment, beat: str | None, status: Status, said: str, fix: str) -> None:
    with heartbeat_of(local, "nb-03", beat):
        results = diagnose(local)
    assert not_ok(results) == {"heartbeat.nb-03": status}
    assert said in results["heartbeat.nb-03"].what and fix in results["heartbeat.nb-03"].fix


@pytest.mark.parametrize(("state", "said", "fix"), [
    ("PAUSED", "is PAUSED", "gcloud scheduler jobs resume"),
    (None, "does not exist", "terraform"),
])
def test_a_paused_or_missing_sweep_job_fails_with_its_fix(local: LocalDeployment, state: str | None, said: str,
                                                          fix: str) -> None:
    jobs, name = local.cloud.scheduler_jobs, local.deployment.names.sweep_job
    kept = jobs.pop(name)
    if state is not None:
        jobs[name] = cloud_scheduler.job(name, local.deployment.names.sweep_topic, "*/3 * * * *", state=state)
    try:
        results = diagnose(local)
    finally:
        jobs[name] = kept
    assert not_ok(results) == {"sweep.job": Status.FAIL}
    assert said in results["sweep.job"].what and fix in results["sweep.job"].fix


def test_a_stopped_notebook_has_no_heartbeat_line_and_its_guard_line_says_why(local: LocalDeployment) -> None:
    """A stopped VM writes no heartbeat: one line per ACTIVE notebook, none for it (not a ✗ to chase)."""
    instance = local.stack.workbench._instances[full(local, "nb-02")]
    instance.data["state"] = "STOPPED"
    try:
        results = diagnose(local)
    finally:
        instance.data["state"] = "ACTIVE"
    lines = {key for key in results if key.startswith("heartbeat.")}
    assert len(lines) == FLEET - 1 and "heartbeat.nb-02" not in lines
    assert not_ok(results) == {"guard.nb-02": Status.WARN} and "STOPPED" in results["guard.nb-02"].what


def test_a_sweep_job_publishing_to_another_topic_fails_with_its_fix(local: LocalDeployment) -> None:
    jobs, name = local.cloud.scheduler_jobs, local.deployment.names.sweep_job
    kept = jobs[name]
    jobs[name] = cloud_scheduler.job(name, "projects/contest-prj/topics/elsewhere", "*/3 * * * *")
    try:
        results = diagnose(local)
    finally:
        jobs[name] = kept
    assert not_ok(results) == {"sweep.job": Status.FAIL}
    assert "topics/elsewhere" in results["sweep.job"].what and results["sweep.job"].fix
