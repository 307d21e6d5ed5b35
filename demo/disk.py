"""The demo's disk scene (issue 43): a notebook's data disk fills up; the owner is told what fills it, with the
disk's last hours drawn, and the organizers get one line; then alice asks for a bigger disk
(`/restart-notebook bigger-disk`), an organizer approves with the monthly price difference in view (DISK_PRICES), the
bot grows it, and on the health sweep's next tick it reads the guard's next report and tells alice and the
request's thread that the filesystem grew (growing it by hand, when the bot cannot: docs/operations.md)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Protocol

from shared.core.blocks import ACTION_DISK_GROW
from shared.core.guest import GUARD_NAMESPACE
from simulators.incidents import disk_incident
from simulators.slack import SlackRequester
from simulators.stack import ALERT_CHANNEL, PROJECT, LocalStack

ZONE = "asia-northeast1-a"
GIB = 1 << 30


class Narrator(Protocol):
    """The story's transcript (demo/story.py Transcript), as this scene uses it."""

    def heading(self, text: str) -> None: ...

    def say(self, who: str, text: str) -> None: ...


def report(used_gb: int, size_gb: float) -> str:
    """What wb-alice's guard reports: a Hugging Face cache, a trash JupyterLab's Delete filled, training runs."""
    return json.dumps({
        "v": 1, "complete": True,
        "disks": [{"mount": "/", "size": 150 * GIB, "used": 41 * GIB, "avail": 109 * GIB},
                  {"mount": "/home/jupyter", "size": int(size_gb * GIB), "used": used_gb * GIB,
                   "avail": int((size_gb - used_gb) * GIB)}],
        "culprits": [{"kind": "huggingface", "bytes": 31 * GIB}, {"kind": "trash", "bytes": 12 * GIB},
                     {"kind": "pip", "bytes": 4 * GIB}, {"kind": "checkpoints", "bytes": 1 * GIB}],
        "folders": [{"path": ".cache", "bytes": 36 * GIB}, {"path": "runs", "bytes": 28 * GIB},
                    {"path": ".local", "bytes": 12 * GIB}],
        "models": [{"path": "runs/epoch-30.pt", "bytes": 6 * GIB}],
    }, separators=(",", ":"))


def disk_filling(stack: LocalStack, transcript: Narrator, settle: Callable[[], None], slack: SlackRequester) -> None:
    """`settle`: wait for the bot to be done and show what it said (the story's); `slack`: alice's and the
    organizer's requests to the Slack app."""
    transcript.heading("3c. A disk nearly full: the owner is told what fills it, asks for a bigger disk, an organizer "
                       "approves")
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
    transcript.say("alice", "emptying the trash and the caches is not enough for her next run: "
                            "/restart-notebook bigger-disk")
    answer = slack.slash_command("U0ALICE", "bigger-disk", response_url=stack.slack.new_response_url())
    transcript.say("slack", f"answered in {answer.elapsed_s:.1f} s, seen only by alice: {answer.body}")
    settle()
    request = next(m for m in stack.slack.messages(ALERT_CHANNEL) if "bigger data" in m.get("text", ""))
    approve = next(e["value"] for b in request["blocks"] if b["type"] == "actions" for e in b["elements"]
                   if e["action_id"] == ACTION_DISK_GROW)
    transcript.say("slack", "the organizer presses [Approve] on the ask")
    slack.block_action("U0ORG", ACTION_DISK_GROW, approve, response_url=stack.slack.new_response_url(),
                       message_ts=request["ts"], message=request)
    stack.slack.wait_for(lambda: any("is now" in m.get("text", "") for m in stack.slack.messages(ALERT_CHANNEL)
                                     if m.get("ts") == request["ts"]), timeout=60)
    settle()
    size = stack.workbench.get(full)["gceSetup"]["dataDisks"][0]["diskSizeGb"]
    filesystem = int(size) * 0.983  # ext4's inode tables and journal take about 1.7 % of the disk
    stack.compute.set_guest_attributes(full, GUARD_NAMESPACE, {"disk-report": report(93, filesystem)})
    transcript.say("workbench", f"wb-alice's data disk is now {size} GB; the guard's next report: 93 of "
                                f"{filesystem:.0f} GiB used ({93 * 100 // filesystem:.0f}%)")
    transcript.say("scheduler", "the health sweep's next tick: the bot reads the guard's report for the grown "
                                "filesystem")
    stack.sweep()
    stack.slack.wait_for(lambda: any("grew:" in m.get("text", "") for m in stack.slack.messages(ALERT_CHANNEL)
                                     if m.get("thread_ts") == request["ts"]), timeout=60)
    settle()
