"""Plain data that crosses the bot's boundaries: requests, instances as read, their states (where an instance lives
and what was killed in it, InstanceRef and OomKill: refs.py).

Everything here is immutable and free of I/O so the policy can be tested as a
function of data, and so a request can travel through Pub/Sub as JSON.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, TypeVar

from shared.core.payloads import (
    BY_ACTION,
    PAYLOADS,
    AskedPayload,
    DiskGrowPayload,
    InterruptedPayload,
    KillPayload,
    Payload,
    ResizePayload,
    RestartPayload,
)
from shared.core.payloads import read as read_payload
from shared.core.refs import INSTANCE_NAME_RE as INSTANCE_NAME_RE  # noqa: PLC0414 - re-exported: the data's names
from shared.core.refs import ZONE_RE as ZONE_RE  # noqa: PLC0414 - re-exported likewise
from shared.core.refs import InstanceRef as InstanceRef  # noqa: PLC0414 - re-exported likewise
from shared.core.refs import OomKill as OomKill  # noqa: PLC0414 - re-exported likewise
from shared.core.refs import is_valid_instance_name as is_valid_instance_name  # noqa: PLC0414 - likewise
from shared.core.refs import jupyter_unit as jupyter_unit  # noqa: PLC0414 - re-exported likewise
from shared.core.wire import iso as iso  # noqa: PLC0414 - re-exported: the messages' time format
from shared.core.wire import parse_time as parse_time  # noqa: PLC0414 - re-exported likewise
from shared.core.wire import text_field

MACHINE_TYPE_RE = re.compile(r"^[a-z][a-z0-9]*-[a-z0-9-]{1,40}$")
SLACK_USER_RE = re.compile(r"^[UW][A-Z0-9]{2,20}$")
SLACK_REQUEST_RE = re.compile(r"[0-9a-f]{11}")  # history.acted_digest: label-safe, five fit in one label value



P = TypeVar("P", bound=Payload)


class Trigger(StrEnum):
    OOM = "oom"  # a kill seen in the logs
    SLASH_COMMAND = "slash-command"  # /restart-notebook
    BUTTON = "button"  # an organizer's button on an alert
    UNRESOLVED = "unresolved"  # a kill whose instance could not be named: alert only
    MEMORY = "memory"  # a Monitoring memory-pressure incident
    DISK = "disk"  # a Monitoring incident on a disk filling up (issue 43): a WARN, as memory's
    GPU = "gpu"  # a Monitoring incident on a GPU's memory filling up (issue 47): a WARN, as memory's
    WATCHER = "watcher"  # the guard's memory watcher interrupted a kernel before the kill (issue 32)
    SWEEP = "sweep"  # the health sweep found JupyterLab down, or the VM silent, with no kill line (issue 42)


class Action(StrEnum):
    RESTART = "restart"
    PAUSE = "pause"
    RESUME = "resume"
    STOP = "stop"
    ALERT = "alert"  # nothing to act on; tell the organizers
    WARN = "warn"  # memory pressure: warn the owner before the kill
    RESIZE = "resize"  # stop, change gce_setup.machine_type, start
    START = "start"  # a STOPPED notebook, started by its owner (unless an organizer's stop holds it) or an organizer
    INTERRUPTED = "interrupted"  # a kernel interrupted before the kill, kept: tell the owner, count it
    ASK = "ask"  # `/restart-notebook bigger`: a request for a bigger machine, posted to the organizers by the worker
    DISK_ASK = "disk-ask"  # a participant's ask for a bigger disk: the worker checks the limits and posts it
    DISK_GROW = "disk-grow"  # an organizer's Approve on it: resizeDisk (shared/app/worker/disks.py)
    DISK_CHECK = "disk-check"  # the sweep's look at a grown disk's filesystem (shared/app/worker/fs_check.py)


@dataclass(frozen=True)
class Requester:
    slack_user_id: str
    email: str
    is_organizer: bool


@dataclass(frozen=True)
class RestartRequest:
    """A message on the restart topic, whatever its action: every restart, stop, resize, warning and alert the
    worker acts on arrives as one. The envelope (what, why, where, when, who asked in Slack) holds the typed payload
    of its action (payloads.py), which carries only the fields that action reads; its wire format: envelope.py."""

    action: Action
    trigger: Trigger
    instance: str  # full resource name, or "" for UNRESOLVED
    requested_at: datetime
    event_id: str
    payload: Payload  # the action's own fields (payloads.PAYLOADS[self.kind]), checked against the action
    requester: Requester | None = None
    response_url: str = ""
    alert_ts: str = ""  # the alert message a button was pressed on
    alert_channel: str = ""
    alert_blocks: tuple[dict[str, Any], ...] = ()  # the alert a button sat on, to amend rather than replace
    # The Slack request it came from (history.acted_digest of its trigger_id, or a button's action_ts and message
    # ts): recorded on the instance when acted on, so a replay of the same signed request acts no more.
    slack_request: str = ""
    # The Slack app acknowledged before its reads finished (slow, not failing): the worker reads who asks and what
    # exists, authorizes by the same rules (shared/core/commands.py) and answers. A slash command's payload is then
    # AskedPayload (the name typed) and `instance` is "" until the worker has found it.
    authorize: bool = False
    # The Pub/Sub message it arrived in: set on receipt, never sent. A redelivery carries the same id;
    # a second message about the same event (a sink duplicate) does not.
    delivery_id: str = ""

    @property
    def kind(self) -> str:
        """The payload its action carries (payloads.PAYLOADS): a slash command not yet read carries what was typed."""
        return payload_kind(self.action, self.trigger, self.instance, authorize=self.authorize)

    def payload_as(self, kind: type[P]) -> P:
        """The payload, as the type its action carries (check() holds them together): TypeError for another."""
        if not isinstance(self.payload, kind):
            raise TypeError(f"a {self.kind} request carries no {kind.__name__}")
        return self.payload

    @classmethod
    def from_dict(cls, data: dict[str, Any], payload: dict[str, Any]) -> RestartRequest:
        """The envelope's fields from `data`, the payload's from `payload` (envelope.py); checked, ValueError for a
        request that does not fit."""
        try:
            requester = data.get("requester")
            alert_blocks = data.get("alert_blocks", [])
            if not isinstance(alert_blocks, list) or not all(isinstance(b, dict) for b in alert_blocks):
                raise ValueError("alert_blocks must be a list of objects")
            action, trigger, instance = Action(data["action"]), Trigger(data["trigger"]), text_field(data, "instance")
            authorize = data.get("authorize", False) is True
            request = cls(
                action=action, trigger=trigger, instance=instance,
                requested_at=parse_time(text_field(data, "requested_at")),
                event_id=text_field(data, "event_id"),
                payload=read_payload(payload_kind(action, trigger, instance, authorize=authorize), payload),
                requester=Requester(text_field(requester, "slack_user_id"), text_field(requester, "email"),
                                    bool(requester["is_organizer"])) if isinstance(requester, dict) else None,
                response_url=text_field(data, "response_url", ""),
                alert_ts=text_field(data, "alert_ts", ""),
                alert_channel=text_field(data, "alert_channel", ""),
                alert_blocks=tuple(alert_blocks[:50]),
                slack_request=text_field(data, "slack_request", ""),
                authorize=authorize)
        except (KeyError, TypeError) as exc:
            raise ValueError(f"restart request is missing or mistypes {exc}") from exc
        request.check()
        return request

    def check(self) -> None:
        """What from_dict checks beyond the fields' types: raises ValueError for a request that does not fit."""
        payload = self.payload
        if not isinstance(payload, PAYLOADS[self.kind]):
            raise ValueError(f"a {self.action} request does not carry a {type(payload).__name__}")
        if isinstance(payload, AskedPayload):
            if self.requester is None or not SLACK_USER_RE.fullmatch(self.requester.slack_user_id):
                raise ValueError("an unread slash command names no Slack user")
        elif self.trigger is not Trigger.UNRESOLVED:
            InstanceRef.parse(self.instance)
        if self.slack_request and not SLACK_REQUEST_RE.fullmatch(self.slack_request):
            raise ValueError("slack_request is not a request digest")
        check_payload(payload)

    @property
    def kill(self) -> OomKill | None:
        """The kill line of a restart, an interrupt or an alert (payloads.KillPayload); None for the others."""
        return self.payload.kill if isinstance(self.payload, KillPayload) else None

    def with_kill(self, kill: OomKill) -> RestartRequest:
        """The same request with its kill line replaced (only a payload that carries one: TypeError otherwise)."""
        if not isinstance(self.payload, KillPayload):
            raise TypeError(f"a {self.kind} request carries no kill")
        return replace(self, payload=replace(self.payload, kill=kill))

    @property
    def ordering_key(self) -> str:
        """The restart topic's ordering key: the instance, one request at a time; a slash command the Slack app
        acknowledged before it knew the instance goes under its caller until the worker finds the instance and
        hands it on under that instance's key (shared/app/worker/asked.py); "" for an unresolved kill."""
        if self.instance:
            return self.instance
        if self.authorize and self.requester is not None:
            return f"slack-user:{self.requester.slack_user_id}"
        return ""

    @property
    def unverified(self) -> str:
        """An OOM kill whose VM Compute Engine could not be asked about: why ("" for a checked one). The worker
        then resets only on the instance's own word that JupyterLab is down (policy.py)."""
        return self.payload.unverified if isinstance(self.payload, RestartPayload | InterruptedPayload) else ""

    @property
    def kill_time(self) -> datetime | None:
        return self.kill.killed_at if self.kill is not None else None


def payload_kind(action: Action, trigger: Trigger, instance: str, *, authorize: bool) -> str:
    """The payload a request carries (payloads.PAYLOADS), by its action: a slash command not yet read carries what
    was typed."""
    if authorize and trigger is Trigger.SLASH_COMMAND and not instance:
        return "asked"
    return BY_ACTION[action.value]


def check_payload(payload: Payload) -> None:
    """What a payload's values must be beyond their types (RestartRequest.check): raises ValueError otherwise."""
    if isinstance(payload, AskedPayload) and payload.target and not is_valid_instance_name(payload.target):
        raise ValueError("target is not an instance name")
    if isinstance(payload, ResizePayload):
        if payload.machine_type and not MACHINE_TYPE_RE.fullmatch(payload.machine_type):
            raise ValueError("machine_type is not a machine type name")
        if payload.asked_by and not SLACK_USER_RE.fullmatch(payload.asked_by):
            raise ValueError("asked_by is not a Slack user id")
    if isinstance(payload, DiskGrowPayload) and payload.asked_by and not SLACK_USER_RE.fullmatch(payload.asked_by):
        raise ValueError("asked_by is not a Slack user id")
    if isinstance(payload, RestartPayload) and (len(payload.chain) > 128 or len(payload.resumes) > 128):
        raise ValueError("chain or resumes is not a Pub/Sub message id")



class InstanceState(StrEnum):
    """Mirror of notebooks_v2.State names, so the policy never sees proto ints."""

    STATE_UNSPECIFIED = "STATE_UNSPECIFIED"
    STARTING = "STARTING"
    PROVISIONING = "PROVISIONING"
    ACTIVE = "ACTIVE"
    STOPPING = "STOPPING"
    STOPPED = "STOPPED"
    DELETED = "DELETED"
    UPGRADING = "UPGRADING"
    INITIALIZING = "INITIALIZING"
    SUSPENDING = "SUSPENDING"
    SUSPENDED = "SUSPENDED"


@dataclass(frozen=True)
class InstanceView:
    """What the Workbench API reports about one instance, reduced to what decisions use."""

    ref: InstanceRef
    state: InstanceState
    health_state: str  # HEALTHY, UNHEALTHY, AGENT_NOT_INSTALLED, AGENT_NOT_RUNNING, HEALTH_STATE_UNSPECIFIED
    health_info: dict[str, str]
    owner_email: str | None
    machine_type: str
    labels: dict[str, str] = field(default_factory=dict)
    # gce_setup.accelerator_configs as (type, core_count), e.g. (("NVIDIA_TESLA_T4", 1),): GPUs a resize must keep.
    accelerators: tuple[tuple[str, int], ...] = ()
    # gce_setup.metadata idle-timeout-seconds: after how long idle Workbench stops it (None: not set, so Workbench's
    # own default of 10800 s; Workbench docs, "Idle shutdown"). Read by make doctor, not by any decision.
    idle_timeout_s: int | None = None

    # gce_setup.metadata["notebook-medic-guard"] is "on": the contest's Terraform installed the OOM guard (issue 22),
    # whose systemd restart brings a JupyterLab that dies back by itself. Metadata only organizers can set.
    guarded: bool = False
    # Instance.update_time: when Workbench last changed the instance (a start among others); the health sweep
    # (shared/core/sweep.py) does not call a notebook silent that has not been running long enough to be missed.
    state_since: datetime | None = None

    @property
    def health_updated(self) -> datetime | None:
        """When the guest agent last reported: `last_updated` (ISO 8601 with a zone) as a real v2 instance answered
        (gcpdiag's test data, docs/fidelity.md), else the documented `updated`, which has no zone (UTC)."""
        stamped = self.health_info.get("last_updated", "")
        try:
            at = datetime.fromisoformat(stamped) if stamped else None
        except ValueError:
            at = None
        if at is not None:
            return at.astimezone(UTC) if at.tzinfo else at.replace(tzinfo=UTC)
        raw = self.health_info.get("updated", "")
        for fmt in ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S"):
            try:
                return datetime.strptime(raw, fmt).replace(tzinfo=UTC)
            except ValueError:
                continue
        return None
