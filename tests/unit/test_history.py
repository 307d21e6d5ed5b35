"""History round-trips through instance labels, within label rules, and survives mangling."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.core.history import (
    AUTO,
    BOT_KEYS,
    DISK_WARNED,
    INFLIGHT,
    INFLIGHT_EVENT,
    KILLS,
    LAST_KILL,
    LAST_RESTART,
    MAX_LIST,
    MEMORY_WARNED,
    RESTARTS,
    ROOM_NEEDED,
    UNCONFIRMED,
    AutoMode,
    History,
    changes_anything,
    event_key,
    foreign_count,
)
from simulators.workbench import SYSTEM_LABEL_KEYS, _apply_labels

T0 = datetime(2026, 11, 20, 4, 0, tzinfo=UTC)
LABEL_VALUE = re.compile(r"^[a-z0-9_-]{0,63}$")


def test_round_trip_keeps_foreign_labels() -> None:
    history = (
        History(auto_mode=AutoMode.PAUSED)
        .with_kill(T0)
        .with_restart(T0 + timedelta(seconds=5), T0 + timedelta(seconds=70), automatic=True)
        .with_inflight(T0 + timedelta(seconds=80), event_key("abc/DEF=="))
    )
    labels = history.to_labels({"team": "red", "medic-pending": "x"})  # a key an earlier version wrote
    assert labels["team"] == "red" and labels["medic-pending"] == ""  # deleted: sent empty
    assert all(LABEL_VALUE.fullmatch(v) for v in labels.values())
    assert History.from_labels(labels) == history


def test_a_persons_medic_label_is_kept() -> None:
    """Only the bot's own keys are replaced: `medic-team` is someone's label that happens to start with medic-."""
    full = History(auto_mode=AutoMode.PAUSED, kills=(T0,), last_kill=T0).with_inflight(T0, "k")
    for history in (History(), full):
        assert history.to_labels({"medic-team": "cardio", "team": "red"})["medic-team"] == "cardio"


@pytest.mark.parametrize("value", ["off", "false", "no", "0", "disabled"])
def test_obvious_spellings_of_off_opt_out_and_stay_as_written(value: str) -> None:
    history = History.from_labels({AUTO: value})
    assert history.auto_mode is AutoMode.OFF
    assert history.with_kill(T0).to_labels({AUTO: value, "team": "red"})[AUTO] == value


def test_a_medic_auto_value_the_bot_does_not_know_is_kept() -> None:
    """It reads as on, as before, but is never deleted: only a change of mode (a pause) rewrites it."""
    history = History.from_labels({AUTO: "maybe"})
    assert history.auto_mode is AutoMode.ON
    assert history.with_kill(T0).to_labels({AUTO: "maybe"})[AUTO] == "maybe"
    assert replace(history, auto_mode=AutoMode.PAUSED).to_labels({AUTO: "maybe"})[AUTO] == "paused"
    assert History.from_labels({AUTO: "paused"}).resumed().to_labels({AUTO: "paused"})[AUTO] == ""  # resumed: deleted


def test_room_needed_is_every_label_the_bot_writes_at_once() -> None:
    """What the alert asks organizers to leave free must cover the fullest history, not just today's."""
    fullest = History(
        auto_mode=AutoMode.PAUSED, auto_restarts=(T0,), kills=(T0,), last_restart=T0, last_kill=T0,
        inflight_since=T0, inflight_event="k", memory_warned=T0, told=T0,
    )
    labels = fullest.to_labels({"team": "red", "medic-team": "cardio"})
    assert foreign_count(labels) == 2 and len(labels) == 2 + ROOM_NEEDED
    # A restart not seen to finish is marked once it is recorded; never beside one in flight.
    unconfirmed = replace(fullest.without_inflight(), unconfirmed_since=T0)
    assert len(unconfirmed.to_labels({})) < ROOM_NEEDED
    assert UNCONFIRMED not in replace(fullest, unconfirmed_since=T0).to_labels({})


def test_a_restart_not_seen_to_finish_is_recorded_as_such() -> None:
    """Recorded as finished when the worker stopped watching (what the policy reads, unchanged), and marked with
    when it was sent: what a request queued behind it is told must not be "already restarted"."""
    started, gave_up = T0, T0 + timedelta(minutes=9)
    sent = History().with_intent(started, event_key("e"), killed_at=None, automatic=False)
    unconfirmed = History.from_labels(sent.with_restart(started, gave_up, automatic=False, confirmed=False)
                                      .to_labels({}))
    assert unconfirmed.last_restart == gave_up and unconfirmed.unconfirmed_since == started
    assert unconfirmed.inflight_since is None
    later = T0 + timedelta(minutes=20)
    assert unconfirmed.with_inflight(later, "k").unconfirmed_since is None  # the next restart starts afresh
    confirmed = unconfirmed.with_inflight(later, "k").with_restart(later, later, automatic=False)
    assert UNCONFIRMED not in confirmed.to_labels({}) and confirmed.unconfirmed_since is None


def test_lists_are_capped_to_fit_a_label() -> None:
    history = History()
    for minute in range(12):
        moment = T0 + timedelta(minutes=minute)
        history = history.with_kill(moment).with_restart(moment, moment, automatic=True)
    labels = history.to_labels({})
    assert len(History.from_labels(labels).auto_restarts) == MAX_LIST
    assert all(len(v) <= 63 for v in labels.values())


def test_manual_restarts_do_not_count_as_automatic() -> None:
    history = History().with_inflight(T0, "k").with_restart(T0, T0, automatic=False)
    assert history.auto_restarts == () and history.last_restart == T0
    assert history.inflight_since is None and history.inflight_event == ""


def test_mangled_labels_read_as_absent() -> None:
    stamp = int(T0.timestamp())
    history = History.from_labels(
        {"medic-auto": "maybe", "medic-restarts": f"abc_{stamp}_", "medic-last-kill": "-5"}
    )
    assert history.auto_mode is AutoMode.ON
    assert history.last_kill is None
    assert history.auto_restarts == (T0,)


TIME_LABELS = (LAST_RESTART, LAST_KILL, INFLIGHT, MEMORY_WARNED, RESTARTS, KILLS, UNCONFIRMED)


@pytest.mark.parametrize(
    "value",
    [
        "999999999999",  # year 33658: fromtimestamp() raised ValueError, and every request for the instance failed
        "99999999999",  # year 5138: representable, but no time this bot wrote
        "4102444800",  # 2100-01-01, the first moment past the bound
        "12",  # 1970: before this bot or Workbench Instances existed
        "1577836799",  # one second before 2020
        "\u00b2",  # a superscript two: str.isdigit() says yes, int() says no
        "\u0661\u0662",  # Arabic-Indic digits: int() reads them, but we never write them
        "",
        "0",
    ],
)
@pytest.mark.parametrize("key", TIME_LABELS)
def test_implausible_times_read_as_absent(key: str, value: str) -> None:
    history = History.from_labels({key: value})
    assert history == History()


@pytest.mark.parametrize("moment", [datetime(2020, 1, 1, tzinfo=UTC), datetime(2099, 12, 31, 23, 59, 59, tzinfo=UTC)])
def test_times_within_the_bounds_are_read(moment: datetime) -> None:
    history = History(
        auto_restarts=(moment,), kills=(moment,), last_restart=moment, last_kill=moment,
        inflight_since=moment, memory_warned=moment,
    )
    assert History.from_labels(history.to_labels({})) == history


@settings(max_examples=300, derandomize=True, database=None, deadline=None)
@given(
    key=st.sampled_from(TIME_LABELS),
    value=st.one_of(
        st.text(alphabet="0123456789", max_size=70),
        st.text(alphabet="0123456789_", max_size=70),
        st.text(max_size=70),
    ),
)
def test_any_time_label_reads_without_error(key: str, value: str) -> None:
    """However an organizer (or a script) mangles a medic-* time, reading the labels never raises."""
    history = History.from_labels({key: value})
    moments = [
        m for m in (history.last_restart, history.last_kill, history.inflight_since, history.memory_warned,
                    history.unconfirmed_since)
        if m is not None
    ]
    for moment in (*moments, *history.auto_restarts, *history.kills):
        assert datetime(2020, 1, 1, tzinfo=UTC) <= moment < datetime(2100, 1, 1, tzinfo=UTC)


def test_default_history_writes_no_labels() -> None:
    assert History().to_labels({}) == {}


def test_inflight_event_round_trips_through_a_label() -> None:
    history = History().with_inflight(T0, event_key("x"))
    labels = history.to_labels({})
    assert labels["medic-inflight"] == str(int(T0.timestamp()))
    assert History.from_labels(labels).inflight_event == event_key("x")
    assert history.without_inflight().to_labels(labels)["medic-inflight-event"] == ""  # deleted: sent empty


def test_resuming_starts_the_crash_loop_count_over() -> None:
    paused = History(auto_mode=AutoMode.PAUSED, auto_restarts=(T0, T0 + timedelta(minutes=1)), last_restart=T0)
    resumed = paused.resumed()
    assert resumed.auto_mode is AutoMode.ON and resumed.auto_restarts == () and resumed.last_restart == T0


def test_intent_carries_the_restart_count_and_the_kill() -> None:
    killed = T0 + timedelta(seconds=3, microseconds=250_000)
    intent = History().with_intent(T0 + timedelta(seconds=5), event_key("e"), killed_at=killed, automatic=True)
    assert intent.inflight_since == T0 + timedelta(seconds=5) and intent.inflight_event == event_key("e")
    assert intent.kills == (killed.replace(microsecond=0),) and intent.last_kill == killed
    assert intent.auto_restarts == (T0 + timedelta(seconds=5),)
    manual = History().with_intent(T0, event_key("m"), killed_at=None, automatic=False)
    assert manual.auto_restarts == () and manual.kills == ()


def test_recording_a_restart_its_intent_already_counted_counts_it_once() -> None:
    started, killed = T0 + timedelta(seconds=5), T0 + timedelta(seconds=3, microseconds=1)
    read_back = History.from_labels(
        History().with_intent(started, event_key("e"), killed_at=killed, automatic=True).to_labels({})
    )
    done = read_back.with_restart(started, started + timedelta(seconds=60), automatic=True).with_kill(killed)
    assert done.auto_restarts == (started,) and len(done.kills) == 1
    assert done.inflight_since is None and done.last_restart == started + timedelta(seconds=60)


def test_as_of_drops_times_no_clock_could_have_written_yet() -> None:
    ahead = T0 + timedelta(days=365)
    history = History(
        auto_restarts=(T0, ahead), kills=(T0, ahead), last_restart=ahead, last_kill=ahead,
        inflight_since=ahead, inflight_event="k", memory_warned=ahead,
    )
    seen = history.as_of(T0 + timedelta(minutes=5))
    assert seen == History(auto_restarts=(T0,), kills=(T0, ahead), last_kill=ahead)  # kills: only compared with kills
    assert history.as_of(ahead) == history


# ---- the update to_labels builds, applied as the live API applies it (merge) and as a replacing API would --------

SYSTEM = {"consumer-project-id": "contest-prj", "consumer-project-number": "123456789012",
          "notebooks-product": "workbench-instances", "resource-name": "nb-1"}
MOMENTS = st.datetimes(min_value=datetime(2021, 1, 1), max_value=datetime(2090, 1, 1),
                       timezones=st.just(UTC)).map(lambda moment: moment.replace(microsecond=0))
HISTORIES = st.builds(
    History,
    auto_mode=st.sampled_from(AutoMode),
    auto_restarts=st.lists(MOMENTS, max_size=MAX_LIST, unique=True).map(lambda m: tuple(sorted(m))),
    kills=st.lists(MOMENTS, max_size=MAX_LIST, unique=True).map(lambda m: tuple(sorted(m))),
    last_restart=st.none() | MOMENTS,
    last_kill=st.none() | MOMENTS,
    inflight_since=st.none() | MOMENTS,
    inflight_event=st.just(event_key("e")),
    memory_warned=st.none() | MOMENTS,
    unconfirmed_since=st.none() | MOMENTS,
).map(lambda h: h if h.inflight_since is not None else replace(h, inflight_event=""))
PERSONS = st.dictionaries(st.sampled_from(["team", "medic-team", "owner", "empty"]), st.sampled_from(["red", ""]))


@settings(max_examples=200, deadline=None)
@given(before=HISTORIES, after=HISTORIES, persons=PERSONS, replacing=st.booleans())
def test_an_update_records_the_history_and_leaves_every_other_label_as_it_was(
    before: History, after: History, persons: dict[str, str], replacing: bool
) -> None:
    """Whether the API merges an update (the live one: a key left out is kept, an empty value deletes) or replaces
    the whole map with it, the instance ends up carrying `after` and nothing else changes: a key of the bot's that
    `after` has no value for is gone (sent empty, never left out), a person's labels and the system ones are as
    they were, and no label is sent empty that isn't the bot's."""
    existing = {**persons, **before.to_labels({}), **SYSTEM}
    update = after.to_labels(existing)
    result = _apply_labels(existing, update, replace=replacing)
    assert History.from_labels(result) == History.from_labels(after.to_labels({}))
    others = {k: v for k, v in existing.items() if k not in BOT_KEYS and v}  # an empty label reads as none
    assert {k: v for k, v in result.items() if k not in BOT_KEYS and v} == others
    assert {k: result[k] for k in SYSTEM_LABEL_KEYS} == SYSTEM
    assert all(value or key in BOT_KEYS for key, value in update.items())
    if not replacing:  # merged, nothing of ours is left behind, empty or not
        assert {k for k in result if k in BOT_KEYS} == {k for k, v in after.to_labels({}).items() if v}


def test_an_empty_label_reads_as_absent_and_is_not_sent() -> None:
    """What a merge leaves of a deleted key is nothing; a replacing API would keep it empty: either reads as none,
    and a person's label read empty is not sent (empty, a merge would delete it)."""
    history = History.from_labels({INFLIGHT: "", AUTO: "", "team": ""})
    assert history == History()
    assert history.to_labels({INFLIGHT: "", AUTO: "", "team": "", "lab": "x"}) == {"lab": "x"}
    assert not changes_anything(history.to_labels({INFLIGHT: "", "lab": "x"}), {INFLIGHT: "", "lab": "x"})


def test_the_system_labels_count_toward_the_room_the_bot_needs() -> None:
    """GCP's 64 are of every label, the service's own included: they are foreign to the bot, like a person's."""
    assert foreign_count({**SYSTEM, "team": "red", INFLIGHT: "1", KILLS: ""}) == len(SYSTEM) + 1


def test_an_intent_that_landed_after_its_record_is_over() -> None:
    """The intent's update ended after the redelivery's restart was recorded (overlapping updates ending out of
    order): the marker reads as over, and the next write deletes it."""
    late = {LAST_RESTART: str(int((T0 + timedelta(seconds=4)).timestamp())), INFLIGHT: str(int(T0.timestamp())),
            INFLIGHT_EVENT: "35250519ff9b3263"}
    history = History.from_labels(late)
    assert history.inflight_since is None and history.inflight_event == ""
    assert history.last_restart == T0 + timedelta(seconds=4)
    assert history.to_labels(late)[INFLIGHT] == ""


@pytest.mark.parametrize("after_s", [0, 1, 30])
def test_an_intent_written_in_or_after_the_second_the_last_restart_ended_is_live(after_s: int) -> None:
    labels = {LAST_RESTART: str(int(T0.timestamp())), INFLIGHT: str(int((T0 + timedelta(seconds=after_s)).timestamp()))}
    assert History.from_labels(labels).inflight_since == T0 + timedelta(seconds=after_s)


def test_the_disk_warnings_quiet_period_is_kept_where_there_is_room() -> None:
    """Issue 43: medic-disk-warned is written after every label the bot needs, only while GCP's 64 allow it (a
    crowded instance loses it, not a restart's count), and read back."""
    history = History(disk_warned=T0)
    assert History.from_labels(history.to_labels({})).disk_warned == T0
    crowded = {f"team-{i}": "x" for i in range(64)}
    assert DISK_WARNED not in history.to_labels(crowded)
