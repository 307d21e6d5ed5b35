"""The local stack's Pub/Sub: which one it runs on (Google's emulator where installed, else the simulator;
MEDIC_PUBSUB overrides) and its topics and subscriptions.

Google's emulator is the real part; a test module that needs what only the simulator has pins the simulator all the
same (tests/integration/conftest.py, `pubsub_simulator`). docs/testing.md ("Which Pub/Sub") says what each lacks.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from simulators.pubsub import DeadLetter, Delivery, PublishedMessage
from simulators.pubsub_emulator.process import emulator_launcher

PUBSUB_ENV = "MEDIC_PUBSUB"
BACKENDS = ("simulator", "emulator")
PROJECT = "contest-prj"
OOM_TOPIC = f"projects/{PROJECT}/topics/notebook-oom"
RESTART_TOPIC = f"projects/{PROJECT}/topics/notebook-restarts"
DEAD_LETTER_TOPIC = f"projects/{PROJECT}/topics/notebook-restarts-dead-letter"
MEMORY_TOPIC = f"projects/{PROJECT}/topics/notebook-memory-alerts"
SWEEP_TOPIC = f"projects/{PROJECT}/topics/notebook-sweep"  # Cloud Scheduler's tick to health_sweep (infra/sweep.tf)
TOPICS = (OOM_TOPIC, RESTART_TOPIC, DEAD_LETTER_TOPIC, MEMORY_TOPIC, SWEEP_TOPIC)


def default_pubsub_backend() -> str:
    """$MEDIC_PUBSUB if set, else Google's emulator where it is installed (the real part), else the simulator."""
    chosen = os.environ.get(PUBSUB_ENV, "").strip()
    if chosen:
        if chosen not in BACKENDS:
            raise ValueError(f"{PUBSUB_ENV} must be simulator or emulator, not {chosen!r}")
        return chosen
    return "emulator" if emulator_launcher() is not None else "simulator"


class StackPubSub(Protocol):
    """What the stack asks of its Pub/Sub: the simulator's, or Google's emulator's (EmulatorPubSub)."""

    host: str
    push_auth: Callable[[str, str], str] | None  # signs a push's OIDC token, as Pub/Sub does (simulators/oidc.py)

    def resource(self, name: str) -> str: ...
    def stop(self) -> None: ...
    def create_topic(self, topic: str) -> None: ...
    def create_push_subscription(self, name: str, topic: str, endpoint: str, *, push_format: str = ...,
                                 ordering: bool = ..., ack_deadline_s: float = ...,
                                 max_delivery_attempts: int | None = ..., dead_letter_topic: str | None = ...,
                                 oidc_token: tuple[str, str] | None = ...) -> None: ...
    def publish(self, topic: str, data: bytes, attributes: dict[str, str] | None = ...,
                ordering_key: str = ...) -> str: ...
    def wait_idle(self, timeout: float = ...) -> bool: ...


@runtime_checkable
class PubSubRecords(Protocol):
    """What a test reads of what went through the stack's Pub/Sub: every message published, every push and its
    status, every message dead-lettered. The simulator keeps them; so does an EmulatorPubSub that records them."""

    @property
    def deliveries(self) -> list[Delivery]: ...
    @property
    def dead_lettered(self) -> list[DeadLetter]: ...
    def published(self, topic: str) -> list[PublishedMessage]: ...


def subscribe_functions(bus: StackPubSub, *, on_oom: str, on_memory_alert: str | None, worker: str,
                        ack_deadline_s: float, max_delivery_attempts: int | None,
                        push_identity: tuple[str, str] | None, health_sweep: str | None = None) -> None:
    """The subscriptions infra/pubsub.tf and the Eventarc triggers make: CloudEvent pushes to on_oom and
    on_memory_alert; the ordered restart subscription (dead-letter policy when attempts are limited) to the worker."""
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
