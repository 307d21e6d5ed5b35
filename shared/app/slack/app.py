"""The Bolt app and its listeners, because Bolt's public surface is where Slack's requests come in and their
acknowledgements go out."""

# Each listener takes Bolt's ack, body and context, calls command.answer or buttons.press with the dependencies, and has
# one last-resort catch that answers the person and logs; the error handler turns a payload Bolt cannot route into a
# 400. Bolt's own request verification stays on behind guard.py's.

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from shared.adapters.audit import audit
from shared.adapters.config import Settings
from shared.adapters.errors import ServiceError
from shared.app.slack import announce, announce_modal, buttons, command, help, home
from shared.app.slack.budget import Deadline
from shared.app.slack.dependencies import Dependencies
from shared.app.slack.guard import ACK_DEADLINE
from shared.core import announce as announcement
from shared.core import fleet, tickets
from shared.core.blocks import ALL_ACTIONS

if TYPE_CHECKING:
    from slack_bolt import Ack, App, BoltContext, BoltResponse

log = logging.getLogger(__name__)
COMMAND = "/restart-notebook"
LISTENER_RAN = "notebook_medic_listener_ran"  # set in the request's BoltContext once one of ours runs


def build_app(settings: Settings, dependencies: Callable[[Any], Dependencies]) -> App:
    """One Bolt app with process_before_response, because Cloud Functions stops work after the response."""
    from slack_bolt import App  # noqa: PLC0415
    from slack_sdk import WebClient  # noqa: PLC0415

    # Every call this client makes is made before an ack: short, and no retry (there is no time for one).
    kwargs: dict[str, Any] = {"token": settings.slack_bot_token, "timeout": settings.slack_budget.call,
                              "retry_handlers": []}
    if settings.slack_api_url:
        kwargs["base_url"] = settings.slack_api_url
    client = WebClient(**kwargs)
    app = App(client=client, signing_secret=settings.slack_signing_secret, process_before_response=True,
              request_verification_enabled=True)
    deps = dependencies(client)

    @app.command(COMMAND)
    def restart_notebook(ack: Ack, body: dict[str, Any], context: BoltContext) -> None:
        context[LISTENER_RAN] = True
        try:
            reply = command.answer(body, deadline=_deadline(context, deps), workspace=_workspace(context), deps=deps)
        except Exception:  # the last resort: the person hears it, the log says why
            log.exception("slack request failed: %s", COMMAND)
            reply = _went_wrong(deps)
        if isinstance(reply, dict):
            ack(**reply)
        else:
            ack(text=reply)

    @app.action(re.compile("^(" + "|".join(map(re.escape, (*ALL_ACTIONS, fleet.ACTION_RESUME))) + ")$"))
    def organizer_button(ack: Ack, body: dict[str, Any], context: BoltContext) -> None:
        context[LISTENER_RAN] = True
        ack()
        deadline = _deadline(context, deps)
        reply = deps.responder.respond(body.get("response_url"), deadline)
        try:
            buttons.press(body, reply=reply, deadline=deadline, workspace=_workspace(context), deps=deps)
        except Exception:  # the last resort: the person hears it, the log says why
            log.exception("slack request failed: a button")
            with suppress(ServiceError):  # already logged above; the press was acknowledged
                reply(text=_went_wrong(deps), replace_original=False)

    _home_listeners(app, deps)
    _help_listeners(app, deps)
    app.error(unroutable_payload)
    return app


def _home_listeners(app: App, deps: Dependencies) -> None:
    """The Home tab: published when a person opens it (the Events API's app_home_opened, acknowledged after, as
    process_before_response does) and when they press in it (home.py)."""

    @app.event("app_home_opened")
    def home_opened(event: dict[str, Any], context: BoltContext) -> None:
        context[LISTENER_RAN] = True
        if event.get("tab") != "home":  # the Messages tab: nothing to publish
            return
        try:
            home.show(str(event.get("user", "")), deadline=_deadline(context, deps), workspace=_workspace(context),
                      deps=deps)
        except Exception:  # the last resort: the tab keeps what it showed, the log says why
            log.exception("slack request failed: app_home_opened")

    def pressed(handle: Callable[..., None], what: str) -> Callable[..., None]:
        return _pressed(deps, handle, what)

    app.action(re.compile(f"^({fleet.ACTION_START_ALL}|{fleet.ACTION_STOP_ALL}|{fleet.ACTION_STOP_ALL_KEEP_GPUS})$"))(
        pressed(home.bulk_press, "start all / stop all"))
    app.action(re.compile(f"^({fleet.ACTION_RESTART}|{fleet.ACTION_START})$"))(
        pressed(home.row_press, "a Home tab row button"))
    app.action(re.compile(f"^({fleet.ACTION_REFRESH}|{fleet.ACTION_PAGE})$"))(
        pressed(home.view_press, "Refresh or Next page"))
    app.action(re.compile(f"^({announcement.ACTION_SEND}|{announcement.ACTION_CANCEL})$"))(
        pressed(announce.press, "an announcement's Send or Cancel"))
    app.action(announcement.ACTION_OPEN)(pressed(announce_modal.open_modal, "Announce…"))

    @app.view(re.compile(f"^({announcement.MODAL_WRITE}|{announcement.MODAL_CONFIRM})$"))
    def announce_submitted(ack: Ack, body: dict[str, Any], context: BoltContext) -> None:
        """The announcement's modal submitted: its ack is the next view (the confirmation, or what was done)."""
        context[LISTENER_RAN] = True
        try:
            answer = announce_modal.submitted(body, deadline=_deadline(context, deps), workspace=_workspace(context),
                                              deps=deps)
        except Exception:  # the last resort: the organizer reads it in the modal, the log says why
            log.exception("slack request failed: the announcement's modal")
            answer = announce_modal.said(_went_wrong(deps), deps)
        ack(**answer)


def _pressed(deps: Dependencies, handle: Callable[..., None], what: str) -> Callable[..., None]:
    """A listener for a press or a shortcut: acknowledged at once (its answer is a views.publish, a views.open or a
    publish for the worker), then handled."""

    def listener(ack: Ack, body: dict[str, Any], context: BoltContext) -> None:
        context[LISTENER_RAN] = True
        ack()
        try:
            handle(body, deadline=_deadline(context, deps), workspace=_workspace(context), deps=deps)
        except Exception:  # the last resort: the surface keeps what it showed, the log says why
            log.exception("slack request failed: %s", what)

    return listener


def _help_listeners(app: App, deps: Dependencies) -> None:
    """Help tickets (help.py): the global shortcut and "Get help" open the participant's modal, a ticket's buttons
    are published for the worker (Resolve opens its note's modal), and both modals' submissions are answered in
    the modal."""

    def listener(handle: Callable[..., None], what: str) -> Callable[..., None]:
        return _pressed(deps, handle, what)

    app.shortcut(tickets.SHORTCUT)(listener(help.open_help, "the Get help shortcut"))
    app.action(tickets.ACTION_HELP)(listener(help.open_help, "Get help"))
    app.action(re.compile("^(" + "|".join(map(re.escape, tickets.TICKET_ACTIONS)) + ")$"))(
        listener(help.press, "a ticket's button"))

    @app.view(re.compile(f"^({tickets.MODAL_HELP}|{tickets.MODAL_RESOLVE})$"))
    def help_submitted(ack: Ack, body: dict[str, Any], context: BoltContext) -> None:
        context[LISTENER_RAN] = True
        try:
            answer = help.submitted(body, deadline=_deadline(context, deps), workspace=_workspace(context), deps=deps)
        except Exception:  # the last resort: the person reads it in the modal, the log says why
            log.exception("slack request failed: a ticket's modal")
            answer = announce_modal.said(_went_wrong(deps), deps)
        ack(**answer)


def unroutable_payload(error: Exception, context: BoltContext) -> BoltResponse | None:
    """A 400 for a payload Bolt's routing raised on, because only a body of a shape Slack never sends does that, while
    failures past a listener (ack itself) and Slack unreachable (auth.test) stay Bolt's loud 500."""
    # Bolt's middleware and matchers index a payload as Slack shapes it (actions[0]["action_id"], event.get, ...).
    from slack_bolt import BoltResponse  # noqa: PLC0415
    from slack_sdk.errors import SlackClientError  # noqa: PLC0415

    if context.get(LISTENER_RAN) or isinstance(error, SlackClientError | OSError):
        log.error("slack request failed", exc_info=error)
        return None
    audit("slack request rejected", severity=logging.WARNING, decision="rejected",
          reason=f"a payload of a shape Slack does not send ({type(error).__name__} in Bolt's routing)")
    return BoltResponse(status=400, body="bad request")


def _went_wrong(deps: Dependencies) -> str:
    """What a person reads when the app itself failed, so they know nothing was done and asking again is the way on."""
    return deps.say("deny.unavailable", service="notebook-medic")


def _workspace(context: BoltContext) -> str | None:
    """The app's own team id from the auth.test Bolt makes (kept as the context's authorize_result), so members of other
    workspaces are refused, and nobody may act when Bolt has none."""
    team = getattr(context.authorize_result, "team_id", None)
    return team if isinstance(team, str) and team else None


def _deadline(context: BoltContext, deps: Dependencies) -> Deadline:
    """The request's deadline as guard.answer() set it, or a fresh one when Bolt is driven some other way, so every
    listener runs on one."""
    deadline = context.get(ACK_DEADLINE)
    return deadline if isinstance(deadline, Deadline) else Deadline(deps.clock, deps.settings.slack_budget.ack)
