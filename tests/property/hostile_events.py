"""Hostile events as hypothesis strategies: the times, LogEntries, Pub/Sub pushes and CloudEvents, and Monitoring
incidents that reach on_oom and on_memory_alert, built on the building blocks of hostile.py.

As in hostile.py: valid templates (real LogEntries, real notifications) with hostile parts put in, so the deep
paths are reached; hypothesis chooses the structure and the hostile parts, seeded generators fill in the bulk.
"""

from __future__ import annotations

import base64
import copy
import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import strategies as st

from simulators.entries import FORMS, noise_entry, oom_entry
from tests.property.hostile import (
    INJECTIONS,
    JUNK,
    NAME_LABEL,
    NAMES,
    NOW,
    PROJECT,
    PROJECTS,
    PUBSUB_EVENT_TYPE,
    SEEDS,
    TEN_KB,
    ZONE,
    ZONES,
    Path,
    field,
    hostile_text,
    huge,
    mutants,
    mutated,
    random_text,
    weighted,
)

# ---- times ---------------------------------------------------------------------------------------
# Strings that fit where a "time" is expected, and the ways they go wrong (RFC 3339 edge cases included).
EDGE_TIMES = (
    "0001-01-01T00:00:00+23:59", "9999-12-31T23:59:59-23:59", "9999-12-31T23:59:59.999999999Z",
    "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "9999-12-31T20:00:00+00:00", "0000-00-00T00:00:00Z",
    "2026-02-30T00:00:00Z", "2026-11-20T24:00:00Z", "2026-11-20T04:12:33+99:99", "2026-11-20T04:12:33.1234567890123Z",
    "2026-11-20 04:12:33", " 2026-11-20T04:12:33Z ", "２０２６-11-20T04:12:33Z", "2026-11-20T04:12:33+09:00",
    "1970-01-01T00:00:00Z", "2026-11-20T04:12:33-00:00", "now", "", "2026-11-20T04:12:33Z\n",
)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


RECENT_TIMES = st.integers(-7200, 7200).map(lambda s: _iso(NOW + timedelta(seconds=s)))


def random_time(rng: random.Random) -> str:
    return rng.choice(EDGE_TIMES) if rng.random() < 0.5 else _iso(NOW + timedelta(seconds=rng.randint(-7200, 7200)))
TIME_TEXT: st.SearchStrategy[str] = weighted(
    (3, st.sampled_from(EDGE_TIMES)),
    (3, RECENT_TIMES),
    (2, st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)).map(_iso)),
    (1, hostile_text),
)
TIMES: st.SearchStrategy[Any] = weighted((4, TIME_TEXT), (1, JUNK))

# ---- LogEntries ----------------------------------------------------------------------------------
KILL_TEMPLATES = (
    "Out of memory: Killed process {pid} ({proc}) total-vm:{n}kB, anon-rss:{m}kB, file-rss:0kB, shmem-rss:4kB",
    "Out of memory (oom_kill_allocating_task): Killed process {pid} ({proc})",
    "Out of memory: Kill process {pid} ({proc}) score {n} or sacrifice child",
    "Memory cgroup out of memory: Killed process {pid} ({proc}) total-vm:{n}kB, anon-rss:{m}kB, file-rss:0kB",
    "Memory cgroup out of memory: Kill process {pid} ({proc}) score {n} or sacrifice child",
    "out of memory: killed process {pid} ({proc})",
    "Out of memory: Killed process ({proc}) {pid}",
)
NOT_KILL_TEMPLATES = (
    "{proc} invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0, oom_score_adj=0",
    "oom_reaper: reaped process {pid} ({proc}), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB",
    "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),task={proc},pid={pid},uid=1000",
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate {n} MiB",
    "MemoryError: Unable to allocate {n} GiB for an array",
    "Out of memory: Killed process {pid} ({proc}) -- MemoryError",
)
ODD_NUMBERS = ("9" * 5000, "1" * 4301, "٣٤٥", "１２３", "00000000000000000001", "-1", "1e9", "0x10", "", "4194304")
PROCESSES = ("python", "python3", "jupyter-lab", "java", "a b", "x)", "(", ")", "((", "python (x)", "a" * 16, "a" * 17)
_LINE_TEMPLATES = KILL_TEMPLATES * 2 + NOT_KILL_TEMPLATES


def _number(rng: random.Random) -> str:
    return rng.choice(ODD_NUMBERS) if rng.random() < 0.2 else str(rng.randrange(2**rng.choice((8, 22, 40))))


def _kernel_line(seed: int, host: str) -> str:
    """A kernel line, kill or not, in any wording, with odd pids, process names and hosts, pieces injected."""
    rng = random.Random(seed)
    proc = rng.choice(PROCESSES) if rng.random() < 0.6 else random_text(rng, 18)
    line = rng.choice(_LINE_TEMPLATES).format(pid=_number(rng), proc=proc, n=_number(rng), m=_number(rng))
    prefix = rng.randrange(4)
    if prefix == 0:
        line = f"Nov 20 04:12:33 {host} kernel: [53211.918273] {line}"
    elif prefix == 1:
        line = f"2026-11-20T04:12:33.518204+00:00 {host} kernel: {line}"
    if rng.random() < 0.4:
        at = rng.randrange(len(line) + 1)
        line = line[:at] + rng.choice(INJECTIONS) + line[at:]
    if rng.random() < 0.05:
        line = huge(line + " ", TEN_KB * rng.randint(1, 4))
    return line


LOG_LINES: st.SearchStrategy[str] = weighted((9, st.builds(_kernel_line, SEEDS, NAMES)), (1, hostile_text))
"""Kernel lines: kills in every wording with hostile pids, process names and hosts, look-alikes, junk."""


def _entry_templates() -> tuple[dict[str, Any], ...]:
    entries = [
        oom_entry(PROJECT, ZONE, "wb-alice", at=NOW, form=form, pid=23817, insert_id="1x9f0a2g1abc3d",
                  ops_agent=ops_agent, with_name_label=label)
        for form in FORMS for ops_agent in (True, False) for label in (True, False)
    ]
    for template in NOT_KILL_TEMPLATES:
        line = template.format(pid=23817, proc="python", n=1024, m=0)
        entries.append({**noise_entry(PROJECT, ZONE, "wb-alice", line, at=NOW), "insertId": "2y8g1b3h2bcd4e"})
    return tuple(entries)


_RESOURCE_TYPES = st.sampled_from(
    ("gce_instance", "k8s_container", "cloud_run_revision", "gce_instance ", "GCE_INSTANCE", "global", "")
)
LOG_FIELDS: tuple[tuple[Path, st.SearchStrategy[Any]], ...] = (
    (("labels", NAME_LABEL), field(NAMES)),
    (("labels", NAME_LABEL), field(NAMES, 4)),
    (("labels",), field(JUNK)),
    (("resource", "labels", "zone"), field(ZONES)),
    (("resource", "labels", "project_id"), field(PROJECTS)),
    (("resource", "type"), field(_RESOURCE_TYPES)),
    (("resource",), field(JUNK)),
    (("logName",), field(PROJECTS.map(lambda p: f"projects/{p}/logs/syslog"))),
    (("timestamp",), field(TIMES)),
    (("receiveTimestamp",), field(TIMES)),
    (("insertId",), field(hostile_text)),
    (("jsonPayload", "message"), field(LOG_LINES)),
    (("jsonPayload", "message"), field(LOG_LINES, 4)),
    (("textPayload",), field(LOG_LINES)),
    (("jsonPayload",), field(JUNK)),
)
LOG_ENTRIES = mutants(_entry_templates(), LOG_FIELDS, most=4)
"""LogEntries as a sink publishes them (every agent and wording), then 0-4 fields made hostile or the wrong type."""

# ---- Pub/Sub messages and CloudEvents ------------------------------------------------------------


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def dumps(value: Any) -> bytes:
    return json.dumps(value).encode()


BAD_BASE64 = (
    "", "=", "====", "eyJ4IjoxfQ", "eyJ4IjoxfQ==\n", " eyJ4IjoxfQ==", "eyJ4I-oxfQ==", "eyJ4I_oxfQ==",
    "e\u00e9J4IjoxfQ==", "eyJ4IjoxfQ===", "!!!!", "ey JxIjoxfQ==", "\x00", "ｅｙＪ４ＩｊｏｘｆＱ＝＝",
)


def _broken_data(seed: int, junk: Any) -> Any:
    """A Pub/Sub message's `data` broken at one layer: base64, UTF-8, JSON, nesting, size, type."""
    rng = random.Random(seed)
    kind = rng.randrange(7)
    if kind == 0:
        return rng.choice(BAD_BASE64)
    if kind == 1:
        odd = (b"\xff\xfe{}", b"{", b"NaN", b"[]", b"null", bytes(rng.randrange(256) for _ in range(9)))
        return b64(rng.choice(odd))
    if kind == 2:
        return b64((rng.choice(("[", '{"a":')) * rng.choice((900, 5000, 100_000))).encode())
    if kind == 3:
        return b64(dumps(junk))
    if kind == 4:
        return b64(huge('{"a":', rng.choice((TEN_KB, 700_000))).encode())
    if kind == 5:
        return "A" * rng.choice((700_004, 1_000_004, 1_400_000))
    return junk


BROKEN_DATA = st.builds(_broken_data, SEEDS, JUNK)
LAYERS = st.integers(0, 11)
_EVENT_TYPES = weighted((1, hostile_text), (1, mutated(st.just(PUBSUB_EVENT_TYPE))))
EVENT_ID = "4210000000000001"
EVENT_TIME = "2026-11-20T04:12:35.402Z"


def pubsub_message(payload: Any) -> dict[str, Any]:
    return {
        "data": b64(dumps(payload)),
        "messageId": EVENT_ID,
        "publishTime": EVENT_TIME,
        "attributes": {"logging.googleapis.com/timestamp": "2026-11-20T04:12:33.518204Z"},
    }


def break_envelope(draw: st.DrawFn, layer: int, data: dict[str, Any]) -> Any:
    """Layers 4-7 of a Pub/Sub envelope broken (the others leave it whole)."""
    if layer == 4:
        return draw(JUNK)
    if layer == 5:
        data["message"] = draw(JUNK)
    elif layer == 6:
        data["message"]["data"] = draw(BROKEN_DATA)
    elif layer == 7:
        data["message"] = {key: draw(JUNK) for key in data["message"]}
    return data


@st.composite
def _cloudevents(draw: st.DrawFn, payloads: st.SearchStrategy[Any], subscription: str) -> tuple[str, str, str, Any]:
    data: dict[str, Any] = {"message": pubsub_message(draw(payloads)),
                            "subscription": f"projects/{PROJECT}/subscriptions/{subscription}"}
    event_type, event_id, event_time = PUBSUB_EVENT_TYPE, EVENT_ID, EVENT_TIME
    layer = draw(LAYERS)
    if layer == 1:
        event_type = draw(_EVENT_TYPES)
    elif layer == 2:
        event_time = draw(TIME_TEXT)
    elif layer == 3:
        event_id = draw(hostile_text)
    return event_type, event_id, event_time, break_envelope(draw, layer, data)


CLOUDEVENTS = _cloudevents(LOG_ENTRIES, "on-oom-eventarc")
"""(type, id, time, data) of a CloudEvent as functions-framework hands them to on_oom: one layer broken,
or none (then the LogEntry inside is the hostile part)."""

# ---- Monitoring incidents (on_memory_alert) ------------------------------------------------------
MEMORY_INCIDENT: dict[str, Any] = {
    "incident": {
        "incident_id": "0.nxbgwq4mvxo1",
        "scoping_project_id": PROJECT,
        "url": f"https://console.cloud.google.com/monitoring/alerting/incidents/0.nxbgwq4mvxo1?project={PROJECT}",
        "started_at": 1795993100,
        "ended_at": None,
        "state": "open",
        "summary": f"Memory utilization for {PROJECT} wb-alice is above the threshold of 90 with a value of 93.2.",
        "observed_value": "93.2",
        "threshold_value": "90",
        "resource": {"type": "gce_instance",
                     "labels": {"instance_id": "4410287765349125621", "project_id": PROJECT, "zone": ZONE}},
        "resource_type_display_name": "VM Instance",
        "resource_display_name": "wb-alice",
        "resource_name": f"{PROJECT} wb-alice",
        "metadata": {"system_labels": {"name": "wb-alice"}, "user_labels": {}},
        "metric": {"type": "agent.googleapis.com/memory/percent_used", "displayName": "Memory utilization"},
        "policy_name": "notebook-medic memory pressure",
        "condition_name": "VM Instance - Memory utilization",
    },
    "version": "1.2",
}


def _memory_templates() -> tuple[dict[str, Any], ...]:
    """Open and closed incidents as Monitoring publishes them (schema 1.2), the value as percent or fraction."""
    closed = copy.deepcopy(MEMORY_INCIDENT)
    closed["incident"].update(state="closed", ended_at=1795993700, observed_value="71.0")
    fraction = copy.deepcopy(MEMORY_INCIDENT)
    fraction["incident"]["observed_value"] = "0.932"
    named_by_metadata = copy.deepcopy(MEMORY_INCIDENT)
    named_by_metadata["incident"].pop("resource_display_name")
    return MEMORY_INCIDENT, closed, fraction, named_by_metadata


_STATES = weighted((3, st.sampled_from(("open", "closed", "OPEN", "Closed"))), (1, hostile_text))
_NUMBERS_AS_TEXT = weighted(
    (3, st.floats(allow_nan=True, allow_infinity=True).map(str)),
    (2, st.sampled_from(("93.2", "0.95", "100", "101", "-1", "1e308", "nan", "inf", "", " 93 ", "93,2"))),
    (1, hostile_text),
)
MEMORY_FIELDS: tuple[tuple[Path, st.SearchStrategy[Any]], ...] = (
    (("incident", "state"), field(_STATES)),
    (("incident", "resource", "type"), field(_RESOURCE_TYPES)),
    (("incident", "resource", "labels", "project_id"), field(PROJECTS)),
    (("incident", "resource", "labels", "zone"), field(ZONES)),
    (("incident", "resource", "labels"), field(JUNK)),
    (("incident", "resource"), field(JUNK)),
    (("incident", "resource_display_name"), field(NAMES, 4)),
    (("incident", "resource_name"), field(NAMES.map(lambda n: f"{PROJECT} {n}"))),
    (("incident", "metadata", "system_labels", "name"), field(NAMES)),
    (("incident", "metadata"), field(JUNK)),
    (("incident", "observed_value"), field(_NUMBERS_AS_TEXT)),
    (("incident", "started_at"), field(weighted((2, st.integers()), (1, TIME_TEXT)))),
    (("incident", "incident_id"), field(hostile_text)),
    (("incident", "policy_name"), field(hostile_text)),
    (("incident", "url"), field(hostile_text)),
    (("incident",), field(JUNK)),
    (("version",), field(hostile_text)),
)
MEMORY_INCIDENTS = mutants(_memory_templates(), MEMORY_FIELDS, most=4)
"""Monitoring notifications, then 0-4 fields made hostile or the wrong type."""

MEMORY_EVENTS = _cloudevents(MEMORY_INCIDENTS, "on-memory-alert-eventarc")
"""(type, id, time, data) of a CloudEvent as functions-framework hands them to on_memory_alert."""
