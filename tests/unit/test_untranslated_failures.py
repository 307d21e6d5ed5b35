"""Failures no adapter translates into the project's errors (shared/adapters/errors.py), in the worker's hands.

The adapters translate what Google's and Slack's client libraries answer; some failures are none of those:
google.auth's TransportError when a token can't be refreshed (the REST transport raises it as it is), the
Pub/Sub client's PublishToPausedOrderingKeyException, a bug. Before the refactor (d931a09) the worker caught
each of these where it happened, as it caught the API's answers there: a reset that failed is "Restart failed",
with its intent taken back; a record after the restart's alert is bookkeeping (ordering rule 2: never a second
alert); a continuation not published is redelivered (rule 4). These rows keep that, on the fakes and a FakeClock.
"""

from __future__ import annotations

from typing import Any

import pytest
from google.auth.exceptions import TransportError
from google.cloud.pubsub_v1.publisher.exceptions import PublishToPausedOrderingKeyException

from tests.fakes import Rig


@pytest.fixture
def rig(monkeypatch: pytest.MonkeyPatch) -> Rig:
    return Rig.build(monkeypatch, visibility="on-done")


def test_a_reset_that_fails_outside_the_apis_answers_is_a_failed_restart_with_its_intent_taken_back(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref = rig.instance("wb-noauth-reset")

    def reset(*_: Any, **__: Any) -> Any:
        raise TransportError("metadata server unreachable")  # type: ignore[no-untyped-call]

    monkeypatch.setattr(rig.workbench, "reset", reset)
    [outcome] = rig.push(rig.kill(ref))
    assert outcome.ack and outcome.decision == "failed", outcome
    rig.workbench.settle()
    assert "medic-inflight" not in rig.workbench.labels(ref), rig.workbench.labels(ref)
    assert any("metadata server unreachable" in alert for alert in rig.alerts(ref.name)), rig.alerts(ref.name)


def test_a_record_after_the_restarts_alert_that_fails_outside_the_apis_answers_is_only_logged(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref = rig.instance("wb-noauth-record")
    set_labels = rig.workbench.set_labels

    def record(*args: Any, confirm: bool = True, **kwargs: Any) -> Any:
        if not confirm:  # the record sent after the alert, not waited for (rule 2)
            raise TransportError("metadata server unreachable")  # type: ignore[no-untyped-call]
        return set_labels(*args, confirm=confirm, **kwargs)

    monkeypatch.setattr(rig.workbench, "set_labels", record)
    [outcome] = rig.push(rig.kill(ref))
    assert outcome.ack and outcome.decision == "reset", outcome
    assert rig.workbench.resets(ref) == 1
    assert not any("metadata server unreachable" in alert for alert in rig.alerts(ref.name)), rig.alerts(ref.name)


def test_a_continuation_the_pubsub_client_refuses_to_send_is_redelivered(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref = rig.instance("wb-paused-key")
    publish = rig.topic.publish
    refusals = [1]

    def paused(request: Any) -> str:
        if refusals.pop() if refusals else 0:
            raise PublishToPausedOrderingKeyException(request.instance)
        return publish(request)

    monkeypatch.setattr(rig.topic, "publish", paused)
    outcomes = rig.push(rig.kill(ref, reported_after_s=10**6))  # the agent stays silent: the incident waits
    assert not outcomes[0].ack and "continuation not published" in outcomes[0].detail, outcomes[0]
    assert outcomes[-1].decision == "reset", outcomes
    assert rig.workbench.resets(ref) == 1
