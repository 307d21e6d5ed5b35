"""The demo's disk scene (issue 43): a notebook's data disk fills up; the owner is told what fills it, with the
disk's last hours drawn, and the organizers get one line; then an organizer grows the disk by hand, as
docs/operations.md says (the bot does not ask or approve a bigger disk yet), and the guard's next report shows it."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Protocol

from shared.core.guest import GUARD_NAMESPACE
from simulators.incidents import disk_incident
from simulators.stack import PROJECT, LocalStack

ZONE = "asia-northeast1-a"
GIB = 1 << 30


class Narrator(Protocol):
    """The story's transcript (demo/story.py Transcript), as this scene uses it."""

    def heading(self, text: str) -> None: ...

    def say(self, who: str, text: str) -> None: ...


def report(used_gb: int, size_gb: int) -> str:
    """What wb-alice's guard reports: a Hugging Face cache, a trash JupyterLab's Delete filled, training runs."""
    return json.dumps({
        "v": 1, "complete": True,
        "disks": [{"mount": "/", "size": 150 * GIB, "used": 41 * GIB, "avail": 109 * GIB},
                  {"mount": "/home/jupyter", "size": size_gb * GIB, "used": used_gb * GIB,
                   "avail": (size_gb - used_gb) * GIB}],
        "culprits": [{"kind": "huggingface", "bytes": 31 * GIB}, {"kind": "trash", "bytes": 12 * GIB},
                     {"kind": "pip", "bytes": 4 * GIB}, {"kind": "checkpoints", "bytes": 1 * GIB}],
        "folders": [{"path": ".cache", "bytes": 36 * GIB}, {"path": "runs", "bytes": 28 * GIB},
                    {"path": ".local", "bytes": 12 * GIB}],
        "models": [{"path": "runs/epoch-30.pt", "bytes": 6 * GIB}],
    }, separators=(",", ":"))


def disk_filling(stack: LocalStack, transcript: Narrator, settle: Callable[[], None]) -> None:
    """`settle`: wait for the bot to be done and show what it said (the story's)."""
    transcript.heading("3c. A disk nearly full: the owner is told what fills it and how to free it")
    full = f"projects/{PROJECT}/locations/{ZONE}/instances/wb-alice"
    stack.compute.set_guest_attributes(full, GUARD_NAMESPACE, {"disk-report": report(93, 100)})
    transcript.say("guard", "wb-alice: the guard's disk report (every 10 minutes): the home disk holds 93 of "
                            "100 GiB; a model cache, the trash and training runs fill it")
    transcript.say("monitoring", "wb-alice's data disk has been over 90% full for 5 minutes (93.4%): an alert "
                                 "opens")
    stack.monitoring(disk_incident(PROJECT, ZONE, "wb-alice", percent=93.4, device="/dev/sdb"))
    # The picture is the warning's last step: wait for it in alice's DM (the stack may look idle just before it).
    stack.slack.wait_for(lambda: any(str(f.get("title", "")).startswith("Disk of") for m in
                                     stack.slack.messages("U0ALICE") for f in m.get("files") or []), timeout=60)
    settle()
    transcript.say("organizer", "emptying the trash and the caches is not enough for alice's next run: the "
                                "organizer grows her data disk by hand (docs/operations.md): gcloud workbench "
                                "instances resize-disk wb-alice --data-disk-size=200")
    body = json.dumps({"dataDisk": {"diskSizeGb": "200"}}).encode()
    _, operation = stack.workbench.handle("POST", f"/v2/{full}:resizeDisk", body)
    name = operation["name"]
    for _ in range(200):
        if stack.workbench.handle("GET", f"/v2/{name}", b"")[1].get("done"):
            break
        stack.workbench.clock.sleep(0.05)
    size = stack.workbench.get(full)["gceSetup"]["dataDisks"][0]["diskSizeGb"]
    stack.compute.set_guest_attributes(full, GUARD_NAMESPACE, {"disk-report": report(93, int(size))})
    transcript.say("workbench", f"wb-alice's data disk is now {size} GB; the guard's next report: 93 of {size} GiB "
                                f"used ({93 * 100 // int(size)}%)")
