"""The demo's story and the replay, on the local stack (started here; python -m demo checks its input first)."""

from __future__ import annotations

import json
import re
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from demo import causes, day, disk, gpu, guest, help_desk, render, words
from demo.replay import Entry, localized
from shared.core.machines import memory_kib
from shared.core.messages import human_bytes
from shared.core.models import InstanceRef, OomKill
from shared.core.oom_parse import SINK_FILTER, NotAKill, name_by_vm, read_kill_entry
from simulators.entries import noise_entry, oom_entry
from simulators.incidents import memory_incident
from simulators.slack import SlackRequester
from simulators.stack import ALERT_CHANNEL, OOM_TOPIC, PROJECT, SIGNING_SECRET, LocalStack

ZONE = "asia-northeast1-a"
PICTURES = Path(__file__).resolve().parent.parent / "demo-pictures"  # the memory pictures the demo's Slack got
# How long a scene waits for the bot to be done: quiet, the longest took 5.8 s (2026-12-05); a fresh clone's suite
# beside five busy loops on 2 cores took 30 s for one replayed kill, and a 30 s wait cut its transcript short.
SETTLE_S = 300.0
NEXT = ("next: `make test` (the whole suite, on this machine), then deploy: docs/operations.md "
        "(make doctor checks a deployment)")
PEOPLE = {  # slack id: (name, email)
    "U0ALICE": ("alice", "alice@contest.example"),
    "U0BOB": ("bob", "bob@contest.example"),
    "U0CAROL": ("carol", "carol@contest.example"),
    "U0ORG": ("organizer", "org@contest.example"),
}


class Transcript:
    def __init__(self, stack: LocalStack) -> None:
        self.stack = stack
        self.t0 = time.monotonic()
        self.lock = threading.Lock()
        self.seen_alerts: dict[str, str] = {}
        self.seen_dms: dict[str, int] = {}
        self.seen_audit = 0
        self.people = dict(PEOPLE)  # slack id: (name, email); replay adds the owners it creates
        self.pictures: list[Path] = []  # the memory pictures written to demo-pictures/

    def say(self, who: str, text: str) -> None:
        with self.lock:
            print(f"[{time.monotonic() - self.t0:6.2f}s] {who:<10} {text}", flush=True)

    def heading(self, text: str) -> None:
        with self.lock:
            print(f"\n=== {text} " + "=" * max(0, 76 - len(text)), flush=True)

    def name_of(self, user_id: str) -> str:
        return self.people.get(user_id, (user_id, ""))[0]

    def show_new(self) -> None:
        """Decisions from the functions' audit logs, then Slack messages that are new or changed."""
        records = self.stack.audit_records("restart_worker")
        names = {email: name for name, email in self.people.values()}
        for record in records[self.seen_audit:]:
            self.say("bot", words.decision(record, names))
        self.seen_audit = len(records)
        for msg in self.stack.slack.messages(ALERT_CHANNEL):
            key = json.dumps(msg.get("blocks") or msg.get("text"), sort_keys=True)
            if self.seen_alerts.get(msg["ts"]) != key:
                verb = "updated" if msg["ts"] in self.seen_alerts else "posted"
                if msg.get("thread_ts") not in (None, msg["ts"]):
                    verb = "thread reply"
                self.seen_alerts[msg["ts"]] = key
                self.say("slack", f"#notebook-alerts ({verb}):")
                print(render.message(msg, self.name_of), flush=True)
                self.show_pictures(msg, "alert")
        for user_id, (name, _) in self.people.items():
            dms = self.stack.slack.messages(user_id) if user_id in self.stack.slack._users else []
            for msg in dms[self.seen_dms.get(user_id, 0):]:
                self.say("slack", f"DM to @{name}:")
                print(render.message(msg, self.name_of), flush=True)
                self.show_pictures(msg, "owner")
            self.seen_dms[user_id] = len(dms)


    def show_pictures(self, msg: dict[str, Any], reader: str) -> None:
        """A shared picture is written to demo-pictures/ and named, with the words Slack reads out for it."""
        for file in msg.get("files") or []:
            data = self.stack.slack.files.data.get(str(file.get("id")))
            if data is None:
                continue
            title = str(file.get("title", ""))
            instance = title.split(" of ", 1)[1].split(maxsplit=1)[0] if " of " in title else "notebook"
            kind = "disk" if title.startswith("Disk of ") else "gpu" if title.startswith("GPU ") else (
                "kill" if "kill" in title else "warning")
            PICTURES.mkdir(exist_ok=True)
            path = PICTURES / f"{instance}-{kind}-{reader}.png"
            path.write_bytes(data)
            self.pictures.append(path)
            self.say("picture", f"{title}: saved as {path.relative_to(PICTURES.parent)} (open it to see it)")
            print(f"    alt text: {file.get('alt_txt', '')}", flush=True)


def watch_states(stack: LocalStack, transcript: Transcript, stop: threading.Event) -> None:
    last: dict[str, str] = {}
    while not stop.is_set():
        for name in ("wb-alice", "wb-bob", "wb-carol"):
            try:
                instance = stack.workbench.get(f"projects/{PROJECT}/locations/{ZONE}/instances/{name}")
            except KeyError:
                continue
            state = words.state(instance)
            if last.get(name) not in (None, state):
                transcript.say("notebook", f"{name}: {last[name]} → {state}")
            last[name] = state
        time.sleep(0.05)


def settle(stack: LocalStack, transcript: Transcript, seconds: float = SETTLE_S) -> None:
    """Waits until the bot is done with what the scene did (nothing left to deliver, every update applied) and shows
    what it said; a bot still at work after `seconds` is said, so that a scene is never cut short in silence."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.3)
        transcript.show_new()
        if stack.wait_idle(0.1):
            time.sleep(0.3)
            transcript.show_new()
            return
    transcript.say("demo", f"the bot is still at work after {seconds:g} s (a busy machine?): the story goes on")


def kill(stack: LocalStack, transcript: Transcript, name: str, *, survives: bool, process: str, rss_kb: int,
         repeat: int = 1) -> None:
    full = f"projects/{PROJECT}/locations/{ZONE}/instances/{name}"
    entry = oom_entry(PROJECT, ZONE, name, process=process, anon_rss_kb=rss_kb)
    transcript.say("kernel", f"{name}: out of memory, the kernel kills {process} "
                             f"({human_bytes(rss_kb)} in use)")
    stack.workbench.oom_kill(full, jupyter_survives=survives, health_delay_s=0.3)
    for _ in range(repeat):
        stack.sink(entry)
    if repeat > 1:
        transcript.say("logs", f"Cloud Logging delivers that kill {repeat} times (it may repeat itself): "
                               "the bot must restart once")


def scenario(stack: LocalStack, transcript: Transcript) -> None:
    """The story's steps in order, each waiting for its outcome: the incidents first, then what people ask of Slack."""
    slack = SlackRequester(SIGNING_SECRET, stack.functions["slack_app"][0].url)
    memory_and_kills(stack, transcript)
    disk.disk_filling(stack, transcript, lambda: settle(stack, transcript), slack)
    restart_commands(stack, transcript, slack)
    pause_restarts(stack, transcript, slack)
    approve_bigger(stack, transcript, slack)
    help_desk.scene(stack, transcript, slack, settle)  # issue 46: help tickets (demo/help_desk.py)


def memory_and_kills(stack: LocalStack, transcript: Transcript) -> None:
    """Steps 0-3: a memory warning, a kill that takes JupyterLab down, one that spares it, and look-alike lines."""
    transcript.heading("0. Memory nearly full: the owner is warned while there is time to save")
    transcript.say("monitoring", "wb-alice has used over 90% of its memory for 2 minutes (93.4%): an alert opens")
    stack.monitoring(memory_incident(PROJECT, ZONE, "wb-alice", percent=93.4))
    settle(stack, transcript)

    transcript.heading("1. A notebook runs out of memory and JupyterLab goes down: the bot restarts it")
    kill(stack, transcript, "wb-alice", survives=False, process="python", rss_kb=15_235_516, repeat=3)
    settle(stack, transcript)

    transcript.heading("2. Only the kernel died, JupyterLab lives: no restart, the owner is told")
    kill(stack, transcript, "wb-bob", survives=True, process="ipykernel_launc", rss_kb=7_654_321)
    settle(stack, transcript)

    transcript.heading("2b. The same, for real: this machine's kernel kills a real JupyterLab's kernel")
    if guest.real_kill(stack, transcript, ZONE, "wb-carol"):
        settle(stack, transcript)

    transcript.heading("3. Log lines that look like running out of memory but kill nothing: ignored")
    for line in ("python invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0",
                 "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"):
        transcript.say("logs", f"wb-carol: {line[:80]}")
        forwarded = stack.sink(noise_entry(PROJECT, ZONE, "wb-carol", line))
        transcript.say("logs", "  passed to the bot, which ignores it" if forwarded
                       else "  not a kill: the log filter never passes it to the bot")
    settle(stack, transcript)
    health_sweep_step(stack, transcript)


def health_sweep_step(stack: LocalStack, transcript: Transcript) -> None:
    """Step 3b (issue 42): JupyterLab down with no kill line anywhere, found by the health sweep with its cause:
    one restarted once, one with a full disk told and not reset (demo/causes.py)."""
    transcript.heading("3b. JupyterLab goes down with no kill line at all: the health sweep finds it, and why")
    causes.outages(stack, transcript, lambda: settle(stack, transcript), _full)


def restart_commands(stack: LocalStack, transcript: Transcript, slack: SlackRequester) -> None:
    """Steps 4-5: an owner restarts her own notebook; someone else's request for it does nothing."""
    transcript.heading("4. carol: /restart-notebook  (her own notebook)")
    url = stack.slack.new_response_url()
    answer = slack.slash_command("U0CAROL", "", response_url=url)
    transcript.say("slack", f"answered in {answer.elapsed_s:.1f} s, seen only by carol:")
    print(render.message({"text": answer.body}, transcript.name_of), flush=True)
    settle(stack, transcript)
    for reply in stack.slack.responses(url):
        transcript.say("slack", "reply to carol:")
        print(render.message(reply, transcript.name_of), flush=True)

    transcript.heading("5. bob: /restart-notebook wb-carol  (not his)")
    answer = slack.slash_command("U0BOB", "wb-carol", response_url=stack.slack.new_response_url())
    transcript.say("slack", f"answered in {answer.elapsed_s:.1f} s, seen only by bob:")
    print(render.message({"text": answer.body}, transcript.name_of), flush=True)
    transcript.say("notebook", f"wb-carol restarted {_times(stack.workbench.resets(_full('wb-carol')))} so far: "
                               "bob's request did nothing")


def pause_restarts(stack: LocalStack, transcript: Transcript, slack: SlackRequester) -> None:
    """Step 6: [Pause restarts] on an alert, refused to a participant, done for the organizer and kept on the VM."""
    transcript.heading("6. [Pause restarts] on wb-alice's alert: bob tries first, then the organizer")
    alert = next(m for m in stack.slack.messages(ALERT_CHANNEL) if "wb-alice" in json.dumps(m.get("blocks")))
    url = stack.slack.new_response_url()
    slack.block_action("U0BOB", "medic_pause", _full("wb-alice"), response_url=url, message_ts=alert["ts"],
                                message=alert)
    settle(stack, transcript)
    transcript.say("slack", f"bob presses it; only bob sees the reply: "
                            f"{render.mrkdwn(stack.slack.responses(url)[-1]['text'], transcript.name_of)}")
    url = stack.slack.new_response_url()
    slack.block_action("U0ORG", "medic_pause", _full("wb-alice"), response_url=url, message_ts=alert["ts"],
                       message=alert)
    settle(stack, transcript)
    kept = "paused" in json.dumps(stack.workbench.get(_full("wb-alice")).get("labels", {}))
    transcript.say("notebook", "wb-alice: automatic restarts paused; the pause is written on the instance itself "
                               "(its labels), so it holds across redeploys" if kept else
                               "wb-alice: the pause is NOT written on the instance")


def approve_bigger(stack: LocalStack, transcript: Transcript, slack: SlackRequester) -> None:
    """Step 7: a participant asks for more memory, the organizer approves, the notebook moves to a bigger machine."""
    transcript.heading("7. bob: /restart-notebook bigger — the organizer approves, the thread tells each step")
    answer = slack.slash_command("U0BOB", "bigger", response_url=stack.slack.new_response_url())
    transcript.say("slack", f"answered in {answer.elapsed_s:.1f} s, seen only by bob:")
    print(render.message({"text": answer.body}, transcript.name_of), flush=True)
    settle(stack, transcript)
    request = next(m for m in stack.slack.messages(ALERT_CHANNEL) if "more memory" in m.get("text", ""))
    approve = next(e["value"] for b in request["blocks"] if b["type"] == "actions" for e in b["elements"]
                   if e["action_id"] == "medic_resize")
    transcript.say("slack", "the organizer presses [Approve]")
    slack.block_action("U0ORG", "medic_resize", approve, response_url=stack.slack.new_response_url(),
                       message_ts=request["ts"], message=request)
    settle(stack, transcript)
    machine = stack.workbench.get(_full("wb-bob"))["gceSetup"]["machineType"].rsplit("/", 1)[-1]
    transcript.say("notebook", f"wb-bob now runs on {machine} ({human_bytes(memory_kib(machine) or 0)} of memory)")



def summary(stack: LocalStack, transcript: Transcript) -> None:
    transcript.heading("Summary")
    for name in ("wb-alice", "wb-bob", "wb-carol"):
        transcript.say("notebook", f"{name}: restarted {_times(stack.workbench.resets(_full(name)))}")
    transcript.say("slack", f"{len(stack.slack.messages(ALERT_CHANNEL))} messages in #notebook-alerts")
    for path in transcript.pictures:
        transcript.say("picture", f"{path.relative_to(PICTURES.parent)}")
    print(f"\n{NEXT}", flush=True)


def _times(count: int) -> str:
    return {0: "not at all", 1: "once", 2: "twice"}.get(count, f"{count} times")


def _full(name: str) -> str:
    return f"projects/{PROJECT}/locations/{ZONE}/instances/{name}"


def replay(stack: LocalStack, transcript: Transcript, entries: list[Entry], keep_time: bool) -> int:
    """Each entry through the sink, as the real one would see it; the instance it names is made to exist."""
    now = datetime.now(UTC)
    killed: set[str] = set()
    for number, item in enumerate(entries, 1):
        entry, changes = localized(dict(item.log_entry), PROJECT)
        transcript.heading(f"entry {number} of {len(entries)} ({item.came_as})")
        for change in changes:  # a real project's entry: on_oom takes only its own project's (config.in_scope)
            transcript.say("replay", f"{change}, so the local bot takes it as its own")
        read = read_kill_entry(entry, fallback_time=now)
        result = read if isinstance(read, NotAKill) else name_by_vm(read, "")  # no VM lookup in the replay
        if isinstance(result, OomKill):
            full = _ensure_instance(stack, transcript, result.instance, result.named_by)
            if result.vm_id:  # on_oom holds an entry to its VM's id (shared/app/intake.py): this instance's VM has it
                stack.compute.register(full, result.vm_id)
                transcript.say("compute", f"{result.instance.name}'s VM has the entry's instance_id {result.vm_id}")
            if full not in killed:  # JupyterLab goes down once; later kills in the file find it restarting
                stack.workbench.oom_kill(full, jupyter_survives=False, health_delay_s=0.3)
                killed.add(full)
        if not keep_time:  # now, after the instance exists: its health was last reported before this kill
            stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            entry["timestamp"] = entry["receiveTimestamp"] = stamp
            transcript.say("replay", "timestamps set to now (--keep-time replays them as they are)")
        if not stack.sink(entry):  # the question replay answers is often "why was my kill not picked up?"
            transcript.say("logging", f"not selected by the sink's filter: the real sink would not forward it. "
                                      f"Filter: {SINK_FILTER}")
            transcript.say("replay", "published to the OOM topic by hand, to show what on_oom would make of it")
            stack.publish(OOM_TOPIC, json.dumps(entry).encode(), {"logging.googleapis.com/timestamp": "now"})
        else:
            transcript.say("logging", "selected by the sink's filter and published to on_oom")
        settle(stack, transcript)
        for record in stack.audit_records("on_oom")[number - 1:]:
            transcript.say("on_oom", f"{record.get('decision')}: {record.get('reason', '')}")
    return 0


def _ensure_instance(stack: LocalStack, transcript: Transcript, ref: InstanceRef, named_by: str) -> str:
    """The instance the entry names, in the simulator: one of the demo's own, or a new one with an owner."""
    full = f"projects/{ref.project}/locations/{ref.zone}/instances/{ref.name}"
    try:
        stack.workbench.get(full)
    except KeyError:
        owner = ref.name.removeprefix("wb-")
        email = f"{owner}@contest.example"
        stack.workbench.add_instance(ref.project, ref.zone, ref.name, owner_email=email)
        user_id = "U0" + re.sub(r"[^A-Z0-9]", "", owner.upper())[:9]
        stack.slack.add_user(user_id, owner, email)
        transcript.people[user_id] = (owner, email)
    transcript.say("workbench", f"{ref.name} in {ref.zone} (named by its {named_by}); JupyterLab goes down")
    return full


def run(entries: list[Entry] | None, *, keep_time: bool = False) -> int:
    """The demo's story, or the replay of `entries` (already read and checked)."""
    print("Starting the bot's five functions, with stand-ins for Workbench, Pub/Sub, Cloud Monitoring and Slack…",
          flush=True)
    stack = LocalStack(
        slack_app=True,
        memory_alerts=True,
        health_sweep=True,
        memory_charts=True,
        workbench_options={"reset_seconds": 2.0, "stop_seconds": 1.0, "start_seconds": 1.5, "health_delay_s": 0.5,
                           "latency_s": 0.02},
        slack_options={"latency_s": 0.02},
        env={"HEALTH_GRACE_SECONDS": "10", "DISPLAY_TIMEZONE": "Asia/Tokyo",
             "STOCKOUT_PATIENCE_SECONDS": "240",  # a stockout waited out in seconds (demo/gpu.py)
             "MACHINE_PRICES": "e2-standard-4=0.134,e2-highmem-4=0.181", **help_desk.TIMERS,
             # Compute Engine's disk pricing page's US example ($8.00 and $34.00 for 200 GB a month: demo/disk.py)
             "DISK_PRICES": "pd-standard=0.04,pd-ssd=0.17",
             # a replayed entry's zone is taken as one of the bot's (on_oom refuses others: shared/app/intake.py)
             **({"WORKBENCH_ZONES": "-"} if entries is not None else {})},
    )
    started = time.monotonic()
    with stack:
        print(f"Ready in {time.monotonic() - started:.1f} s. Everything runs on this machine: no Google Cloud "
              "project, no Slack workspace.", flush=True)
        for user_id, (name, email) in PEOPLE.items():
            stack.slack.add_user(user_id, name, email)
        for name in ("wb-alice", "wb-bob", "wb-carol"):
            person = name.removeprefix("wb-")
            stack.workbench.add_instance(PROJECT, ZONE, name, owner_email=f"{person}@contest.example",
                                         machine_type="e2-standard-4",  # the day's morning starts them
                                         state="STOPPED" if entries is None else "ACTIVE")
        transcript = Transcript(stack)
        stop = threading.Event()
        watcher = threading.Thread(target=watch_states, args=(stack, transcript, stop), daemon=True)
        watcher.start()
        try:
            if entries is not None:
                return replay(stack, transcript, entries, keep_time)
            with day.Ledger(stack) as ledger:  # the report's audit entries, from the first step on
                day.morning(stack, transcript)
                scenario(stack, transcript)
                day.evening(stack, transcript, ledger, PICTURES)
                gpu.scenes(stack, transcript)  # the next morning, on a GPU notebook (issue 47)
            summary(stack, transcript)
        finally:
            stop.set()
    return 0
