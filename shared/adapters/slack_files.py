"""Adapter over slack_sdk's external upload: a picture into a channel's thread or a person's DM.

files_upload_v2 is Slack's three steps (docs.slack.dev/reference/methods/files.getUploadURLExternal, the POST of
the bytes to the upload_url it answers, files.completeUploadExternal with channel_id and thread_ts), needing the
bot scope files:write. A DM is shared into by its channel id, which conversations.open gives (im:write). Best
effort like every Slack call: a failure is returned as Slack's error code, for the one line that stands in for
the picture, and never raised.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from shared.adapters.errors import ServiceError
from shared.adapters.slack_notify import SlackNotifier, from_slack

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Upload:
    """A file to share: `alt_text` is what Slack reads out in place of the image (alt_txt)."""

    data: bytes
    filename: str
    title: str
    alt_text: str


def upload(slack: SlackNotifier, channel: str, file: Upload, *, thread_ts: str = "") -> str:
    """Share `file` in `channel` (in the thread of `thread_ts`, if given): "" once Slack has it, else why not."""
    from slack_sdk.errors import SlackRequestError  # noqa: PLC0415 - lazy: cold start

    try:
        slack.client.files_upload_v2(
            channel=channel, content=file.data, filename=file.filename, title=file.title,
            alt_txt=file.alt_text[:1000], thread_ts=thread_ts or None,
        )
    except SlackRequestError as exc:  # the upload_url refused the bytes (step 2): slack_sdk's own error
        log.warning("Slack refused the upload of %s: %s", file.filename, str(exc)[:200])
        return "upload_failed"
    except Exception as exc:  # noqa: BLE001 - best effort: said in one line instead of the picture
        error = from_slack(exc)
        said = error.status if isinstance(error, ServiceError) else type(error).__name__
        log.warning("Slack upload of %s failed: %s", file.filename, said)
        return said[:60]
    return ""


def dm_channel(slack: SlackNotifier, email: str) -> str:
    """The id of the bot's DM with the Slack user of `email` (conversations.open), or "" when there is none."""
    user_id = slack.user_id_for(email)
    if not user_id:
        return ""
    try:
        response = slack.client.conversations_open(users=user_id)
    except Exception as exc:  # noqa: BLE001 - best effort
        error = from_slack(exc)
        log.warning("Slack conversations.open failed: %s", error if isinstance(error, ServiceError) else type(exc))
        return ""
    channel = response.get("channel")
    return str(channel.get("id", "")) if isinstance(channel, dict) else ""
