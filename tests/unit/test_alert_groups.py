"""Grouped, rate-limited alerts (shared/core/alert_groups.py): the rule on a fake clock, then the Worker's use of it
with an in-process Slack behind SlackNotifier's interface. The wire tests: tests/integration/test_alert_groups.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from shared.adapters.config import Settings
from shared.app.worker import Worker
from shared.core.alert_groups import (
    DAILY_LIMIT,
    EVENT_TYPE,
    WINDOW,
    Cause,
    Group,
    Hold,
    Post,
    Update,
    group_key,
    metadata,
    plan,
    read_groups,
    writer_key,
)
from shared.core.blocks import AlertFacts
from shared.core.models import InstanceRef

NOW = datetime(2026, 11, 30, 21, 0, 0, tzinfo=UTC)
KEY = "projects/contest-prj/locations/asia-northeast1-a/instances/wb-alice"


def message(ts: str, key: str, count: int, opened: datetime, **extra: Any) -> dict[str, Any]:
    return {"ts": ts, "bot_id": "B0MEDIC", "text": "…", "metadata": metadata(key, Cause.NOT_FOUND, count, opened),
            **extra}


def test_the_first_alert_posts_and_those_in_its_window_update_it_with_a_count() -> None:
    assert plan([], KEY, NOW) == Post()
    opened = NOW - WINDOW + timedelta(seconds=1)
    groups = read_groups([message("1.0", KEY, 4, opened)], "B0MEDIC")
    assert plan(groups, KEY, NOW) == Update("1.0", 5, opened)
    assert plan(groups, KEY, NOW + timedelta(seconds=1)) == Post()  # the window is over: a new notification
    assert plan(groups, "cause:unresolved", NOW) == Post()  # another group is another message


def test_a_group_posts_at_most_the_daily_limit_in_any_24_hours() -> None:
    hourly = [Group(f"{i}.0", KEY, 1, NOW - timedelta(hours=i + 1)) for i in range(DAILY_LIMIT)]
    assert plan(hourly, KEY, NOW) == Hold(DAILY_LIMIT)
    assert plan(hourly[:-1], KEY, NOW) == Post()
    oldest_gone = NOW + timedelta(hours=24 - DAILY_LIMIT, seconds=1)  # the oldest is then more than a day old
    assert plan(hourly, KEY, oldest_gone) == Post()
    assert plan(hourly, KEY, oldest_gone - timedelta(seconds=2)) == Hold(DAILY_LIMIT)
    # Within the open window, the count still grows: an update notifies no one.
    recent = NOW - timedelta(seconds=10)
    assert plan([*hourly, Group("x", KEY, 3, recent)], KEY, NOW) == Update("x", 4, recent)


def test_only_an_apps_well_formed_group_metadata_counts() -> None:
    good = message("1.0", KEY, 2, NOW)
    person = {**good, "bot_id": None}  # only apps attach metadata; a person's message is no group
    other_event = {**good, "metadata": {"event_type": "something_else", "event_payload": {"group": KEY}}}
    mangled = [{**good, "metadata": {"event_type": EVENT_TYPE, "event_payload": {"group": KEY, "count": value,
                                                                                   "opened": 5}}}
               for value in (True, -1, "2", None, 2**40)]
    assert read_groups([person, other_event, *mangled, {"ts": "2.0"}], "B0MEDIC") == []
    floats = {**good, "metadata": {"event_type": EVENT_TYPE,
                                   "event_payload": {"group": KEY, "count": 2.0, "opened": NOW.timestamp()}}}
    assert read_groups([floats], "B0MEDIC") == [Group("1.0", KEY, 2, NOW)]
    assert group_key(Cause.UNRESOLVED, "") == "cause:unresolved" and group_key(Cause.TOO_OLD, KEY) == KEY


class ChannelSlack:
    """An alert channel in process: posts and updates keep their metadata; history reads them back."""

    def __init__(self, *, readable: bool = True) -> None:
        self.messages: list[dict[str, Any]] = []
        self.posts = 0
        self.updates = 0
        self.readable = readable

    def post(self, channel: str, text: str, blocks: Any = None, *, thread_ts: str = "", metadata: Any = None) -> str:
        self.posts += 1
        ts = f"{len(self.messages) + 1}.000"
        self.messages.append({"ts": ts, "bot_id": "B0MEDIC", "text": text, "metadata": metadata})
        return ts

    def update(self, channel: str, ts: str, text: str, blocks: Any = None, *, metadata: Any = None) -> bool:
        found = next(m for m in self.messages if m["ts"] == ts)
        if found.get("bot_id") != "B0MEDIC":  # Slack: cant_update_message, another app's message
            return False
        self.updates += 1
        found.update(text=text, metadata=metadata or found["metadata"])
        return True

    def history(self, channel: str, *, oldest: float, pages: int = 5) -> list[dict[str, Any]] | None:
        return list(reversed(self.messages)) if self.readable else None

    def bot_id(self) -> str:
        return "B0MEDIC"


class SetClock:
    """A Clock (shared.adapters.clock) at whatever time the test sets in `at[0]`; nothing here waits."""

    def __init__(self, at: list[datetime]) -> None:
        self.at = at

    def now(self) -> datetime:
        return self.at[0]

    def monotonic(self) -> float:
        return (self.at[0] - NOW).total_seconds()

    def sleep(self, seconds: float) -> None:
        self.at[0] += timedelta(seconds=seconds)


def grouping_worker(slack: ChannelSlack, clock: list[datetime]) -> Worker:
    settings = Settings(slack_alert_channel="C0ALERTS")
    return Worker(settings, None, slack, queue=None, clock=SetClock(clock))  # type: ignore[arg-type]


def test_fifty_alerts_in_a_minute_are_one_message_with_the_count() -> None:
    slack, clock = ChannelSlack(), [NOW]
    worker = grouping_worker(slack, clock)
    facts = AlertFacts(title="t", instance=None, outcome="could not tie")
    said = []
    for second in range(50):
        clock[0] = NOW + timedelta(seconds=second)
        said.append(worker.reporter.post_grouped(facts, Cause.UNRESOLVED, ""))
    assert said == ["posted"] + ["updated"] * 49
    assert slack.posts == 1 and "Seen 50 times" in slack.messages[0]["text"]


def test_the_twenty_first_alert_of_a_day_for_one_instance_is_held() -> None:
    slack, clock = ChannelSlack(), [NOW]
    worker = grouping_worker(slack, clock)
    facts = AlertFacts(title="t", instance=InstanceRef.parse(KEY), outcome="NOT_FOUND", instance_read=False)
    said = []
    for window in range(DAILY_LIMIT + 1):
        clock[0] = NOW + window * WINDOW
        said.append(worker.reporter.post_grouped(facts, Cause.NOT_FOUND, KEY))
    assert said == ["posted"] * DAILY_LIMIT + ["held"] and slack.posts == DAILY_LIMIT


def test_unreadable_history_posts_rather_than_loses_the_alert() -> None:
    slack, clock = ChannelSlack(readable=False), [NOW]
    worker = grouping_worker(slack, clock)
    facts = AlertFacts(title="t", instance=None, outcome="x")
    assert [worker.reporter.post_grouped(facts, Cause.UNRESOLVED, "") for _ in range(2)] == ["posted", "posted"]


# ---- issue 25: what another app, or a time ahead, may do to a group ---------------------------------------------
def test_another_apps_metadata_is_no_group_of_ours() -> None:
    """Any app in the channel may post event_type medic_alert_group: only the bot's own bot id counts."""
    ours, theirs = message("1.0", KEY, 2, NOW), message("2.0", KEY, 1, NOW, bot_id="B0OTHER")
    assert read_groups([theirs, ours], "B0MEDIC") == [Group("1.0", KEY, 2, NOW)]
    assert read_groups([theirs, ours], "") == [], "the bot's own id unknown: no group is believed"


def test_twenty_foreign_messages_silence_no_group() -> None:
    """The red team's case: 20 messages of another app's with our event_type used up a group's day."""
    slack, clock = ChannelSlack(), [NOW]
    worker = grouping_worker(slack, clock)
    for i in range(DAILY_LIMIT):
        slack.messages.append(message(f"9{i}.0", "cause:unresolved", 1, NOW - timedelta(hours=1, minutes=i),
                                      bot_id="B0OTHER"))
    facts = AlertFacts(title="t", instance=None, outcome="could not tie")
    assert worker.reporter.post_grouped(facts, Cause.UNRESOLVED, "") == "posted"


def test_a_group_opened_in_the_future_counts_for_nothing() -> None:
    """A message with `opened` minutes ahead was the open window's for ever: the red team's 10 lines made 10 posts
    (another app's such message can't be updated, so each line posted anew)."""
    ahead = Group("1.0", KEY, 1, NOW + timedelta(minutes=4))
    assert plan([ahead], KEY, NOW) == Post()
    for bot in ("B0OTHER", "B0MEDIC"):
        slack, clock = ChannelSlack(), [NOW]
        worker = grouping_worker(slack, clock)
        slack.messages.append(message("0.5", KEY, 1, NOW + timedelta(minutes=4), bot_id=bot))
        facts = AlertFacts(title="t", instance=InstanceRef.parse(KEY), outcome="NOT_FOUND", instance_read=False)
        said = []
        for second in range(10):
            clock[0] = NOW + timedelta(seconds=second)
            said.append(worker.reporter.post_grouped(facts, Cause.NOT_FOUND, KEY))
        assert said == ["posted"] + ["updated"] * 9, bot


def test_each_writer_fills_only_its_own_group_and_a_refused_writer_is_news_once_a_day() -> None:
    slack, clock = ChannelSlack(), [NOW]
    worker = grouping_worker(slack, clock)
    facts = AlertFacts(title="t", instance=None, outcome="forged")
    said = []
    for minute in range(60 * 23):  # a line a minute for 23 hours from one writer
        clock[0] = NOW + timedelta(minutes=minute)
        said.append(worker.reporter.post_grouped(facts, Cause.REFUSED, writer_key(Cause.REFUSED, "wb-mallory")))
    assert said.count("posted") == 1 and "held" not in said
    clock[0] += timedelta(minutes=1)
    other = worker.reporter.post_grouped(facts, Cause.REFUSED, writer_key(Cause.REFUSED, "wb-bob"))
    unresolved = worker.reporter.post_grouped(facts, Cause.UNRESOLVED, writer_key(Cause.UNRESOLVED, "wb-bob"))
    assert (other, unresolved) == ("posted", "posted"), "another writer's group, another message"
