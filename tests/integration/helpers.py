"""What the fault-matrix and crash-loop tests share: killing an instance, reading what the stack did.

The invariant every such test ends with (`assert_incident_closed`): the incident was not lost (the
instance was reset, or an alert says why not), it was not restarted twice, and no restart is left
marked as in flight on the instance.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from simulators.entries import oom_entry
from simulators.polling import PATIENCE_S, poll_until
from simulators.pubsub import Delivery
from simulators.stack import PROJECT, RESTART_TOPIC, LocalStack
from simulators.workbench import classify

# The organizer of every local stack (ORGANIZER_EMAILS in simulators/stack.py), as a Slack user.
ORGANIZER = ("U0ORG", "org@contest.example")


@contextmanager
def stack_with_organizer(**options: Any) -> Iterator[LocalStack]:
    """A local stack with the Slack function, whose Slack knows the organizer."""
    with LocalStack(slack_app=True, **options) as running:
        running.slack.add_user(ORGANIZER[0], "org", ORGANIZER[1])
        yield running

ZONE = "asia-northeast1-a"


def kill(
    stack: LocalStack,
    full: str,
    name: str,
    *,
    jupyter_survives: bool = False,
    at: datetime | None = None,
    health: bool = True,
) -> dict[str, Any]:
    """An OOM kill as it happens: the kernel line first, the health agent's report 0.2 s later, then the sink."""
    entry = oom_entry(PROJECT, ZONE, name, at=at)
    if health:
        stack.workbench.oom_kill(full, jupyter_survives=jupyter_survives, health_delay_s=0.2)
    stack.sink(entry)
    return entry


def alert_text(message: dict[str, Any]) -> str:
    return str(message.get("text", "")) + "\n" + json.dumps(message.get("blocks", []), ensure_ascii=False)


def alerts_for(stack: LocalStack, name: str) -> list[dict[str, Any]]:
    """Messages in the alert channel about this instance (as they read now, after any chat.update)."""
    return [m for m in stack.alerts() if f"`{name}`" in json.dumps(m.get("blocks", [])) or name in m.get("text", "")]


def wait_alert(stack: LocalStack, name: str, needle: str, timeout: float = PATIENCE_S) -> dict[str, Any]:
    """The first alert about the instance that contains `needle`, waiting for it."""
    found: list[dict[str, Any]] = []

    def seen() -> bool:
        found[:] = [m for m in alerts_for(stack, name) if needle in alert_text(m)]
        return bool(found)

    assert stack.slack.wait_for(seen, timeout=timeout), (needle, [alert_text(m)[:300] for m in alerts_for(stack, name)])
    return found[0]


def restart_deliveries(stack: LocalStack, name: str) -> list[Delivery]:
    """Push attempts of this instance's restart requests to the restart_worker, in completion order."""
    ids = {m.message_id for m in stack.pubsub.published(RESTART_TOPIC) if m.attributes.get("instance") == name}
    return [d for d in list(stack.pubsub.deliveries) if d.message_id in ids and "restart-worker" in d.subscription]


def wait_for(predicate: Callable[[], bool], timeout: float = PATIENCE_S) -> bool:
    return poll_until(predicate, timeout, 0.05)


def worker_logs(stack: LocalStack, needle: str) -> list[dict[str, Any]]:
    """The restart_worker's JSON log records whose message contains `needle`."""
    return [r for r in stack.worker_records() if needle in str(r.get("message", ""))]


def audits_for(stack: LocalStack, name: str) -> list[dict[str, Any]]:
    return [r for r in stack.audit_records() if r.get("instance") == name]


def labels(stack: LocalStack, full: str) -> dict[str, str]:
    return dict(stack.workbench.get(full).get("labels", {}))


def assert_incident_closed(stack: LocalStack, full: str, name: str, *, resets: int, says: str) -> None:
    """No incident lost, none restarted twice: `resets` resets and an alert saying `says`, nothing left in flight."""
    assert stack.wait_idle(), "Pub/Sub still has messages queued or in flight"
    assert stack.workbench.resets(full) == resets, f"{name}: {stack.workbench.resets(full)} resets, expected {resets}"
    texts = [alert_text(m) for m in alerts_for(stack, name)]
    assert any(says in t for t in texts), (says, [t[:300] for t in texts])
    assert "medic-inflight" not in labels(stack, full), labels(stack, full)


def reset_times(stack: LocalStack, full: str) -> list[float]:
    """When each reset operation of this instance was created (epoch seconds), oldest first."""
    ops = [o["metadata"] for o in stack.workbench.operations()]
    stamps = [m["createTime"] for m in ops if m["target"] == full and m["verb"] == "reset"]
    return sorted(datetime.fromisoformat(stamp).timestamp() for stamp in stamps)


def workbench_calls(stack: LocalStack, name: str, verb: str) -> int:
    """Requests the Workbench simulator received for this instance and verb (get, reset, patch...)."""
    def instance_of(path: str) -> str:
        return path.split("/instances/", 1)[-1].split(":", 1)[0] if "/instances/" in path else ""

    return sum(1 for m, p in list(stack.workbench.calls) if instance_of(p) == name and classify(m, p) == verb)
