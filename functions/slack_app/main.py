"""slack_app: `/restart-notebook` and the organizer buttons (Slack HTTP requests, signed).

Run locally: PYTHONPATH=. functions-framework --source functions/slack_app/main.py --target slack_app
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import flask
import functions_framework
from slack_bolt.adapter.flask.handler import to_flask_response
from slack_sdk.signature import SignatureVerifier

from shared.adapters.audit import setup_logging
from shared.adapters.config import Need, settings_or_exit
from shared.adapters.memory_series import MemorySeries
from shared.adapters.misconfig import slack_start_failure
from shared.adapters.queue import RestartQueue
from shared.adapters.workbench import Workbench
from shared.app.slack import MAX_BODY_BYTES, Dependencies, answer, build_app, build_dependencies

setup_logging()
SETTINGS = settings_or_exit({Need.PUBLISH, Need.SLACK_APP})


def _dependencies(client: Any) -> Dependencies:
    # Everything here fits in Slack's 3 seconds: the reads (made at once) and the publish get their shares
    # (SETTINGS.slack_budget), and the command and the buttons cut every wait to what is left of the request's
    # deadline. The reads' own deadline is the whole acknowledgement's, longer than their share: a slow Workbench
    # is then "late" (acknowledged first, finished by the worker), never a timeout taken for an error.
    budget = SETTINGS.slack_budget
    workbench = Workbench(
        endpoint=SETTINGS.workbench_api_endpoint,
        timeout=timedelta(seconds=budget.ack),
        retry_deadline=timedelta(seconds=budget.ack),
    )
    # The Home tab's memory read (one timeSeries.list for the fleet) waits only its share; its client's timeout is the
    # whole acknowledgement, so a slow Monitoring is "unknown" on the tab, not an error.
    memory = MemorySeries(endpoint=SETTINGS.monitoring_api_endpoint, timeout_s=budget.ack)
    return build_dependencies(SETTINGS, client=client, workbench=workbench, memory=memory,
                              queue=RestartQueue(SETTINGS.restart_topic, publish_timeout_s=budget.publish))


try:
    APP = build_app(SETTINGS, _dependencies)
except Exception as exc:  # noqa: BLE001 - Bolt checks the token (auth.test) as the app is built: one line, not a traceback
    logging.getLogger(__name__).critical("%s", slack_start_failure(exc))
    raise SystemExit(1) from None
VERIFIER = SignatureVerifier(SETTINGS.slack_signing_secret)


def _bounded_body(request: flask.Request) -> bytes | None:
    """The body, or None when it is longer than MAX_BODY_BYTES: refused on its Content-Length before any of it is
    read, and a chunked one read one byte past the limit at most (Werkzeug's LimitedStream stops there)."""
    if (request.content_length or 0) > MAX_BODY_BYTES:
        return None
    request.max_content_length = MAX_BODY_BYTES + 1
    body = request.get_data()
    return None if len(body) > MAX_BODY_BYTES else body


@functions_framework.http
def slack_app(request: flask.Request) -> Any:
    if request.method != "POST":
        return ("Not Found", 404)
    body = _bounded_body(request)
    if body is None:
        # Streamed, so that functions-framework's after-request hook (read_request) does not read the rest.
        return flask.Response(iter([b"Request Entity Too Large\n"]), status=413, mimetype="text/plain")
    raw = body.decode("utf-8", errors="replace")
    query = request.query_string.decode("utf-8", errors="replace")
    return to_flask_response(answer(APP, raw, headers=dict(request.headers), verifier=VERIFIER, query=query,
                                    ack_budget=SETTINGS.slack_budget.ack))
