"""The demo's narration in an organizer's words: what the bot decided and why, and what state a notebook is in.

The product's own sentences (alerts, DMs, replies) come from shared/core/messages/; these are the demo's
commentary on the audit records and on the simulator, for someone who has never read the code. A code
the tables do not know (policy grows) reads as its words, never as a crash.
"""

from __future__ import annotations

import re
from typing import Any

_VERDICT = {
    "reset": "restarted",
    "notify-only": "not restarted",
    "skip-duplicate": "nothing more to do",
    "skip-not-active": "not restarted: the instance is not running",
    "skip-disabled": "not restarted: automatic restarts are off for it",
    "wait": "waiting before deciding",
    "pause": "automatic restarts paused",
    "set-paused": "automatic restarts paused",
    "set-resumed": "automatic restarts resumed",
    "dry-run": "would have restarted (dry run)",
    "give-up": "too old to act on; organizers told",
    "too-old": "too old to act on; organizers told",
    "unresolved": "organizers told",
    "reset-not-seen": "waiting for the restart to show, then again",
    "stop": "stopped",
    "start": "started",
    "acted": "done",
    "warned": "owners warned before the stop",
    "alert": "organizers told",
    "follow": "finishing a restart that was interrupted",
    "warn": "owner warned",
    "resize": "moved to a bigger machine",
    "ask": "request posted for the organizers to approve",
    "rejected": "refused",
    "ignored": "ignored",
    "queued": "passed on to be handled",
    "failed": "failed",
}
_REASON = {
    "same-incident": "the same incident as the last one",
    "before-last-restart": "the kill happened before the last restart",
    "during-restart": "the same kill, reported again while it was restarting",
    "already-restarted": "the last restart already took care of it",
    "opted-out": "the owner opted out",
    "paused": "an organizer paused automatic restarts",
    "not-active": "the instance is not running",
    "jupyter-down": "JupyterLab is down",
    "unhealthy": "the instance reports a problem",
    "no-agent": "the instance's health agent is silent",
    "notebook-survived": "JupyterLab survived, only the kernel died; the owner is told",
    "policy-always": "the policy says always restart",
    "backoff": "too soon after the last restart",
    "crash-loop": "it keeps running out of memory; restarts paused",
    "requested": "someone asked",
    "too-old": "the kill is too old to act on",
    "quiet-period": "warned recently",
    # the cause of an outage the health sweep found (issue 42: shared/core/causes.py)
    "oom-kill": "the server ran out of memory",
    "disk-full": "the disk is full, which a restart would not empty; the owner and the organizers are told",
    "agent-stopped": "a Workbench agent in the VM stopped",
    "jupyter-stopped": "the Jupyter service stopped",
    "server-failing": "the Jupyter server fails as it starts; a person is asked",
    "vm-unresponsive": "the VM stopped answering",
    "gpu-unusable": "the GPU is not usable; a person is asked",
}
_SAYS_THE_VERDICT_AGAIN = {"paused", "resumed", "owner warned", "resized", "stopped", "done"}
_DONE_IN = re.compile(r"^(done|timeout|\w+) in (\d+) s$")
_HEALTH = {
    "HEALTHY": "JupyterLab up",
    "UNHEALTHY": "JupyterLab down",
    "AGENT_NOT_RUNNING": "JupyterLab not reporting yet",
    "AGENT_NOT_INSTALLED": "no health agent",
    "HEALTH_STATE_UNSPECIFIED": "health unknown",
}
_STATE = {
    "ACTIVE": "running", "STARTING": "starting", "STOPPING": "stopping", "STOPPED": "stopped",
    "PROVISIONING": "being created", "SUSPENDED": "suspended", "UPGRADING": "upgrading",
    "INITIALIZING": "initializing", "DELETED": "deleted",
}


def _plain(code: str) -> str:
    return code.replace("-", " ").replace("_", " ").lower()


def outcome(detail: str) -> str:
    """An audit record's outcome detail, in words ("done in 2 s" -> "took 2 s")."""
    match = _DONE_IN.match(detail)
    if match:
        return f"took {match[2]} s" if match[1] == "done" else f"{_plain(match[1])} after {match[2]} s"
    return _REASON.get(detail, detail)


def decision(record: dict[str, Any], name_of_email: dict[str, str]) -> str:
    """One audit record as a sentence: the notebook, what started it, what the bot did and why."""
    trigger = str(record.get("trigger", ""))
    who = name_of_email.get(str(record.get("requester", "")), "someone")
    cause = {
        "oom": "ran out of memory",
        "memory": "memory nearly full",
        "disk": "disk nearly full",
        "slash-command": {"ask": f"{who} asked for a bigger machine", "disk-ask": f"{who} asked for a bigger disk"}.get(
            str(record.get("action")), f"{who} asked for a restart"),
        "button": f"{who} pressed a button",
        "unresolved": "a kill on a machine that could not be named",
        "bulk": f"{record.get('action', 'start or stop')} all",
        "schedule": "the contest's schedule",
    }.get(trigger, _plain(trigger))
    verdict = str(record.get("decision", ""))
    did = _VERDICT.get(verdict, _plain(verdict))
    detail = str(record.get("outcome") or "")
    why = "" if detail in _SAYS_THE_VERDICT_AGAIN or verdict == "ask" else outcome(detail)  # ask: its ts, its types
    if not record.get("instance"):  # a run's end or the stop's warning: no one notebook, its own words say it
        return f"{record.get('message', '?')}" + (f": {outcome(detail)}" if detail else "")
    return f"{record['instance']}: {cause} → {did}" + (f" ({why})" if why else "")


def state(instance: dict[str, Any]) -> str:
    """A notebook's state as an organizer says it: "running, JupyterLab down"."""
    lifecycle = str(instance.get("state", ""))
    words = _STATE.get(lifecycle, _plain(lifecycle))
    health = instance.get("healthState")
    if lifecycle == "ACTIVE" and health:
        return f"{words}, {_HEALTH.get(str(health), _plain(str(health)))}"
    return words
