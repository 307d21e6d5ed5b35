"""A grown filesystem seen through the guard's own disk report (issue 43, part 3): a real tmpfs of 1 GiB stands for
the data disk; the guard's report of it (infra/contest/guard/disk_report.py, as its timer runs it) leaves the bot's
check waiting; grown online to 2 GiB (a remount, as resize2fs grows a mounted ext4), the guard's next report makes
the bot's check say grown, with the room statvfs gives. Skipped in one line where this machine cannot mount a
tmpfs (not root)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from shared.core import disk_report
from shared.core.disk_growth import GIB, Grown, Pending, Waiting, judge
from tests.guest.test_disk_report_real import guest, mount_tmpfs

NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    where = tmp_path / "home"
    mount_tmpfs(where, "1G")
    yield where
    subprocess.run(["umount", str(where)], check=False)


def guards_report(home: Path, state: Path) -> disk_report.DiskReport:
    """One run of the guard (boot disk `/`, home the tmpfs), read back as the worker reads the attribute."""
    return disk_report.parse(guest.run(str(home), guest.Settings(), str(state), None, boot="/", say=lambda _: None))


def test_the_guards_next_report_after_an_online_growth_is_seen_as_grown(home: Path, tmp_path: Path) -> None:
    (home / "data.bin").write_bytes(b"\x01" * (64 * 1024 * 1024))
    pending = Pending(boot=False, old_gb=1, new_gb=2, since=NOW)
    before = guards_report(home, tmp_path / "state.json")
    assert judge(pending, before, NOW + timedelta(minutes=10), timedelta(minutes=30)) == Waiting()
    subprocess.run(["mount", "-o", "remount,size=2G", str(home)], check=True)
    after = judge(pending, guards_report(home, tmp_path / "state.json"), NOW + timedelta(minutes=20),
                  timedelta(minutes=30))
    assert isinstance(after, Grown) and after.size == 2 * GIB
    assert 2 * GIB - 65 * 1024 * 1024 <= after.free <= 2 * GIB - 64 * 1024 * 1024  # the file's room taken
