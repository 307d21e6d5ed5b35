"""The Slack simulator's files: the external upload (files_upload_v2's three steps), and the file shown in its thread.

Slack's documented flow, followed here (docs/fidelity.md, "Issue 27"):
1. files.getUploadURLExternal (docs.slack.dev/reference/methods/files.getUploadURLExternal): `filename` and
   `length` required, `alt_txt` and `snippet_type` optional; answers `upload_url` and `file_id`.
2. The file's bytes POSTed to that upload_url (raw body or multipart); Slack answers 200 "OK - <length>".
   slack_sdk treats any other status as a failed upload (SlackRequestError).
3. files.completeUploadExternal (docs.slack.dev/reference/methods/files.completeUploadExternal): `files`, a JSON
   array of {"id", "title"}; `channel_id` to share it (with `thread_ts`, as a reply in that thread;
   `initial_comment` as the message's text). Answers `files`. An id never uploaded is `file_not_found`.
Both methods need the bot scope files:write (missing_scope otherwise: simulators/slack/model.py's _EXTRA_SCOPES). A
shared file appears as a message of the bot's carrying `files` (the file object: id, name, title, mimetype,
filetype, size, alt_txt) and `upload: true`, in the channel or the thread.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Callable
from typing import Any

JsonDict = dict[str, Any]
UPLOAD_PATH = "/upload/v1/"
_MIME = {"png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "txt": "text/plain"}


class SlackFiles:
    """Files of one simulated workspace. `post` shares a file as a message (the simulator's chat.postMessage)."""

    def __init__(self, base_url: Callable[[], str], post: Callable[[JsonDict], JsonDict],
                 find: Callable[[str, str], JsonDict | None], error: Callable[..., Exception]) -> None:
        self._base_url = base_url
        self._post = post
        self._find = find
        self._error = error
        self._ids = itertools.count(1)
        self.files: dict[str, JsonDict] = {}
        self.data: dict[str, bytes] = {}

    def get_upload_url(self, args: JsonDict) -> JsonDict:
        filename = str(args.get("filename") or "")
        try:
            length = int(str(args.get("length") or ""))
        except ValueError:
            raise self._error("invalid_arguments", "missing required field: length") from None
        if not filename:
            raise self._error("invalid_arguments", "missing required field: filename")
        file_id = f"F{next(self._ids):010d}"
        kind = filename.rsplit(".", 1)[-1].lower() if "." in filename else "binary"
        self.files[file_id] = {"id": file_id, "name": filename, "title": filename, "filetype": kind,
                               "mimetype": _MIME.get(kind, "application/octet-stream"), "size": length,
                               "alt_txt": str(args.get("alt_txt") or ""), "uploaded": False}
        return {"upload_url": f"{self._base_url()}{UPLOAD_PATH}{file_id}", "file_id": file_id}

    def receive(self, path: str, raw: bytes) -> tuple[int, str]:
        """Step 2: the bytes at an upload_url. (status, body)."""
        file_id = path.removeprefix(UPLOAD_PATH).strip("/")
        found = self.files.get(file_id)
        if found is None:
            return 404, "file_not_found"
        self.data[file_id] = raw
        found["uploaded"] = True
        found["size"] = len(raw)
        return 200, f"OK - {len(raw)}"

    def complete(self, args: JsonDict) -> JsonDict:
        raw = args.get("files")
        try:
            wanted = json.loads(raw) if isinstance(raw, str) else raw
        except json.JSONDecodeError:
            raise self._error("invalid_arguments", "files is not valid JSON") from None
        if not isinstance(wanted, list) or not wanted or not all(isinstance(f, dict) for f in wanted):
            raise self._error("invalid_arguments", "files must be a non-empty array of {id, title}")
        done: list[JsonDict] = []
        for item in wanted:
            found = self.files.get(str(item.get("id", "")))
            if found is None or not found["uploaded"]:
                raise self._error("file_not_found")
            if item.get("title"):
                found["title"] = str(item["title"])
            done.append(found)
        shown = [{k: v for k, v in f.items() if k != "uploaded"} for f in done]
        channel = str(args.get("channel_id") or "")
        if channel:
            posted = self._post({"channel": channel, "text": str(args.get("initial_comment") or " "),
                                 "thread_ts": args.get("thread_ts") or None})
            message = self._find(str(posted["channel"]), str(posted["ts"]))
            if message is not None:
                message["text"] = str(args.get("initial_comment") or "")
                message["files"] = copy.deepcopy(shown)
                message["upload"] = True
            for found in done:
                found.setdefault("channels", []).append(posted["channel"])
        return {"files": copy.deepcopy(shown)}
