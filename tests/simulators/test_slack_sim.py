"""The Slack simulator, driven by the real slack_sdk clients and a real Bolt app (no mocks)."""

from __future__ import annotations

import json
import re
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.webhook import WebhookClient

from simulators.slack import SlackSimulator

pytestmark = pytest.mark.wire

TOKEN = "xoxb-test-token"
SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
TS_RE = re.compile(r"^\d{10}\.\d{6}$")


@pytest.fixture
def sim() -> Iterator[SlackSimulator]:
    s = SlackSimulator(bot_token=TOKEN)
    s.add_user("U0ALICE", "alice", "Alice@Example.com", real_name="Alice Liddell")
    s.add_user("U0NOMAIL", "nomail", None)
    s.add_user("U0GONE", "gone", "gone@example.com", deleted=True)
    s.add_channel("C0GENERAL", "general")
    s.add_channel("C0ALERTS", "alerts")
    s.start()
    yield s
    s.stop()


def client(sim: SlackSimulator, **kwargs: Any) -> WebClient:
    return WebClient(token=TOKEN, base_url=sim.api_url, **kwargs)


# --------------------------------------------------------------------------- Web API shapes


def test_auth_test_shape(sim: SlackSimulator) -> None:
    data = client(sim).auth_test().data
    assert data == {
        "ok": True,
        "url": "https://contest.slack.com/",
        "team": "Contest",
        "user": "notebook-medic",
        "team_id": "T0CONTEST",
        "user_id": "U0MEDICBOT",
        "bot_id": "B0MEDIC",
        "is_enterprise_install": False,
    }
    assert sim.api_url == sim.base_url + "/api/"


def test_invalid_and_missing_token(sim: SlackSimulator) -> None:
    with pytest.raises(SlackApiError) as bad:
        WebClient(token="xoxb-wrong", base_url=sim.api_url).auth_test()
    assert bad.value.response["error"] == "invalid_auth"
    with pytest.raises(SlackApiError) as missing:
        WebClient(base_url=sim.api_url).chat_postMessage(channel="C0GENERAL", text="x")
    assert missing.value.response["error"] == "not_authed"
    # a `token` form field works too
    body = urllib.parse.urlencode({"token": TOKEN}).encode()
    with urllib.request.urlopen(sim.api_url + "auth.test", data=body, timeout=5) as resp:
        assert json.loads(resp.read())["ok"] is True
    assert "token" not in sim.calls[-1].args


def test_unknown_method(sim: SlackSimulator) -> None:
    with pytest.raises(SlackApiError) as err:
        client(sim).api_call("chat.teleport", params={"channel": "C0GENERAL"})
    assert err.value.response.status_code == 200
    assert err.value.response["error"] == "unknown_method"
    assert (sim.calls[-1].method, sim.calls[-1].error) == ("chat.teleport", "unknown_method")


def test_post_message_shape_json_and_form(sim: SlackSimulator) -> None:
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "*hi*"}}]
    c = client(sim)
    first = c.chat_postMessage(channel="C0GENERAL", text="hi", blocks=blocks, unfurl_links=False)
    assert first["ok"] is True and first["channel"] == "C0GENERAL"
    assert TS_RE.match(first["ts"])
    msg = first["message"]
    assert msg["text"] == "hi" and msg["blocks"] == blocks and msg["ts"] == first["ts"]
    assert msg["bot_id"] == "B0MEDIC" and msg["user"] == "U0MEDICBOT"
    # WebClient sends chat.postMessage as JSON: blocks arrive as a list, booleans as booleans
    assert sim.calls[-1].args["blocks"] == blocks
    assert sim.calls[-1].args["unfurl_links"] is False

    # form encoding (blocks as a JSON string in a form field), and a channel name
    second = c.api_call(
        "chat.postMessage",
        params={"channel": "#general", "blocks": json.dumps(blocks), "unfurl_links": "0"},
    )
    assert second["channel"] == "C0GENERAL" and second["message"]["blocks"] == blocks
    assert second["ts"] > first["ts"]
    assert [m["ts"] for m in sim.messages("C0GENERAL")] == [first["ts"], second["ts"]]

    with pytest.raises(SlackApiError) as nochan:
        c.chat_postMessage(channel="C0NOPE", text="x")
    assert nochan.value.response["error"] == "channel_not_found"
    with pytest.raises(SlackApiError) as notext:
        c.api_call("chat.postMessage", json={"channel": "C0GENERAL"})
    assert notext.value.response["error"] == "no_text"


def test_ts_unique_and_increasing(sim: SlackSimulator) -> None:
    c = client(sim)
    stamps = [c.chat_postMessage(channel="C0GENERAL", text=str(i))["ts"] for i in range(20)]
    assert len(set(stamps)) == 20
    assert stamps == sorted(stamps, key=float)


def test_post_to_user_id_goes_to_dm_and_conversations_open(sim: SlackSimulator) -> None:
    c = client(sim)
    posted = c.chat_postMessage(channel="U0ALICE", text="your notebook restarted")
    assert posted["channel"] == "D0ALICE"
    opened = c.conversations_open(users="U0ALICE")
    assert opened["channel"]["id"] == "D0ALICE"
    c.chat_postMessage(channel=opened["channel"]["id"], text="second")
    assert [m["text"] for m in sim.messages("D0ALICE")] == ["your notebook restarted", "second"]
    assert sim.messages("U0ALICE") == sim.messages("D0ALICE")
    fresh = c.conversations_open(users=["U0NOMAIL"])
    assert fresh.data == {"ok": True, "channel": {"id": "D0NOMAIL"}}
    with pytest.raises(SlackApiError) as err:
        c.conversations_open(users="U0WHO")
    assert err.value.response["error"] == "user_not_found"
    with pytest.raises(SlackApiError) as unknown_user:
        c.chat_postMessage(channel="U0WHO", text="x")
    assert unknown_user.value.response["error"] == "channel_not_found"


def test_update_then_messages(sim: SlackSimulator) -> None:
    c = client(sim)
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "restarting…"}}]
    ts = c.chat_postMessage(channel="C0ALERTS", text="restarting", blocks=blocks)["ts"]
    up = c.chat_update(channel="C0ALERTS", ts=ts, text="restarted")
    assert (up["ok"], up["channel"], up["ts"], up["text"]) == (True, "C0ALERTS", ts, "restarted")
    [msg] = sim.messages("C0ALERTS")
    assert msg["text"] == "restarted"
    assert msg["blocks"] == blocks  # absent blocks are kept, as Slack documents
    assert msg["edited"]["user"] == "U0MEDICBOT"
    c.chat_update(channel="C0ALERTS", ts=ts, text="done", blocks=[])
    assert "blocks" not in sim.messages("C0ALERTS")[0]
    with pytest.raises(SlackApiError) as err:
        c.chat_update(channel="C0ALERTS", ts="1.000001", text="x")
    assert err.value.response["error"] == "message_not_found"


def test_thread_replies(sim: SlackSimulator) -> None:
    c = client(sim)
    parent = c.chat_postMessage(channel="C0ALERTS", text="OOM on alice-nb")["ts"]
    r1 = c.chat_postMessage(channel="C0ALERTS", text="restarting", thread_ts=parent)
    r2 = c.chat_postMessage(channel="C0ALERTS", text="back", thread_ts=parent)
    assert r1["message"]["thread_ts"] == parent
    msgs = sim.messages("C0ALERTS")
    assert [m["text"] for m in msgs] == ["OOM on alice-nb", "restarting", "back"]
    assert [m.get("thread_ts") for m in msgs] == [parent, parent, parent]
    assert msgs[0]["reply_count"] == 2 and msgs[0]["latest_reply"] == r2["ts"]
    with pytest.raises(SlackApiError) as err:
        c.chat_postMessage(channel="C0ALERTS", text="x", thread_ts="1.000001")
    assert err.value.response["error"] == "thread_not_found"


def test_post_ephemeral(sim: SlackSimulator) -> None:
    resp = client(sim).chat_postEphemeral(channel="C0GENERAL", user="U0ALICE", text="only you")
    assert resp["ok"] is True and TS_RE.match(resp["message_ts"])
    assert set(resp.data) == {"ok", "message_ts"}
    assert sim.messages("C0GENERAL") == []
    assert sim.ephemeral_messages("C0GENERAL")[0]["user"] == "U0ALICE"


def test_users_info_and_lookup_by_email(sim: SlackSimulator) -> None:
    c = client(sim)
    user = c.users_info(user="U0ALICE")["user"]
    assert user["id"] == "U0ALICE" and user["team_id"] == "T0CONTEST"
    assert user["name"] == "alice" and user["real_name"] == "Alice Liddell"
    assert user["deleted"] is False and user["is_bot"] is False
    assert user["tz"] == "Asia/Tokyo" and user["tz_offset"] == 9 * 3600
    assert user["profile"]["email"] == "Alice@Example.com"
    assert user["profile"]["real_name"] == "Alice Liddell"
    assert user["profile"]["display_name"] == "alice"
    assert "email" not in c.users_info(user="U0NOMAIL")["user"]["profile"]
    assert c.users_info(user="U0GONE")["user"]["deleted"] is True
    with pytest.raises(SlackApiError) as unknown:
        c.users_info(user="U0WHO")
    assert unknown.value.response["error"] == "user_not_found"

    assert user["is_email_confirmed"] is True and user["is_app_user"] is False


def test_users_info_says_who_may_not_be_trusted(sim: SlackSimulator) -> None:
    """The fields the bot refuses on (users.info; @slack/web-api UsersInfoResponse.ts): a bot, a member of
    another organisation, an unconfirmed email, and a user Slack says nothing about confirmation for."""
    sim.add_user("U0BOTTY", "botty", None, is_bot=True)
    sim.add_user("U0EXT", "ext", "ext@other.example", team_id="T0OTHER")
    sim.add_user("U0NEW", "new", "new@example.com", email_confirmed=False)
    sim.add_user("U0OLD", "old", "old@example.com", email_confirmed=None)
    c = client(sim)
    bot = c.users_info(user="U0BOTTY")["user"]
    assert bot["is_bot"] is True and bot["profile"]["bot_id"].startswith("B")
    external = c.users_info(user="U0EXT")["user"]
    assert external["team_id"] == "T0OTHER" != c.auth_test()["team_id"]
    assert c.users_info(user="U0NEW")["user"]["is_email_confirmed"] is False
    assert "is_email_confirmed" not in c.users_info(user="U0OLD")["user"]


def test_users_lookup_by_email(sim: SlackSimulator) -> None:
    c = client(sim)
    user = c.users_info(user="U0ALICE")["user"]
    found = c.users_lookupByEmail(email="alice@EXAMPLE.com")["user"]
    assert found == user
    for email in ("nobody@example.com", "gone@example.com"):  # deactivated: not found
        with pytest.raises(SlackApiError) as err:
            c.users_lookupByEmail(email=email)
        assert err.value.response["error"] == "users_not_found"


# --------------------------------------------------------------------------- response_url


def test_response_url_five_posts_then_used(sim: SlackSimulator) -> None:
    url = sim.new_response_url()
    assert url.startswith(sim.base_url + "/response/")
    hook = WebhookClient(url)
    for i in range(5):
        resp = hook.send(text=f"update {i}", response_type="ephemeral")
        assert (resp.status_code, resp.body) == (200, "ok")
    sixth = hook.send(text="one too many")
    assert (sixth.status_code, sixth.body) == (404, "used_url")
    assert [r["text"] for r in sim.responses(url)] == [f"update {i}" for i in range(5)]
    assert [c.status for c in sim.calls_to("response_url")] == [200] * 5 + [404]
    assert sim.calls[-1].error == "used_url"

    bogus = WebhookClient(sim.base_url + "/response/not-a-token").send(text="x")
    assert (bogus.status_code, bogus.body) == (404, "expired_url")
    sim.expire_response_url(url)
    assert WebhookClient(url).send(text="late").body == "expired_url"


def _section_fields(*texts: str) -> list[dict[str, Any]]:
    return [{"type": "section", "fields": [{"type": "mrkdwn", "text": t} for t in texts]}]


BUTTON = {"type": "button", "action_id": "a", "value": "v", "text": {"type": "plain_text", "text": "Go"}}
OVER_THE_LIMIT = {
    "field-2001": (_section_fields("x" * 2001), "/blocks/0/fields/0/text"),
    "eleven-fields": (_section_fields(*["x"] * 11), "/blocks/0/fields"),
    "section-3001": ([{"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3001}}], "/blocks/0/text/text"),
    "empty-section": ([{"type": "section", "text": {"type": "mrkdwn", "text": ""}}], "/blocks/0/text/text"),
    "header-151": ([{"type": "header", "text": {"type": "plain_text", "text": "x" * 151}}], "/blocks/0/text/text"),
    "header-mrkdwn": ([{"type": "header", "text": {"type": "mrkdwn", "text": "x"}}], "/blocks/0/text"),
    "51-blocks": ([{"type": "divider"}] * 51, "/blocks"),
    "button-label-76": ([{"type": "actions", "elements": [{**BUTTON, "text": {"type": "plain_text",
                                                                              "text": "x" * 76}}]}],
                        "/blocks/0/elements/0/text/text"),
    "button-value-2001": ([{"type": "actions", "elements": [{**BUTTON, "value": "x" * 2001}]}],
                          "/blocks/0/elements/0/value"),
    "confirm-text-301": ([{"type": "actions", "elements": [{**BUTTON, "confirm": {
        "title": {"type": "plain_text", "text": "t"}, "text": {"type": "plain_text", "text": "x" * 301},
        "confirm": {"type": "plain_text", "text": "y"}, "deny": {"type": "plain_text", "text": "n"}}}]}],
        "/blocks/0/elements/0/confirm/text/text"),
}


@pytest.mark.parametrize("case", list(OVER_THE_LIMIT))
def test_blocks_over_block_kits_limits_are_invalid_blocks(sim: SlackSimulator, case: str) -> None:
    """As Slack: a message over a Block Kit limit is refused whole (invalid_blocks), i.e. it is lost."""
    blocks, pointer = OVER_THE_LIMIT[case]
    with pytest.raises(SlackApiError) as err:
        client(sim).chat_postMessage(channel="C0ALERTS", text="t", blocks=blocks)
    assert err.value.response["error"] == "invalid_blocks"
    assert f"[json-pointer:{pointer}]" in err.value.response["response_metadata"]["messages"][0]
    ts = client(sim).chat_postMessage(channel="C0ALERTS", text="t")["ts"]
    with pytest.raises(SlackApiError, match="invalid_blocks"):
        client(sim).chat_update(channel="C0ALERTS", ts=ts, text="t", blocks=blocks)
    url = sim.new_response_url()
    assert (WebhookClient(url).send(text="t", blocks=blocks).status_code, sim.responses(url)) == (400, [])
    assert [m["ts"] for m in sim.messages("C0ALERTS")] == [ts] and "blocks" not in sim.messages("C0ALERTS")[0]


def test_blocks_at_block_kits_limits_are_accepted(sim: SlackSimulator) -> None:
    at_limit = [
        {"type": "header", "text": {"type": "plain_text", "text": "x" * 150}},
        *_section_fields(*["x" * 2000] * 10),
        {"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3000}},
        {"type": "actions", "elements": [{**BUTTON, "text": {"type": "plain_text", "text": "x" * 75},
                                          "value": "x" * 2000}]},
        *[{"type": "divider"}] * 46,
    ]
    assert len(at_limit) == 50
    assert client(sim).chat_postMessage(channel="C0ALERTS", text="t", blocks=at_limit)["ok"] is True


def test_response_url_replace_original(sim: SlackSimulator) -> None:
    ts = client(sim).chat_postMessage(channel="C0ALERTS", text="Restart alice-nb?")["ts"]
    url = sim.new_response_url(channel="C0ALERTS", message_ts=ts)
    WebhookClient(url).send(text="Restarting alice-nb…", replace_original=True)
    [msg] = sim.messages("C0ALERTS")
    assert (msg["ts"], msg["text"]) == (ts, "Restarting alice-nb…")
    WebhookClient(url).send(text="Restarted", response_type="in_channel")
    assert [m["text"] for m in sim.messages("C0ALERTS")] == ["Restarting alice-nb…", "Restarted"]
    WebhookClient(url).send(delete_original=True)
    assert [m["text"] for m in sim.messages("C0ALERTS")] == ["Restarted"]
