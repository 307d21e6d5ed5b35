"""Disk warnings over the wire (issue 43, part 1): a disk policy's incident (infra/disk.tf) reaches on_memory_alert
as memory's do, and the worker warns the owner once per quiet period with what fills the disk (the guard's
disk-report guest attribute, read from the Compute simulator) and the disk's last hours (the Monitoring
simulator's disk series), drawn and shared into the DM and under the organizers' channel line. Its quiet period
is the disk's own: a memory warning still goes. And a GPU's memory (issue 47), the same way, with what holds it."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from shared.core import tickets
from shared.core.disk_report import COMMANDS
from shared.core.guest import GUARD_NAMESPACE
from simulators.incidents import disk_incident, gpu_incident, memory_incident
from simulators.polling import PATIENCE_S
from simulators.stack import ALERT_CHANNEL, PROJECT, LocalStack
from tests.integration.conftest import new_instance
from tests.integration.helpers import ZONE

pytestmark = pytest.mark.wire
GIB = 1 << 30
REPORT = {
    "v": 1, "complete": True,
    "disks": [{"mount": "/", "size": 150 * GIB, "used": 40 * GIB, "avail": 110 * GIB},
              {"mount": "/home/jupyter", "size": 100 * GIB, "used": 93 * GIB, "avail": 7 * GIB}],
    "culprits": [{"kind": "huggingface", "bytes": 31 * GIB}, {"kind": "trash", "bytes": 12 * GIB},
                 {"kind": "pip", "bytes": 4 * GIB}],
    "folders": [{"path": ".cache", "bytes": 36 * GIB}, {"path": "runs", "bytes": 28 * GIB},
                {"path": ".local", "bytes": 12 * GIB}],
    "models": [],
}


@pytest.fixture(scope="module")
def stack(label_visibility: str) -> Iterator[LocalStack]:
    with LocalStack(memory_charts=True, memory_alerts=True,
                    env={"MEMORY_WARNING_QUIET_SECONDS": "600"}) as running:
        yield running


def wait_dm(stack: LocalStack, user: str, test: Any) -> dict[str, Any]:
    found: list[dict[str, Any]] = []

    def seen() -> bool:
        found[:] = [m for m in stack.slack.messages(user) if test(m)]
        return bool(found)

    assert stack.slack.wait_for(seen, timeout=PATIENCE_S), [m.get("text") for m in stack.slack.messages(user)]
    return found[0]


def test_disk_incident_warns_the_owner_with_what_fills_it_and_its_curve(stack: LocalStack) -> None:
    full, name = new_instance(stack, "wb-disk", slack_user="U0DISK")
    stack.compute.set_guest_attributes(full, GUARD_NAMESPACE, {"disk-report": json.dumps(REPORT)})
    stack.monitoring(disk_incident(PROJECT, ZONE, name, percent=93.4, device="/dev/sdb"))
    warned = wait_dm(stack, "U0DISK", lambda m: "/dev/sdb" in m.get("text", ""))
    assert tickets.ACTION_HELP in json.dumps(warned.get("blocks")), warned  # "Get help" under it (issue 46)
    warning = warned["text"]
    assert "93% full" in warning and "No space left on device" in warning
    lines = warning.splitlines()
    trash = next(i for i, line in enumerate(lines) if COMMANDS["trash"] in line)
    assert "12.0 GiB" in lines[trash] and COMMANDS["huggingface"] in lines[trash + 1]  # the trash first
    assert "`~/.cache` (36.0 GiB)" in warning
    def in_channel() -> list[dict[str, Any]]:  # posted beside the DM, not before it: waited for
        return [m for m in stack.alerts() if name in m.get("text", "") and "/dev/sdb" in m.get("text", "")]

    assert stack.slack.wait_for(lambda: bool(in_channel()), timeout=PATIENCE_S)
    channel = in_channel()[0]
    assert "93% full" in channel["text"] and "<@U0DISK>" in channel["text"]
    shared = wait_dm(stack, "U0DISK", lambda m: m.get("files"))
    (file,) = shared["files"]
    image = Image.open(io.BytesIO(stack.slack.files.data[file["id"]]))
    assert image.format == "PNG" and image.size == (800, 400)
    assert file["title"] == f"Disk of {name} over the last hours"
    assert "~/.cache 36.0 GiB" in file["alt_txt"] and "of 100 GiB" in file["alt_txt"]  # the data disk's size
    request = next(r for _, r in stack.metrics.requests if "disk/percent_used" in r.filter)
    assert 'metric.labels.device = "/dev/sdb"' in request.filter
    assert (request.interval.end_time - request.interval.start_time).total_seconds() >= 6 * 3600
    assert stack.slack.wait_for(lambda: any(m.get("files") for m in stack.slack.messages(ALERT_CHANNEL)
                                            if m.get("thread_ts") == channel["ts"]), timeout=PATIENCE_S)
    # The same climb notified again, and the boot disk's too, within the quiet period: no second warning.
    stack.monitoring(disk_incident(PROJECT, ZONE, name, percent=96.0, device="/dev/sdb"))
    stack.monitoring(disk_incident(PROJECT, ZONE, name, percent=91.0, device="/dev/sda1"))
    assert stack.wait_idle()
    assert len([m for m in stack.slack.messages("U0DISK") if "full" in m.get("text", "")]) == 1
    assert "medic-disk-warned" in stack.workbench.get(full)["labels"]
    assert stack.workbench.resets(full) == 0  # a reset does not empty a disk
    # Memory's quiet period is its own.
    stack.monitoring(memory_incident(PROJECT, ZONE, name, percent=94.0))
    memory = wait_dm(stack, "U0DISK", lambda m: "94%" in m.get("text", "") and "memory" in m.get("text", ""))
    assert tickets.ACTION_HELP in json.dumps(memory.get("blocks")), memory


def test_disk_warning_without_a_report_says_how_to_look(stack: LocalStack) -> None:
    """No disk-report (the guard is not installed, or has not run yet): the warning goes, with `du`, and no
    picture (the disk's size is not known), one line in its place."""
    _, name = new_instance(stack, "wb-disk-bare", slack_user="U0DISKBARE")
    stack.monitoring(disk_incident(PROJECT, ZONE, name, percent=92.0, device="/dev/sda1"))
    warning = wait_dm(stack, "U0DISKBARE", lambda m: "/dev/sda1" in m.get("text", ""))["text"]
    assert "guard has not reported it" in warning and "du -xh" in warning
    wait_dm(stack, "U0DISKBARE", lambda m: "No disk curve" in m.get("text", ""))


def gpu_holders_attribute(pids: tuple[int, int]) -> str:
    """The GPU guard's gpu-holders as it writes it (infra/contest/guard/gpu_guard.py holders_text), dated now."""
    kernel, orphan = pids
    return json.dumps({"v": 1, "at": int(time.time()), "apps": [
        {"pid": kernel, "comm": "python", "bytes": 11 * GIB, "kind": "kernel", "kernel": kernel},
        {"pid": orphan, "comm": "pt_data_worker", "bytes": 3 * GIB, "kind": "orphan", "kernel": 4100}]},
        separators=(",", ":"))


@pytest.mark.both_label_variants
def test_gpu_incident_warns_the_owner_with_what_holds_it_and_its_curve(stack: LocalStack, tmp_path: Path) -> None:
    """Issue 47: the GPU policy's incident (infra/gpu.tf) reaches on_memory_alert as memory's do; the owner is warned
    once per climb with the processes the GPU guard lists (its gpu-holders guest attribute, read from the Compute
    simulator) and the GPU's hour (the Monitoring simulator's NVML series) with them; its quiet period is its own."""
    full, name = new_instance(stack, "wb-gpu-warn", slack_user="U0GPUWARN", machine_type="n1-standard-8",
                              accelerators={"NVIDIA_TESLA_T4": 1})
    stack.compute.set_guest_attributes(full, GUARD_NAMESPACE, {"gpu-holders": gpu_holders_attribute((4242, 5150))})
    stack.monitoring(gpu_incident(PROJECT, ZONE, name, percent=95.3))
    warned = wait_dm(stack, "U0GPUWARN", lambda m: "GPU" in m.get("text", "") and "95%" in m.get("text", ""))
    assert tickets.ACTION_HELP in json.dumps(warned.get("blocks")), warned
    lines = warned["text"].splitlines()
    assert "CUDA out of memory" in lines[0] and "torch.cuda.empty_cache()" in lines[0]
    assert lines[2] == "• `python` (pid 4242): 11.0 GiB, a running kernel's (pid 4242)"
    assert lines[3].startswith("• `pt_data_worker` (pid 5150): 3.0 GiB, its kernel is gone")
    assert stack.slack.wait_for(lambda: any(name in m.get("text", "") and "GPU is at 95%" in m.get("text", "")
                                            for m in stack.alerts()), timeout=PATIENCE_S)
    shared = wait_dm(stack, "U0GPUWARN", lambda m: any(f["name"].startswith("gpu-") for f in m.get("files", [])))
    (file,) = shared["files"]
    png = stack.slack.files.data[file["id"]]
    (tmp_path / "gpu-warning.png").write_bytes(png)
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG" and image.size == (800, 400)
    assert file["title"] == f"GPU memory of {name} over the last hour"
    assert "python (pid 4242) 11.0 GiB" in file["alt_txt"] and "of 15.0 GiB" in file["alt_txt"]
    assert not [m for m in stack.slack.messages("U0GPUWARN") if any(f["name"].startswith("memory-")
                                                                    for f in m.get("files", []))]
    # The same climb notified again within the quiet period: no second warning; memory's own still goes.
    stack.monitoring(gpu_incident(PROJECT, ZONE, name, percent=97.0))
    assert stack.wait_idle()
    assert len([m for m in stack.slack.messages("U0GPUWARN") if "GPU of your notebook" in m.get("text", "")]) == 1
    assert "medic-gpu-warned" in stack.workbench.get(full)["labels"]
    assert stack.workbench.resets(full) == 0
    stack.monitoring(memory_incident(PROJECT, ZONE, name, percent=94.0))
    wait_dm(stack, "U0GPUWARN", lambda m: "94%" in m.get("text", "") and "memory" in m.get("text", ""))
