"""The guard's heartbeat (issue 42, part 2) as install.sh installs it, under Debian 12's real systemd 252 in a
container: the timer installed and enabled; the service, started as the timer would, writes the guest attribute
heartbeat to the metadata stand-in, and the bot's reader (shared/core/heartbeat.py) and diagnosis
(shared/core/causes.py) read each outage from it: JupyterLab up with its agents, the Jupyter service stopped, the
server failing at start (systemd's start limit, its last journal lines), the proxy agent stopped. --remove takes
it away. Skipped in one line where this machine has no Debian 12 container (tests/guest/container.py says why).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from shared.core import heartbeat as bot
from shared.core.causes import Cause, CauseConfig, diagnose
from tests.guest import container as boxes
from tests.guest.test_guard_systemd import UNIT, WRAPPER

pytestmark = pytest.mark.timeout(1500)

METADATA = boxes.METADATA
SERVICE = "notebook-medic-heartbeat.service"
TIMER = "notebook-medic-heartbeat.timer"
DROPIN = f"[Service]\nEnvironment=NOTEBOOK_MEDIC_METADATA_URL={METADATA}\n"
PATIENCE_S = 90.0
# Workbench's two agents by their unit names' shapes (install.sh AGENT_PATTERNS; facts: "Inside the Workbench VM").
AGENT = "[Unit]\nDescription={what} (stand-in)\n[Service]\nExecStart=/bin/sleep infinity\n"
BROKEN = """#!/bin/bash
echo "Traceback (most recent call last):"
echo "ModuleNotFoundError: No module named 'jupyter_server'"
exit 1
"""


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[boxes.Container]:
    rootfs = boxes.debian_rootfs()
    if isinstance(rootfs, str):
        pytest.skip(f"no Debian 12 container here: {rootfs}")
    with boxes.booted(rootfs, tmp_path_factory.mktemp("debian12-heartbeat")) as box:
        boxes.stage_guard(box)
        box.write("/opt/standin/jupyter_standin.py", (boxes.STANDIN / "jupyter_standin.py").read_text())
        box.write("/opt/standin/run-jupyter.sh", WRAPPER, 0o755)
        box.write("/etc/systemd/system/jupyter.service", UNIT.format(port=8080))
        box.write("/etc/systemd/system/proxy-forwarding-agent.service", AGENT.format(what="Notebooks Proxy Agent"))
        box.write("/etc/systemd/system/notebooks-collection-agent.service", AGENT.format(what="collection agent"))
        box.write(f"/etc/systemd/system/{SERVICE}.d/test-metadata.conf", DROPIN)
        box.run("useradd", "--create-home", "jupyter")
        box.run("systemctl", "daemon-reload")
        box.run("systemctl", "start", "metadata-standin.service", "jupyter.service", "proxy-forwarding-agent.service",
                "notebooks-collection-agent.service")
        yield box


def beat(box: boxes.Container) -> bot.Heartbeat:
    """The service started as the timer would (oneshot: returns when written), and what the bot reads of it."""
    box.run("systemctl", "start", SERVICE, timeout=120)
    raw = json.loads((box.root / "opt/standin/guest.json").read_text())["notebook-medic/heartbeat"]
    got = bot.parse(raw, datetime.now(UTC))
    assert isinstance(got, bot.Heartbeat), raw
    return got


def cause(got: bot.Heartbeat) -> Cause | None:
    found = diagnose(got, None, "", jupyter_down=False, running_since=None, now=datetime.now(UTC),
                     config=CauseConfig())
    return None if found is None else found.cause


def wait_until(check: object) -> None:
    deadline = time.monotonic() + PATIENCE_S
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"not within {PATIENCE_S} s"
        time.sleep(0.5)


def test_the_guard_installs_the_heartbeat_and_each_beat_names_what_is_down(box: boxes.Container) -> None:
    done = box.run("/opt/guard/install.sh", env={"NOTEBOOK_MEDIC_METADATA_URL": METADATA,
                                                 "NOTEBOOK_MEDIC_ATTRIBUTE_PACE": "0"}, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"enabled {TIMER} (the heartbeat every minute)" in done.stdout, done.stdout
    assert box.show(TIMER, "ActiveState", "UnitFileState") == {"ActiveState": "active", "UnitFileState": "enabled"}
    wait_until(lambda: box.show("jupyter.service", "ActiveState")["ActiveState"] == "active")

    well = beat(box)
    assert (well.server_answering, well.unit_state, well.proxy_agent, well.health_agent) == (True, "active", True, True)
    assert well.kernels == 1 and well.disks and 0 < (well.memory_percent or 0) <= 100
    assert cause(well) is None
    assert box.show(SERVICE, "Result")["Result"] == "success"

    box.run("systemctl", "stop", "proxy-forwarding-agent.service")
    agentless = beat(box)
    assert agentless.seq == well.seq + 1 and cause(agentless) is Cause.AGENT_STOPPED
    box.run("systemctl", "start", "proxy-forwarding-agent.service")

    box.run("systemctl", "stop", "jupyter.service")
    stopped = beat(box)
    assert (stopped.server_answering, stopped.unit_state, stopped.unit_result) == (False, "inactive", "success")
    assert cause(stopped) is Cause.JUPYTER_STOPPED

    box.write("/opt/standin/run-jupyter.sh", BROKEN, 0o755)  # a change to the environment breaks the server
    box.run("systemctl", "start", "jupyter.service", check=False)
    wait_until(lambda: box.show("jupyter.service", "ActiveState")["ActiveState"] == "failed")
    failing = beat(box)
    assert failing.unit_result in ("exit-code", "start-limit-hit") and cause(failing) is Cause.SERVER_FAILING
    assert any("ModuleNotFoundError" in line for line in failing.last_lines), failing.last_lines

    again = box.run("/opt/guard/install.sh", "--remove", env={"NOTEBOOK_MEDIC_METADATA_URL": METADATA}, check=False)
    assert f"removed {TIMER}" in again.stdout, again.stdout
    assert box.show(TIMER, "LoadState")["LoadState"] == "not-found"
