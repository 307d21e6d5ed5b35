"""The Slack simulator's workspace: users, channels, messages and response_urls, how tests set them up and
read them, and how a bot message is written."""

from __future__ import annotations

import copy
import http.server
import secrets
import threading
from collections.abc import Callable
from typing import Any

from shared.adapters.clock import SYSTEM, Clock
from simulators.polling import PATIENCE_S, poll_until
from simulators.slack.errors import _api_error
from simulators.slack.model import (
    _TS_RE,
    DEFAULT_SCOPES,
    ApiCall,
    JsonDict,
    _content,
    _Fault,
    _json_field,
    _ResponseUrl,
    _str_arg,
    _tz_offset,
)
from simulators.slack_files import SlackFiles


class SlackState:
    def __init__(
        self,
        *,
        bot_token: str = "xoxb-test-token",
        latency_s: float = 0.0,
        team_id: str = "T0CONTEST",
        team_domain: str = "contest",
        bot_user_id: str = "U0MEDICBOT",
        bot_id: str = "B0MEDIC",
        app_id: str = "A0MEDIC",
        on_call: Callable[[ApiCall], None] | None = None,
        scopes: tuple[str, ...] = DEFAULT_SCOPES,
        clock: Clock = SYSTEM,
    ) -> None:
        """`clock`: the time messages, calls and users are stamped with (a FakeClock in process:
        tests/fakes/slack.py)."""
        self.clock = clock
        self.bot_token = bot_token
        #: The token's scopes: sent in the x-oauth-scopes header of every Web API answer to the bot's token, as
        #: Slack does (Slack's own Node SDK reads it into response_metadata.scopes: slackapi/node-slack-sdk
        #: packages/web-api/src/WebClient.ts, `WebAPICallResult.response_metadata.scopes`); a test may change it.
        self.scopes = scopes
        self.latency_s = latency_s
        self.team_id = team_id
        self.team_domain = team_domain
        self.bot_user_id = bot_user_id
        self.bot_id = bot_id
        self.app_id = app_id
        self.on_call = on_call
        self.calls: list[ApiCall] = []
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._server: http.server.ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._users: dict[str, JsonDict] = {}
        self._locales: dict[str, str] = {}  # users.info's `locale`, given only with include_locale
        self._usergroups: dict[str, list[str]] = {}
        self._usergroup_changes: dict[str, tuple[str, str, int]] = {}  # id -> (handle, updated_by, date_update)
        self._channels: dict[str, JsonDict] = {}
        self._messages: dict[str, list[JsonDict]] = {}
        self._ephemerals: dict[str, list[JsonDict]] = {}
        self._response_urls: dict[str, _ResponseUrl] = {}
        self._home_views: dict[str, JsonDict] = {}  # user id -> the Home tab view views.publish last published
        #: The app's Home tab (the manifest's features.app_home.home_tab_enabled); off, views.publish says not_enabled.
        self.home_tab_enabled = True
        self._faults: list[_Fault] = []
        self._last_ts_us = 0
        self._port = 0
        #: Uploaded files (the external upload, simulators/slack_files.py): `files.data[file_id]` is the bytes.
        self.files = SlackFiles(lambda: self.base_url, self._chat_post_message, self._find_message, _api_error)


    @property
    def port(self) -> int:
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    @property
    def api_url(self) -> str:
        return f"{self.base_url}/api/"

    @property
    def response_url_base(self) -> str:
        """Where every response_url this simulator issues points (Slack's: https://hooks.slack.com/)."""
        return f"{self.base_url}/response/"

    # ------------------------------------------------------------------ workspace setup

    def add_user(
        self,
        user_id: str,
        name: str,
        email: str | None,
        *,
        real_name: str | None = None,
        tz: str = "Asia/Tokyo",
        deleted: bool = False,
        is_bot: bool = False,
        team_id: str | None = None,
        email_confirmed: bool | None = True,
        locale: str = "en-US",
    ) -> None:
        """A member as users.info returns one. Fields and their meaning: the users.info method page
        (api.slack.com/methods/users.info, "Typical success response": id, team_id, deleted, is_bot,
        is_app_user, profile.email) and the user object as the official Node SDK types it from real responses
        (@slack/web-api src/types/response/UsersInfoResponse.ts: `is_email_confirmed?: boolean`, optional,
        so `email_confirmed=None` leaves it out). `team_id` other than the workspace's: a Slack Connect
        member of another organisation (api.slack.com/apis/connect, "External members"). `locale` (IETF, "ja-JP")
        is in users.info's answer only with `include_locale=true` (api.slack.com/changelog/2017-09-locale-locale-locale:
        "If you don't include the parameter, no locale will be provided"; the method's `include_locale` argument)."""
        real = real_name if real_name is not None else name
        team = team_id or self.team_id
        profile: JsonDict = {
            "real_name": real,
            "real_name_normalized": real,
            "display_name": name,
            "display_name_normalized": name,
            "team": team,
        }
        if email is not None:
            profile["email"] = email
        if is_bot:  # a bot user's profile names its bot (users.info on a bot user)
            profile.update(bot_id=f"B{user_id[1:]}", api_app_id=f"A{user_id[1:]}", always_active=True)
        user: JsonDict = {
            "id": user_id,
            "team_id": team,
            "name": name,
            "deleted": deleted,
            "real_name": real,
            "tz": tz,
            "tz_offset": _tz_offset(tz),
            "is_admin": False,
            "is_owner": False,
            "is_restricted": False,
            "is_ultra_restricted": False,
            "is_bot": is_bot,
            "is_app_user": False,
            "updated": int(self._time()),
            "profile": profile,
        }
        if email_confirmed is not None:
            user["is_email_confirmed"] = email_confirmed
        with self._lock:
            self._users[user_id] = user
            self._locales[user_id] = locale

    def add_channel(self, channel_id: str, name: str, *, bot_is_member: bool = True) -> None:
        """Add a channel. With bot_is_member=False, posting answers ``not_in_channel``."""
        with self._lock:
            self._channels[channel_id] = {
                "id": channel_id,
                "name": name,
                "is_member": bot_is_member,
            }
            self._messages.setdefault(channel_id, [])

    def new_response_url(
        self, *, channel: str | None = None, message_ts: str | None = None
    ) -> str:
        """Issue a response_url, as Slack puts in slash command / interactivity payloads.

        Optional ``channel`` / ``message_ts`` tie it to a conversation and message, so posts
        with ``response_type: in_channel`` add a message to ``channel`` and posts with
        ``replace_original`` / ``delete_original`` change the message at ``message_ts``
        (as Slack does for block_actions on a message). Without them, posts are only recorded.
        """
        token = secrets.token_urlsafe(18)
        with self._lock:
            self._response_urls[token] = _ResponseUrl(token, channel, message_ts)
        return f"{self.response_url_base}{token}"

    def expire_response_url(self, response_url: str) -> None:
        """Make a response_url answer 404 ``expired_url`` (Slack expires them after 30 min)."""
        with self._lock:
            self._response_url_entry(response_url).expired = True


    # ------------------------------------------------------------------ inspection

    def messages(self, channel: str) -> list[JsonDict]:
        """Current messages in a channel (a user id means the app's DM with that user).

        Ordered by ts, thread replies included (they carry ``thread_ts``), as updated by
        chat.update and response_url replace/delete. Returns deep copies.
        """
        with self._lock:
            cid = self._dm_id(channel) if channel.startswith(("U", "W")) else channel
            return copy.deepcopy(self._messages.get(cid, []))

    def post_as_app(self, channel: str, text: str, metadata: JsonDict, *, bot_id: str = "B0OTHER",
                    app_id: str = "A0OTHER") -> str:
        """Another app installed in the workspace posts in `channel`, with message metadata of its choosing (any
        app may attach any event_type: docs.slack.dev/messaging/message-metadata). conversations.history then
        lists it as Slack lists an app's message: with that app's `bot_id` and `app_id` (node-slack-sdk's
        ConversationsHistoryResponse MessageElement: bot_id, app_id), never the bot's own."""
        with self._lock:
            ts = self._next_ts()
            message = {"type": "message", "subtype": "bot_message", "bot_id": bot_id, "app_id": app_id,
                       "team": self.team_id, "text": text, "ts": ts, "metadata": metadata}
            self._messages.setdefault(channel, []).append(message)
        return ts

    def ephemeral_messages(self, channel: str) -> list[JsonDict]:
        """Messages sent with chat.postEphemeral to a channel (each has ``user``)."""
        with self._lock:
            cid = self._dm_id(channel) if channel.startswith(("U", "W")) else channel
            return copy.deepcopy(self._ephemerals.get(cid, []))

    def responses(self, response_url: str) -> list[JsonDict]:
        """JSON bodies accepted (HTTP 200) by that response_url, in order."""
        with self._lock:
            return copy.deepcopy(self._response_url_entry(response_url).posts)

    def home_view(self, user_id: str) -> JsonDict | None:
        """The Home tab `user_id` sees now (what views.publish last published for them), None before any."""
        with self._lock:
            view = self._home_views.get(user_id)
            return copy.deepcopy(view) if view is not None else None

    def calls_to(self, method: str) -> list[ApiCall]:
        with self._lock:
            return [c for c in self.calls if c.method == method]

    def wait_for(self, predicate: Callable[[], bool], timeout: float = PATIENCE_S) -> bool:
        """Poll predicate until it is true (returns True) or timeout passes (returns False)."""
        return poll_until(predicate, timeout)


    def _chat_post_message(self, args: JsonDict) -> JsonDict:
        channel = self._writable_channel(args)
        text, blocks, attachments = _content(args)
        if not text and not blocks and not attachments:
            raise _api_error("no_text")
        thread_ts = _str_arg(args, "thread_ts")
        parent: JsonDict | None = None
        if thread_ts:
            if not _TS_RE.match(thread_ts):
                raise _api_error("invalid_thread_ts", f"{thread_ts} is not a valid thread_ts")
            parent = self._find_message(channel, thread_ts)
            if parent is None:
                raise _api_error("thread_not_found")
            if parent.get("thread_ts") and parent["thread_ts"] != parent["ts"]:
                found = self._find_message(channel, str(parent["thread_ts"]))
                parent = found if found is not None else parent
        ts = self._next_ts()
        message = self._bot_message(ts, text, blocks, attachments)
        # `metadata` (event_type, event_payload): docs.slack.dev/reference/methods/chat.postMessage
        metadata = args.get("metadata")
        if isinstance(metadata, str) and metadata:
            metadata = _json_field(metadata, "metadata")
        if isinstance(metadata, dict):
            message["metadata"] = metadata
        if parent is not None:
            message["thread_ts"] = parent["ts"]
            message["parent_user_id"] = parent.get("user", self.bot_user_id)
            parent["thread_ts"] = parent["ts"]
            parent["reply_count"] = int(parent.get("reply_count", 0)) + 1
            parent["latest_reply"] = ts
            users = parent.setdefault("reply_users", [])
            if self.bot_user_id not in users:
                users.append(self.bot_user_id)
            parent["reply_users_count"] = len(users)
        self._messages.setdefault(channel, []).append(message)
        return {"channel": channel, "ts": ts, "message": copy.deepcopy(message)}


    def add_usergroup(self, usergroup_id: str, user_ids: list[str], *, handle: str = "", updated_by: str = "",
                      updated_at: float | None = None) -> None:
        """A user group (e.g. @organizers) and its members, for usergroups.users.list and usergroups.list, with
        who last changed it and when (the usergroup type's updated_by, date_update)."""
        with self._lock:
            self._usergroups[usergroup_id] = list(user_ids)
            when = int(self._time() if updated_at is None else updated_at)
            self._usergroup_changes[usergroup_id] = (handle or usergroup_id.lower(), updated_by, when)


    def _time(self) -> float:
        return self.clock.now().timestamp()

    def accept_response_url(self, response_url: str) -> None:
        """A response_url Slack issued in a payload the test wrote itself (in process): taken as if issued here."""
        token = response_url.rstrip("/").rsplit("/", 1)[-1]
        with self._lock:
            self._response_urls.setdefault(token, _ResponseUrl(token, None, None))

    def _writable_channel(self, args: JsonDict) -> str:
        """Resolve ``channel`` (id, name, #name or user id) to a channel id the bot can post to."""
        raw = _str_arg(args, "channel")
        if not raw:
            raise _api_error("channel_not_found")
        if raw in self._channels:
            cid = raw
        elif raw.startswith(("U", "W")) and raw in self._users:
            cid = self._dm_id(raw)  # Slack delivers it in the app's DM with that user
            if cid not in self._channels:
                self._channels[cid] = {"id": cid, "name": raw, "is_member": True, "users": [raw]}
                self._messages.setdefault(cid, [])
        else:
            name = raw.removeprefix("#")
            matches = [c for c in self._channels.values() if c["name"] == name]
            if not matches:
                raise _api_error("channel_not_found")
            cid = str(matches[0]["id"])
        if not self._channels[cid].get("is_member", True):
            raise _api_error("not_in_channel")
        return cid

    def _dm_id(self, user_id: str) -> str:
        return "D" + user_id[1:]

    def _find_message(self, channel: str, ts: str) -> JsonDict | None:
        for message in self._messages.get(channel, []):
            if message["ts"] == ts:
                return message
        return None

    def _next_ts(self) -> str:
        with self._lock:
            now_us = int(self._time() * 1_000_000)
            self._last_ts_us = max(now_us, self._last_ts_us + 1)
            seconds, micros = divmod(self._last_ts_us, 1_000_000)
        return f"{seconds}.{micros:06d}"

    def _bot_message(
        self,
        ts: str,
        text: str,
        blocks: list[Any] | None,
        attachments: list[Any] | None,
    ) -> JsonDict:
        message: JsonDict = {
            "type": "message",
            "user": self.bot_user_id,
            "bot_id": self.bot_id,
            "app_id": self.app_id,
            "team": self.team_id,
            "text": text,
            "ts": ts,
        }
        if blocks:
            message["blocks"] = blocks
        if attachments:
            message["attachments"] = attachments
        return message

    # ------------------------------------------------------------------ response_url

    def _response_url_entry(self, response_url: str) -> _ResponseUrl:
        token = response_url.rstrip("/").rsplit("/", 1)[-1]
        entry = self._response_urls.get(token)
        if entry is None:
            raise KeyError(f"response_url not issued by this simulator: {response_url}")
        return entry

