"""A local Slack: the Web API and response_url endpoints, plus a signed-request sender.

``SlackSimulator`` is a standard-library HTTP server that the real ``slack_sdk.WebClient``
talks to via ``WebClient(token=..., base_url=sim.api_url)``. It keeps workspace state
(users, channels, messages, response_url posts), records every request in ``calls`` and can
inject faults (rate limits, 5xx, hangs, API errors).

``SlackRequester`` plays Slack towards our app: it sends slash commands and block_actions
payloads, signed exactly as Slack signs them, optionally tampered with.

Wire facts the simulator follows (slack_sdk 3.48):

* ``chat.postMessage`` / ``chat.update`` / ``chat.postEphemeral`` are sent by WebClient as
  ``application/json`` (blocks stay JSON arrays); ``users.info``, ``users.lookupByEmail``,
  ``conversations.open`` and ``auth.test`` are sent as form data in a POST body (WebClient
  ignores ``http_verb="GET"``). Both encodings are accepted everywhere; a ``blocks`` or
  ``attachments`` form field holding a JSON string is decoded.
* The token arrives as ``Authorization: Bearer``; a ``token`` form/JSON field is accepted too.

Manual use: ``python -m simulators.slack --port 8090`` prints one line per request.
"""


from __future__ import annotations

# The package's parts (each module's docstring says what it owns): errors (imports nothing of the simulator),
# model (the vocabulary and argument rules), state (the workspace), faults, web_api (the methods and response_url
# posts), rest (the HTTP server and `SlackSimulator.handle()`), requester (Slack towards our app), __main__.
# Everything the tests, the stacks, the demo and the benchmarks import is re-exported here.
from simulators.slack.errors import _ApiError
from simulators.slack.model import (
    DEFAULT_SCOPES,
    FAULT_KINDS,
    RESPONSE_URL_MAX_POSTS,
    RESPONSE_URL_METHOD,
    TIMEOUT_FAULT_S,
    ApiCall,
    JsonDict,
)
from simulators.slack.requester import TAMPER_MODES, SlackRequester, SlackResponse, sign
from simulators.slack.rest import SlackSimulator

__all__ = [
    "DEFAULT_SCOPES",
    "FAULT_KINDS",
    "RESPONSE_URL_MAX_POSTS",
    "RESPONSE_URL_METHOD",
    "TAMPER_MODES",
    "TIMEOUT_FAULT_S",
    "ApiCall",
    "JsonDict",
    "SlackRequester",
    "SlackResponse",
    "SlackSimulator",
    "_ApiError",
    "sign",
]
