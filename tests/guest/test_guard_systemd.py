"""The guard under Debian 12's real systemd 252, applied to a Workbench-shaped jupyter.service in a container.

Real parts: Debian's own systemd (mmdebstrap, booted by systemd-nspawn), the guard's own install.sh, curl and ss
as on a Workbench image. Stand-ins (tests/guest/standin): the Jupyter server (a stdlib server answering
/api/kernelspecs; real Jupyter is tested on the host in test_kernel_oom.py and test_guard_provisioner.py) and the
metadata server. Limits of this machine, said by the tests: memory limits are not enforced in the container (the
host's controller is cgroup v1), so OOMPolicy=continue is checked as systemd reports it, not triggered; root here
lacks CAP_SYS_RESOURCE, so the server's lowered oom_score_adj is checked through what systemd reports.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from tests.guest import container as boxes
from tests.guest.rig import ROOT

# The tree is built once per machine (mmdebstrap: ~3.5 min with its apt install on a loaded 2-core machine;
# make test starts it early).
pytestmark = pytest.mark.timeout(1500)

GUARD_DIR, STANDIN, METADATA = boxes.GUARD_DIR, boxes.STANDIN, boxes.METADATA
GUARD_ENV = {"NOTEBOOK_MEDIC_METADATA_URL": METADATA, "NOTEBOOK_MEDIC_ATTRIBUTE_PACE": "0"}
# Generous: systemd restarts after RestartSec=2; speed is measured in make bench, never decided here.
BUDGET = 60.0
DROPIN = "etc/systemd/system/jupyter.service.d/50-notebook-medic-guard.conf"

# Workbench's unit: "Jupyter Notebook Service", a bash wrapper running the server as user jupyter (facts.md,
# "Inside the Workbench VM"); Restart= as shipped (unset). The wrapper does not exec: the server is its child.
UNIT = """[Unit]
Description=Jupyter Notebook Service
After=network.target

[Service]
Type=simple
User=jupyter
WorkingDirectory=/home/jupyter
Environment=PORT={port}
ExecStart=/bin/bash /opt/standin/run-jupyter.sh

[Install]
WantedBy=multi-user.target
"""
WRAPPER = """#!/bin/bash
cd /home/jupyter
/usr/bin/python3 /opt/standin/jupyter_standin.py "$PORT"
echo "jupyter server exited"
"""
# An agent the guard protects, by its name on a Workbench image (the Ops Agent's unit).
AGENT_UNIT = """[Unit]
Description=Google Cloud Ops Agent (stand-in)
[Service]
ExecStart=/bin/sleep infinity
"""


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[boxes.Container]:
    rootfs = boxes.debian_rootfs()
    if isinstance(rootfs, str):
        pytest.skip(f"no Debian 12 container here: {rootfs}")
    with boxes.booted(rootfs, tmp_path_factory.mktemp("debian12")) as box:
        boxes.stage_guard(box)
        box.write("/opt/standin/jupyter_standin.py", (STANDIN / "jupyter_standin.py").read_text())
        box.write("/opt/standin/run-jupyter.sh", WRAPPER, 0o755)
        box.write("/etc/systemd/system/jupyter.service", UNIT.format(port=8080))
        box.write("/etc/systemd/system/jupyter-stock.service", UNIT.format(port=8081))
        box.write("/etc/systemd/system/google-cloud-ops-agent.service", AGENT_UNIT)
        box.run("useradd", "--create-home", "jupyter")
        box.run("systemctl", "daemon-reload")
        # Workbench's rc.local caps the unit's memory: maximum a few hundred MB below RAM, high 50,000,000 lower.
        box.run("systemctl", "set-property", "jupyter.service", "MemoryMax=3000000000", "MemoryHigh=2950000000")
        box.run("systemctl", "start", "metadata-standin.service", "jupyter.service", "jupyter-stock.service",
                "google-cloud-ops-agent.service")
        yield box


def answers(box: boxes.Container, port: int) -> bool:
    """Does the server inside the container answer /api/kernelspecs (the proxy agent's health check)?"""
    done = box.run("curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "2",
                   f"http://127.0.0.1:{port}/api/kernelspecs", check=False)
    return done.stdout == "200"


def wait_until(check: object, budget: float = BUDGET) -> float:
    """Seconds until check() is true (AssertionError after `budget`)."""
    started = time.monotonic()
    while time.monotonic() - started < budget:
        if check():  # type: ignore[operator]
            return time.monotonic() - started
        time.sleep(0.2)
    raise AssertionError(f"not within {budget} s")


def listener(box: boxes.Container, port: int) -> int:
    out = box.sh(f"ss -Hltnp 'sport = :{port}' | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2")
    return int(out.strip())


def adj(box: boxes.Container, pid: int) -> str:
    """A process's oom_score_adj, by its pid inside the container."""
    return box.sh(f"cat /proc/{pid}/oom_score_adj").strip()


def guest(box: boxes.Container) -> dict[str, str]:
    path = box.root / "opt/standin/guest.json"
    return json.loads(path.read_text()) if path.exists() else {}


def guard(box: boxes.Container, *args: str) -> str:
    done = box.run("/opt/guard/install.sh", *args, env=GUARD_ENV, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert all(line.startswith("notebook-medic-guard: ") for line in done.stdout.splitlines()), done.stdout
    return done.stdout


def kill_server(box: boxes.Container, port: int) -> int:
    pid = listener(box, port)
    box.run("kill", "-KILL", str(pid))
    return pid


def test_stock_unit_sigkilled_server_stays_down(box: boxes.Container) -> None:
    """The baseline the guard fixes: Workbench's unit as shipped (Restart= unset) leaves a killed server dead."""
    wait_until(lambda: answers(box, 8081))
    assert box.show("jupyter-stock.service", "Restart")["Restart"] == "no"
    kill_server(box, 8081)
    wait_until(lambda: box.show("jupyter-stock.service", "ActiveState")["ActiveState"] != "active")
    time.sleep(5)  # 2.5 x the guard's RestartSec: nothing is scheduled to start it again
    state = box.show("jupyter-stock.service", "ActiveState", "NRestarts", "Result")
    assert state["NRestarts"] == "0" and state["ActiveState"] in ("failed", "inactive"), state
    assert not answers(box, 8081), "the unguarded server is down and stays down: only a VM reset brings it back"


def a_custom_container_is_left_alone(box: boxes.Container) -> None:
    """A custom-container instance: the guard says so once and touches nothing; the box is then a standard one."""
    box.write("/opt/standin/attributes.json", json.dumps({"container": "gcr.io/contest/image:1"}))
    out = guard(box)
    assert out.count("\n") == 2 and "custom-container instance" in out and "left alone" in out, out
    assert not (box.root / DROPIN).exists()
    assert guest(box)["notebook-medic/state"] == "skipped"
    box.write("/opt/standin/attributes.json", "{}")


def test_guard_in_debian12_systemd(box: boxes.Container) -> None:
    wait_until(lambda: answers(box, 8080))
    kernel = int(box.sh("pgrep -f 'kernel-0123abcd' | head -1").strip())

    a_custom_container_is_left_alone(box)

    server_before = box.show("jupyter.service", "MainPID")["MainPID"]
    out = guard(box)
    assert f"wrote /{DROPIN}" in out and "daemon-reload" in out, out
    shown = box.show("jupyter.service", "Restart", "OOMPolicy", "RestartUSec", "OOMScoreAdjust", "StartLimitBurst",
                     "StartLimitIntervalUSec", "MemoryMax", "MemoryHigh", "MainPID")
    assert shown == {
        "Restart": "always", "OOMPolicy": "continue", "RestartUSec": "2s", "OOMScoreAdjust": "-900",
        "StartLimitBurst": "5", "StartLimitIntervalUSec": "1min", "MemoryMax": "3000000000",
        "MemoryHigh": "2950000000", "MainPID": server_before,
    }, "the drop-in applies to the running unit without restarting it"
    assert adj(box, kernel) == "1000", "a running kernel is raised"
    assert "wrote the drop-in of google-cloud-ops-agent.service (OOMScoreAdjust=-900)" in out, out
    assert box.show("google-cloud-ops-agent.service", "OOMScoreAdjust")["OOMScoreAdjust"] == "-900"
    server = listener(box, 8080)
    server_adj = adj(box, server)
    # Lowering needs CAP_SYS_RESOURCE: a VM's root has it (-900 now); root on this machine lacks it, and the guard
    # says so and carries on (systemd's OOMScoreAdjust=-900 above is what applies at the server's next start).
    assert server_adj == "-900" or (server_adj == "0" and f"oom_score_adj of pid {server} stays 0" in out), out
    attributes = guest(box)
    assert {key: attributes[f"notebook-medic/{key}"] for key in (
        "guard-version", "restart", "oom-policy", "memory-max", "memory-high", "kernel-oom-score-adj",
        "server-oom-score-adj")} == {
        "guard-version": "1", "restart": "always", "oom-policy": "continue", "memory-max": "3000000000",
        "memory-high": "2950000000", "kernel-oom-score-adj": "1000", "server-oom-score-adj": server_adj,
    }
    # No Jupyter in the container's python3: the provisioner and the memory meter cannot be installed; said.
    assert attributes["notebook-medic/state"] == "degraded"
    assert "no jupyter_client.provisioning" in attributes["notebook-medic/problems"]

    # A second run changes nothing.
    dropin_mtime = (box.root / DROPIN).stat().st_mtime_ns
    again = guard(box)
    assert "already in place: nothing changed" in again and "wrote" not in again, again
    assert (box.root / DROPIN).stat().st_mtime_ns == dropin_mtime
    assert box.show("jupyter.service", "MainPID")["MainPID"] == server_before

    # The guarded server SIGKILLed is back by systemd's own restart.
    killed = kill_server(box, 8080)
    started = time.monotonic()
    wait_until(lambda: box.show("jupyter.service", "NRestarts")["NRestarts"] != "0")
    wait_until(lambda: answers(box, 8080))
    state = box.show("jupyter.service", "NRestarts", "ActiveState")
    assert state == {"NRestarts": "1", "ActiveState": "active"}, state
    assert listener(box, 8080) != killed
    print(f"guarded server answering again {time.monotonic() - started:.1f} s after its SIGKILL (make bench measures)")

    out = guard(box, "--remove")
    assert f"removed /{DROPIN}" in out
    assert box.show("jupyter.service", "Restart")["Restart"] == "no"


def test_post_startup_script_fetches_the_guard_from_the_bucket_and_applies_or_removes_it(
    box: boxes.Container,
) -> None:
    """infra/contest/post-startup.sh as Workbench runs it: its bucket from the metadata that names it, the other
    files through the Cloud Storage JSON API with the VM account's token, the guard as the switch says."""
    guard(box, "--remove")  # whatever an earlier test left
    bucket = "opt/standin/bucket/contest-setup"
    contest = ROOT / "infra" / "contest"
    for source in (contest / "post-startup.sh", contest / "install-ops-agent.sh",
                   *sorted(p for p in GUARD_DIR.iterdir() if p.is_file())):
        box.write(f"/{bucket}/{source.relative_to(contest)}", source.read_text())
    env = {**GUARD_ENV, "NOTEBOOK_MEDIC_STORAGE_URL": "http://127.0.0.1:8099"}
    switches = {"post-startup-script": "gs://contest-setup/post-startup.sh", "notebook-medic-ops-agent": "off"}

    box.write("/opt/standin/attributes.json", json.dumps({**switches, "notebook-medic-guard": "on"}))
    done = box.run("bash", f"/{bucket}/post-startup.sh", env=env, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"notebook-medic-guard: wrote /{DROPIN}" in done.stdout, done.stdout
    assert "Ops Agent" not in done.stdout, "switched off: not installed"
    assert box.show("jupyter.service", "OOMPolicy")["OOMPolicy"] == "continue"

    box.write("/opt/standin/attributes.json", json.dumps({**switches, "notebook-medic-guard": "off"}))
    done = box.run("bash", f"/{bucket}/post-startup.sh", env=env, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"notebook-medic-guard: removed /{DROPIN}" in done.stdout, done.stdout
    assert box.show("jupyter.service", "OOMPolicy")["OOMPolicy"] == "stop", "Debian 12's default again"
    box.write("/opt/standin/attributes.json", "{}")
