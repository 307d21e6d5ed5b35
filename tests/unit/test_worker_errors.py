"""The worker's dispatcher (shared/app/worker/): one action per verdict, and the one place an error becomes an
outcome. In-process fakes behind the adapters' interfaces (tests/unit/test_waiting.py's), on a fake clock; the
same faults over the wire are in tests/integration/test_faults_retried.py and test_faults_reported.py."""

from __future__ import annotations

import base64
from dataclasses import replace

import pytest

from shared.adapters.errors import MaybeAppliedError, NotFoundError, RefusedError, TransientError
from shared.app.worker import Ended, Worker, WorkOutcome
from shared.app.worker.errors import FinalError, Rejected, TryAgainLater, classify
from shared.core.envelope import MalformedMessageError
from shared.core.history import INFLIGHT
from shared.core.models import Action, InstanceRef, InstanceView, Trigger
from shared.core.policy import Verdict
from tests.unit.test_waiting import RECEIVED, FakeWorkbench, oom, rig


def test_every_verdict_has_one_action_and_an_outcome_holds_it_not_a_mirror() -> None:
    worker, *_ = rig()
    assert set(worker.by_verdict) == set(Verdict)
    acted = WorkOutcome.acted(Verdict.RESET, "DONE in 3 s")
    assert (acted.ended, acted.verdict, acted.decision) == (Ended.ACTED, Verdict.RESET, "reset")
    retry = WorkOutcome(ack=False, ended=Ended.RETRY, detail="UNAVAILABLE")
    assert (retry.verdict, retry.decision) == (None, "retry")
    # The worker's own ends are few, and none of them is a policy verdict under another name.
    assert len(Ended) < len(Verdict) and not {ended.name for ended in Ended} & {verdict.name for verdict in Verdict}
    assert not {ended.value for ended in Ended} & {verdict.value for verdict in Verdict}, "an audit word of both"


@pytest.mark.parametrize("acting", [False, True])
def test_classify_tries_again_what_may_pass_and_ends_a_failed_read(acting: bool) -> None:
    """The table at the top of shared/app/worker: what may pass is tried again later wherever it rose; anything
    else is final before an action and tried again once an action may have changed the instance."""
    assert isinstance(classify(TransientError("UNAVAILABLE", "try later"), acting=acting), TryAgainLater)
    waiting = TryAgainLater("no reset seen yet", ended=Ended.RESET_NOT_SEEN, delay=3.0)
    assert classify(waiting, acting=acting) is waiting
    final = FinalError("refused")
    assert classify(final, acting=acting) is final
    for other in (NotFoundError("NOT_FOUND", "no such instance"), KeyError("a bug")):
        assert isinstance(classify(other, acting=acting), TryAgainLater if acting else FinalError)


class Failing(FakeWorkbench):
    """The instance's read fails with `error`; or, with `on_reset`, the reset does."""

    error: Exception | None = None
    on_reset: Exception | None = None

    def get(self, ref: InstanceRef, *, retry: bool = True) -> InstanceView:
        if self.error is not None:
            raise self.error
        return super().get(ref, retry=retry)

    def reset(self, ref: InstanceRef, *, on_busy: object = None) -> str:
        if self.on_reset is not None:
            raise self.on_reset
        return super().reset(ref, on_busy=on_busy)


def failing(**faults: Exception) -> tuple[Worker, Failing]:
    """A Worker whose instance is down (an OOM request resets it at once), with these faults."""
    worker, _, workbench, _ = rig(health_at=RECEIVED, workbench=Failing)
    assert isinstance(workbench, Failing)
    for name, error in faults.items():
        setattr(workbench, name, error)
    return worker, workbench


@pytest.mark.parametrize(
    ("error", "ack", "verdict"),
    [
        (TransientError("UNAVAILABLE", "503"), False, Ended.RETRY),
        (NotFoundError("NOT_FOUND", "no such instance"), True, Ended.API_ERROR),
        (KeyError("a fault of the worker's own"), True, Ended.API_ERROR),  # said, never a crash or a loop
    ],
)
def test_a_failed_read_ends_in_one_outcome(error: Exception, ack: bool, verdict: Ended) -> None:
    worker, _ = failing(error=error)
    outcome = worker.handle(oom())
    assert (outcome.ack, outcome.decision) == (ack, verdict), outcome
    said = worker.slack.posts  # type: ignore[attr-defined]
    assert bool(said) == ack  # a refusal is said in the channel; a retry says nothing yet


def test_a_memory_warning_for_a_vm_that_is_no_notebook_stays_quiet() -> None:
    worker, _ = failing(error=NotFoundError("NOT_FOUND", "no such instance"))
    outcome = worker.handle(replace(oom(), action=Action.WARN, trigger=Trigger.MEMORY))
    assert outcome.ack and outcome.decision == Ended.IGNORED and not worker.slack.posts  # type: ignore[attr-defined]


def test_a_reset_that_may_have_been_applied_keeps_its_intent_and_is_redelivered() -> None:
    worker, workbench = failing(on_reset=MaybeAppliedError("DEADLINE_EXCEEDED", "no answer"))
    outcome = worker.handle(oom())
    assert not outcome.ack and outcome.decision == Ended.RETRY
    assert workbench.labels.get(INFLIGHT)  # the redelivery looks for the reset before sending one (FOLLOW)


def test_a_reset_that_fails_below_the_apis_answers_is_the_restarts_failure_and_takes_its_intent_back() -> None:
    """What no adapter translates (google.auth's TransportError when no token can be had) is a refused reset,
    as it was before the errors were the project's: said as a failed restart, never left as a restart in flight."""
    worker, workbench = failing(on_reset=RuntimeError("could not get an access token"))
    outcome = worker.handle(oom())
    assert outcome.ack and outcome.decision == Ended.FAILED, outcome
    assert not workbench.labels.get(INFLIGHT)  # the attempt is recorded as one (rule 1), not in flight
    assert any("could not get an access token" in post for post in worker.slack.posts)  # type: ignore[attr-defined]


class FollowRefused(Failing):
    """The reset is sent; following it then fails with `follow_error` (REST: a finished operation's ParseError,
    then the confirming read refused)."""

    follow_error: Exception = RefusedError("PERMISSION_DENIED", "the read after the reset was refused")

    def follow(self, operation: object, ref: InstanceRef, *, deadline: float) -> object:
        raise self.follow_error


@pytest.mark.parametrize(
    "error", [RefusedError("PERMISSION_DENIED", "refused"), KeyError("a fault of the worker's own")], ids=str
)
def test_a_failure_after_the_reset_was_sent_is_redelivered_not_said_as_not_restarted(error: Exception) -> None:
    """Review finding: the reset went out, so "Not restarted" would be false; the redelivery follows the intent."""
    worker, _, workbench, _ = rig(health_at=RECEIVED, workbench=FollowRefused)
    assert isinstance(workbench, FollowRefused)
    workbench.follow_error = error
    outcome = worker.handle(oom())
    assert (outcome.ack, outcome.decision) == (False, Ended.RETRY), outcome
    assert workbench.resets == 1 and workbench.labels.get(INFLIGHT)  # in flight: the redelivery FOLLOWs it
    assert not any("Not restarted" in post for post in worker.slack.posts)  # type: ignore[attr-defined]


@pytest.mark.parametrize(("data", "says"), [
    (None, "no message.data"),
    ("not base64!", "not base64"),
    (base64.b64encode(b'{"version": 2, "type": "reboot-all", "payload": {}}').decode(), "no type this release"),
    (base64.b64encode(b'{"kind": "medic-bulk", "version": 1, "action": "stop"}').decode(), "wire version 1"),
    (base64.b64encode(b'{"version": 2, "type": "bulk", "payload": {"action": "explode"}}').decode(), "bulk message"),
    (base64.b64encode(b'{"version": 2, "type": "schedule", "payload": []}').decode(), "payload object"),
])
def test_a_malformed_message_is_rejected_through_the_table_with_why(data: str | None, says: str,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    """envelope.decode's one error is a row of the table (Rejected): acked, audited with the reason, no stack trace,
    nothing asked of Workbench or Slack."""
    assert isinstance(classify(MalformedMessageError("x"), acting=False), Rejected)
    worker, *_ = rig()
    outcome = worker.handle_push({"message": {"data": data, "messageId": "m1"}})
    assert (outcome.ack, outcome.ended) == (True, Ended.REJECTED) and says in outcome.detail, outcome
    assert not worker.slack.posts  # type: ignore[attr-defined]
    assert not [r for r in caplog.records if r.exc_info], "a rejection is no fault of the worker's own"
    assert any("rejected" in r.getMessage() and says in str(r.__dict__) for r in caplog.records)
