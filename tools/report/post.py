"""--post: the report's message and its CSV in the organizers' channel, in one Slack message, with slack_sdk's
files_upload_v2 (Slack's external upload: files.getUploadURLExternal, the bytes to its upload_url,
files.completeUploadExternal with `channel_id` and `initial_comment`; bot scope files:write)."""

from __future__ import annotations

from pathlib import Path

from shared.adapters.slack_notify import SlackNotifier, from_slack
from shared.core import messages


def post(slack: SlackNotifier, channel: str, text: str, csv_path: Path, say: messages.For) -> str:
    """What to print: where the report went, or why it did not."""
    try:
        slack.client.files_upload_v2(channel=channel, content=csv_path.read_bytes(), filename=csv_path.name,
                                     title=csv_path.stem, initial_comment=text)
    except Exception as exc:  # noqa: BLE001 - said on the terminal; the CSV is written either way
        error = from_slack(exc)
        return say("report.post_failed", channel=channel, error=str(error)[:200])
    return say("report.posted", channel=channel, file=csv_path.name)
