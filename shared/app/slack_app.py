"""The Slack app: `/restart-notebook` and the organizer buttons on alerts (one Bolt app, listeners by purpose).

Slack wants an answer within 3 seconds and the Cloud Functions adapter has no
lazy listeners, so a listener only reads (users.info, instances.list), decides
(commands.py) and publishes a request to the restart topic; the worker does the
restart and reports through the request's response_url. The signature
(signing secret, 5-minute replay window) is checked before anything reads the
body, so an unsigned request is a 401 and leaves no trace; Bolt's own check
stays on behind it.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from shared.adapters.audit import audit
from shared.adapters.clock import utcnow
from shared.adapters.config import Settings
from shared.adapters.misconfig import note_unsigned, said_if_misconfigured, slack_error
from shared.adapters.queue import PublishUnconfirmedError, RestartQueue
from shared.adapters.slack_notify import SHOWN_MAX, is_slack_response_url
from shared.adapters.workbench import Workbench
from shared.core import messages
from shared.core.blocks import (
    ACTION_PAUSE,
    ACTION_RESIZE,
    ACTION_RESIZE_DENY,
    ACTION_RESTART,
    ACTION_RESUME,
    ACTION_STOP,
    ALL_ACTIONS,
    MAX_BLOCKS,
    cost_text,
    memory_text,
    parse_resize_value,
    resize_request_blocks,
    table_blocks,
    without_buttons,
)
from shared.core.commands import (
    Answer,
    Caller,
    Refusal,
    Verb,
    authorize_restart,
    find_target,
    is_owner,
    parse_command,
    refusal,
    status_rows,
)
from shared.core.history import History, acted_digest
from shared.core.identity import identity
from shared.core.machines import next_size
from shared.core.models import Action, InstanceRef, InstanceView, Requester, RestartRequest, Trigger

if TYPE_CHECKING:
    from slack_sdk.signature import SignatureVerifier

log = logging.getLogger(__name__)
COMMAND = "/restart-notebook"
BUTTON_ACTIONS = {
    ACTION_RESTART: Action.RESTART,
    ACTION_PAUSE: Action.PAUSE,
    ACTION_RESUME: Action.RESUME,
    ACTION_STOP: Action.STOP,
    ACTION_RESIZE: Action.RESIZE,
}
USERGROUP_TTL_S = 300.0
LISTENER_RAN = "notebook_medic_listener_ran"  # set in the request's BoltContext once one of ours runs
ACK_DEADLINE = "notebook_medic_ack_deadline"  # the request's Deadline, in its BoltContext
# Slack waits 3 s for the HTTP answer, which (process_before_response) goes only when the listener
# returns: everything before it shares ACK_BUDGET_S, the rest is the way there and back.
ACK_BUDGET_S = 2.5
READS_S = 1.2  # users.info and instances.list, made at once (a cold start makes the Workbench client in them)
PUBLISH_S = 1.0  # the publish to the restart topic: one attempt, the RPC and the wait for its id
REPLY_S = 1.0  # one response_url post before the ack (WebhookClient's own default is 30 s)
SLACK_CALL_S = 1  # the app's WebClient timeout (whole seconds): any other Slack call before the ack
MIN_CALL_S = 0.1  # less time left than this: a call is not started
STATUS_ROWS = 60  # `status` shows the instances needing attention most; it says how many more there are


class Deadline:
    """When the acknowledgement must go, so every call before it can be given only the time that is left."""

    def __init__(self, seconds: float = ACK_BUDGET_S) -> None:
        self.end = time.monotonic() + seconds

    def left(self, cap: float = float("inf")) -> float:
        """Seconds until the deadline (never below 0), at most `cap`."""
        return max(0.0, min(cap, self.end - time.monotonic()))


class SlackService:
    """What the listeners do, kept apart from Bolt's wiring so it reads top to bottom."""

    def __init__(
        self,
        settings: Settings,
        client: Any,
        workbench: Workbench,
        queue: RestartQueue,
        *,
        clock: Callable[[], datetime] = utcnow,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.client = client
        self.workbench = workbench
        self.queue = queue
        self.clock = clock
        self.monotonic = monotonic
        self.lang = settings.message_language
        self._group: tuple[float, frozenset[str]] = (float("-inf"), frozenset())  # never read yet
        self._pool = ThreadPoolExecutor(max_workers=4 + len(settings.workbench_zones), thread_name_prefix="reads")

    # ---- who is asking ---------------------------------------------------------------------
    def caller(self, user_id: str, workspace: str | None) -> Caller:
        """Identity from the Slack profile email (users.info, scope users:read.email). Raises if Slack is down.

        `workspace` is the app's own team (auth.test, which Bolt makes and keeps in the request's context):
        a member of another one (Slack Connect), a bot, a deactivated account or an unconfirmed email is
        refused whatever its email says; an email that is not plain ASCII names nobody (shared/core/identity.py)."""
        from slack_sdk.errors import SlackApiError  # noqa: PLC0415

        try:
            response = self.client.users_info(user=user_id)
        except SlackApiError as exc:
            if exc.response.get("error") in ("user_not_found", "user_not_visible"):
                return Caller(user_id, None, False)  # an answer, not an outage: nobody we can identify
            raise
        user = _obj(response.get("user"))
        refused = refusal(user, workspace)
        if refused is not None:
            log.warning("Slack user %s refused: %s", user_id, refused.value)
            return Caller(user_id, None, False, refused)
        written = _obj(user.get("profile")).get("email")
        email = identity(written)
        not_plain = email is None and isinstance(written, str) and bool(written.strip())
        if not_plain:
            log.warning("Slack user %s has a profile email that is not plain ASCII: it names nobody", user_id)
        organizer = bool(email and email in self.settings.organizer_emails) or self._in_organizer_group(user_id)
        return Caller(user_id, email, organizer, email_not_plain=not_plain)

    def _in_organizer_group(self, user_id: str) -> bool:
        """ORGANIZER_USERGROUP's members, read at most every USERGROUP_TTL_S. Fails closed: when the list
        can't be refreshed, nobody is an organizer through the group (ORGANIZER_EMAILS still counts) until
        it can, so someone removed from the group is not kept on by an outage."""
        group = self.settings.organizer_usergroup
        if not group:
            return False
        fetched, members = self._group
        if self.monotonic() - fetched > USERGROUP_TTL_S:
            try:
                users = self.client.usergroups_users_list(usergroup=group).get("users") or []
                members = frozenset(str(u) for u in users)
                self._group = (self.monotonic(), members)
            except Exception as exc:  # noqa: BLE001 - nobody, and asked again on the next request
                log.warning("could not read the organizer user group; nobody is an organizer through it: %s",
                            type(exc).__name__)
                self._group = (float("-inf"), frozenset())
                return False
        return user_id in members

    # ---- /restart-notebook -----------------------------------------------------------------
    def command(
        self, body: dict[str, Any], deadline: Deadline | None = None, *, workspace: str | None
    ) -> str | dict[str, Any]:
        """The acknowledgement to send (text, or a message dict with blocks), ready before the deadline.
        `workspace`: the app's own team id (see caller)."""
        deadline = deadline or Deadline()
        user_id = str(body.get("user_id", ""))
        raw = str(body.get("text", ""))
        parsed = parse_command(raw)
        fields: dict[str, Any] = {"user": user_id, "verb": parsed.verb.value, "target": parsed.target,
                                  "text_length": len(raw)}
        help_text = messages.text("cmd.help", self.lang)
        if parsed.verb is Verb.HELP:
            self._audit("help", fields)
            return help_text
        if parsed.verb is Verb.USAGE:
            self._audit("unusable input", fields, reason=parsed.problem)
            return messages.text("cmd.unusable", self.lang, problem=parsed.problem, help=help_text)
        # Who is asking and what exists are independent reads: make them at once (the 3-second budget).
        if parsed.verb is Verb.RESTART and not self.queue.ready:
            self._pool.submit(self._make_publisher_during_reads)
        caller_future = self._pool.submit(self.caller, user_id, workspace)
        zone_futures = [
            self._pool.submit(self.workbench.list, self.settings.project, (zone,))
            for zone in self.settings.workbench_zones
        ]
        # Waits cut short at READS_S: a read still running goes on in its thread, bounded by its client's timeout.
        reads = Deadline(deadline.left(READS_S))
        try:
            caller = caller_future.result(timeout=reads.left())
        except Exception as exc:  # noqa: BLE001 - Slack itself failing or slow: say so, do nothing
            said_if_misconfigured(slack_error(exc), method="users.info")
            self._audit("denied", fields, reason=f"users.info failed: {type(exc).__name__}")
            return messages.text("deny.unavailable", self.lang, service="Slack")
        fields.update(requester=caller.email, organizer=caller.is_organizer)
        if caller.refused is not None:
            self._audit("denied", fields, reason=f"Slack user refused: {caller.refused.value}")
            return self._refused(caller.refused)
        try:
            instances = [view for future in zone_futures for view in future.result(timeout=reads.left())]
        except Exception as exc:  # noqa: BLE001 - Workbench failing or slow: say so, do nothing
            self._audit("denied", fields, reason=f"instances.list failed: {type(exc).__name__}")
            return messages.text("deny.unavailable", self.lang, service="Workbench")
        if parsed.verb is Verb.STATUS:
            return self._status(caller, instances, fields)
        if parsed.verb is Verb.BIGGER:
            return self._bigger(caller, parsed.target, instances, fields)

        decision = authorize_restart(
            caller, parsed.target, instances, now=self.clock(), policy=self.settings.policy,
            min_interval=self.settings.manual_restart_interval,
        )
        fields["answer"] = decision.answer.value
        if not decision.allowed or decision.instance is None:
            self._audit("denied", fields, reason=decision.answer.value)
            return self._denial(decision.answer, caller, parsed.target, decision)
        instance = decision.instance
        digest = slack_request_digest(body)
        if digest in History.from_labels(instance.labels).acted:  # the same signed request, sent again
            self._audit("replay refused", fields, reason="this Slack request was already acted on")
            return messages.text("cmd.replayed", self.lang)
        request = RestartRequest(
            action=Action.RESTART,
            trigger=Trigger.SLASH_COMMAND,
            instance=instance.ref.full_name,
            requested_at=self.clock(),
            event_id=f"slack-{body.get('trigger_id') or user_id + str(time.time_ns())}",
            requester=Requester(user_id, caller.email or "", caller.is_organizer),
            response_url=self._response_url(body.get("response_url")),
            slack_request=digest,
        )
        fields["instance"] = instance.ref.name
        unsent = self._publish(request, deadline, fields)
        if unsent is not None:
            return unsent
        self._audit("restart queued", fields)
        return messages.text("cmd.queued", self.lang, instance=instance.ref.name)

    def _publish(self, request: RestartRequest, deadline: Deadline, fields: dict[str, Any]) -> str | None:
        """Queue the request within what is left of the deadline; None when it was queued, else what to say.

        Never pretends: refused means nothing was queued; unconfirmed in time means it may have been."""
        seconds = deadline.left(PUBLISH_S)
        if seconds < MIN_CALL_S:
            self._audit("denied", fields, reason="no time left to publish before Slack's deadline")
            return messages.text("deny.unavailable", self.lang, service="the restart queue")
        try:
            self.queue.publish(request, timeout_s=seconds)
        except PublishUnconfirmedError as exc:
            self._audit("maybe queued", fields, reason=str(exc))
            return messages.text("queue.unconfirmed", self.lang, name=request.instance.rsplit("/", 1)[-1])
        except Exception as exc:  # noqa: BLE001 - nothing was queued: tell the user, never pretend
            self._audit("denied", fields, reason=f"publish failed: {type(exc).__name__}")
            return messages.text("deny.unavailable", self.lang, service="the restart queue")
        return None

    def _make_publisher_during_reads(self) -> None:
        """Cold start: the publisher's imports (~80 ms of CPU) while the reads wait on the network.

        After the Workbench client, which the reads need first: imports share the GIL, so two at
        once would only delay the reads' requests by as much as they save.
        """
        _ = self.workbench.client
        _ = self.queue.publisher

    def _bigger(
        self, caller: Caller, target: str | None, instances: list[InstanceView], fields: dict[str, Any]
    ) -> str:
        """A participant asks for more memory: the request goes to the organizers, who approve or deny."""
        found = find_target(caller, target, instances)
        fields["answer"] = found.answer.value
        if not found.allowed or found.instance is None:
            self._audit("bigger denied", fields, reason=found.answer.value)
            return self._denial(found.answer, caller, target, found, verb=Verb.BIGGER)
        instance = found.instance
        current = instance.machine_type
        ladder = self.settings.machine_ladder
        bigger = next_size(current, ladder, gpus=bool(instance.accelerators))
        if bigger is None:
            self._audit("bigger: nothing to offer", fields, instance=instance.ref.name, machine_type=current)
            if current == ladder[-1]:
                return messages.text("resize.largest", self.lang, instance=instance.ref.name, current=current)
            why = messages.text("resize.why.no_fit" if current in ladder else "resize.why.off_ladder", self.lang,
                                current=current, ladder=", ".join(ladder))
            return messages.text("resize.no_offer", self.lang, instance=instance.ref.name, current=current, why=why)
        params = {
            "instance": instance.ref.name, "current": current, "next": bigger,
            "current_mem": memory_text(current), "next_mem": memory_text(bigger),
            "cost": cost_text(current, bigger, self.settings.machine_prices, self.lang),
            "requester": f"<@{caller.slack_user_id}>",
        }
        line = messages.text("resize.request", self.lang, **params)
        blocks = resize_request_blocks(line, instance.ref, bigger, caller.slack_user_id, self.lang)
        try:
            self.client.chat_postMessage(channel=self.settings.slack_alert_channel, text=line, blocks=blocks)
        except Exception as exc:  # noqa: BLE001
            channel = self.settings.slack_alert_channel
            said_if_misconfigured(slack_error(exc), method="chat.postMessage", channel=channel, alert_channel=channel)
            self._audit("bigger denied", fields, reason=f"chat.postMessage failed: {type(exc).__name__}")
            return messages.text("deny.unavailable", self.lang, service="Slack")
        self._audit("bigger requested", fields, instance=instance.ref.name, machine_type=bigger)
        return messages.text("resize.asked", self.lang, **params)

    def _denial(self, answer: Answer, caller: Caller, target: str | None, decision: Any,
                *, verb: Verb = Verb.RESTART) -> str:
        name = target or (decision.instance.ref.name if decision.instance else "")
        lang = self.lang
        if verb is Verb.BIGGER:  # asks for a machine, restarts nothing: refused in its own words
            names = ", ".join(f"`{i.ref.name}`" for i in decision.choices)
            if answer is Answer.CHOOSE:
                return messages.text("cmd.choose_bigger", lang, names=names)
            if answer is Answer.NO_INSTANCE and caller.is_organizer:  # organizers own none: they name one
                return messages.text("cmd.bigger_name_it", lang)
            if answer is Answer.NOT_YOURS:
                return messages.text("deny.not_yours_bigger", lang, name=name)
        if answer is Answer.CHOOSE:
            return messages.text("cmd.choose", lang, names=", ".join(f"`{i.ref.name}`" for i in decision.choices))
        if answer is Answer.NO_EMAIL:
            return messages.text("deny.email_not_plain" if caller.email_not_plain else "deny.no_email", lang)
        if answer is Answer.NO_INSTANCE:
            return messages.text("deny.no_instance", lang, email=caller.email or "")
        if answer is Answer.NOT_FOUND:
            return messages.text("deny.not_found", lang, name=name)
        if answer is Answer.AMBIGUOUS:
            return messages.text("deny.ambiguous", lang, name=name,
                                 zones=", ".join(i.ref.zone for i in decision.choices))
        if answer is Answer.NOT_YOURS:
            return messages.text("deny.not_yours", lang, name=name)
        if answer is Answer.NOT_RESTARTABLE:
            return messages.text("deny.not_restartable", lang, name=name, state=decision.instance.state.value)
        if answer is Answer.PAUSED:
            return messages.text("deny.paused", lang, name=name)
        if answer is Answer.ALREADY_RESTARTING:
            if decision.since is None:  # STARTING and the like, with no restart of ours on record
                return messages.text("deny.starting", lang, name=name, state=decision.instance.state.value)
            return messages.text("deny.already", lang, name=name,
                                 time=messages.slack_date(decision.since, self.settings.tz))
        seconds = int((decision.retry_after or timedelta(0)).total_seconds()) + 1
        if decision.since is not None:  # the last restart's end was not seen: not "restarted a moment ago"
            return messages.text("deny.too_soon_unconfirmed", lang, name=name, seconds=seconds,
                                 time=messages.slack_date(decision.since, self.settings.tz))
        return messages.text("deny.too_soon", lang, name=name, seconds=seconds)

    def _refused(self, why: Refusal) -> str:
        key = "deny.unconfirmed_email" if why is Refusal.UNCONFIRMED_EMAIL else "deny.not_member"
        return messages.text(key, self.lang)

    def _status(self, caller: Caller, instances: list[InstanceView], fields: dict[str, Any]) -> dict[str, Any]:
        lang = self.lang
        if caller.is_organizer:
            shown = instances
            title = messages.text("status.title.fleet", lang, count=len(instances))
        else:
            shown = [i for i in instances if is_owner(caller, i)]
            title = messages.text("status.title.mine", lang)
        self._audit("status", fields, shown=len(shown))
        if not shown:
            return {"text": messages.text("status.none", lang)}
        rows = status_rows(shown, self.clock(), self.settings.policy)
        never = messages.text("status.never", lang)
        lines = [messages.text("status.header", lang)]
        for row in rows[:STATUS_ROWS]:
            view = row.instance
            # Paused is a mark beside the state, not a state: a paused instance may be ACTIVE or STOPPED.
            state = messages.text("status.paused", lang, state=view.state.value) if row.paused else view.state.value
            # A code block shows no Slack dates: the time in DISPLAY_TIMEZONE, with its zone.
            last = row.last_kill.astimezone(self.settings.tz).strftime("%m-%d %H:%M %Z") if row.last_kill else never
            owner = " ".join((row.owner or "-").split())[:SHOWN_MAX]  # proxy-user-mail: outside text
            lines.append(f"{view.ref.name} | {state} | {view.health_state.replace('HEALTH_STATE_', '')} | "
                         f"{last} | {row.restarts} | {owner}")
        safe = [messages.escape(line.replace("```", "'''")) for line in lines]  # they stay inside the code block
        table, left_out = table_blocks(safe, max_blocks=MAX_BLOCKS - 2)  # the title before, "…and N more" after
        left_out += len(rows) - min(len(rows), STATUS_ROWS)
        blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": f"*{title}*"}}, *table]
        if left_out:
            more = messages.text("status.more", lang, count=left_out)
            blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": more}]})
        return {"text": title, "blocks": blocks}

    # ---- organizer buttons -----------------------------------------------------------------
    def replier(self, response_url: Any, deadline: Deadline) -> Callable[..., None]:
        """A reply through response_url that fits before the ack: one attempt, at most REPLY_S and never past
        the deadline. Bolt's respond would wait up to 30 s, and Slack would show the press as failed.
        (A request that was queued is answered again by the worker, which has the same response_url.)"""

        def reply(**message: Any) -> None:
            seconds = deadline.left(REPLY_S)
            url = self._response_url(response_url)
            if not url or seconds < MIN_CALL_S:
                log.warning("response_url post skipped: %s", "no time left" if url else "no Slack response_url")
                return
            from slack_sdk.webhook import WebhookClient  # noqa: PLC0415

            # urllib takes a float; slack_sdk annotates int.
            client = WebhookClient(url, timeout=cast(int, seconds), retry_handlers=[])
            status = client.send_dict(message).status_code
            if status != 200:
                log.warning("response_url post answered %s", status)

        return reply

    def _response_url(self, value: Any) -> str:
        """The body's response_url when it is one Slack issues (under SLACK_RESPONSE_URL_BASE), else "": no
        answer is posted, and none is queued for the worker to post, anywhere else."""
        if not value:
            return ""
        if not is_slack_response_url(value, self.settings.slack_response_url_base):
            log.warning("a request's response_url is not under SLACK_RESPONSE_URL_BASE: nothing will be posted to it")
            return ""
        return str(value)

    def button(
        self, body: dict[str, Any], reply: Callable[..., Any], deadline: Deadline | None = None, *,
        workspace: str | None,
    ) -> None:
        """An organizer's press: checked, queued for the worker, and answered through `reply` (see replier).
        `workspace`: the app's own team id (see caller)."""
        deadline = deadline or Deadline()

        def respond(**kwargs: Any) -> None:
            """Best effort, like every Slack call: a bad or unreachable response_url must not turn into an
            error for a press that was already handled (Bolt would answer 500 after the request was queued)."""
            try:
                reply(**kwargs)
            except Exception as exc:  # noqa: BLE001
                log.warning("response_url post failed: %s", type(exc).__name__)

        user_id = str(_obj(body.get("user")).get("id", ""))
        actions = body.get("actions") or [{}]
        action_id = str(actions[0].get("action_id", ""))
        value = str(actions[0].get("value", ""))
        fields: dict[str, Any] = {"user": user_id, "button": action_id}
        action = BUTTON_ACTIONS.get(action_id)
        machine_type, asked_by = "", ""
        try:
            if action_id in (ACTION_RESIZE, ACTION_RESIZE_DENY):
                ref, machine_type, asked_by = parse_resize_value(value)
            else:
                ref = InstanceRef.parse(value)
        except ValueError:
            self._audit("button rejected", fields, reason="the button's value is not an instance name")
            return
        fields["instance"] = ref.name
        if action is None and action_id != ACTION_RESIZE_DENY:
            self._audit("button rejected", fields, reason="unknown action")
            return
        labels = self._pool.submit(self.workbench.get, ref, retry=False)  # what was already acted on, alongside
        reads = Deadline(deadline.left(READS_S))  # both reads share READS_S, as the command's do
        try:
            caller = self._pool.submit(self.caller, user_id, workspace).result(timeout=reads.left())
        except Exception as exc:  # noqa: BLE001 - Slack failing or slow
            self._audit("denied", fields, reason=f"users.info failed: {type(exc).__name__}")
            respond(text=messages.text("deny.unavailable", self.lang, service="Slack"), replace_original=False)
            return
        fields.update(requester=caller.email, organizer=caller.is_organizer)
        if caller.refused is not None:
            self._audit("denied", fields, reason=f"Slack user refused: {caller.refused.value}")
            respond(text=self._refused(caller.refused), replace_original=False)
            return
        if not caller.is_organizer:
            self._audit("denied", fields, reason="not an organizer")
            respond(text=messages.text("deny.organizers_only", self.lang), replace_original=False)
            return
        container = _obj(body.get("container"))
        original = _obj(body.get("message")).get("blocks")
        original = original if isinstance(original, list) else []
        if action is None:  # Deny: only Slack changes, right here
            self._deny_resize(body, ref, asked_by, tuple(b for b in original if isinstance(b, dict)), caller,
                              deadline)
            self._audit("resize denied", fields)
            return
        digest = slack_request_digest(body)
        if self._acted_on(digest, labels, reads):
            self._audit("replay refused", fields, reason="this Slack request was already acted on")
            return
        request = RestartRequest(
            action=action,
            trigger=Trigger.BUTTON,
            instance=ref.full_name,
            requested_at=self.clock(),
            event_id=f"button-{actions[0].get('action_ts') or time.time_ns()}-{user_id}",
            requester=Requester(user_id, caller.email or "", True),
            response_url=self._response_url(body.get("response_url")),
            alert_ts=str(container.get("message_ts", "")),
            alert_channel=str(container.get("channel_id", "") or _obj(body.get("channel")).get("id", "")),
            alert_blocks=tuple(b for b in original if isinstance(b, dict))[:50],
            machine_type=machine_type,
            asked_by=asked_by,
            slack_request=digest,
        )
        fields["action"] = action.value
        unsent = self._publish(request, deadline, fields)
        if unsent is not None:
            respond(text=unsent, replace_original=False)
            return
        self._audit("button queued", fields)
        respond(text=messages.text(f"button.ack.{action.value}", self.lang, name=ref.name), replace_original=False)

    def _acted_on(self, digest: str, view: Future[InstanceView], reads: Deadline) -> bool:
        """Whether the instance records this request as acted on. A read that fails or is late (past `reads`)
        says no: the worker, which reads the labels again before acting (one at a time per instance), drops
        it then."""
        try:
            return digest in History.from_labels(view.result(timeout=reads.left()).labels).acted
        except Exception as exc:  # noqa: BLE001
            log.info("replay check left to the worker: the instance was not read (%s)", type(exc).__name__)
            return False

    def _deny_resize(
        self, body: dict[str, Any], ref: InstanceRef, asked_by: str, original: tuple[dict[str, Any], ...],
        caller: Caller, deadline: Deadline,
    ) -> None:
        """Only Slack changes, before the ack: each call is started only while a whole client timeout is
        left, so what does not fit is left out (and logged) rather than holding the press past Slack's 3 s."""

        def time_for(what: str) -> bool:
            if deadline.left() >= SLACK_CALL_S:
                return True
            log.warning("a denied resize not reported in %s: no time left before the ack", what)
            return False

        container = _obj(body.get("container"))
        line = messages.text("resize.denied_by", self.lang, who=f"<@{caller.slack_user_id}>",
                             time=messages.slack_date(self.clock(), self.settings.tz))
        try:
            if not time_for("the request's message"):
                return
            self.client.chat_update(channel=str(container.get("channel_id", "")),
                                    ts=str(container.get("message_ts", "")), text=line,
                                    blocks=without_buttons(original, line))
            if not asked_by or not time_for("the participant's DM"):
                return
            dm = self.client.conversations_open(users=asked_by)["channel"]["id"]
            if time_for("the participant's DM"):
                self.client.chat_postMessage(channel=dm, text=messages.text("resize.denied_dm", self.lang,
                                                                             instance=ref.name))
        except Exception as exc:  # noqa: BLE001 - best effort: the decision stands either way
            log.warning("could not report a denied resize: %s", type(exc).__name__)

    def _audit(self, message: str, fields: dict[str, Any], **extra: Any) -> None:
        audit(f"/restart-notebook: {message}", trigger="slack", **fields, **extra)


def slack_request_digest(body: Mapping[str, Any]) -> str:
    """What makes one Slack request itself, digested for a label: a command's trigger_id; a button's action_ts
    and the ts of the message it sits on. Slack retries neither (X-Slack-Retry-Num is the Events API's), so the
    same again is a replay of the signed request within its 5 minutes. A body without them (not as Slack sends
    it) is known by all of its fields, which a replay repeats byte for byte."""
    if "actions" in body:
        actions = body.get("actions")
        action = _obj(actions[0]) if isinstance(actions, list) and actions else {}
        own = f"button:{action.get('action_ts', '')}:{_obj(body.get('container')).get('message_ts', '')}"
        complete = bool(action.get("action_ts"))
    else:
        own = f"command:{body.get('trigger_id', '')}"
        complete = bool(body.get("trigger_id"))
    return acted_digest(own if complete else "body:" + json.dumps(body, sort_keys=True, default=str))


def _obj(value: Any) -> dict[str, Any]:
    """A payload field that should be an object; anything else reads as empty (Bolt passes what it got)."""
    return value if isinstance(value, dict) else {}


def build_app(settings: Settings, service_factory: Callable[[Any], SlackService]) -> Any:
    """One Bolt app; process_before_response because Cloud Functions stops work after the response."""
    from slack_bolt import App  # noqa: PLC0415
    from slack_sdk import WebClient  # noqa: PLC0415

    # Every call this client makes is made before an ack: short, and no retry (there is no time for one).
    kwargs: dict[str, Any] = {"token": settings.slack_bot_token, "timeout": SLACK_CALL_S, "retry_handlers": []}
    if settings.slack_api_url:
        kwargs["base_url"] = settings.slack_api_url
    client = WebClient(**kwargs)
    app = App(client=client, signing_secret=settings.slack_signing_secret, process_before_response=True)
    service = service_factory(client)

    @app.command(COMMAND)
    def restart_notebook(ack: Callable[..., None], body: dict[str, Any], context: dict[str, Any]) -> None:
        context[LISTENER_RAN] = True
        reply = service.command(body, _deadline(context), workspace=_workspace(context))
        if isinstance(reply, dict):
            ack(**reply)
        else:
            ack(text=reply)

    @app.action(re.compile("^(" + "|".join(map(re.escape, ALL_ACTIONS)) + ")$"))
    def organizer_button(ack: Callable[..., None], body: dict[str, Any], context: dict[str, Any]) -> None:
        context[LISTENER_RAN] = True
        ack()
        deadline = _deadline(context)
        service.button(body, service.replier(body.get("response_url"), deadline), deadline,
                       workspace=_workspace(context))

    @app.error
    def unroutable_payload(error: Exception, context: dict[str, Any]) -> Any:
        """Bolt's middleware and matchers index a payload as Slack shapes it (actions[0]["action_id"],
        event.get, ...) and raise on any other shape: a 400 with the reason logged, nothing done. Our own
        listeners' failures, and Slack unreachable (auth.test), stay Bolt's loud 500."""
        from slack_bolt import BoltResponse  # noqa: PLC0415
        from slack_sdk.errors import SlackClientError  # noqa: PLC0415

        if context.get(LISTENER_RAN) or isinstance(error, SlackClientError | OSError):
            log.error("slack request failed", exc_info=error)
            return None
        audit("slack request rejected", severity=logging.WARNING, decision="rejected",
              reason=f"a payload of a shape Slack does not send ({type(error).__name__} in Bolt's routing)")
        return BoltResponse(status=400, body="bad request")

    return app


def answer(
    app: Any, raw_body: str, *, headers: Mapping[str, Any], verifier: SignatureVerifier, query: str = ""
) -> Any:
    """The BoltResponse to one HTTP request: 401 unless Slack signed it; a signed body of a shape Slack
    never sends is a logged 400.

    The signature comes first because Bolt parses a body before its own middleware verifies it: without
    this, anyone could make the parsing below fail and write an audit record, and a timestamp that is not
    a number (Bolt's int() raising in its middleware) read as a bad payload instead of a bad signature.
    Bolt reads a payload as Slack shapes it, without checking: its parsing (build_context) and the
    payload views it hands every listener raise on anything else. Signed such bodies come only from
    someone who holds the signing secret; they get a 400 and a logged reason, and nothing is done.
    (What Bolt's middleware and matchers raise on is answered by build_app's error handler.)
    """
    from slack_bolt import BoltResponse  # noqa: PLC0415

    deadline = Deadline()  # from the moment the request is ours
    if not signed_by_slack(verifier, raw_body, headers):
        note_unsigned()
        return BoltResponse(status=401, body={"error": "invalid request"})  # Bolt's own answer, word for word
    try:
        request = bolt_request(raw_body, headers=headers, query=query)
        problem = unroutable(request.body)
    except Exception as exc:  # noqa: BLE001 - any parse failure is the body's fault, never ours
        problem = f"unparseable request body ({type(exc).__name__})"
    if problem:
        audit("slack request rejected", severity=logging.WARNING, decision="rejected", reason=problem)
        return BoltResponse(status=400, body="bad request")
    request.context[ACK_DEADLINE] = deadline
    return app.dispatch(request)


def _workspace(context: Mapping[str, Any]) -> str | None:
    """The app's own team id, from the auth.test Bolt makes (SingleTeamAuthorization keeps its result in the
    context as authorize_result); None, and so nobody may act, when Bolt has none."""
    result = context.get("authorize_result")
    team = getattr(result, "team_id", None)
    return team if isinstance(team, str) and team else None


def _deadline(context: Mapping[str, Any]) -> Deadline:
    """The request's deadline, set by answer(); a fresh one when Bolt is driven some other way."""
    deadline = context.get(ACK_DEADLINE)
    return deadline if isinstance(deadline, Deadline) else Deadline()


def signed_by_slack(verifier: SignatureVerifier, raw_body: str, headers: Mapping[str, Any]) -> bool:
    """slack_sdk's check of the v0 signature and the 5-minute window; anything it raises on is unsigned."""
    try:
        return verifier.is_valid_request(raw_body, {str(k): _first(v) for k, v in headers.items()})
    except Exception:  # noqa: BLE001 - e.g. a timestamp that is not a number: not signed by Slack
        return False


def _first(value: Any) -> str:
    """A header as one string (Bolt's own headers hold lists)."""
    if isinstance(value, list | tuple):
        return str(value[0]) if value else ""
    return str(value)


def unroutable(body: Mapping[str, Any]) -> str | None:
    """Why Bolt could not even hand this payload to a listener or an error handler, or None.

    Bolt builds every payload view (to_action, to_step, ...) for every listener's and error handler's
    arguments, and they index the payload as Slack shapes it: those views are the oracle here.
    """
    from slack_bolt.request import payload_utils as payload  # noqa: PLC0415

    readers = (payload.to_options, payload.to_shortcut, payload.to_action, payload.to_view, payload.to_command,
               payload.to_event, payload.to_message, payload.to_step)
    as_bolt_has_it = dict(body)
    for read in readers:
        try:
            read(as_bolt_has_it)
        except Exception as exc:  # noqa: BLE001 - what Bolt would raise on before any of our code runs
            return f"a payload of a shape Slack does not send ({type(exc).__name__} in Bolt's {read.__name__})"
    return None


def bolt_request(raw_body: str, *, headers: Mapping[str, Any], query: str = "") -> Any:
    """A BoltRequest, with slack-bolt 1.30's reading of the word "payload" undone.

    Bolt takes any form body that contains the text "payload" for an interactivity
    payload (`parse_body` tests `"payload" in body`), so a slash command typed in
    #payload-team, or with "payload" in its text, parses to {} and is answered 404.
    Here such a body, which has no `payload` field, is read as the form it is. The
    signature is checked on the raw body, which stays exactly as it came.
    """
    from urllib.parse import parse_qsl  # noqa: PLC0415

    from slack_bolt.context import BoltContext  # noqa: PLC0415
    from slack_bolt.request import BoltRequest  # noqa: PLC0415
    from slack_bolt.request.internals import build_context  # noqa: PLC0415

    request = BoltRequest(body=raw_body, query=query, headers=dict(headers))
    json_body = request.content_type == "application/json" or raw_body.startswith("{")
    if request.body or json_body or "payload" not in raw_body:
        return request  # parsed, or not a form Bolt could have misread
    form = dict(parse_qsl(raw_body, keep_blank_values=True))
    if "payload" in form:
        return request
    request.body = form
    request.context = build_context(BoltContext({}), form)
    return request
