"""(f) Instance names with injection attempts, at every door a name comes in by.

Quotes, newlines, path segments, filter syntax (`name="x" OR 1`), Unicode look-alikes, 10 kB strings:
each is checked at the core (validation, resource-name parsing in every segment, /restart-notebook
parsing, LogEntry resolution by label and by syslog host), then pushed to the Worker as an otherwise
valid request. (Button values made of the same names: test_slack.py.) The Worker's
Workbench simulator holds no instances, so every valid name is a 404: what matters is that no request
path was ever built from a name that is not valid, and that nothing was reset.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import strategies as st

from shared.app.worker import Worker
from shared.core.commands import Verb, parse_command
from shared.core.models import InstanceRef, OomKill, is_valid_instance_name
from shared.core.oom_parse import UnresolvedKill
from tests.property.budget import run
from tests.property.conftest import AuditCapture, Sims, has_reason
from tests.property.hostile import (
    NAME_LABEL,
    NAMES,
    NOW,
    PROJECT,
    SEEDS,
    ZONE,
    edited,
    full_name,
    valid_name,
    valid_project,
    valid_zone,
)
from tests.property.hostile_events import b64, dumps
from tests.property.hostile_requests import on_the_wire
from tests.property.test_restart_push import make_worker
from tests.support import kill_of

Record = Callable[[str, object], None]


def entry_with(name: Any = None, line: str = "Out of memory: Killed process 1 (python)") -> dict[str, Any]:
    entry: dict[str, Any] = {
        "resource": {"type": "gce_instance", "labels": {"zone": ZONE, "project_id": PROJECT}},
        "logName": f"projects/{PROJECT}/logs/syslog",  # the kernel's log: the line is read as a kill
        "textPayload": line,
    }
    if name is not None:
        entry["labels"] = {NAME_LABEL: name}
    return entry


def check_core(name: str, zone: str, project: str) -> None:
    valid = valid_name(name)
    assert is_valid_instance_name(name) == valid, name

    # Constructing and parsing references: valid exactly when every part is.
    try:
        ref = InstanceRef(PROJECT, ZONE, name)
    except ValueError as exc:
        assert not valid and str(exc).strip(), name
    else:
        assert valid and ref.name == name
    for text, ok in (
        (full_name(name), valid),
        (full_name("wb-alice", zone=zone), valid_zone(zone)),
        (full_name("wb-alice", project=project), valid_project(project)),
    ):
        try:
            parsed = InstanceRef.parse(text)
        except ValueError as exc:
            assert not ok and str(exc).strip(), text
        else:
            assert ok and parsed.full_name == text, text

    # /restart-notebook <name>: a target only ever a valid name, and the very word typed.
    command = parse_command(name)
    if command.target is not None:
        assert valid_name(command.target) and command.target in name.split(), command
    if command.verb is Verb.USAGE:
        assert command.problem.strip() and command.target is None

    # A LogEntry naming the VM by label: the instance is that name, or a reason why not.
    resolved = kill_of(entry_with(name), fallback_time=NOW)
    if isinstance(resolved, OomKill):
        assert valid and resolved.instance.name == name, (name, resolved)
    elif isinstance(resolved, UnresolvedKill) and resolved.nameless:  # an empty label: named from the VM id, or not
        assert not name.strip() and resolved.reason.strip(), (name, resolved)
    else:
        assert isinstance(resolved, UnresolvedKill) and resolved.reason.strip() and not valid, (name, resolved)

    # ... or only by the host in the syslog prefix (no label): the host's first label, lowercased (hosts are
    # case-insensitive; "wb-alice.c.project.internal" is wb-alice), and valid; or a reason.
    line = f"Nov 20 04:12:33 {name} kernel: Out of memory: Killed process 1 (python)"
    resolved = kill_of(entry_with(None, line), fallback_time=NOW)
    if isinstance(resolved, OomKill):
        host = name.split(maxsplit=1)[0] if name.split() else ""
        named = resolved.instance.name
        assert valid_name(named) and named == host.split(".")[0].lower(), (name, resolved)
    else:
        assert isinstance(resolved, UnresolvedKill) and resolved.reason.strip(), (name, resolved)


def test_names_at_every_door(record_property: Record) -> None:
    def check(example: tuple[str, int]) -> None:
        name, seed = example
        # The same attacks on the zone and project segments, derived from the name's draw.
        check_core(name, edited(ZONE, seed) if seed % 3 else name, edited(PROJECT, seed) if seed % 2 else name)

    run("name", "core", st.tuples(NAMES, SEEDS), check, record_property)


@pytest.fixture(scope="module")
def worker(sims: Sims) -> Worker:
    return make_worker(sims)


def test_names_pushed_to_the_worker(sims: Sims, worker: Worker, audit_log: AuditCapture, record_property: Record
                                    ) -> None:
    def check(name: str) -> None:
        request = on_the_wire({"action": "restart", "trigger": "oom", "instance": full_name(name),
                               "requested_at": "2026-11-20T04:12:33Z", "event_id": "1x9f", "kill": None})
        calls_before = len(sims.workbench.calls)
        audit_log.take()
        outcome = worker.handle_push({"message": {"data": b64(dumps(request))}})
        records = audit_log.take()
        calls = sims.workbench.calls[calls_before:]
        assert outcome.ack, outcome
        if valid_name(name):
            assert outcome.decision == "api-error", outcome  # 404: this Workbench has no instances at all
            paths = {urllib.parse.urlsplit(path).path for _method, path in calls}
            assert paths == {f"/v2/{full_name(name)}"}, paths
        else:
            assert outcome.decision == "rejected" and outcome.detail.strip(), outcome
            assert calls == [], f"a request path was built from {name[:80]!r}: {calls}"
            assert len(records) == 1 and has_reason(records[0]), records
        assert all(method == "GET" for method, _ in calls), calls

    run("name", "worker", NAMES, check, record_property)
    assert sims.resets() == 0 and sims.published() == 0
