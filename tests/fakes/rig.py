"""A Worker on the fakes and one FakeClock, and Pub/Sub's push around it: deliveries, nacks, redeliveries.

build_worker() is the one place a test builds the Worker from the fakes, so that a change of its constructor
is a change here alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import pytest

from shared.adapters.clock import FakeClock
from shared.adapters.config import Settings
from shared.app.worker import Worker, WorkOutcome
from shared.core.models import Action, InstanceRef, RestartRequest, Trigger, iso
from shared.core.payloads import RestartPayload
from tests.fakes.slack import FakeSlack
from tests.fakes.topic import FakeTopic
from tests.fakes.workbench import FakeWorkbench, Visibility
from tests.support import a_kill

ALERTS = "C0ALERTS"
ORGANIZER_EMAIL = "org@contest.example"  # ORGANIZER_EMAILS of the default settings, and a Slack user (U0ORG)
# The restart subscription's retry policy (infra/pubsub.tf: minimum_backoff 10s, maximum_backoff 600s).
MIN_BACKOFF_S, MAX_BACKOFF_S = 10.0, 600.0


def build_worker(settings: Settings, workbench: FakeWorkbench, slack: FakeSlack, topic: FakeTopic,
                 clock: FakeClock) -> Worker:
    """The Worker on the fakes, its budget, deadlines, waits and dates all on the FakeClock."""
    return Worker(settings, workbench, slack, queue=topic, clock=clock)  # type: ignore[arg-type]


def oom_request(ref: InstanceRef, killed_at: datetime, *, delivery: str = "m1", pid: int = 4242) -> RestartRequest:
    """A kill line as on_oom publishes it to the restart topic."""
    return RestartRequest(
        action=Action.RESTART, trigger=Trigger.OOM, instance=ref.full_name, requested_at=killed_at,
        event_id=f"insert-{iso(killed_at)}",
        payload=RestartPayload(kill=a_kill(ref, killed_at, pid=pid)),
        delivery_id=delivery,
    )


@dataclass
class Rig:
    clock: FakeClock
    workbench: FakeWorkbench
    slack: FakeSlack
    topic: FakeTopic
    worker: Worker
    outcomes: list[WorkOutcome] = field(default_factory=list)

    @classmethod
    def build(cls, monkeypatch: pytest.MonkeyPatch, *, visibility: Visibility, settings: Settings | None = None,
              **workbench_options: float) -> Rig:
        """Production's settings (a fake clock makes its minutes free) unless a row needs others. (`monkeypatch`:
        nothing is patched since the Worker takes a Clock; its callers in test_fault_matrix.py can drop it.)"""
        del monkeypatch
        clock = FakeClock()
        settings = settings or Settings(project="contest-prj", workbench_zones=("asia-northeast1-a",),
                                        slack_alert_channel=ALERTS, organizer_emails=frozenset({ORGANIZER_EMAIL}))
        workbench = FakeWorkbench(clock, visibility=visibility, timeout_s=settings.workbench_timeout.total_seconds(),
                                  retry_s=settings.workbench_retry.total_seconds(), **workbench_options)
        # The organizer Slack knows, as the local stack's (the worker asks Slack whether a requester is one: issue 25)
        slack = FakeSlack(clock, users={ORGANIZER_EMAIL: "U0ORG"}, timeout_s=settings.slack_timeout.total_seconds())
        topic = FakeTopic()
        return cls(clock, workbench, slack, topic, build_worker(settings, workbench, slack, topic, clock))

    def instance(self, name: str, **options: object) -> InstanceRef:
        """An instance whose owner Slack knows (their DMs arrive in the channel named by their user id)."""
        ref = InstanceRef("contest-prj", "asia-northeast1-a", name)
        self.workbench.add_instance(ref, **options)  # type: ignore[arg-type]
        self.slack.users[f"{name}@contest.example"] = self.owner(ref)
        return ref

    @staticmethod
    def owner(ref: InstanceRef) -> str:
        return "U" + ref.name.upper().replace("-", "")

    def kill(self, ref: InstanceRef, *, jupyter_survives: bool = False, age: timedelta = timedelta(0),
             reported_after_s: float = 0.2) -> RestartRequest:
        """An OOM kill as it happens: the agent's report `reported_after_s` later; the line reaches the worker a
        second after the kill."""
        killed_at = self.clock.now() - age
        self.workbench.oom_kill(ref, jupyter_survives=jupyter_survives, after_s=reported_after_s)
        self.clock.advance(1.0)
        return oom_request(ref, killed_at)

    def push(self, request: RestartRequest, *, deliveries: int = 12,
             on_nack: Callable[[WorkOutcome], None] | None = None) -> list[WorkOutcome]:
        """Push as the restart subscription does: a nack is redelivered after an exponential backoff, and what the
        worker published meanwhile (a continuation) is pushed after it, in order. The outcomes of this push."""
        queue, outcomes = [request], []
        while queue:
            message = queue.pop(0)
            for attempt in range(1, deliveries + 1):
                published = len(self.topic.published)
                outcome = self.worker.handle(message)
                outcomes.append(outcome)
                queue += self.topic.published[published:]
                if outcome.ack:
                    break
                if on_nack is not None:
                    on_nack(outcome)
                self.clock.advance(min(MAX_BACKOFF_S, MIN_BACKOFF_S * 2 ** (attempt - 1)))
            else:
                raise AssertionError(f"still nacked after {deliveries} deliveries: {outcomes}")
        self.outcomes += outcomes
        return outcomes

    def alerts(self, name: str) -> list[str]:
        """The alert channel's messages about the instance, as they read now (text and blocks)."""
        return [f"{m.text}\n{m.blocks}" for m in self.slack.in_channel(ALERTS) if name in f"{m.text}{m.blocks}"]
