"""LogEntries as the agents on a Workbench VM write them (see ../shared/samples), for any instance and time.

Each SHAPE is one live way a kernel line reaches Cloud Logging (docs/fidelity.md names the sources):
- "ops-agent": the Ops Agent's default syslog receiver, the whole rsyslog line in jsonPayload.message, logs/syslog;
- "journald": the Ops Agent's systemd_journald receiver, the bare kernel text in jsonPayload.MESSAGE (upper case)
  beside the journal's fields, logs/systemd_logs (ops-agent PR 226);
- "legacy-agent": the legacy Logging agent, the line without a syslog prefix in textPayload, logs/syslog;
- "legacy-agent-json": the legacy agent's parsed syslog, jsonPayload.{message,hostname,pid,ident}, logs/syslog;
- "serial": serial-port logging, textPayload "[uptime] line" with no host and the escaped text `\\r\\n` at its end,
  label is_text_escaped="true", severity INFO (2i2c-org/infrastructure#2359).
Every agent adds the label compute.googleapis.com/resource_name; resource.labels carry the VM's id, zone and project.
"""

from __future__ import annotations

import itertools
import random
from datetime import UTC, datetime
from typing import Any

from simulators.compute import simulated_vm_id

_counter = itertools.count(1)

FORMS = ("modern", "legacy", "cgroup")
SHAPES = ("ops-agent", "journald", "legacy-agent", "legacy-agent-json", "serial")
SERIAL_LOG = "serialconsole.googleapis.com%2Fserial_port_1_output"
_LOG_OF = {"ops-agent": "syslog", "journald": "systemd_logs", "legacy-agent": "syslog", "legacy-agent-json": "syslog",
           "serial": SERIAL_LOG}


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
    shape: str = "",
    insert_id: str | None = None,
    with_name_label: bool = True,
    vm_id: str | None = None,
) -> dict[str, Any]:
    """A kernel OOM-kill entry in one SHAPE (default: the Ops Agent's syslog, or the legacy agent's textPayload
    when ops_agent=False). `vm_id`: the resource's instance_id, by default the simulated VM's of that name."""
    at = at or datetime.now(UTC)
    shape = shape or ("ops-agent" if ops_agent else "legacy-agent")
    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r}")
    pid = pid if pid is not None else random.randint(1000, 99999)
    line = kill_line(form, host=name, pid=pid, process=process, anon_rss_kb=anon_rss_kb, at=at,
                     syslog_prefix=shape == "ops-agent")
    return _entry(project, zone, name, at=at, line=line, shape=shape, insert_id=insert_id,
                  with_name_label=with_name_label, vm_id=vm_id)


def watcher_line(pid: int, *, refused: bool = False) -> str:
    """The OOM guard's watcher's line for a kernel whose cell it stopped (its LOG_FORMAT, issue 32), or, `refused`,
    whose allocation it refused (issue 40); bytes, as the watcher writes them. The entry: noise_entry's."""
    if refused:
        return (f"notebook-medic-watcher: refused allocation kernel pid={pid} (python3) asked=12884901888 "
                "left=1073741824 usage=15032385536 limit=16106127360 cgroup=/system.slice/jupyter.service")
    return (f"notebook-medic-watcher: interrupted kernel pid={pid} (python3) rss=15032385536 growth=104857600 "
            "usage=15500000000 limit=16106127360 threshold=0.93 cgroup=/system.slice/jupyter.service")


def noise_entry(project: str, zone: str, name: str, line: str, *, at: datetime | None = None,
                log: str = "syslog") -> dict[str, Any]:
    entry = _entry(project, zone, name, at=at or datetime.now(UTC), line=line, shape="ops-agent")
    entry["logName"] = f"projects/{project}/logs/{log}"
    return entry


def _entry(project: str, zone: str, name: str, *, at: datetime, line: str, shape: str,
           insert_id: str | None = None, with_name_label: bool = True, vm_id: str | None = None) -> dict[str, Any]:
    stamp = at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    entry: dict[str, Any] = {
        "insertId": insert_id or f"sim{next(_counter):08d}{random.randint(0, 1 << 30):x}",
        "logName": f"projects/{project}/logs/{_LOG_OF[shape]}",
        "receiveTimestamp": stamp,
        "resource": {
            "type": "gce_instance",
            "labels": {"instance_id": simulated_vm_id(project, zone, name) if vm_id is None else vm_id,
                       "project_id": project, "zone": zone},
        },
        "severity": "DEFAULT",
        "timestamp": stamp,
        "labels": {"compute.googleapis.com/resource_name": name},
    }
    if shape == "ops-agent":
        entry["jsonPayload"] = {"message": line}
    elif shape == "journald":
        entry["severity"] = "ERROR"  # PRIORITY 3, the kernel's KERN_ERR
        entry["jsonPayload"] = {"MESSAGE": line, "PRIORITY": "3", "SYSLOG_FACILITY": "0",
                                "SYSLOG_IDENTIFIER": "kernel", "_TRANSPORT": "kernel", "_HOSTNAME": name}
    elif shape == "legacy-agent-json":
        entry["jsonPayload"] = {"message": line, "hostname": name, "pid": "", "ident": "kernel"}
    elif shape == "serial":
        entry["severity"] = "INFO"
        entry["labels"]["is_text_escaped"] = "true"
        entry["textPayload"] = f"[53211.918273] {line}\\r\\n"
    else:
        entry["textPayload"] = line
    if not with_name_label:
        del entry["labels"]["compute.googleapis.com/resource_name"]
    return entry
