"""Hostile Slack requests as hypothesis strategies: user ids, slash commands' text and bodies, button values and
block_actions payloads, interactivity payloads of every shape (tests/property/hostile.py has the building blocks)."""

from __future__ import annotations

import copy
import random
from typing import Any

from hypothesis import strategies as st

from tests.property.hostile import (
    COMMAND_KEYWORDS,
    DELETE,
    KNOWN_ACTIONS,
    NAMES,
    SEEDS,
    TEN_KB,
    Generator,
    Path,
    corrupt,
    filler_text,
    full_name,
    hostile_text,
    huge,
    junk_value,
    mutated,
    one_of_values,
    put_at,
    weighted,
)
from tests.property.hostile_requests import FULL_NAMES, junk_blocks

# ---- Slack -----------------------------------------------------------------------------------
ALICE, BOB, ORG, NOMAIL = "U0ALICE", "U0BOB", "U0ORG", "U0NOMAIL"
KNOWN_USERS = (ALICE, BOB, ORG, NOMAIL)
USER_IDS: st.SearchStrategy[str] = weighted(
    (3, st.sampled_from(KNOWN_USERS)), (2, mutated(st.sampled_from(KNOWN_USERS))), (2, hostile_text)
)
_BLANKS = st.sampled_from(("", " ", "\n", "\u3000", "\t \n", "help", "HELP", "status", " Status ", "?", "bigger"))
_SPACED = st.tuples(st.sampled_from(("wb-alice", " wb-alice ", "wb-alice\n", "wb-stopped", "bigger wb-alice")),
                    st.sampled_from((" ", "\u3000", "\u00a0", "\t"))).map(lambda t: t[0].replace(" ", t[1]))
COMMAND_TEXTS: st.SearchStrategy[str] = weighted(
    (2, NAMES),
    (1, mutated(st.sampled_from(COMMAND_KEYWORDS))),
    (1, weighted((1, _BLANKS), (1, _SPACED))),
    (1, st.lists(NAMES, min_size=2, max_size=3).map(" ".join)),
    (1, st.sampled_from(("wb-alice ", " ", "wb-alice", "<!channel> ")).map(lambda p: huge(p, TEN_KB))),
    (4, hostile_text),
)
"""What people type after /restart-notebook, hostile or not."""
_SLASH_TEMPLATE = {
    "token": "vErIfIcAtIoNtOkEn0000000", "team_id": "T0CONTEST", "team_domain": "contest", "channel_id": "C0GENERAL",
    "channel_name": "general", "user_id": ALICE, "user_name": "alice", "command": "/restart-notebook", "text": "",
    "api_app_id": "A0MEDIC", "is_enterprise_install": "false", "response_url": "", "trigger_id": "1.2.abc",
}


def slash_bodies(response_urls: tuple[str, ...], *, strings_only: bool = False) -> st.SearchStrategy[dict[str, Any]]:
    """A slash command as Bolt hands it to the listener: who and what drawn by hypothesis, up to 2 other fields
    hostile (with `strings_only`, strings as form fields are; else also of the wrong type, or missing)."""
    fields: tuple[tuple[Path, Generator], ...] = (
        (("trigger_id",), filler_text),
        (("team_id",), filler_text),
        (("user_name",), filler_text),
        (("channel_id",), filler_text),
        (("command",), one_of_values("/restart-notebook", "/restart-notebook ", "/Restart-Notebook", "/x")),
    )
    urls = st.sampled_from(response_urls)

    @st.composite
    def bodies(draw: st.DrawFn) -> dict[str, Any]:
        body = dict(_SLASH_TEMPLATE)
        seed = draw(SEEDS)
        if strings_only:
            rng = random.Random(seed)
            for _ in range(rng.randint(0, 2)):
                path, generate = rng.choice(fields)
                put_at(body, path, generate(rng))
        else:
            corrupt(body, seed, fields, 2)
        body["user_id"], body["text"], body["response_url"] = draw(USER_IDS), draw(COMMAND_TEXTS), draw(urls)
        return body

    return bodies()


_KNOWN_ACTION = st.sampled_from(KNOWN_ACTIONS)
ACTION_IDS: st.SearchStrategy[str] = weighted(
    (6, _KNOWN_ACTION),
    (2, mutated(_KNOWN_ACTION)),
    (1, st.sampled_from(("medic_restart\n", "medic_reset", "medic_", "MEDIC_STOP", "medic_stop ", "medic_delete"))),
    (1, hostile_text),
)
_MACHINE_TYPES = weighted((2, st.sampled_from(("n2-highmem-8", "e2-standard-4", "a2-ultragpu-8g"))),
                          (2, mutated(st.just("n2-highmem-8"))), (1, hostile_text))
_REQUESTERS = weighted((2, st.sampled_from(("U0ALICE", "", "W0ALICE1"))), (2, mutated(st.just("U0ALICE"))),
                       (1, hostile_text))
BUTTON_VALUES: st.SearchStrategy[str] = weighted(
    (4, FULL_NAMES),
    (2, st.tuples(FULL_NAMES, _MACHINE_TYPES, _REQUESTERS).map("|".join)),
    (1, mutated(st.just(full_name("wb-alice") + "|n2-highmem-8|U0ALICE"))),
)
"""Button values: instance names, and the `name|machine type|requester` of resize buttons, all made hostile."""
_BLOCK_ACTIONS_TEMPLATE: dict[str, Any] = {
    "type": "block_actions",
    "user": {"id": ORG, "username": "org", "name": "org", "team_id": "T0CONTEST"},
    "api_app_id": "A0MEDIC",
    "token": "vErIfIcAtIoNtOkEn0000000",
    "container": {"type": "message", "message_ts": "1.0", "channel_id": "C0ALERTS", "is_ephemeral": False},
    "trigger_id": "1.2.abc",
    "team": {"id": "T0CONTEST", "domain": "contest"},
    "enterprise": None,
    "is_enterprise_install": False,
    "channel": {"id": "C0ALERTS", "name": "notebook-alerts"},
    "message": {"type": "message", "ts": "1.0", "text": "alert", "blocks": []},
    "state": {"values": {}},
    "response_url": "",
    "actions": [{"action_id": "medic_restart", "block_id": "medic_actions", "text": {"type": "plain_text",
                 "text": "Restart"}, "value": "", "type": "button", "action_ts": "1700000000.000100"}],
}


def block_action_payloads(response_urls: tuple[str, ...], values: st.SearchStrategy[str], *,
                          shapes: bool = True) -> st.SearchStrategy[dict[str, Any]]:
    """block_actions as Slack sends them: who, which button and its value drawn by hypothesis; up to 2 other
    fields hostile (with `shapes`, also of the wrong type: what Bolt would pass on)."""
    junk: Generator = junk_value if shapes else filler_text
    fields: tuple[tuple[Path, Generator], ...] = (
        (("container", "channel_id"), filler_text),
        (("container", "message_ts"), filler_text),
        (("channel", "id"), filler_text),
        (("message", "blocks"), junk_blocks),
        (("message", "text"), filler_text),
        (("user", "username"), filler_text),
        (("trigger_id",), filler_text),
        (("user",), junk),
        (("container",), junk),
        (("message",), junk),
        (("channel",), junk),
    )
    urls = st.sampled_from(response_urls)

    @st.composite
    def payloads(draw: st.DrawFn) -> dict[str, Any]:
        payload = copy.deepcopy(_BLOCK_ACTIONS_TEMPLATE)
        seed = draw(SEEDS)
        rng = random.Random(seed)
        if shapes:
            corrupt(payload, seed, fields, 2)
        else:  # right types only: strings where strings go
            for _ in range(rng.randint(0, 2)):
                path, generate = rng.choice(fields[:7])
                put_at(payload, path, generate(rng))
        if isinstance(payload.get("user"), dict):
            payload["user"]["id"] = draw(USER_IDS)
        payload["response_url"] = draw(urls)
        action = payload["actions"][0]
        action["action_id"], action["value"] = draw(ACTION_IDS), draw(values)
        if shapes and rng.random() < 0.15:
            action[rng.choice(("value", "action_ts", "block_id"))] = junk_value(rng)
        if rng.random() < 0.15:
            payload["actions"].append({"action_id": rng.choice(KNOWN_ACTIONS), "value": filler_text(rng)})
        return payload

    return payloads()


_INTERACTIVITY_TYPES = (
    "block_actions", "interactive_message", "dialog_submission", "dialog_cancellation", "dialog_suggestion",
    "workflow_step_edit", "view_submission", "view_closed", "shortcut", "message_action", "block_suggestion",
)
_SHAPE_FIELDS: tuple[Path, ...] = (
    ("type",), ("actions",), ("callback_id",), ("event",), ("view",), ("authorizations",), ("enterprise",),
    ("team",), ("user",), ("container",), ("channel",), ("message",), ("response_url",), ("api_app_id",),
    ("is_enterprise_install",), ("trigger_id",), ("state",), ("submission",), ("function_data",),
    ("bot_access_token",), ("enterprise_id",), ("team_id",), ("user_id",), ("channel_id",), ("command",),
)


def payload_shapes(callers: st.SearchStrategy[str]) -> st.SearchStrategy[dict[str, Any]]:
    """Interactivity payloads of every type Slack names, with up to 4 fields of any JSON shape or taken out,
    actions[0] and its action_id included: the shapes Bolt's parsing and matching index without checking.
    The caller is drawn from `callers` wherever the shape still has a user id."""

    @st.composite
    def payloads(draw: st.DrawFn) -> dict[str, Any]:
        payload = copy.deepcopy(_BLOCK_ACTIONS_TEMPLATE)
        rng = random.Random(draw(SEEDS))
        payload["type"] = rng.choice(_INTERACTIVITY_TYPES[:1] * 6 + _INTERACTIVITY_TYPES)
        payload["user"]["id"] = draw(callers)
        payload["actions"][0]["action_id"] = rng.choice(KNOWN_ACTIONS)
        for _ in range(rng.randint(1, 4)):
            roll = rng.random()
            if roll < 0.25:  # the action itself, or its id, of another shape
                target: Path = rng.choice((("actions",), ("callback_id",)))
                if target == ("actions",) and rng.random() < 0.6:
                    payload["actions"] = [junk_value(rng)] if rng.random() < 0.5 else [{"action_id": junk_value(rng)}]
                    continue
            else:
                target = rng.choice(_SHAPE_FIELDS)
            put_at(payload, target, junk_value(rng) if roll < 0.9 else DELETE)
        return payload

    return payloads()


# ---- what a command should queue ------------------------------------------------------------
HANDED_ON = "Asking the organizers"  # resize.queued: `bigger` handed to the worker


def ask_target(user_id: str, text: str, reply: str) -> str | None:
    """The instance `bigger` hands to the worker (issue 44: the worker posts the request): alice's own, or the one
    an organizer names, when the reply says it was handed on (one a minute per process: asks.RESERVED_S)."""
    words = text.split()
    if not words or words[0].lower() != "bigger" or HANDED_ON not in reply:
        return None
    mine = len(words) == 1 and user_id == ALICE
    named = len(words) == 2 and words[1] == "wb-alice" and user_id in (ALICE, ORG)
    assert mine or named, (user_id, text[:80], reply[:200])  # handed on only for a caller who may ask
    return full_name("wb-alice")
