"""Cloud Run in front of the worker: 429 when every instance is busy, and Pub/Sub counting it as a failed push.

The worker runs with concurrency 1 (infra/functions.tf); when every instance up to max_instance_count is busy,
Cloud Run answers a push 429 and Pub/Sub redelivers it later, counting the attempt toward the dead-letter
policy (docs/fidelity.md, "Pub/Sub push and Cloud Run"). Here one worker process with concurrency 1 stands for
a worker at its instance limit.
"""

from __future__ import annotations

import pytest

from simulators.entries import oom_entry
from simulators.polling import PATIENCE_S
from simulators.stack import PROJECT, RESTART_TOPIC, LocalStack
from tests.integration.conftest import new_instance

pytestmark = pytest.mark.wire
ZONE = "asia-northeast1-a"


def kill_two_at_once(stack: LocalStack, prefix: str) -> list[str]:
    fulls = []
    for _ in range(2):
        full, name = new_instance(stack, prefix)
        stack.workbench.oom_kill(full, jupyter_survives=False, health_delay_s=0.1)
        stack.sink(oom_entry(PROJECT, ZONE, name))
        fulls.append(full)
    return fulls


def refused_pushes(stack: LocalStack) -> list[int]:
    restarts = {m.message_id for m in stack.pubsub.published(RESTART_TOPIC)}
    return [d.attempt for d in stack.pubsub.deliveries if d.message_id in restarts and d.status == 429]


def test_a_push_refused_while_the_worker_is_busy_is_redelivered_and_each_instance_reset_once() -> None:
    with LocalStack(worker_concurrency=1, workbench_options={"reset_seconds": 2.0}) as stack:
        first, second = kill_two_at_once(stack, "wb-busy")
        assert stack.workbench.wait_until(
            lambda: stack.workbench.resets(first) == 1 and stack.workbench.resets(second) == 1, timeout=PATIENCE_S)
        assert stack.wait_idle()
        assert refused_pushes(stack), "no push found the worker busy: the test proves nothing"
        assert stack.balancer is not None and stack.balancer.refused >= 1
        assert stack.workbench.resets(first) == 1 and stack.workbench.resets(second) == 1


def test_refused_pushes_count_toward_the_dead_letter_policy() -> None:
    """What infra's dead_letter_max_delivery_attempts must allow for: a worker at its limit uses attempts up.

    The first push holds the worker for its reset, so the second's two attempts (the stack's backoff, 0.2 s apart)
    must both come within it. With a reset of 4 s, a run at load 27-37 saw no dead letter in 60 s: the machine's
    speed decided it. A long reset decides nothing, and costs nothing: the wait ends at the dead letter."""
    with LocalStack(worker_concurrency=1, max_delivery_attempts=2,
                    workbench_options={"reset_seconds": PATIENCE_S / 2}) as stack:
        kill_two_at_once(stack, "wb-dlq")
        assert stack.workbench.wait_until(lambda: bool(stack.pubsub.dead_lettered), timeout=PATIENCE_S)
        [dead] = stack.pubsub.dead_lettered
        assert sorted(refused_pushes(stack))[:2] == [1, 2] and dead.attempts == 2
