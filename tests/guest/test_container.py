"""The Debian 12 containers the guard's systemd tests boot: two booted side by side (as pytest-xdist workers boot
them) keep their systemd's cgroup trees apart, so that one container's `systemctl stop` kills only its own unit's
processes (tests/guest/container.py says what sharing did). Skipped in one line where this machine has no Debian 12
container."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from tests.guest import container as boxes

pytestmark = pytest.mark.timeout(600)


def systemd_cgroup(pid: int) -> str:
    """The process's cgroup in the hierarchy systemd keeps its tree in, as the host sees it."""
    lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    return next(line.split(":", 2)[2] for line in lines if line.split(":")[1] in ("name=systemd", ""))


def test_two_containers_side_by_side_have_cgroup_trees_of_their_own(tmp_path: Path) -> None:
    rootfs = boxes.debian_rootfs()
    if isinstance(rootfs, str):
        pytest.skip(f"no Debian 12 container here: {rootfs}")
    with contextlib.ExitStack() as stack:
        first = stack.enter_context(boxes.booted(rootfs, tmp_path / "first"))
        second = stack.enter_context(boxes.booted(rootfs, tmp_path / "second"))
        trees = {systemd_cgroup(first.pid), systemd_cgroup(second.pid)}
        assert len(trees) == 2, trees
        made = [*first.cgroups, *second.cgroups]
        assert made and all(path.is_dir() for path in made), made
    assert not [path for path in made if path.exists()], "a container's cgroups outlived it"
