"""The Slack simulator's vocabulary: scopes, fault kinds, the records it keeps (a call, a fault, a reply, a
response_url) and the pure rules of its arguments (decoding, Block Kit limits, time zones)."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
import zoneinfo
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from simulators.slack.errors import _api_error

JsonDict = dict[str, Any]

FAULT_KINDS = ("ratelimit", "server_error", "timeout", "error")
RESPONSE_URL_METHOD = "response_url"
RESPONSE_URL_MAX_POSTS = 5
TIMEOUT_FAULT_S = 30.0

_TS_RE = re.compile(r"^\d+\.\d+$")
# The bot scopes notebook-medic's manifest.yaml declares: what an installed app's token holds by default.
DEFAULT_SCOPES = ("commands", "chat:write", "im:write", "users:read", "users:read.email", "usergroups:read",
                  "channels:history", "groups:history", "files:write")
# Scopes a method demands beyond those (api.slack.com/methods/conversations.info: channels:read for a public
# channel, groups:read for a private one); without them Slack answers missing_scope with needed/provided.
_EXTRA_SCOPES = {"conversations.info": ("channels:read", "groups:read"),
                 # the external upload's two methods (simulators/slack_files.py): files:write
                 "files.getUploadURLExternal": ("files:write",), "files.completeUploadExternal": ("files:write",)}


@dataclass
class ApiCall:
    """One request received by the simulator.

    ``method`` is the Web API method (``chat.postMessage``), ``response_url`` for posts to a
    response_url, or the raw path for anything else. ``args`` holds the decoded arguments
    (form fields as strings, JSON values as sent) without the token. ``time`` is the arrival
    time (``time.time()``). ``status`` is the HTTP status sent back, 0 while the request is
    still being served (or was never answered, e.g. a ``timeout`` fault cut short by stop()).
    ``error`` is the Slack error answered (``"ok": false`` body, or a response_url error text). ``held``: a
    ``timeout`` fault held it past its client's timeout (served late, its answer never read).
    """

    method: str
    args: JsonDict
    time: float
    status: int = 0
    error: str | None = None
    held: bool = False


@dataclass
class _Fault:
    method: str
    kind: str
    remaining: int
    retry_after_s: int
    error: str


@dataclass
class _Reply:
    status: int
    body: bytes
    content_type: str = "application/json; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def error(self) -> str | None:
        if self.status == 200 and self.content_type.startswith("application/json"):
            try:
                data = json.loads(self.body)
            except json.JSONDecodeError:
                return None
            return None if data.get("ok", True) else str(data.get("error"))
        if self.status >= 400:
            if self.content_type.startswith("application/json"):
                return str(json.loads(self.body).get("error"))
            if self.content_type.startswith("text/plain"):
                return self.body.decode("utf-8", "replace")[:60]
        return None

    @classmethod
    def json(cls, status: int, data: JsonDict, headers: dict[str, str] | None = None) -> _Reply:
        return cls(status, json.dumps(data).encode(), headers=headers or {})

    @classmethod
    def text(cls, status: int, text: str, headers: dict[str, str] | None = None) -> _Reply:
        return cls(status, text.encode(), "text/plain; charset=utf-8", headers or {})


@dataclass
class _ResponseUrl:
    token: str
    channel: str | None
    message_ts: str | None
    posts: list[JsonDict] = field(default_factory=list)
    expired: bool = False





def _decode_args(raw: bytes, content_type: str, query: str) -> JsonDict:
    args: JsonDict = {k: v[0] for k, v in urllib.parse.parse_qs(query).items()}
    if not raw:
        return args
    ctype = content_type.split(";", 1)[0].strip().lower()
    if ctype == "application/json":
        decoded = json.loads(raw.decode("utf-8"))
        if not isinstance(decoded, dict):
            raise ValueError("JSON body is not an object")
        args.update(decoded)
    else:
        form = urllib.parse.parse_qs(raw.decode("utf-8"), keep_blank_values=True)
        args.update({k: v[0] for k, v in form.items()})
    return args


def _str_arg(args: JsonDict, name: str) -> str | None:
    value = args.get(name)
    if value is None:
        return None
    return str(value)


def _json_field(value: str, name: str) -> Any:
    try:
        return json.loads(value)
    except json.JSONDecodeError as err:
        raise _api_error(f"invalid_{name}", f"{name} is not valid JSON") from err


def _list_arg(args: JsonDict, name: str) -> list[Any] | None:
    value = args.get(name)
    if value is None or value == "":
        return None
    if isinstance(value, str):
        value = _json_field(value, name)
    if not isinstance(value, list):
        raise _api_error(f"invalid_{name}", f"{name} must be an array")
    return value


def _content(args: JsonDict) -> tuple[str, list[Any] | None, list[Any] | None]:
    text = args.get("text")
    blocks = _list_arg(args, "blocks")
    if blocks:
        _check_blocks(blocks)
    return (
        "" if text is None else str(text),
        blocks,
        _list_arg(args, "attachments"),
    )


# Block Kit's limits (Slack's block and element reference) for what the bot posts; Slack rejects a
# message over any of them with invalid_blocks, i.e. the message is lost.
MAX_BLOCKS = 50
HOME_MAX_BLOCKS = 100  # a Home tab view (docs.slack.dev/reference/views/home-tab-views: "Max of 100 blocks")
_TEXT_LIMITS = {  # (block or element type, field) -> most characters
    ("section", "text"): 3000,
    ("section", "fields"): 2000,
    ("header", "text"): 150,
    ("context", "elements"): 3000,
    ("button", "text"): 75,
    ("confirm", "title"): 100,
    ("confirm", "text"): 300,
    ("confirm", "confirm"): 30,
    ("confirm", "deny"): 30,
}
_PLAIN_ONLY = {("header", "text"), ("button", "text"), ("confirm", "title"), ("confirm", "confirm"),
               ("confirm", "deny")}
_MAX_ITEMS = {("section", "fields"): 10, ("context", "elements"): 10, ("actions", "elements"): 25}
_STRING_LIMITS = {"block_id": 255, "action_id": 255, "value": 2000, "url": 3000}


def check_home_blocks(blocks: list[Any]) -> None:
    """A Home tab view's blocks: at most HOME_MAX_BLOCKS (docs.slack.dev/reference/views/home-tab-views), each as
    in a message."""
    _check_blocks(blocks, most=HOME_MAX_BLOCKS)


def _check_blocks(blocks: list[Any], most: int = MAX_BLOCKS) -> None:
    """Raise invalid_blocks, as Slack does, naming the first limit broken (Slack's json-pointer form)."""
    if len(blocks) > most:
        raise _api_error("invalid_blocks", f"no more than {most} items allowed [json-pointer:/blocks]")
    for i, block in enumerate(blocks):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise _api_error("invalid_blocks", f"missing required field: type [json-pointer:/blocks/{i}]")
        _check_element(block, f"/blocks/{i}")


def _check_element(element: JsonDict, where: str) -> None:
    kind = str(element.get("type"))
    for name, most in _STRING_LIMITS.items():
        value = element.get(name)
        if isinstance(value, str) and len(value) > most:
            raise _api_error("invalid_blocks", f"must be less than {most + 1} characters [json-pointer:{where}/{name}]")
    for (owner, name), most in _MAX_ITEMS.items():
        items = element.get(name)
        if owner == kind and isinstance(items, list) and len(items) > most:
            raise _api_error("invalid_blocks", f"no more than {most} items allowed [json-pointer:{where}/{name}]")
    for (owner, name), most in _TEXT_LIMITS.items():
        if owner != kind or name not in element:
            continue
        value = element[name]
        objects = value if isinstance(value, list) else [value]
        for j, obj in enumerate(objects):
            at = f"{where}/{name}/{j}" if isinstance(value, list) else f"{where}/{name}"
            if isinstance(obj, dict) and obj.get("type") in ("plain_text", "mrkdwn"):
                _check_text(obj, at, most, plain_only=(owner, name) in _PLAIN_ONLY)
    confirm = element.get("confirm")
    if kind != "confirm" and isinstance(confirm, dict):
        _check_element({**confirm, "type": "confirm"}, f"{where}/confirm")
    for j, child in enumerate(element.get("elements") or []):
        if kind == "actions" and isinstance(child, dict):
            _check_element(child, f"{where}/elements/{j}")


def _check_text(obj: JsonDict, where: str, most: int, *, plain_only: bool) -> None:
    text = obj.get("text")
    if plain_only and obj.get("type") != "plain_text":
        raise _api_error("invalid_blocks", f"must be a plain_text object [json-pointer:{where}]")
    if not isinstance(text, str) or not text:
        raise _api_error("invalid_blocks", f"must be more than 0 characters [json-pointer:{where}/text]")
    if len(text) > most:
        raise _api_error("invalid_blocks", f"must be less than {most + 1} characters [json-pointer:{where}/text]")


def _tz_offset(tz: str) -> int:
    try:
        offset = datetime.now(UTC).astimezone(zoneinfo.ZoneInfo(tz)).utcoffset()
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return 0
    return int(offset.total_seconds()) if offset is not None else 0


# ---------------------------------------------------------------------- Slack -> our app


