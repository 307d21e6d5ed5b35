"""The GPU guard's unit (issue 47) installed by the guard's own install.sh under Debian 12's real systemd 252, on a
"GPU notebook" whose nvidia-smi is the stand-in (this machine has no GPU): installed only where nvidia-smi exists,
started, `gpu-state` written through the metadata stand-in, the driver's failure seen at the unit's next start with
its remedy in the journal, and removed by `install.sh --remove`."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator

import pytest

from simulators.polling import PATIENCE_S
from tests.guest import container as boxes
from tests.guest.container import METADATA, STANDIN
from tests.guest.test_guard_systemd import GUARD_ENV, guest

pytestmark = pytest.mark.timeout(1500)

UNIT = "notebook-medic-gpu-guard.service"
# The unit as installed, pointed at the metadata stand-in (the VM's unit uses metadata.google.internal).
TEST_DROPIN = f"[Service]\nEnvironment=NOTEBOOK_MEDIC_METADATA_URL={METADATA}\n"
NO_DRIVER = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."


def smi_state(mode: str) -> str:
    return json.dumps({"mode": mode, "gpus": [{"name": "Tesla T4", "used": 0, "total": 15360}], "apps": []})


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[boxes.Container]:
    rootfs = boxes.debian_rootfs()
    if isinstance(rootfs, str):
        pytest.skip(f"no Debian 12 container here: {rootfs}")
    with boxes.booted(rootfs, tmp_path_factory.mktemp("debian12-gpu")) as box:
        boxes.stage_guard(box)
        box.write(f"/etc/systemd/system/{UNIT}.d/test.conf", TEST_DROPIN)
        box.run("systemctl", "daemon-reload")
        box.run("systemctl", "start", "metadata-standin.service")
        yield box


def guard(box: boxes.Container, *args: str) -> str:
    done = box.run("/opt/guard/install.sh", *args, env=GUARD_ENV, check=False, timeout=300.0)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def wait_until(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + PATIENCE_S
    while not check():
        assert time.monotonic() < deadline, f"not within {PATIENCE_S} s"
        time.sleep(0.2)


def test_gpu_guard_unit_installed_on_a_gpu_notebook_only(box: boxes.Container) -> None:
    out = guard(box)
    assert UNIT not in out, "no nvidia-smi and no NVIDIA device: no GPU guard"
    assert not (box.root / f"etc/systemd/system/{UNIT}").exists()

    box.write("/opt/standin/nvidia-smi.json", smi_state("ok"))
    box.write("/usr/local/bin/nvidia-smi", (STANDIN / "nvidia_smi.py").read_text(), 0o755)
    out = guard(box)
    assert "notebook-medic-guard: installed /opt/notebook-medic/gpu_guard.py" in out, out
    assert f"notebook-medic-guard: enabled and started {UNIT}" in out, out
    wait_until(lambda: guest(box).get("notebook-medic/gpu-state") == "ok")
    assert box.show(UNIT, "ActiveState")["ActiveState"] == "active"

    again = guard(box)
    assert UNIT not in again, again  # in place and running: left alone

    box.write("/opt/standin/nvidia-smi.json", smi_state("no-driver"))
    box.run("systemctl", "restart", UNIT)
    wait_until(lambda: guest(box).get("notebook-medic/gpu-state", "").startswith(
        f"GPU not usable: nvidia-smi exit 9: {NO_DRIVER}"))
    journal = box.run("journalctl", "-u", UNIT, "-o", "cat", "--no-pager").stdout
    assert f"notebook-medic-gpu: gpu-state GPU not usable: nvidia-smi exit 9: {NO_DRIVER}" in journal, journal
    assert "remedy: stop and start the notebook" in journal, journal

    # No Jupyter server's Python in this box: --remove goes on without one (it once exited at server_python).
    removed = guard(box, "--remove")
    assert f"removed {UNIT}" in removed, removed
    assert box.show(UNIT, "ActiveState")["ActiveState"] == "inactive"
