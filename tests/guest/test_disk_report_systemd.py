"""The disk report (issue 43, part 2) as the guard installs it, under Debian 12's real systemd 252 in a container:
install.sh's install_disk_report puts disk_report.py and its timer in place and starts the timer; the service,
started as the timer would, reads a home disk (a 64 MiB tmpfs mounted at /home/jupyter) past 90 %, writes the
guest attribute disk-report to the metadata stand-in and one journal line, once per climb; --remove takes it away.
Skipped in one line where this machine has no Debian 12 container (tests/guest/container.py says why).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from shared.core import disk_report as bot
from tests.guest import container as boxes

pytestmark = pytest.mark.timeout(1500)

METADATA = boxes.METADATA
# The stand-in's address for the report's own runs (on a VM: metadata.google.internal, the script's default).
DROPIN = f"[Service]\nEnvironment=NOTEBOOK_MEDIC_METADATA_URL={METADATA}\n"
SERVICE = "notebook-medic-disk-report.service"
TIMER = "notebook-medic-disk-report.timer"
LINE = re.compile(r"^notebook-medic-disk: full mount=/home/jupyter used=\d+ size=67108864 percent=9\d\.\d "
                  r"threshold=90$")


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[boxes.Container]:
    rootfs = boxes.debian_rootfs()
    if isinstance(rootfs, str):
        pytest.skip(f"no Debian 12 container here: {rootfs}")
    with boxes.booted(rootfs, tmp_path_factory.mktemp("debian12-disk")) as box:
        boxes.stage_guard(box)
        box.write(f"/etc/systemd/system/{SERVICE}.d/test-metadata.conf", DROPIN)
        box.run("useradd", "--create-home", "jupyter")
        box.run("mount", "-t", "tmpfs", "-o", "size=64M", "tmpfs", "/home/jupyter")
        box.run("systemctl", "daemon-reload")
        box.run("systemctl", "start", "metadata-standin.service")
        yield box


def journal(box: boxes.Container) -> list[str]:
    out = box.run("journalctl", "-q", "-o", "cat", "-t", "notebook-medic-disk", check=False).stdout
    return [line for line in out.splitlines() if line.startswith("notebook-medic-disk: full")]


def attribute(box: boxes.Container) -> str:
    return str(json.loads((box.root / "opt/standin/guest.json").read_text())["notebook-medic/disk-report"])


def test_the_guard_installs_the_timer_and_the_service_reports_a_full_home_disk(box: boxes.Container) -> None:
    done = box.run("/opt/guard/install.sh", env={"NOTEBOOK_MEDIC_METADATA_URL": METADATA,
                                                 "NOTEBOOK_MEDIC_ATTRIBUTE_PACE": "0"}, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"installed /etc/systemd/system/{TIMER}" in done.stdout, done.stdout
    assert f"enabled {TIMER}" in done.stdout, done.stdout
    assert box.show(TIMER, "ActiveState", "UnitFileState") == {"ActiveState": "active", "UnitFileState": "enabled"}

    box.sh("mkdir -p /home/jupyter/.local/share/Trash/files /home/jupyter/.cache/pip/http "
           "&& head -c 30M /dev/zero > /home/jupyter/.local/share/Trash/files/old.csv "
           "&& head -c 20M /dev/zero > /home/jupyter/.cache/pip/http/blob "
           "&& head -c 12M /dev/zero > /home/jupyter/data.bin && chown -R jupyter: /home/jupyter")
    box.run("systemctl", "start", SERVICE, timeout=300)  # oneshot: returns when the run is over
    assert box.show(SERVICE, "Result")["Result"] == "success"
    lines = journal(box)
    assert len(lines) == 1 and LINE.match(lines[0]), lines
    report = bot.parse(attribute(box))
    assert [(c.kind, c.size >> 20) for c in report.culprits] == [("trash", 30), ("pip", 20)]
    assert {d.mount for d in report.disks} == {"/", "/home/jupyter"}
    assert bot.what_fills(report, "nb", "en").splitlines()[3].startswith("• JupyterLab's trash: 30.0 MiB")

    box.run("systemctl", "start", SERVICE, timeout=300)
    assert len(journal(box)) == 1, "one line per climb: still full, nothing more said"

    again = box.run("/opt/guard/install.sh", "--remove", env={"NOTEBOOK_MEDIC_METADATA_URL": METADATA}, check=False)
    assert f"removed {TIMER}" in again.stdout, again.stdout
    assert box.show(TIMER, "LoadState")["LoadState"] == "not-found"
