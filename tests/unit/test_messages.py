"""The catalogue: every message in both languages with the same placeholders, each key defined once; layout renders."""

from __future__ import annotations

import ast
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from shared.core import messages
from shared.core.blocks import SECTION_MAX, AlertFacts, alert_blocks, log_url, table_blocks
from shared.core.history import History
from shared.core.machines import memory_kib, next_size
from shared.core.messages import CATALOGUE, escape, human_bytes, human_duration, placeholders, slack_date, text, variant
from shared.core.models import InstanceRef
from shared.core.policy import PolicyConfig, crashloop_count

REF = InstanceRef("contest-prj", "asia-northeast1-a", "wb-alice")
PACKAGE = Path(messages.__file__).parent


@pytest.mark.parametrize("key", sorted(CATALOGUE))
def test_both_languages_with_the_same_placeholders(key: str) -> None:
    entry = CATALOGUE[key]
    assert set(entry) == {"en", "ja"}
    assert placeholders(entry["en"]) == placeholders(entry["ja"])


def literal_keys(source: str) -> list[str]:
    """The string keys of every dict literal in a catalogue module, as written (a repeat stays a repeat)."""
    return [key.value for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Dict)
            for key in node.keys if isinstance(key, ast.Constant) and isinstance(key.value, str) and "." in key.value]


def test_each_key_is_defined_once_across_the_catalogue_modules() -> None:
    """A key written twice (in one module's dict, or in two modules) would lose one of its wordings without a sound."""
    written = [key for path in sorted(PACKAGE.glob("*.py")) for key in literal_keys(path.read_text())]
    assert len(written) == len(CATALOGUE) and set(written) == set(CATALOGUE)
    with pytest.raises(ValueError, match="defined twice"):
        messages._merged({"a.b": {"en": "x", "ja": "x"}}, {"a.b": {"en": "y", "ja": "y"}})


def test_the_duplicate_check_sees_a_repeat_within_one_dict() -> None:
    assert literal_keys('W = {"a.b": {"en": "x"}, "a.b": {"en": "y"}}') == ["a.b", "a.b"]


def test_japanese_is_used_when_asked() -> None:
    assert "メモリ不足" in text("alert.title", "ja", instance="wb-alice")
    assert "ran out of memory" in text("alert.title", "en", instance="wb-alice")


def test_an_alert_titled_by_a_button_says_it_was_asked_for_not_that_it_was_done() -> None:
    """The title heads alerts where nothing was done (the API refused, the request aged in the queue)."""
    ja = text("alert.title.action", "ja", instance="wb-alice", action="停止", requester="org@contest.example")
    assert ja.endswith("org@contest.example さんが「停止」を依頼しました") and "実行しました" not in ja, ja


def test_slack_date_has_a_fallback_in_the_display_zone() -> None:
    moment = datetime(2026, 11, 20, 4, 12, 33, tzinfo=UTC)
    rendered = slack_date(moment, ZoneInfo("Asia/Tokyo"))
    assert rendered.startswith(f"<!date^{int(moment.timestamp())}^")
    assert rendered.endswith("|2026-11-20 13:12:33 JST>")


def test_human_units() -> None:
    assert human_bytes(15_235_516) == "14.5 GiB"
    assert human_duration(3600, "en") == "1 h" and human_duration(120, "ja") == "2 分"
    assert escape("<!channel> & <@U1>") == "&lt;!channel&gt; &amp; &lt;@U1&gt;"


@pytest.mark.parametrize(
    ("seconds", "en", "ja"),
    [
        (7201, "2 h", "2 時間"),  # was "7201 seconds": not a whole number of hours
        (4810, "1 h 20 min", "1 時間 20 分"),
        (45, "45 s", "45 秒"),
        (90, "1 min 30 s", "1 分 30 秒"),
        (3599, "59 min 59 s", "59 分 59 秒"),
        (0, "0 s", "0 秒"),
    ],
)
def test_durations_read_as_people_say_them(seconds: float, en: str, ja: str) -> None:
    """Ages of too-old requests are whatever they are: never "7201 seconds old"."""
    assert human_duration(seconds, "en") == en and human_duration(seconds, "ja") == ja


def test_alert_shows_memory_against_the_machine() -> None:
    facts = AlertFacts(title="t", instance=REF, owner="<@U1>", process="python", pid=1, anon_rss_kb=15_235_516,
                       machine_type="e2-standard-4", killed_at=datetime(2026, 11, 20, tzinfo=UTC),
                       restarts_in_window=1, outcome="done")
    fallback, blocks = alert_blocks(facts, lang="en", tz=ZoneInfo("UTC"), console_url="https://console.cloud.google.com",
                                    crashloop_limit=3, reset_after_s=600)
    body = str(blocks)
    assert "python (pid 1) used 14.5 GiB of 16.0 GiB" in body
    assert "1 in a row (pause at 3; 10 min without one starts the count over)" in body
    assert {b["type"] for b in blocks} >= {"header", "section", "context", "actions"}
    assert fallback == "t - done"


def test_paused_alert_offers_resume() -> None:
    facts = AlertFacts(title="t", instance=REF, paused=True)
    _, blocks = alert_blocks(facts, lang="en", tz=ZoneInfo("UTC"), console_url="c", crashloop_limit=3, reset_after_s=60)
    actions = [e["action_id"] for b in blocks if b["type"] == "actions" for e in b["elements"]]
    assert actions == ["medic_restart", "medic_resume", "medic_stop", "medic_stop_open"]


def test_restart_count_is_labelled_as_the_run_the_pause_counts() -> None:
    """Three automatic restarts 20 minutes apart are three runs of one (CRASHLOOP_RESET_AFTER 10 min): the
    alert shows 1, and must not call it "1 in the last hour"."""
    now = datetime(2026, 11, 20, 5, 0, tzinfo=UTC)
    history = History(auto_restarts=tuple(now - timedelta(minutes=m) for m in (40, 20, 0)))
    run = crashloop_count(history, now, PolicyConfig())
    facts = AlertFacts(title="t", instance=REF, restarts_in_window=run)
    _, blocks = alert_blocks(facts, lang="en", tz=ZoneInfo("UTC"), console_url="c", crashloop_limit=3,
                             reset_after_s=PolicyConfig().crashloop_reset_after.total_seconds())
    [field] = [f["text"] for b in blocks for f in b.get("fields", []) if f["text"].startswith("*Automatic restarts*")]
    assert field == "*Automatic restarts*\n1 in a row (pause at 3; 10 min without one starts the count over)"


@pytest.mark.parametrize(("count", "max_blocks"), [(0, 5), (1, 5), (29, 5), (30, 5), (400, 5), (400, 48)])
def test_table_blocks_cut_between_lines_within_block_kit_limits(count: int, max_blocks: int) -> None:
    lines = [f"row-{i:04d} | " + "x" * 90 for i in range(count)]
    blocks, left_out = table_blocks(lines, max_blocks=max_blocks)
    texts = [b["text"]["text"] for b in blocks]
    assert len(blocks) <= max_blocks and all(len(t) <= SECTION_MAX for t in texts)
    shown = [line for t in texts for line in t.removeprefix("```").removesuffix("```").split("\n")]
    assert shown == lines[: len(shown)] and len(shown) + left_out == count  # whole lines, in order, none lost


def test_log_link_queries_the_instance() -> None:
    url = log_url("https://console.cloud.google.com", REF, None)
    assert url.startswith("https://console.cloud.google.com/logs/query;query=") and url.endswith("?project=contest-prj")
    assert "wb-alice" in url


def test_machine_sizes() -> None:
    assert memory_kib("e2-standard-4") == 16 * 1024 * 1024
    url = "https://www.googleapis.com/compute/v1/projects/p/zones/z/machineTypes/n1-highmem-8"
    assert memory_kib(url) == 52 * 1024**2
    assert memory_kib("custom-4-20480") == 20480 * 1024
    assert memory_kib("mystery-1") is None
    assert next_size("e2-standard-4") == "e2-highmem-4"
    assert next_size("n2-highmem-16") is None
    assert next_size("n1-standard-4") == "e2-standard-4"  # 15 GiB -> the first rung with more


def test_variant_words_a_case_apart_only_where_the_catalogue_does() -> None:
    assert variant("reply.failed", "stop") == "reply.failed.stop"
    assert variant("reply.failed", "restart") == "reply.failed"
    assert variant("outcome.api_error", "resize") == "outcome.api_error"


def test_said_reads_a_message_whatever_its_placeholders_hold_and_in_either_language() -> None:
    """messages.said/asks_again: how the bench and the tests tell the bot's answers apart, by the catalogue's words."""
    assert messages.said("deny.slow", "> " + messages.text("deny.slow", "ja", service="Workbench") + " <")
    marked = messages.text("deny.unavailable", "en", service="a service, {with} *marks*")
    assert messages.said("deny.unavailable", marked)
    assert not messages.said("deny.slow", messages.text("deny.unavailable", "en", service="Workbench"))
    assert all(messages.asks_again(messages.text(key, lang, service="S", error="E"))
               for key in messages.ASK_AGAIN for lang in ("en", "ja"))
    assert not messages.asks_again(messages.text("queue.unconfirmed", "en", name="wb-1"))
