"""restart_worker: Pub/Sub push from the restart topic -> observe, decide, act, report.

2xx acknowledges the message; 503 asks Pub/Sub to redeliver it (only for
transient failures on requests younger than MAX_EVENT_AGE_SECONDS). A push whose OIDC token is not Google's,
for PUSH_AUDIENCE, from PUSH_SERVICE_ACCOUNT gets 401/403 before its body is read (shared/adapters/push_auth.py).
A waiting incident re-publishes itself to RESTART_TOPIC before its 2xx (shared/core/waiting.py).
Run locally: PYTHONPATH=. functions-framework --source functions/restart_worker/main.py --target restart_worker
"""

from __future__ import annotations

import flask
import functions_framework

from shared.adapters.audit import setup_logging
from shared.adapters.clock import SYSTEM
from shared.adapters.compute import Compute
from shared.adapters.config import Need, settings_or_exit
from shared.adapters.disk_config import disk_settings_or_exit
from shared.adapters.memory_series import MemorySeries
from shared.adapters.push_auth import PushAuth
from shared.adapters.queue import RestartQueue
from shared.adapters.slack_notify import SlackNotifier
from shared.adapters.ticket_config import ticket_settings_or_exit
from shared.adapters.workbench import Workbench
from shared.app.worker import Worker

setup_logging()
# PUBLISH: a waiting incident hands its instance's ordering key on by re-publishing itself (shared/core/waiting.py).
SETTINGS = settings_or_exit({Need.WORKBENCH, Need.SLACK, Need.PUBLISH, Need.SCOPE, Need.PUSH})
ticket_settings_or_exit()  # help tickets' settings (issue 46), read again by the worker's TicketDesk: checked at start
disk_settings_or_exit()  # bigger disks' settings (issue 43), read again by the worker's DiskDesk: likewise
PUSH_AUTH = PushAuth(audience=SETTINGS.push_audience, service_account=SETTINGS.push_service_account,
                     certs_url=SETTINGS.push_certs_url, clock=SYSTEM)
WORKER = Worker(
    SETTINGS,
    Workbench(
        endpoint=SETTINGS.workbench_api_endpoint,
        timeout=SETTINGS.workbench_timeout,
        retry_deadline=SETTINGS.workbench_retry,
        clock=SYSTEM,  # the worker's: its deadlines are points on this clock
    ),
    SlackNotifier(
        token=SETTINGS.slack_bot_token,
        base_url=SETTINGS.slack_api_url,
        timeout_s=SETTINGS.slack_timeout.total_seconds(),
        alert_channel=SETTINGS.slack_alert_channel,
        response_url_base=SETTINGS.slack_response_url_base,
    ),
    queue=RestartQueue(SETTINGS.restart_topic),
    clock=SYSTEM,
    memory=MemorySeries(endpoint=SETTINGS.monitoring_api_endpoint) if SETTINGS.memory_charts else None,
    # A disk warning's "what fills it": the guard's disk-report guest attribute (issue 43).
    guest=Compute(endpoint=SETTINGS.compute_api_endpoint, timeout=SETTINGS.workbench_timeout,
                  retry_deadline=SETTINGS.workbench_retry),
)


@functions_framework.http
def restart_worker(request: flask.Request) -> tuple[str, int]:
    refused = PUSH_AUTH.refusal(request.headers.get("Authorization"))
    if refused is not None:
        return "push refused", refused.status  # the reason is logged, not told to the sender
    try:
        body = request.get_json(silent=True)
    except RecursionError:  # silent=True covers malformed JSON, not JSON nested too deep to parse
        body = None
    outcome = WORKER.handle_push(body)
    return ("", 204) if outcome.ack else (outcome.detail, 503)
