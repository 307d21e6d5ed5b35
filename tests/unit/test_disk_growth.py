"""A grown disk followed to its filesystem (issue 43 part 3): the pending check's label read as untrusted
(shared/core/disk_growth.py), judge() on the guard's report, and the worker's check (shared/app/worker/fs_check.py)
on the fakes and one FakeClock: waiting, then grown or not grown in time, both told once, the label cleared; the
sweep queues a check for each labelled notebook."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from shared.adapters.clock import FakeClock
from shared.adapters.config import ConfigError, Settings
from shared.adapters.disk_config import DiskAskSettings, load_disk_settings
from shared.app.sweep import queue_disk_checks
from shared.app.worker.fs_check import FilesystemCheck
from shared.app.worker.outcomes import Ended
from shared.core import disk_asks
from shared.core.disk_asks import Proposal
from shared.core.disk_growth import GIB, GROWN_LABEL, Grown, NotGrown, Pending, Waiting, judge, label, read
from shared.core.disk_report import parse
from shared.core.models import Action, InstanceRef, RestartRequest, Trigger
from shared.core.payloads import DiskGrowPayload
from tests.fakes.slack import FakeSlack
from tests.fakes.workbench import FakeWorkbench

NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
WAIT = timedelta(minutes=30)
ALERTS = "C0ALERTS"
PENDING = Pending(boot=False, old_gb=100, new_gb=150, since=NOW, thread_ts="1764849600.000100", asker="U0ASKER")


def report(home_gb: float, *, boot_gb: float = 150.0, free_gb: float = 40.0) -> str:
    """The guard's disk-report as infra/contest/guard/disk_report.py writes it (sizes as statvfs gives them)."""
    def disk(mount: str, size: float) -> dict[str, object]:
        total = int(size * GIB)
        return {"mount": mount, "size": total, "used": total - int(free_gb * GIB), "avail": int(free_gb * GIB)}
    return json.dumps({"v": 1, "complete": True, "disks": [disk("/", boot_gb), disk("/home/jupyter", home_gb)],
                       "culprits": [], "folders": [], "models": []})


def test_the_label_round_trips_and_fits_a_label_value() -> None:
    update = label(PENDING)
    assert read(update) == PENDING
    value = update[GROWN_LABEL]
    assert len(value) <= 63 and value == value.lower() and "." not in value
    assert read(label(Pending(True, 150, 230, NOW))) == Pending(True, 150, 230, NOW)


@pytest.mark.parametrize("value", ["", "d150-100-1764849600-x-x", "zz", "d100-150-17648-x-x", "d100-150-1764849600-x"])
def test_a_label_of_another_shape_is_no_check(value: str) -> None:
    assert read({GROWN_LABEL: value}) is None  # a shrink, a date too short, a field missing: nothing to check


def test_grown_once_the_filesystem_is_larger_than_the_whole_old_disk() -> None:
    ext4_old = parse(report(98.3))  # ext4 on 100 GB: its inode tables and journal take about 1.7 %
    assert judge(PENDING, ext4_old, NOW + timedelta(minutes=10), WAIT) == Waiting()
    assert judge(PENDING, ext4_old, NOW + WAIT, WAIT) == NotGrown(int(98.3 * GIB))
    grown = judge(PENDING, parse(report(147.5)), NOW + timedelta(minutes=12), WAIT)
    assert grown == Grown(int(147.5 * GIB), int(40 * GIB))


def test_no_report_waits_then_is_not_grown_with_no_size() -> None:
    assert judge(PENDING, None, NOW + timedelta(minutes=29), WAIT) == Waiting()
    assert judge(PENDING, None, NOW + WAIT, WAIT) == NotGrown(None)


def test_the_boot_disk_is_judged_on_the_root_filesystem() -> None:
    boot = Pending(True, 150, 230, NOW)
    assert judge(boot, parse(report(300, boot_gb=147)), NOW + WAIT, WAIT) == NotGrown(147 * GIB)
    assert isinstance(judge(boot, parse(report(98, boot_gb=226)), NOW, WAIT), Grown)


def test_the_monthly_difference_is_the_added_gb_at_the_disk_types_price() -> None:
    proposal = Proposal(False, 100, 150)
    assert disk_asks.monthly_difference(proposal, "PD_STANDARD", {"pd-standard": 0.04}) == 2.0
    assert disk_asks.monthly_difference(proposal, "PD_BALANCED", {"pd-standard": 0.04}) is None
    assert disk_asks.monthly_difference(proposal, "", {"pd-standard": 0.04}) is None


def test_disk_settings_read_prices_and_the_wait() -> None:
    settings = load_disk_settings({"DISK_PRICES": "pd-standard=0.04, pd-ssd=0.17", "DISK_GROWTH_WAIT_SECONDS": "600"})
    assert settings.prices == {"pd-standard": 0.04, "pd-ssd": 0.17} and settings.growth_wait == timedelta(minutes=10)
    assert load_disk_settings({}).prices == {} and load_disk_settings({}).growth_wait == WAIT
    with pytest.raises(ConfigError, match="DISK_PRICES"):
        load_disk_settings({"DISK_PRICES": "e2-standard-4=0.1"})


class Guest:
    """The Compute adapter's guest_attributes, as the guard's disk-report timer writes them."""

    def __init__(self) -> None:
        self.written: dict[str, str] = {}

    def guest_attributes(self, project: str, zone: str, name: str) -> dict[str, str]:
        return dict(self.written)


class Desk:
    def __init__(self) -> None:
        self.clock = FakeClock()
        self.workbench = FakeWorkbench(self.clock, visibility="on-done")
        self.slack = FakeSlack(self.clock, users={"wb-grow@contest.example": "U0OWNER",
                                                  "asker@contest.example": "U0ASKER"})
        self.slack.api.add_channel(ALERTS, "notebook-alerts")
        self.guest = Guest()
        settings = Settings(project="contest-prj", workbench_zones=("asia-northeast1-a",), slack_alert_channel=ALERTS)
        self.check = FilesystemCheck(settings=settings, limits=DiskAskSettings(growth_wait=WAIT), clock=self.clock,
                                     workbench=self.workbench, slack=self.slack, guest=self.guest)  # type: ignore[arg-type]
        self.ref = self.workbench.add_instance(InstanceRef("contest-prj", "asia-northeast1-a", "wb-grow"))

    def expect(self) -> None:
        pending = Pending(False, 100, 150, self.clock.now(), "", "U0ASKER")
        self.check.expect(self.request(Action.DISK_GROW), pending)

    def request(self, action: Action = Action.DISK_CHECK) -> RestartRequest:
        return RestartRequest(action=action, trigger=Trigger.SWEEP, instance=self.ref.full_name,
                              requested_at=self.clock.now(), event_id="t", payload=DiskGrowPayload(False, 150))

    def told(self) -> list[str]:
        return [m.text for who in (ALERTS, "U0OWNER", "U0ASKER") for m in self.slack.in_channel(who)]


def test_the_check_waits_then_tells_both_the_filesystem_grew_and_clears_its_label() -> None:
    desk = Desk()
    desk.expect()
    assert GROWN_LABEL in desk.workbench.labels(desk.ref)
    desk.guest.written["disk-report"] = report(98.3)
    desk.clock.advance(600)
    assert desk.check.check(desk.request()).ended is Ended.FOLDED and desk.told() == []
    desk.guest.written["disk-report"] = report(147.5, free_gb=60)
    desk.clock.advance(600)
    assert desk.check.check(desk.request()).ended is Ended.ACTED
    said = desk.told()
    assert len(said) == 3 and all("grew: 148 GB, 60 GB free" in line for line in said), said
    assert GROWN_LABEL not in desk.workbench.labels(desk.ref)
    assert desk.check.check(desk.request()).detail == "no filesystem check pending" and len(desk.told()) == 3


def test_not_grown_in_time_says_so_with_the_command_that_grows_it_by_hand() -> None:
    desk = Desk()
    desk.expect()
    pending = read(desk.workbench.labels(desk.ref))
    assert pending is not None
    desk.clock.advance((pending.since + WAIT - desk.clock.now()).total_seconds() - 1)
    assert desk.check.check(desk.request()).ended is Ended.FOLDED  # no report yet, and the wait is not over
    desk.clock.advance(1)
    assert desk.check.check(desk.request()).ended is Ended.FAILED
    [line, *_] = desk.told()
    assert "has not grown within 30 minutes" in line and "(the notebook's guard has not reported it)" in line
    assert 'sudo resize2fs "$(findmnt -nvr -o SOURCE /home/jupyter)"' in line and "xfs_growfs -d" in line
    assert GROWN_LABEL not in desk.workbench.labels(desk.ref)


def test_the_sweep_queues_a_check_for_each_notebook_with_one_pending() -> None:
    desk = Desk()
    other = desk.workbench.add_instance(InstanceRef("contest-prj", "asia-northeast1-a", "wb-other"))
    desk.expect()
    published: list[RestartRequest] = []

    class Queue:
        def publish(self, request: RestartRequest) -> str:
            published.append(request)
            return "m"

    fleet = desk.workbench.list("contest-prj", ("asia-northeast1-a",))
    assert queue_disk_checks(fleet, Queue(), desk.clock.now(), tick=1) == 1
    [check] = published
    assert (check.action, check.trigger, check.instance) == (Action.DISK_CHECK, Trigger.SWEEP, desk.ref.full_name)
    assert check.payload == DiskGrowPayload(False, 150) and other.full_name != check.instance
