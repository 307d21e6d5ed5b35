#!/usr/bin/env python3
"""notebook-medic's heartbeat (issue 42, part 2): once a minute, what the guard sees of this Workbench VM, where the
bot's health sweep reads it cheaply (shared/core/heartbeat.py).

Runs as root from its own systemd timer (notebook-medic-heartbeat.timer, every minute), stdlib only, Python 3.9+.
Each run looks once and writes the guest attribute `heartbeat` (namespace notebook-medic): compact JSON, at most
MAX_BYTES, with the time and a sequence number, saying whether the server answers on its port, the Jupyter unit's
ActiveState and systemd's Result (and, when it is not active, its last journal lines, trimmed), the boot and home
disks' use in percent, memory in use, the kernels running, and whether Workbench's proxy agent and health agent
are active.

Why a guest attribute and not a log line: the bot reads one attribute per notebook per sweep for nothing
(getGuestAttributes is a read under Compute's read quota; a log line a minute from 1,000 VMs is 1.4 million
entries a day to ingest and query), and only this VM can write its own guest attributes, whereas any VM's service
account may write a log entry naming any instance. A participant, root here, can forge only their own notebook's.

The metadata server takes about 10 guest-attribute writes a minute per VM, and the guard's other writers share
them (install.sh's report at boot, the watcher, the disk report, the GPU guard): this is the one writer every
minute, one write a run; the timer starts it two minutes after boot, past install.sh's burst. A write refused
(HTTP 429, 503, or none at all) is tried once more after a pause of RETRY_PAUSE, then left to the next minute; a
run after refusals skips its write for as many minutes as refusals came in a row (at most MAX_SKIP), so a
refusing server is asked less, never in a loop. The bot calls a heartbeat silent only after ten minutes.

Layout: a pure core (build, encode, skip) and a thin shell (the probes, the metadata server, the state file).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # beside it in /opt/notebook-medic, as here
from disk_report import home_of, save_state

VERSION = 1
MAX_BYTES = 1500
MAX_LINES = 5
MAX_LINE = 160
RETRY_PAUSE = 15.0
MAX_SKIP = 4  # minutes a refused writer stays quiet at most: the bot waits ten before it calls a VM silent
STATE = "/var/lib/notebook-medic/heartbeat.json"
PREFIX = "notebook-medic-heartbeat:"
# Workbench's own units (facts: "Inside the Workbench VM"; install.sh AGENT_PATTERNS): the proxy agent, the
# browser's way in, and notebooks-collection-agent, which writes health_info.
PROXY_PATTERN = "*proxy*agent*.service"
HEALTH_PATTERN = "notebooks-collection-agent*.service"
KERNEL_FILE = re.compile(r"kernel-[0-9A-Za-z-]+\.json$")  # jupyter_client's connection file, on every kernel's line


# ---------------------------------------------------------------- the pure core

def build(at: int, seq: int, facts: dict[str, Any]) -> dict[str, Any]:
    """The heartbeat's fields from what one look found (`facts`: server, unit, result, last, disks, mem, kernels,
    proxy, health; a flag None where there is nothing to tell)."""
    def flag(value: Any) -> int | None:
        return None if value is None else int(bool(value))

    return {
        "v": VERSION, "at": at, "seq": seq, "server": int(bool(facts.get("server"))),
        "unit": facts.get("unit") or "", "result": facts.get("result") or "",
        "last": [line[:MAX_LINE] for line in (facts.get("last") or [])][-MAX_LINES:],
        "disks": [[mount, round(percent, 1)] for mount, percent in facts.get("disks") or []][:4],
        "mem": None if facts.get("mem") is None else round(facts["mem"], 1),
        "kernels": facts.get("kernels"), "proxy": flag(facts.get("proxy")), "health": flag(facts.get("health")),
    }


def encode(data: dict[str, Any], max_bytes: int = MAX_BYTES) -> str:
    """Compact JSON (ASCII) of at most max_bytes: the oldest journal lines are dropped first, then all."""
    data = dict(data, last=list(data.get("last") or []))
    while True:
        text = json.dumps(data, separators=(",", ":"), ensure_ascii=True)
        if len(text.encode()) <= max_bytes or not data["last"]:
            return text
        data["last"] = data["last"][1:]


def skip(refusals: int, seq: int) -> bool:
    """After `refusals` refused runs in a row, only one run in min(refusals, MAX_SKIP) + 1 writes."""
    every = min(max(refusals, 0), MAX_SKIP) + 1
    return seq % every != 0


# ---------------------------------------------------------------- the shell: looking

def answering(port: int, timeout: float = 3.0) -> bool:
    """Any HTTP answer on the server's port is an answer (403 without a token included); none is not."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=timeout):
            return True
    except urllib.error.HTTPError:
        return True
    except (OSError, ValueError):
        return False


def run_text(command: list[str]) -> str:
    try:
        return subprocess.run(  # noqa: S603 - systemctl and journalctl, argument lists of our own
            command, capture_output=True, text=True, timeout=10, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def unit_state(unit: str) -> tuple[str, str, list[str]]:
    """systemd's ActiveState and Result of the unit, and the server's last journal lines when it is not active."""
    shown = dict(line.split("=", 1) for line in run_text(
        ["systemctl", "show", unit, "-p", "ActiveState", "-p", "Result"]).splitlines() if "=" in line)
    state, result = shown.get("ActiveState", ""), shown.get("Result", "")
    last: list[str] = []
    if state not in ("active", "reloading", ""):
        # The server's own lines (_SYSTEMD_UNIT: written by the unit's processes), not systemd's about it ("Scheduled
        # restart job", "Failed with result"), which would bury them: systemd's word is `result`.
        last = run_text(["journalctl", f"_SYSTEMD_UNIT={unit}", "-n", str(MAX_LINES), "-o", "cat",
                         "--no-pager"]).splitlines()
    return state, result, last


def agent_active(pattern: str) -> bool | None:
    """Whether a unit of the pattern is active; None when there is no such unit here. A stopped unit nothing
    references is unloaded by systemd and drops out of list-units: its unit file still names it."""
    names = {line.split()[0] for command in (["list-units", "--all"], ["list-unit-files"])
             for line in run_text(["systemctl", *command, "--type=service", "--plain", "--no-legend", pattern])
             .splitlines() if line.split() and line.split()[0].endswith(".service") and "@" not in line.split()[0]}
    if not names:
        return None
    states = run_text(["systemctl", "show", "-p", "ActiveState", "--value", *sorted(names)]).split()
    return "active" in states


def disk_percent(mount: str) -> float | None:
    """Used as df prints it: used / (used + available to users)."""
    try:
        vfs = os.statvfs(mount)
    except OSError:
        return None
    used = (vfs.f_blocks - vfs.f_bfree) * vfs.f_frsize
    room = used + vfs.f_bavail * vfs.f_frsize
    return 100.0 * used / room if room > 0 else 0.0


def memory_percent(meminfo: str = "/proc/meminfo") -> float | None:
    try:
        with open(meminfo, encoding="ascii") as handle:
            fields = {line.split(":")[0]: int(line.split()[1]) for line in handle if len(line.split()) >= 2}
        return 100.0 * (fields["MemTotal"] - fields["MemAvailable"]) / fields["MemTotal"]
    except (OSError, KeyError, ValueError, ZeroDivisionError):
        return None


def kernel_count(proc: str = "/proc") -> int:
    count = 0
    for pid in (p for p in os.listdir(proc) if p.isdigit()):
        try:
            with open(f"{proc}/{pid}/cmdline", "rb") as handle:
                args = handle.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        count += any(KERNEL_FILE.search(arg) for arg in args)
    return count


def look(port: int, unit: str, home: str) -> dict[str, Any]:
    state, result, last = unit_state(unit)
    disks = [(mount, p) for mount in ("/", home) if (p := disk_percent(mount)) is not None]
    if len(disks) == 2 and os.stat("/").st_dev == os.stat(home).st_dev:
        disks = disks[:1]  # no home disk of its own: the boot disk holds home
    return {"server": answering(port), "unit": state, "result": result, "last": last, "disks": disks,
            "mem": memory_percent(), "kernels": kernel_count(), "proxy": agent_active(PROXY_PATTERN),
            "health": agent_active(HEALTH_PATTERN)}


# ---------------------------------------------------------------- the shell: writing

def put(base: str, value: str) -> int:
    """PUT the heartbeat ("Setting and querying guest attributes"); the HTTP status, 0 when nothing answered."""
    url = f"{base.rstrip('/')}/instance/guest-attributes/notebook-medic/heartbeat"
    request = urllib.request.Request(url, data=value.encode(), method="PUT",  # noqa: S310 - http by design
                                     headers={"Metadata-Flavor": "Google"})
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:  # noqa: S310 - the metadata server
            return int(answer.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except OSError:
        return 0


def load_state(path: str) -> dict[str, int]:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        return {k: int(data[k]) for k in ("seq", "refusals") if isinstance(data.get(k), int)}
    except (OSError, ValueError, AttributeError):
        return {}


def beat_once(facts: dict[str, Any], state_path: str, metadata: str, now: Callable[[], float] = time.time,
              pause: Callable[[float], None] = time.sleep, say: Callable[[str], None] = print) -> str:
    """One run: the next sequence number, the write (one more try after a refusal), the state kept; what was
    done, in one word ("written", "refused", "skipped")."""
    state = load_state(state_path)
    seq, refusals = state.get("seq", 0) + 1, state.get("refusals", 0)
    if skip(refusals, seq):
        save_state(state_path, {"seq": seq, "refusals": refusals})
        return "skipped"
    text = encode(build(int(now()), seq, facts))
    status = put(metadata, text)
    if status != 200:
        pause(RETRY_PAUSE)
        status = put(metadata, text)
    done = "written" if status == 200 else "refused"
    if done == "refused" and refusals == 0:
        say(f"{PREFIX} the metadata server refused the heartbeat (HTTP {status or 'none'}); writing less often")
    save_state(state_path, {"seq": seq, "refusals": 0 if done == "written" else refusals + 1})
    return done


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--user", default="jupyter")
    parser.add_argument("--unit", default=os.environ.get("JUPYTER_UNIT", "jupyter.service"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("JUPYTER_PORT", "8080")))
    parser.add_argument("--state", default=STATE)
    parser.add_argument("--metadata-url", default=os.environ.get(
        "NOTEBOOK_MEDIC_METADATA_URL", "http://metadata.google.internal/computeMetadata/v1"))
    parser.add_argument("--print", action="store_true", help="print the heartbeat instead of writing it")
    args = parser.parse_args(argv)
    facts = look(args.port, args.unit, home_of(args.user))
    if args.print:
        print(encode(build(int(time.time()), 0, facts)))
        return 0
    beat_once(facts, args.state, args.metadata_url)
    return 0


if __name__ == "__main__":
    sys.exit(main())
