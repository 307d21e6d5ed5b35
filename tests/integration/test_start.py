"""A stopped notebook is one command from running (issue 23), over the wire: the owner's `/restart-notebook` starts
their own STOPPED notebook and says when it is running; another participant's is refused in the words of any other
notebook not theirs; one an organizer stopped waits for an organizer unless the organizer let its owner start it;
a start Workbench could not queue (409 ABORTED) is asked again.

How the instance came to be stopped is read from the bot's own record only (docs/fidelity.md, "Issue 23"): an idle
shutdown, the owner's own `sudo poweroff` and the console all leave a STOPPED instance with no `medic-stopped`
label, so the simulator's STOPPED instance without labels stands for each of them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from simulators.polling import PATIENCE_S
from simulators.slack import SlackRequester
from simulators.stack import SIGNING_SECRET, LocalStack
from tests.integration.conftest import new_instance
from tests.integration.helpers import ORGANIZER, stack_with_organizer
from tests.integration.wording import buttons, post_oom_alert, user_of, wait_reply

pytestmark = pytest.mark.wire


@pytest.fixture(scope="module")
def stack(label_visibility: str) -> Iterator[LocalStack]:
    with stack_with_organizer() as running:
        yield running


@pytest.fixture(scope="module")
def slack(stack: LocalStack) -> SlackRequester:
    return SlackRequester(SIGNING_SECRET, stack.functions["slack_app"][0].url)


def command(stack: LocalStack, slack: SlackRequester, user: str, text: str) -> tuple[str, str]:
    """The command's immediate answer, and its response_url (where the worker answers later)."""
    url = stack.slack.new_response_url()
    response = slack.slash_command(user, text, response_url=url)
    assert response.status == 200, response.body
    return response.body, url


def answered(stack: LocalStack, url: str, said: str, needle: str) -> str:
    """What the command said about `needle`: at once, or, when its reads outlasted Slack's window, through its
    response_url once the worker has read and decided."""
    return said if needle in said else wait_reply(stack, url, needle, timeout=PATIENCE_S)


def top_level(stack: LocalStack) -> list[dict[str, Any]]:
    """The channel's messages that are not replies (a parent carries its own ts as thread_ts, as Slack shows it)."""
    return [m for m in stack.alerts() if m.get("thread_ts") in (None, m["ts"])]


def state(stack: LocalStack, full: str) -> str:
    return str(stack.workbench.get(full)["state"])


def test_an_idle_stopped_notebook_is_started_by_its_owner_who_is_told_when_it_runs(
    stack: LocalStack, slack: SlackRequester
) -> None:
    full, name = new_instance(stack, "wb-idle", state="STOPPED")
    said, url = command(stack, slack, user_of(name), "")
    answered(stack, url, said, f"*{name}* is stopped; starting it")
    wait_reply(stack, url, f"*{name}* is running again", timeout=PATIENCE_S)
    assert state(stack, full) == "ACTIVE"
    assert stack.wait_idle()
    assert "medic-stopped" not in stack.workbench.get(full).get("labels", {})
    assert not [m for m in stack.alerts() if name in str(m.get("text", ""))], "a participant's start is no alert"


def test_another_participants_stopped_notebook_is_refused_as_any_notebook_not_theirs(
    stack: LocalStack, slack: SlackRequester
) -> None:
    full, name = new_instance(stack, "wb-theirs", state="STOPPED")
    _, other = new_instance(stack, "wb-mine")
    said, url = command(stack, slack, user_of(other), name)
    answered(stack, url, said, f":no_entry: `{name}` is not your notebook, so you can't restart it.")
    assert stack.wait_idle() and state(stack, full) == "STOPPED"


def test_an_organizers_stop_holds_the_notebook_until_an_organizer_starts_it(
    stack: LocalStack, slack: SlackRequester
) -> None:
    full, name = new_instance(stack, "wb-held")
    alert = post_oom_alert(stack, full)
    url = stack.slack.new_response_url()
    slack.block_action(ORGANIZER[0], "medic_stop", full, response_url=url, message_ts=alert["ts"], message=alert)
    wait_reply(stack, url, "Instance stopped by")
    assert stack.wait_idle() and state(stack, full) == "STOPPED"
    said, url = command(stack, slack, user_of(name), "")
    said = answered(stack, url, said, "only they can start it again")
    assert f"`{name}` was stopped by the organizers at" in said, said
    assert stack.wait_idle() and state(stack, full) == "STOPPED"
    assert buttons(stack, alert["ts"])[0] == "medic_start"
    [message] = [m for m in stack.alerts() if m["ts"] == alert["ts"]]
    url = stack.slack.new_response_url()
    slack.block_action(ORGANIZER[0], "medic_start", full, response_url=url, message_ts=alert["ts"], message=message)
    wait_reply(stack, url, f"*{name}* is running again", timeout=PATIENCE_S)
    assert stack.wait_idle() and state(stack, full) == "ACTIVE"  # the reply first; the thread and the DM after
    thread = [m for m in stack.alerts() if m.get("thread_ts") == alert["ts"]]
    assert any("Started again by <@U0ORG>" in m["text"] for m in thread), thread
    told = [m["text"] for m in stack.slack.messages(user_of(name))]
    assert any(f"<@U0ORG> started your notebook *{name}*" in t for t in told), told


def test_a_stop_that_lets_the_owner_start_it_is_started_by_the_owner_and_said_in_the_alerts_thread(
    stack: LocalStack, slack: SlackRequester
) -> None:
    full, name = new_instance(stack, "wb-open")
    alert = post_oom_alert(stack, full)
    url = stack.slack.new_response_url()
    slack.block_action(ORGANIZER[0], "medic_stop_open", full, response_url=url, message_ts=alert["ts"],
                       message=alert)
    wait_reply(stack, url, "Instance stopped by")
    assert stack.wait_idle() and state(stack, full) == "STOPPED"
    told = [m["text"] for m in stack.slack.messages(user_of(name))]
    assert any("`/restart-notebook` starts it" in t for t in told), told
    alerts_before = len(top_level(stack))
    said, url = command(stack, slack, user_of(name), name)
    answered(stack, url, said, "starting it")
    wait_reply(stack, url, "is running again", timeout=PATIENCE_S)
    assert stack.wait_idle()
    thread = [m for m in stack.alerts() if m.get("thread_ts") == alert["ts"]]
    assert any(f"Started again by <@{user_of(name)}>" in m["text"] for m in thread), thread
    assert len(top_level(stack)) == alerts_before, "a thread line, no alert"


def test_a_start_workbench_could_not_queue_is_asked_again(stack: LocalStack, slack: SlackRequester) -> None:
    """409 ABORTED "unable to queue the operation" (issue 14): nothing was queued, so the start is sent again."""
    full, name = new_instance(stack, "wb-busy", state="STOPPED")
    stack.workbench.inject_fault(method="start", path_contains=f"/instances/{name}", kind="http", status=409,
                                 count=1, grpc_status="ABORTED")
    _, url = command(stack, slack, user_of(name), "")
    wait_reply(stack, url, "is running again", timeout=PATIENCE_S)
    assert state(stack, full) == "ACTIVE"
    assert stack.workbench.count_calls("start") >= 2
