"""Hostile restart requests as hypothesis strategies: the restart topic's messages, and the push bodies that carry
them to restart_worker (tests/property/hostile.py has the building blocks and the oracles)."""

from __future__ import annotations

import copy
import random
from typing import Any

from hypothesis import strategies as st

from shared.core import envelope, payloads
from shared.core.models import Action, Trigger
from tests.property.hostile import (
    BASE_NAME,
    INTERESTING_KEYS,
    JUNK,
    NAMES,
    OTHER_ZONE,
    PROJECT,
    SEEDS,
    ZONE,
    Generator,
    Path,
    corrupt,
    edited,
    field,
    filler_text,
    full_name,
    hostile_text,
    junk_value,
    mutated,
    one_of_values,
    put_at,
    weighted,
)
from tests.property.hostile_events import LAYERS, break_envelope, pubsub_message, random_time

# ---- restart requests (the restart topic's messages, as pushed to restart_worker) ---------------
ACTIONS = tuple(action.value for action in Action)
TRIGGERS = tuple(trigger.value for trigger in Trigger)


def _full_name_around(name: str, seed: int) -> str:
    """`name` in a zone and project that are mostly valid, sometimes hostile; sometimes the whole path edited."""
    rng = random.Random(seed)
    zone = rng.choice((ZONE, OTHER_ZONE)) if rng.random() < 0.8 else edited(rng.choice((ZONE, "-", "global")), seed)
    project = PROJECT if rng.random() < 0.8 else edited(PROJECT, seed + 1)
    value = full_name(name, zone, project)
    return edited(value, seed + 2) if rng.random() < 0.2 else value


FULL_NAMES: st.SearchStrategy[str] = weighted(
    (4, st.builds(_full_name_around, NAMES, SEEDS)),
    (3, mutated(BASE_NAME.map(full_name))),
    (1, st.sampled_from(("wb-nobody", "wb-ghost-1", "x")).map(full_name)),
    (1, BASE_NAME),
    (1, hostile_text),
)
"""An instance resource name: near misses of real names, valid names of nothing, junk."""

_NOBODY = full_name("wb-nobody")
_KILL = {"instance": _NOBODY, "killed_at": "2026-11-20T04:12:33.518204Z", "pid": 23817, "process": "python",
         "anon_rss_kb": 15235516, "total_vm_kb": 31458120, "insert_id": "1x9f0a2g1abc3d", "form": "modern",
         "line": "Out of memory: Killed process 23817 (python)"}
_REQUESTER = {"slack_user_id": "U0ORG", "email": "org@contest.example", "is_organizer": True}
_BUTTON = {"trigger": "button", "instance": _NOBODY, "requested_at": "2026-11-20T04:12:50Z", "event_id": "button-1",
           "requester": _REQUESTER, "response_url": "", "alert_ts": "1700000000.000100", "alert_channel": "C0ALERTS",
           "alert_blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "x"}}]}
REQUEST_TEMPLATES: tuple[dict[str, Any], ...] = (
    {"action": "restart", "trigger": "oom", "instance": _NOBODY, "requested_at": "2026-11-20T04:12:33.518204Z",
     "event_id": "1x9f0a2g1abc3d", "kill": _KILL},
    {"action": "restart", "trigger": "slash-command", "instance": _NOBODY, "requested_at": "2026-11-20T04:12:50Z",
     "event_id": "slack-1.2.abc", "requester": {**_REQUESTER, "slack_user_id": "U0ALICE", "is_organizer": False,
                                                 "email": "alice@contest.example"}, "response_url": ""},
    {"action": "restart", **_BUTTON},
    {"action": "pause", **_BUTTON},
    {"action": "resume", **_BUTTON},
    {"action": "stop", **_BUTTON},
    {"action": "alert", "trigger": "unresolved", "instance": "", "requested_at": "2026-11-20T04:12:33.518204Z",
     "event_id": "1x9f0a2g1abc3d", "raw_entry": '{"textPayload": "Out of memory: Killed process 1 (x)"}',
     "note": "the entry names no VM"},
    {"action": "warn", "trigger": "memory", "instance": _NOBODY, "requested_at": "2026-11-20T04:12:33Z",
     "event_id": "incident-1", "memory_percent": 93.5, "incident_open": True},
    {"action": "resize", **_BUTTON, "machine_type": "n2-highmem-8", "asked_by": "U0ALICE"},
)
_LIST_OF_BLOCKS = st.lists(st.dictionaries(st.sampled_from(INTERESTING_KEYS), JUNK, max_size=3), max_size=3)


def junk_blocks(rng: random.Random) -> list[Any]:
    return [{rng.choice(INTERESTING_KEYS): junk_value(rng) for _ in range(rng.randrange(3))}
            for _ in range(rng.randrange(4))]


_REQUEST_TEMPLATE = st.sampled_from(REQUEST_TEMPLATES)
_USER_IDS = ("U0ALICE", "U0ORG", "W0BOB")


def _user_id(rng: random.Random) -> str:
    """Where a Slack user id belongs (a resize's asker): a few valid ones; near misses (lowercase, a look-alike,
    one too long, 10 kB); injections and arbitrary Unicode."""
    roll = rng.random()
    if roll < 0.15:
        return rng.choice(_USER_IDS)
    if roll < 0.3:
        user = rng.choice(_USER_IDS)
        return rng.choice((user.lower(), user.title(), user[:2], user + "X" * 15, f"<@{user}>", f" {user}",
                           user.replace("0", "\uff10"), user.replace("A", "\u0410"), user.replace("O", "\u041e")))
    if roll < 0.6:
        return edited(rng.choice(_USER_IDS), rng.randrange(2**32))
    return filler_text(rng)


def restart_requests(instances: st.SearchStrategy[str], response_urls: tuple[str, ...],
                     ) -> st.SearchStrategy[dict[str, Any]]:
    """Requests of every kind, valid in shape, as the wire carries them (on_the_wire); the instance always drawn
    from `instances` (mostly hostile, some valid names of nothing), and up to 3 other fields hostile, of the wrong
    type, or missing."""
    fields: tuple[tuple[Path, Generator], ...] = (
        (("action",), one_of_values(*ACTIONS)),
        (("trigger",), one_of_values(*TRIGGERS)),
        (("requested_at",), random_time),
        (("event_id",), filler_text),
        (("kill",), junk_value),
        (("kill", "killed_at"), random_time),
        (("kill", "pid"), junk_value),
        (("kill", "process"), filler_text),
        (("requester",), junk_value),
        (("requester", "email"), filler_text),
        (("requester", "slack_user_id"), filler_text),
        (("requester", "is_organizer"), junk_value),
        (("response_url",), one_of_values(*response_urls)),
        (("alert_blocks",), junk_blocks),
        (("alert_ts",), filler_text),
        (("alert_channel",), one_of_values("C0ALERTS", "C0OTHER", "")),
        (("note",), filler_text),
        (("raw_entry",), filler_text),
        (("machine_type",), filler_text),
        (("asked_by",), _user_id),
        (("memory_percent",), junk_value),
        (("incident_open",), junk_value),
    )
    instance = field(instances, 8)

    @st.composite
    def requests(draw: st.DrawFn) -> dict[str, Any]:
        request = copy.deepcopy(draw(_REQUEST_TEMPLATE))
        corrupt(request, draw(SEEDS), fields, 3)
        put_at(request, ("instance",), draw(instance))
        return on_the_wire(request)

    return requests()


def on_the_wire(request: dict[str, Any]) -> dict[str, Any]:
    """A request as wire version 2 carries it (shared/core/envelope.py): the envelope's fields at the top, under
    "type" the payload type its action carries (a hostile action's: a restart's), the others under "payload"."""
    action = request.get("action")
    kind = payloads.BY_ACTION.get(action, "restart") if isinstance(action, str) else "restart"
    top = {key: value for key, value in request.items() if key in envelope.ENVELOPE}
    rest = {key: value for key, value in request.items() if key not in envelope.ENVELOPE}
    return {"version": envelope.WIRE_VERSION, "type": kind, **top, "payload": rest}


def push_bodies(requests: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[Any]:
    """What Pub/Sub push POSTs to restart_worker: one layer of the envelope broken, or the request inside."""

    @st.composite
    def bodies(draw: st.DrawFn) -> Any:
        data: dict[str, Any] = {"message": pubsub_message(draw(requests)),
                                "subscription": f"projects/{PROJECT}/subscriptions/restart-worker-push"}
        layer = draw(LAYERS)
        if layer == 3:
            data["deliveryAttempt"] = draw(JUNK)
        return break_envelope(draw, layer, data)

    return bodies()
