"""The Slack Web API's methods and the response_url posts, on the simulator's workspace."""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from typing import Any

from simulators.slack.errors import _api_error, _ApiError
from simulators.slack.faults import FaultyState
from simulators.slack.model import (
    _EXTRA_SCOPES,
    RESPONSE_URL_MAX_POSTS,
    JsonDict,
    _content,
    _json_field,
    _Reply,
    _ResponseUrl,
    _str_arg,
    check_home_blocks,
)


class WebApi(FaultyState):
    # ------------------------------------------------------------------ Web API

    def _web_api(self, method: str, token: str | None, args: JsonDict, args_ok: bool) -> _Reply:
        impl = self._methods().get(method)
        if impl is None:
            return _Reply.json(200, {"ok": False, "error": "unknown_method"})
        if not token:
            return _Reply.json(200, {"ok": False, "error": "not_authed"})
        if token != self.bot_token:
            return _Reply.json(200, {"ok": False, "error": "invalid_auth"})
        if not args_ok:
            return _Reply.json(200, {"ok": False, "error": "invalid_json"})
        scope_header = {"x-oauth-scopes": ",".join(self.scopes)}
        needed = _EXTRA_SCOPES.get(method, ())
        if needed and not set(needed) & set(self.scopes):
            return _Reply.json(200, {"ok": False, "error": "missing_scope", "needed": ",".join(needed),
                                     "provided": ",".join(self.scopes)}, scope_header)
        try:
            with self._lock:
                data = impl(args)
        except _ApiError as err:
            body: JsonDict = {"ok": False, "error": err.error}
            if err.detail:
                body["response_metadata"] = {"messages": [f"[ERROR] {err.detail}"]}
            return _Reply.json(200, body, scope_header)
        return _Reply.json(200, {"ok": True, **data}, scope_header)

    def _methods(self) -> dict[str, Callable[[JsonDict], JsonDict]]:
        return {
            "auth.test": self._auth_test,
            "chat.postMessage": self._chat_post_message,
            "chat.update": self._chat_update,
            "chat.postEphemeral": self._chat_post_ephemeral,
            "users.info": self._users_info,
            "users.lookupByEmail": self._users_lookup_by_email,
            "usergroups.users.list": self._usergroups_users_list,
            "usergroups.list": self._usergroups_list,
            "conversations.open": self._conversations_open,
            "conversations.info": self._conversations_info,
            "conversations.history": self._conversations_history,
            "views.publish": self._views_publish,
            "views.open": self._views_open,
            "files.getUploadURLExternal": self.files.get_upload_url,
            "files.completeUploadExternal": self.files.complete,
        }

    def _auth_test(self, args: JsonDict) -> JsonDict:
        return {
            "url": f"https://{self.team_domain}.slack.com/",
            "team": self.team_domain.capitalize(),
            "user": "notebook-medic",
            "team_id": self.team_id,
            "user_id": self.bot_user_id,
            "bot_id": self.bot_id,
            "is_enterprise_install": False,
        }


    def _chat_update(self, args: JsonDict) -> JsonDict:
        channel = self._writable_channel(args)
        ts = _str_arg(args, "ts")
        if not ts:
            raise _api_error("invalid_arguments", "missing required field: ts")
        message = self._find_message(channel, ts)
        if message is None:
            raise _api_error("message_not_found")
        text, blocks, attachments = _content(args)
        has_blocks = "blocks" in args
        if not text and not blocks and not attachments and not has_blocks:
            raise _api_error("no_text")
        if "text" in args:
            message["text"] = text
        if has_blocks:  # absent = keep previous blocks; [] = remove them
            if blocks:
                message["blocks"] = blocks
            else:
                message.pop("blocks", None)
        if "attachments" in args:
            message["attachments"] = attachments
        # chat.update's `metadata` (docs.slack.dev/reference/methods/chat.update; slack_sdk WebClient.chat_update):
        # left out, the message keeps its metadata; an empty object removes it.
        metadata = args.get("metadata")
        if isinstance(metadata, str) and metadata:
            metadata = _json_field(metadata, "metadata")
        if isinstance(metadata, dict):
            if metadata:
                message["metadata"] = metadata
            else:
                message.pop("metadata", None)
        message["edited"] = {"user": self.bot_user_id, "ts": self._next_ts()}
        return {
            "channel": channel,
            "ts": ts,
            "text": message.get("text", ""),
            "message": copy.deepcopy(message),
        }

    def _chat_post_ephemeral(self, args: JsonDict) -> JsonDict:
        channel = self._writable_channel(args)
        user = _str_arg(args, "user")
        if not user:
            raise _api_error("invalid_arguments", "missing required field: user")
        if user not in self._users:
            raise _api_error("user_not_found")
        text, blocks, attachments = _content(args)
        if not text and not blocks and not attachments:
            raise _api_error("no_text")
        ts = self._next_ts()
        message = self._bot_message(ts, text, blocks, attachments)
        message["user"] = user
        if _str_arg(args, "thread_ts"):
            message["thread_ts"] = _str_arg(args, "thread_ts")
        self._ephemerals.setdefault(channel, []).append(message)
        return {"message_ts": ts}

    def _users_info(self, args: JsonDict) -> JsonDict:
        user_id = _str_arg(args, "user")
        if not user_id or user_id not in self._users:
            raise _api_error("user_not_found")
        user = copy.deepcopy(self._users[user_id])
        if str(args.get("include_locale", "")).lower() in ("1", "true"):  # opt-in (SlackState.add_user)
            user["locale"] = self._locales.get(user_id, "en-US")
        return {"user": user}

    def _users_lookup_by_email(self, args: JsonDict) -> JsonDict:
        email = (_str_arg(args, "email") or "").strip().casefold()
        if not email:
            raise _api_error("invalid_arguments", "missing required field: email")
        for user in self._users.values():
            stored = user["profile"].get("email")
            # Slack does not find deactivated users by email (documented: users_not_found).
            if stored and stored.casefold() == email and not user["deleted"]:
                return {"user": copy.deepcopy(user)}
        raise _api_error("users_not_found")


    def _usergroups_list(self, args: JsonDict) -> JsonDict:
        """api.slack.com/methods/usergroups.list (scope usergroups:read; `include_users` adds `users`): the
        usergroup type's fields (api.slack.com/types/usergroup): id, team_id, is_usergroup, name, handle,
        date_create, date_update, date_delete, created_by, updated_by, deleted_by, user_count. Slack says nothing
        here, or anywhere in its Web API, of who may edit user groups (a workspace preference)."""
        listed = []
        for group, users in self._usergroups.items():
            handle, updated_by, when = self._usergroup_changes.get(group, (group.lower(), "", 0))
            record: JsonDict = {"id": group, "team_id": self.team_id, "is_usergroup": True, "name": handle,
                                "handle": handle, "description": "", "date_create": when, "date_update": when,
                                "date_delete": 0, "created_by": updated_by, "updated_by": updated_by,
                                "deleted_by": None, "user_count": len(users)}
            if str(args.get("include_users", "")).lower() in ("1", "true"):
                record["users"] = list(users)
            listed.append(record)
        return {"usergroups": listed}

    def _usergroups_users_list(self, args: JsonDict) -> JsonDict:
        group = _str_arg(args, "usergroup")
        if not group:
            raise _api_error("invalid_arguments")
        if group not in self._usergroups:
            raise _api_error("no_such_subteam")
        return {"users": list(self._usergroups[group])}

    def _conversations_info(self, args: JsonDict) -> JsonDict:
        """api.slack.com/methods/conversations.info: the channel object, with is_member for the caller."""
        channel = self._channels.get(_str_arg(args, "channel") or "")
        if channel is None:
            raise _api_error("channel_not_found")
        return {"channel": {"id": channel["id"], "name": channel["name"], "is_channel": True,
                            "is_member": bool(channel.get("is_member", True))}}

    def _conversations_open(self, args: JsonDict) -> JsonDict:
        raw_channel = _str_arg(args, "channel")
        if raw_channel:
            if raw_channel not in self._channels:
                raise _api_error("channel_not_found")
            return {"no_op": True, "already_open": True, "channel": {"id": raw_channel}}
        users_arg = args.get("users")
        if isinstance(users_arg, list):
            users = [str(u) for u in users_arg]
        else:
            users = [u.strip() for u in str(users_arg or "").split(",") if u.strip()]
        if not users:
            raise _api_error("users_list_not_supplied")
        for user in users:
            if user not in self._users:
                raise _api_error("user_not_found")
        if len(users) == 1:
            cid = self._dm_id(users[0])
        else:
            digest = hashlib.sha1(",".join(sorted(users)).encode()).hexdigest()
            cid = "G" + digest[:10].upper()
        already = cid in self._channels
        if not already:
            name = users[0] if len(users) == 1 else "mpdm-" + "--".join(users)
            self._channels[cid] = {"id": cid, "name": name, "is_member": True, "users": users}
            self._messages.setdefault(cid, [])
        result: JsonDict = {"channel": {"id": cid}}
        if already:
            result = {"no_op": True, "already_open": True, **result}
        return result

    def _views_publish(self, args: JsonDict) -> JsonDict:
        """docs.slack.dev/reference/methods/views.publish (no scope required): `user_id` and `view` (a JSON string
        or object) required, else invalid_arguments; `not_enabled` when the app's Home tab is off; a `home` view of
        at most 100 blocks (docs.slack.dev/reference/views/home-tab-views); answers the view with its id and hash."""
        user = _str_arg(args, "user_id")
        if not user or user not in self._users:
            raise _api_error("invalid_arguments", "invalid `user_id`")
        view = args.get("view")
        if isinstance(view, str):
            view = _json_field(view, "view")
        if not isinstance(view, dict) or view.get("type") != "home" or not isinstance(view.get("blocks"), list):
            raise _api_error("invalid_arguments", "a home view with blocks [json-pointer:/view]")
        if not self.home_tab_enabled:
            raise _api_error("not_enabled")
        check_home_blocks(view["blocks"])
        published = {**copy.deepcopy(view), "id": f"V{len(self._home_views) + 1:08d}", "team_id": self.team_id,
                     "app_id": self.app_id, "bot_id": self.bot_id, "hash": self._next_ts()}
        self._home_views[user] = published
        return {"view": copy.deepcopy(published)}

    def _views_open(self, args: JsonDict) -> JsonDict:
        """docs.slack.dev/reference/methods/views.open (no scope required): `trigger_id` (from an interaction, valid
        3 s: not timed here) and `view` required; a `modal` view with a title and at most 100 blocks
        (docs.slack.dev/reference/surfaces/views: "Max of 100 blocks"); answers the view with its id."""
        trigger = _str_arg(args, "trigger_id")
        view = args.get("view")
        if isinstance(view, str):
            view = _json_field(view, "view")
        if not trigger:
            raise _api_error("invalid_arguments", "missing required field: trigger_id")
        if not isinstance(view, dict) or view.get("type") != "modal" or not isinstance(view.get("title"), dict):
            raise _api_error("invalid_arguments", "a modal view with a title [json-pointer:/view]")
        check_home_blocks(view.get("blocks") or [])
        return {"view": {**copy.deepcopy(view), "id": f"VM{self._next_ts().replace('.', '')}",
                         "team_id": self.team_id, "app_id": self.app_id, "bot_id": self.bot_id}}

    # ------------------------------------------------------------------ Web API helpers

    def _conversations_history(self, args: JsonDict) -> JsonDict:
        """conversations.history (docs.slack.dev/reference/methods/conversations.history): a channel's messages,
        newest first, between `oldest` and `latest` (exclusive unless `inclusive`), `limit` a page (default 100,
        at most 999), `cursor` from the previous page's response_metadata.next_cursor. Messages carry their
        `metadata` only with include_all_metadata=true. Thread replies are not listed (conversations.replies)."""
        channel = self._writable_channel(args)
        if channel.startswith("D"):
            raise _api_error("channel_not_found")
        try:
            oldest = float(_str_arg(args, "oldest") or 0)
            latest = float(_str_arg(args, "latest") or "inf")
            limit = max(1, min(999, int(_str_arg(args, "limit") or 100)))
            start = int((_str_arg(args, "cursor") or "offset:0").removeprefix("offset:"))
        except ValueError as exc:
            raise _api_error("invalid_arguments", str(exc)) from exc
        inclusive = _str_arg(args, "inclusive") in ("true", "1", "True")
        with_metadata = _str_arg(args, "include_all_metadata") in ("true", "1", "True")

        def within(ts: float) -> bool:
            return (oldest <= ts <= latest) if inclusive else (oldest < ts < latest)

        listed = [m for m in reversed(self._messages.get(channel, []))
                  if within(float(m["ts"])) and m.get("thread_ts", m["ts"]) == m["ts"]]
        page = [copy.deepcopy(m) for m in listed[start:start + limit]]
        if not with_metadata:
            for message in page:
                message.pop("metadata", None)
        more = start + limit < len(listed)
        return {"messages": page, "has_more": more, "pin_count": 0,
                "response_metadata": {"next_cursor": f"offset:{start + limit}" if more else ""}}


    def _response_url_post(self, path: str, verb: str, body: JsonDict | None) -> _Reply:
        if verb != "POST":
            return _Reply.text(405, "method_not_allowed")
        token = path[len("/response/") :].strip("/")
        with self._lock:
            entry = self._response_urls.get(token)
            if entry is None or entry.expired:
                return _Reply.text(404, "expired_url")
            if len(entry.posts) >= RESPONSE_URL_MAX_POSTS:
                return _Reply.text(404, "used_url")
            if body is None:
                return _Reply.text(400, "invalid_payload")
            if "payload" in body and isinstance(body["payload"], str) and len(body) == 1:
                try:
                    body = _json_field(body["payload"], "payload")
                except _ApiError:
                    return _Reply.text(400, "invalid_payload")
            try:
                text, blocks, attachments = _content(body)
            except _ApiError as err:
                return _Reply.text(400, err.error)
            deleting = bool(body.get("delete_original"))
            if not deleting and not text and not blocks and not attachments:
                return _Reply.text(400, "no_text")
            entry.posts.append(copy.deepcopy(body))
            self._apply_response(entry, body, text, blocks, attachments)
        return _Reply.text(200, "ok")

    def _apply_response(
        self,
        entry: _ResponseUrl,
        body: JsonDict,
        text: str,
        blocks: list[Any] | None,
        attachments: list[Any] | None,
    ) -> None:
        if entry.channel is None:
            return
        original = (
            self._find_message(entry.channel, entry.message_ts) if entry.message_ts else None
        )
        if body.get("delete_original") and original is not None:
            self._messages[entry.channel].remove(original)
            return
        if body.get("replace_original") and original is not None:
            original["text"] = text
            if blocks:
                original["blocks"] = blocks
            else:
                original.pop("blocks", None)
            original["edited"] = {"user": self.bot_user_id, "ts": self._next_ts()}
            return
        if body.get("response_type") == "in_channel":
            message = self._bot_message(self._next_ts(), text, blocks, attachments)
            if body.get("thread_ts"):
                message["thread_ts"] = str(body["thread_ts"])
            self._messages.setdefault(entry.channel, []).append(message)

