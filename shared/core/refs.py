"""Where an instance lives and what was killed in it: InstanceRef and OomKill, the plain values the restart topic's
payloads carry (payloads.py) and the rest of the data builds on (models.py), with the names' rules they check.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

# Workbench instance names follow Compute Engine's rules: RFC 1035 label, 1-63 chars.
INSTANCE_NAME_RE = re.compile(r"^[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?$")
ZONE_RE = re.compile(r"^[a-z]+-[a-z]+[0-9]+-[a-z]$")
PROJECT_RE = re.compile(r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$")
FULL_NAME_RE = re.compile(
    r"^projects/(?P<project>[^/]+)/locations/(?P<zone>[^/]+)/instances/(?P<name>[^/]+)$"
)


def is_valid_instance_name(name: str) -> bool:
    return bool(INSTANCE_NAME_RE.fullmatch(name))


@dataclass(frozen=True)
class InstanceRef:
    """Where an instance lives; validated so nothing user-typed reaches a URL unchecked."""

    project: str
    zone: str
    name: str

    def __post_init__(self) -> None:
        if not PROJECT_RE.fullmatch(self.project):
            raise ValueError(f"not a valid project id: {self.project!r}")
        if not ZONE_RE.fullmatch(self.zone):
            raise ValueError(f"not a valid zone: {self.zone!r}")
        if not is_valid_instance_name(self.name):
            raise ValueError(f"not a valid instance name: {self.name!r}")

    @property
    def full_name(self) -> str:
        return f"projects/{self.project}/locations/{self.zone}/instances/{self.name}"

    @classmethod
    def parse(cls, full_name: str) -> InstanceRef:
        match = FULL_NAME_RE.fullmatch(full_name)
        if not match:
            raise ValueError(f"not an instance resource name: {full_name[:200]!r}")
        return cls(match["project"], match["zone"], match["name"])


@dataclass(frozen=True)
class OomKill:
    """One kernel OOM-kill line (or its summary line), as read from one LogEntry; or the guard's watcher's line for a
    kernel it interrupted before the kill (form "watcher": anon_rss_kb is then the kernel's RSS, limit_kb the unit's
    limit), which is vetted as a kill is and queued as an interrupt."""

    instance: InstanceRef
    killed_at: datetime
    pid: int
    process: str
    anon_rss_kb: int | None
    total_vm_kb: int | None
    insert_id: str
    form: str  # "modern", "legacy" or "cgroup": which kernel wording matched
    line: str
    # Who vouches for the name: "label" (the agent's resource_name label) or "syslog host" (the line's own
    # text, which whoever has root on the VM writes). vm_id is resource.labels.instance_id, set by Logging
    # for the VM that wrote the entry: the audit keeps both, so a kill that names another VM can be traced.
    named_by: str = "label"
    vm_id: str = ""
    # The entry's own timestamp when it was later than Logging's receipt (killed_at is then the receipt): a VM
    # clock running ahead, or a forged line. Kept so the record can say what the entry claimed.
    dated_at: datetime | None = None
    # "memcg" (a cgroup's limit ran out: "Memory cgroup out of memory", CONSTRAINT_MEMCG), "global" (the machine's
    # memory), "" (not said). unit: the victim's memory cgroup from the kill's summary (task_memcg=), e.g.
    # /system.slice/jupyter.service, when the entry carried it; "" otherwise.
    constraint: str = ""
    unit: str = ""
    limit_kb: int | None = None
    # The watcher's refusal (issue 40): what the refused allocation asked for (None: unknown) and what the unit had.
    asked_kb: int | None = None
    left_kb: int | None = None

    @property
    def in_jupyter_unit(self) -> bool | None:
        """Whether the victim ran in JupyterLab's systemd unit (a kernel, or the server): None when no line said."""
        return jupyter_unit(self.unit) if self.unit else None


def victim(kill: OomKill | None) -> str:
    """The killed (or interrupted) process as the messages name it: "python3 (pid 4242)"; "? (pid ?)" unknown."""
    return f"{kill.process} (pid {kill.pid})" if kill is not None else "? (pid ?)"


JUPYTER_UNIT = "jupyter.service"  # Workbench's JupyterLab unit (facts: "Inside the Workbench VM")


def jupyter_unit(cgroup: str) -> bool:
    """A cgroup path inside JupyterLab's unit: /system.slice/jupyter.service, or a cgroup below it."""
    return JUPYTER_UNIT in cgroup.split("/")
