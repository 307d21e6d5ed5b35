"""restart_worker reads a push only when its OIDC token is Google's, for the worker's audience, from the push service
account (issue 25): Cloud Run's IAM is not the only door. Over the wire, against the real function: each token a
forger could bring is refused (401/403) with nothing read or done; the token Pub/Sub signs is acted on; and the
worker will not start without an audience (shared/adapters/push_auth.py, simulators/oidc.py)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from shared.core import envelope, payloads
from shared.core.models import Action, Requester, RestartRequest, Trigger
from shared.core.payloads import RestartPayload
from simulators.oidc import OidcIssuer
from simulators.polling import PATIENCE_S
from simulators.stack import PROJECT, RESTART_TOPIC, LocalStack
from tests.integration.conftest import new_instance
from tests.integration.helpers import ORGANIZER, wait_for
from tests.integration.test_misconfiguration import _refused_start
from tests.support import pubsub_message


@pytest.fixture(scope="module")
def stack(label_visibility: str) -> Iterator[LocalStack]:
    """A stack whose Slack knows the organizer: the worker asks Slack whether a requester is one (issue 25)."""
    with LocalStack() as running:
        running.slack.add_user(ORGANIZER[0], "org", ORGANIZER[1])
        yield running


def _post(url: str, body: bytes, authorization: str | None) -> int:
    headers = {"Content-Type": "application/json", **({"Authorization": authorization} if authorization else {})}
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=PATIENCE_S) as response:
            return int(response.status)
    except urllib.error.HTTPError as err:
        return int(err.code)


ORGANIZER_ASKS = Requester(*ORGANIZER, True)


def _restart_push(stack: LocalStack, full: str, event: str, requester: Requester = ORGANIZER_ASKS,
                  action: Action = Action.RESTART) -> bytes:
    """The push Pub/Sub would make of an organizer's restart of `full`: read, it resets the notebook."""
    request = RestartRequest(action=action, trigger=Trigger.BUTTON, instance=full, requested_at=datetime.now(UTC),
                             event_id=event, requester=requester, payload=payloads.empty(action.value))
    message = pubsub_message(envelope.encode(request), message_id=event)
    return json.dumps({"message": message, "subscription": f"projects/{PROJECT}/subscriptions/restart-worker-push"}
                      ).encode()


def _forged(stack: LocalStack, kind: str) -> str | None:
    """The Authorization header a forger brings, by kind; None: none at all."""
    account, audience = stack.push_service_account, stack.push_audience
    if kind == "no token":
        return None
    if kind == "not a bearer token":
        return "Basic " + "x" * 40
    if kind == "wrong audience":  # Google-signed, for another service: a token meant for someone else, replayed
        return stack.issuer.signer(account, "https://another-service-123456789012.asia-northeast1.run.app")
    if kind == "wrong email":  # Google-signed, for this worker, but another account's (a participant's own token)
        return stack.issuer.signer(f"participant@{PROJECT}.iam.gserviceaccount.com", audience)
    if kind == "email not verified":
        return "Bearer " + stack.issuer.token(account, audience, email_verified=False)
    if kind == "expired":  # Pub/Sub's own token, an hour and a half old
        return "Bearer " + stack.issuer.token(account, audience, issued_at=time.time() - 5400)
    if kind == "another issuer":
        return "Bearer " + stack.issuer.token(account, audience, iss="https://issuer.example")
    if kind == "another key":  # every claim right, signed by a key Google's certificates don't list
        return OidcIssuer().signer(account, audience)
    raise AssertionError(kind)


REFUSED = {"no token": 401, "not a bearer token": 401, "wrong audience": 401, "expired": 401, "another issuer": 401,
           "another key": 401, "wrong email": 403, "email not verified": 403}


@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_a_push_without_pubsubs_token_is_refused_and_nothing_is_done(stack: LocalStack, kind: str) -> None:
    full, name = new_instance(stack, "forged-push")
    url = stack.functions["restart_worker"][0].url
    status = _post(url, _restart_push(stack, full, f"forged-{name}"), _forged(stack, kind))
    assert status == REFUSED[kind]
    assert stack.wait_idle()
    assert stack.workbench.resets(full) == 0
    assert not [r for r in stack.audit_records() if r.get("instance") == name], "the body was read"
    assert any(r.get("decision") == "push refused" and r.get("status") == REFUSED[kind]
               for r in stack.worker_records())


def test_the_token_pubsub_signs_is_acted_on(stack: LocalStack) -> None:
    """The same push with the token the push subscription's account gets: the restart goes ahead."""
    full, name = new_instance(stack, "signed-push")
    status = _post(stack.functions["restart_worker"][0].url, _restart_push(stack, full, f"signed-{name}"),
                   stack.push_headers()["Authorization"])
    assert status == 204
    assert wait_for(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)


def test_every_push_through_the_stack_carries_a_token_that_holds(stack: LocalStack) -> None:
    """The stack's pushes, on either Pub/Sub, are signed as Pub/Sub signs them (every other wire test goes through
    them)."""
    refused_before = len([r for r in stack.worker_records() if r.get("decision") == "push refused"])
    full, name = new_instance(stack, "through-pubsub")
    stack.publish(RESTART_TOPIC, _message_data(full, f"bus-{name}"), {"instance": name}, ordering_key=full)
    assert wait_for(lambda: stack.workbench.resets(full) == 1, timeout=PATIENCE_S)
    assert stack.wait_idle()
    assert len([r for r in stack.worker_records() if r.get("decision") == "push refused"]) == refused_before
    assert stack.pubsub.deliveries and all(d.acked for d in stack.pubsub.deliveries)


def _message_data(full: str, event: str) -> bytes:
    return envelope.encode(RestartRequest(action=Action.RESTART, trigger=Trigger.SLASH_COMMAND, instance=full,
                          requested_at=datetime.now(UTC), event_id=event,
                          requester=Requester(ORGANIZER[0], ORGANIZER[1], True), payload=RestartPayload()))


def test_a_signed_push_claiming_a_participant_is_an_organizer_stops_nothing(stack: LocalStack) -> None:
    """Signed as Pub/Sub signs, but its message says a participant is an organizer: the worker asks Slack (the
    Slack app's own rule: ORGANIZER_EMAILS, the organizer group) and acts on nothing (issue 25)."""
    full, name = new_instance(stack, "claimed-stop")
    stack.slack.add_user("U0MALLORY", "mallory", "mallory@contest.example")
    claim = Requester("U0MALLORY", "org@contest.example", True)  # even the organizer's email, written in the message
    body = _restart_push(stack, full, f"claim-{name}", claim, Action.STOP)
    status = _post(stack.functions["restart_worker"][0].url, body, stack.push_headers()["Authorization"])
    assert status == 204
    assert stack.wait_idle()
    assert stack.workbench.get(full)["state"] == "ACTIVE" and stack.workbench.resets(full) == 0
    [audit] = [r for r in stack.audit_records() if r.get("instance") == name]
    assert audit["decision"] == "denied" and "organizer claim" in audit["outcome"]


@pytest.mark.parametrize("missing", ["PUSH_AUDIENCE", "PUSH_SERVICE_ACCOUNT"])
def test_the_worker_will_not_start_without_its_push_audience(stack: LocalStack, tmp_path: Path, missing: str) -> None:
    """An unset audience is a configuration error, never "skip the check"."""
    env = {key: value for key, value in stack.function_env().items() if key != missing}
    line = _refused_start("restart_worker", env, tmp_path)
    assert f"{missing} is required" in line["message"]
