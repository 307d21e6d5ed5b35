"""The local stack's Pub/Sub topics and subscriptions: those infra/pubsub.tf and the Eventarc triggers make, on
simulators/pubsub/ (the one Pub/Sub stand-in; tests/contract holds it to Google's emulator: docs/testing.md,
"Which Pub/Sub").
"""

from __future__ import annotations

from simulators.pubsub import PubSubSimulator

PROJECT = "contest-prj"
OOM_TOPIC = f"projects/{PROJECT}/topics/notebook-oom"
RESTART_TOPIC = f"projects/{PROJECT}/topics/notebook-restarts"
DEAD_LETTER_TOPIC = f"projects/{PROJECT}/topics/notebook-restarts-dead-letter"
MEMORY_TOPIC = f"projects/{PROJECT}/topics/notebook-memory-alerts"
SWEEP_TOPIC = f"projects/{PROJECT}/topics/notebook-sweep"  # Cloud Scheduler's tick to health_sweep (infra/sweep.tf)
# The contest's schedule messages, Cloud Scheduler's alone (infra/schedule.tf), and the worker's one subscription
# they are taken from (SCHEDULE_SUBSCRIPTION; shared/core/schedule_source.py).
SCHEDULE_TOPIC = f"projects/{PROJECT}/topics/notebook-schedule"
SCHEDULE_SUBSCRIPTION = f"projects/{PROJECT}/subscriptions/schedule-worker-push"
TOPICS = (OOM_TOPIC, RESTART_TOPIC, DEAD_LETTER_TOPIC, MEMORY_TOPIC, SWEEP_TOPIC, SCHEDULE_TOPIC)


def subscribe_functions(bus: PubSubSimulator, *, on_oom: str, on_memory_alert: str | None, worker: str,
                        ack_deadline_s: float, max_delivery_attempts: int | None,
                        push_identity: tuple[str, str] | None, health_sweep: str | None = None) -> None:
    """The subscriptions infra/pubsub.tf and the Eventarc triggers make: CloudEvent pushes to on_oom and
    on_memory_alert; the ordered restart subscription (dead-letter policy when attempts are limited) and the schedule's
    to the worker."""
    bus.create_push_subscription(f"projects/{PROJECT}/subscriptions/on-oom-eventarc", OOM_TOPIC, on_oom,
                                 push_format="cloudevent", ordering=False, ack_deadline_s=60)
    if on_memory_alert is not None:
        bus.create_push_subscription(f"projects/{PROJECT}/subscriptions/on-memory-alert-eventarc", MEMORY_TOPIC,
                                     on_memory_alert, push_format="cloudevent", ordering=False, ack_deadline_s=60)
    if health_sweep is not None:
        bus.create_push_subscription(f"projects/{PROJECT}/subscriptions/health-sweep-eventarc", SWEEP_TOPIC,
                                     health_sweep, push_format="cloudevent", ordering=False, ack_deadline_s=120)
    bus.create_push_subscription(
        f"projects/{PROJECT}/subscriptions/restart-worker-push", RESTART_TOPIC, worker,
        push_format="pubsub", ordering=True, ack_deadline_s=ack_deadline_s,
        max_delivery_attempts=max_delivery_attempts,
        dead_letter_topic=DEAD_LETTER_TOPIC if max_delivery_attempts else None,
        oidc_token=push_identity,
    )
    bus.create_push_subscription(SCHEDULE_SUBSCRIPTION, SCHEDULE_TOPIC, worker, push_format="pubsub", ordering=False,
                                 ack_deadline_s=ack_deadline_s, oidc_token=push_identity)
