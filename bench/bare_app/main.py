"""The bare Bolt app the Slack benchmark compares ours with: one command that only acknowledges.

Built like functions/slack_app/main.py (a WebClient with the same options, App(client=...,
process_before_response=True), the same google_cloud_functions SlackRequestHandler, the same
functions-framework), minus everything the command does: no logging setup, no config, no
Workbench or Pub/Sub.
"""

from __future__ import annotations

import os
from typing import Any

import flask
import functions_framework
from slack_bolt import Ack, App
from slack_bolt.adapter.google_cloud_functions import SlackRequestHandler
from slack_sdk import WebClient

_client_options: dict[str, Any] = {"token": os.environ["SLACK_BOT_TOKEN"], "timeout": 2}
if os.environ.get("SLACK_API_URL"):
    _client_options["base_url"] = os.environ["SLACK_API_URL"]
app = App(
    client=WebClient(**_client_options),
    signing_secret=os.environ["SLACK_SIGNING_SECRET"],
    process_before_response=True,
)


@app.command("/restart-notebook")
def restart_notebook(ack: Ack) -> None:
    ack(text="ok")


HANDLER = SlackRequestHandler(app)


@functions_framework.http
def slack_app(request: flask.Request) -> Any:
    return HANDLER.handle(request)
