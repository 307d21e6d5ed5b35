"""`make bench`'s bot and live phases name each event that reached no reset with what on_oom's audit log said of it:
the "1 event of 25" of the side-by-side runs (bench/README.md) took the stack's leftover logs to explain."""

from __future__ import annotations

import json
from pathlib import Path

from bench.__main__ import sound
from bench.bot_time import on_oom_said

REFUSED = {"audit": True, "decision": "refused", "kind": "refused", "named": "evt-0021", "vm_id": "7722221785762496547",
           "reason": "no VM in asia-northeast1-a has the entry's instance_id 7722221785762496547",
           "message": "kill refused: it does not hold up; queued for an alert", "severity": "WARNING"}
QUEUED = {"audit": True, "decision": "queued", "kind": "kill", "instance": "evt-0020",
          "reason": "python pid 2 on evt-0020"}


def test_what_on_oom_said_of_an_event_is_read_from_its_log(tmp_path: Path) -> None:
    log = tmp_path / "on_oom.log"
    log.write_text("\n".join([json.dumps(QUEUED), "Traceback (most recent call last):", json.dumps(REFUSED), ""]))
    assert on_oom_said(log, "evt-0021") == f"refused refused: {REFUSED['reason']}"
    assert on_oom_said(log, "evt-0020") == "queued kill: python pid 2 on evt-0020"
    assert on_oom_said(log, "evt-0099") == "on_oom logged nothing about it"
    assert on_oom_said(tmp_path / "gone.log", "evt-0021") == "on_oom logged nothing about it"


def test_an_unsound_bot_phase_names_its_events() -> None:
    failed = [{"event": "evt-0021", "on_oom": f"refused refused: {REFUSED['reason']}"}]
    [problem] = sound({"bot_time": {"failed": 1, "failed_events": failed}})
    assert problem.startswith("bot_time: 1 events never reached a reset") and "evt-0021" in problem
    assert "no VM in asia-northeast1-a" in problem
