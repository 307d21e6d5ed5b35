"""The owner's email comes from instance metadata (proxy-user-mail): outside text, shown in the alert.

SlackNotifier (the real WebClient) against the Slack simulator in this process, which refuses blocks over
Block Kit's limits as Slack does (invalid_blocks: the alert would be lost).
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from slack_sdk.errors import SlackApiError

from shared.adapters.errors import (
    MaybeAppliedError,
    NotFoundError,
    RefusedError,
    ServiceError,
    TransientError,
)
from shared.adapters.slack_notify import SlackNotifier, from_slack, is_slack_response_url
from shared.core.blocks import AlertFacts, alert_blocks
from shared.core.models import InstanceRef
from simulators.slack import SlackSimulator

TOKEN = "xoxb-unit-token"
CHANNEL = "C0ALERTS"
REF = InstanceRef.parse("projects/contest-prj/locations/asia-northeast1-a/instances/wb-alice")
HOSTILE = {
    "mentions-and-link": "<!channel> <https://evil.example|reset your password>",
    "entity": "a&amp;b@contest.example",
    "newlines": "alice@contest.example\n*Owner*\n<!here>",
    "email-shaped-but-huge": "a" * 5000 + "@contest.example",
    "huge": "<!here>" * 1000,
    "user-mention": "<@U0ORG>",
}


@pytest.fixture(scope="module")
def slack() -> Iterator[tuple[SlackSimulator, SlackNotifier]]:
    with SlackSimulator(bot_token=TOKEN) as sim:
        sim.add_channel(CHANNEL, "alerts")
        sim.add_user("U0ALICE", "alice", "alice@contest.example")
        yield sim, SlackNotifier(token=TOKEN, base_url=sim.api_url, timeout_s=2,
                                 response_url_base=sim.response_url_base)


def owner_field(blocks: list[dict[str, object]]) -> str:
    fields = [f["text"] for b in blocks for f in b.get("fields", [])]  # type: ignore[attr-defined]
    [owner] = [f for f in fields if f.startswith("*Owner*")]
    return str(owner)


@pytest.mark.parametrize("case", list(HOSTILE))
def test_an_owner_that_is_not_a_slack_user_is_shown_as_plain_bounded_text(
    slack: tuple[SlackSimulator, SlackNotifier], case: str
) -> None:
    sim, notifier = slack
    shown = notifier.mention(HOSTILE[case])
    assert "<" not in shown and ">" not in shown and "\n" not in shown, shown
    fallback, blocks = alert_blocks(AlertFacts(title="wb-alice ran out of memory", instance=REF, owner=shown),
                                    lang="en", tz=ZoneInfo("UTC"), console_url="https://console.example",
                                    crashloop_limit=3, reset_after_s=600)
    ts = notifier.post(CHANNEL, fallback, blocks)
    assert ts is not None, "the alert was refused: lost"
    [posted] = [m for m in sim.messages(CHANNEL) if m["ts"] == ts]
    field = owner_field(posted["blocks"])
    assert len(field) <= 2000 and "<!" not in field and "<http" not in field and "<@" not in field, field[:200]


def test_an_owner_who_is_a_slack_user_is_mentioned_and_lookups_are_only_for_emails(
    slack: tuple[SlackSimulator, SlackNotifier]
) -> None:
    sim, notifier = slack
    assert notifier.mention("alice@contest.example") == "<@U0ALICE>"
    assert notifier.mention("nobody@contest.example") == "nobody@contest.example"
    before = len(sim.calls_to("users.lookupByEmail"))
    for value in HOSTILE.values():
        notifier.mention(value)
        assert notifier.user_id_for(value) is None
    assert len(sim.calls_to("users.lookupByEmail")) == before  # outside text is not sent to Slack as an email
    assert json.dumps(notifier.mention("")) == '""'


@pytest.mark.parametrize("owner", ["a\u0301lice@contest.example",
                                   "\uff41lice@contest.example", "alice@contest.exampl\u0435"])
def test_a_look_alike_owner_is_never_mentioned_or_looked_up_as_the_person_it_mimics(
    slack: tuple[SlackSimulator, SlackNotifier], owner: str
) -> None:
    """proxy-user-mail `\uff41lice@…` must not ping (or be DM'd as) alice: shown as written, never sent to Slack."""
    sim, notifier = slack
    before = len(sim.calls_to("users.lookupByEmail"))
    assert notifier.mention(owner) == owner and notifier.user_id_for(owner) is None
    assert not notifier.dm(owner, "your notebook ran out of memory")
    assert len(sim.calls_to("users.lookupByEmail")) == before


def test_status_table_keeps_a_hostile_owner_on_its_row_and_inside_the_code_block() -> None:
    """`/restart-notebook status` lists owners in a code block: escaped, one line each, no ``` to end it."""
    from datetime import UTC, datetime  # noqa: PLC0415

    from shared.adapters.config import Need, load_settings  # noqa: PLC0415
    from shared.app.slack.replies import status_reply  # noqa: PLC0415
    from shared.core import messages  # noqa: PLC0415
    from shared.core.commands import Caller  # noqa: PLC0415
    from shared.core.models import InstanceState, InstanceView  # noqa: PLC0415

    env = {"GOOGLE_CLOUD_PROJECT": "contest-prj", "RESTART_TOPIC": "notebook-restarts", "SLACK_BOT_TOKEN": TOKEN,
           "SLACK_ALERT_CHANNEL": CHANNEL, "SLACK_SIGNING_SECRET": "s", "ORGANIZER_EMAILS": "org@contest.example",
           "WORKBENCH_ZONES": "asia-northeast1-a"}
    settings = load_settings({Need.PUBLISH, Need.SLACK_APP}, env)
    owners = ["```\n<!channel> *bold* <https://evil.example|x>", "x" * 5000, *HOSTILE.values()]
    views = [InstanceView(InstanceRef.parse(f"{REF.full_name}-{i}"), InstanceState.ACTIVE, "HEALTHY", {}, owner,
                          "e2-standard-4") for i, owner in enumerate(owners)]
    answer = status_reply(messages.For(settings.message_language), settings,
                          Caller("U0ORG", "org@contest.example", True), views, datetime.now(UTC))
    table = answer["blocks"][1]["text"]["text"]
    assert table.startswith("```") and table.endswith("```") and table.count("```") == 2, table[:300]
    assert "<" not in table and len(table) <= 3000
    assert len(table.strip("`").splitlines()) == 1 + len(owners)  # a header, then one line per instance


def test_status_header_names_the_count_its_column_shows() -> None:
    """The RESTARTS column shows the alert's count, the current run of automatic restarts: three restarts 20
    minutes apart (CRASHLOOP_RESET_AFTER 10 min) show 1, under a header that says what that 1 counts."""
    import time  # noqa: PLC0415
    from datetime import UTC, datetime  # noqa: PLC0415

    from shared.adapters.config import Need, load_settings  # noqa: PLC0415
    from shared.app.slack.replies import status_reply  # noqa: PLC0415
    from shared.core import messages  # noqa: PLC0415
    from shared.core.commands import Caller  # noqa: PLC0415
    from shared.core.models import InstanceState, InstanceView  # noqa: PLC0415

    env = {"GOOGLE_CLOUD_PROJECT": "contest-prj", "RESTART_TOPIC": "notebook-restarts", "SLACK_BOT_TOKEN": TOKEN,
           "SLACK_ALERT_CHANNEL": CHANNEL, "SLACK_SIGNING_SECRET": "s", "ORGANIZER_EMAILS": "org@contest.example",
           "WORKBENCH_ZONES": "asia-northeast1-a"}
    settings = load_settings({Need.PUBLISH, Need.SLACK_APP}, env)
    now = int(time.time())
    restarts = "_".join(str(now - minutes * 60) for minutes in (40, 20, 1))
    view = InstanceView(REF, InstanceState.ACTIVE, "HEALTHY", {}, "alice@contest.example", "e2-standard-4",
                        labels={"medic-restarts": restarts})
    answer = status_reply(messages.For(settings.message_language), settings,
                          Caller("U0ORG", "org@contest.example", True), [view], datetime.fromtimestamp(now, UTC))
    header, row = answer["blocks"][1]["text"]["text"].strip("`").splitlines()
    assert header.split(" | ")[4] == "AUTO RESTARTS IN A ROW", header
    assert row.split(" | ")[4] == "1", row


SLACK_URLS = ("https://hooks.slack.com/commands/T0CONTEST/1234/abcd", "https://hooks.slack.com/actions/T0/1/x",
              "https://HOOKS.slack.com/actions/T0/1/x")
NOT_SLACK_URLS = (
    "http://hooks.slack.com/actions/T0/1/x",  # not https
    "https://hooks.slack.com.evil.example/actions/x",
    "https://evil.example/hooks.slack.com/actions/x",
    "https://hooks.slack.com@evil.example/actions/x",
    "https://evil.example#@hooks.slack.com/actions/x",
    "https://evil.example\\@hooks.slack.com/actions/x",
    "https://hooks.slack.com:8443/actions/x",
    "https://hooks.slack.com:notaport/actions/x",
    "https://hooks.slack.com/actions/x\nHost: evil.example",
    " https://hooks.slack.com/actions/x",
    "https://hooks.slack.co\u043c/actions/x",
    "//hooks.slack.com/actions/x",
    "hooks.slack.com/actions/x",
    "",
)


def test_only_slacks_response_urls_are_slacks() -> None:
    assert all(is_slack_response_url(url) for url in SLACK_URLS)
    assert not any(is_slack_response_url(url) for url in NOT_SLACK_URLS), [u for u in NOT_SLACK_URLS
                                                                           if is_slack_response_url(u)]
    local = "http://127.0.0.1:8090/response/"
    assert is_slack_response_url(local + "tok", local)
    for url in ("http://127.0.0.1:8091/response/tok", "http://127.0.0.1:8090/api/chat.postMessage",
                "http://127.0.0.1:8090/response/../api/x", SLACK_URLS[0]):
        assert not is_slack_response_url(url, local), url
    assert not is_slack_response_url(None) and not is_slack_response_url(["https://hooks.slack.com/a"])


def test_respond_posts_nothing_to_a_url_that_is_not_slacks(slack: tuple[SlackSimulator, SlackNotifier]) -> None:
    sim, notifier = slack
    issued = sim.new_response_url()
    assert notifier.respond(issued, "done")
    before = len(sim.calls)
    assert not notifier.respond(issued.replace("/response/", "/api/"), "done")
    assert not notifier.respond(issued.replace("127.0.0.1", "localhost"), "done")
    assert len(sim.calls) == before


TOO_LONG = {"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3001}}  # Block Kit: 3000 at most


@pytest.mark.parametrize(("call", "error", "status"), [
    pytest.param(lambda c: c.chat_postMessage(channel="C0NOWHERE", text="x"), NotFoundError, "channel_not_found",
                 id="no-channel"),
    pytest.param(lambda c: c.users_lookupByEmail(email="nobody@contest.example"), NotFoundError, "users_not_found",
                 id="no-user"),
    pytest.param(lambda c: c.chat_postMessage(channel=CHANNEL, text="x", blocks=[TOO_LONG]), RefusedError,
                 "invalid_blocks", id="bad-blocks"),
])
def test_slacks_answers_are_the_projects_errors_named_by_slacks_code(
    slack: tuple[SlackSimulator, SlackNotifier], call: Any, error: type[ServiceError], status: str
) -> None:
    """What slack_sdk raises over the wire (SlackApiError), read by from_slack: the family and Slack's own code."""
    _, notifier = slack
    with pytest.raises(SlackApiError) as raised:
        call(notifier.client)
    translated = from_slack(raised.value)
    assert type(translated) is error and isinstance(translated, ServiceError) and translated.status == status


def test_slack_unreachable_is_transient(slack: tuple[SlackSimulator, SlackNotifier]) -> None:
    from slack_sdk import WebClient  # noqa: PLC0415

    with pytest.raises(Exception) as raised:
        WebClient(token=TOKEN, base_url="http://127.0.0.1:9/api/", timeout=2).auth_test()
    translated = from_slack(raised.value)
    assert isinstance(translated, TransientError) and not isinstance(translated, MaybeAppliedError)


@pytest.mark.parametrize("error", ["fatal_error", "internal_error"])
def test_a_post_or_dm_that_slack_answered_with_an_error_is_not_sent_again(
    slack: tuple[SlackSimulator, SlackNotifier], error: str
) -> None:
    """Only a chat.postMessage that timed out is tried once more (a repeated alert beats a lost one). An answer,
    even Slack's "some aspect of the operation may have succeeded" (fatal_error, internal_error), is not: a
    second try would repeat the alert, or the owner's DM, that Slack may have delivered already."""
    sim, notifier = slack
    for send in (lambda: notifier.post(CHANNEL, "wb-alice ran out of memory"),
                 lambda: notifier.dm("alice@contest.example", "your notebook restarted")):
        before = len(sim.calls_to("chat.postMessage"))
        sim.inject_fault("chat.postMessage", "error", 1, error=error)
        try:
            assert not send()
        finally:
            sim.clear_faults()
        assert len(sim.calls_to("chat.postMessage")) - before == 1


@pytest.mark.parametrize("raised", [http.client.IncompleteRead(b"{\"ok\": tr"), http.client.BadStatusLine("HTTP/1.")],
                         ids=["incomplete-read", "bad-status-line"])
def test_an_answer_that_cannot_be_read_is_one_that_may_have_been_applied(raised: Exception) -> None:
    """urllib's http.client raises these (not OSError) when a request was sent and its answer broke off: the
    Slack app's callers catch the project's errors (a press already queued is still answered as queued, a
    users.info that broke off is "Slack unavailable"), as they caught every exception before the refactor."""
    translated = from_slack(raised)
    assert isinstance(translated, MaybeAppliedError), translated
