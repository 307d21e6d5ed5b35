"""LogEntries as the agents on a Workbench VM write them (see ../shared/samples), for any instance and time."""

from __future__ import annotations

import itertools
import random
from datetime import UTC, datetime
from typing import Any

_counter = itertools.count(1)

FORMS = ("modern", "legacy", "cgroup")


def kill_line(form: str, *, host: str, pid: int, process: str, anon_rss_kb: int, at: datetime,
              syslog_prefix: bool = True) -> str:
    if form == "legacy":
        body = f"Out of memory: Kill process {pid} ({process}) score 951 or sacrifice child"
    elif form == "cgroup":
        body = (
            f"Memory cgroup out of memory: Killed process {pid} ({process}) total-vm:{anon_rss_kb * 2}kB, "
            f"anon-rss:{anon_rss_kb}kB, file-rss:1024kB, shmem-rss:0kB, UID:1000 pgtables:15000kB oom_score_adj:0"
        )
    else:
        body = (
            f"Out of memory: Killed process {pid} ({process}) total-vm:{anon_rss_kb * 2}kB, "
            f"anon-rss:{anon_rss_kb}kB, file-rss:0kB, shmem-rss:4kB, UID:1000 pgtables:30352kB oom_score_adj:0"
        )
    if not syslog_prefix:
        return body
    return f"{at.strftime('%b %d %H:%M:%S')} {host} kernel: [53211.918273] {body}"


def oom_entry(
    project: str,
    zone: str,
    name: str,
    *,
    at: datetime | None = None,
    form: str = "modern",
    pid: int | None = None,
    process: str = "python",
    anon_rss_kb: int = 15_235_516,
    ops_agent: bool = True,
    insert_id: str | None = None,
    with_name_label: bool = True,
) -> dict[str, Any]:
    """A kernel OOM-kill entry: Ops Agent (jsonPayload.message) or legacy agent (textPayload)."""
    at = at or datetime.now(UTC)
    pid = pid if pid is not None else random.randint(1000, 99999)
    line = kill_line(form, host=name, pid=pid, process=process, anon_rss_kb=anon_rss_kb, at=at,
                     syslog_prefix=ops_agent)
    return _entry(project, zone, name, at=at, line=line, ops_agent=ops_agent, insert_id=insert_id,
                  with_name_label=with_name_label)


def noise_entry(project: str, zone: str, name: str, line: str, *, at: datetime | None = None) -> dict[str, Any]:
    return _entry(project, zone, name, at=at or datetime.now(UTC), line=line, ops_agent=True)


def _entry(project: str, zone: str, name: str, *, at: datetime, line: str, ops_agent: bool,
           insert_id: str | None = None, with_name_label: bool = True) -> dict[str, Any]:
    stamp = at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    entry: dict[str, Any] = {
        "insertId": insert_id or f"sim{next(_counter):08d}{random.randint(0, 1 << 30):x}",
        "logName": f"projects/{project}/logs/syslog",
        "receiveTimestamp": stamp,
        "resource": {
            "type": "gce_instance",
            "labels": {"instance_id": str(abs(hash(name)) % 10**19), "project_id": project, "zone": zone},
        },
        "severity": "DEFAULT",
        "timestamp": stamp,
    }
    if with_name_label:
        entry["labels"] = {"compute.googleapis.com/resource_name": name}
    if ops_agent:
        entry["jsonPayload"] = {"message": line}
    else:
        entry["textPayload"] = line
    return entry
