"""What the app answers a person (each refusal in its words, the status table), worked out without I/O so the same
decision always reads the same."""

# Given the words (messages.For), the settings and the time, the same answer every time; the status reply is a code
# block, one instance a row, bounded to what a Slack message holds.

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from shared.adapters.config import Settings
from shared.adapters.slack_notify import SHOWN_MAX
from shared.core import messages
from shared.core.blocks import MAX_BLOCKS, cost_text, memory_text, table_blocks
from shared.core.commands import Answer, Caller, Refusal, Verb, is_owner, status_rows
from shared.core.machines import next_size
from shared.core.models import InstanceState, InstanceView

STATUS_ROWS = 60  # `status` shows the instances needing attention most; it says how many more there are


def obj(value: Any) -> dict[str, Any]:
    """A payload field that should be an object, anything else read as empty, because Bolt passes on whatever it got."""
    return value if isinstance(value, dict) else {}


def refused(say: messages.For, why: Refusal) -> str:
    """The words for a Slack user refused whoever they are (not a member here, an unconfirmed email), so they know it is
    not about their notebook."""
    return say("deny.unconfirmed_email") if why is Refusal.UNCONFIRMED_EMAIL else say("deny.not_member")


def denial(say: messages.For, settings: Settings, answer: Answer, caller: Caller, target: str | None,
           decision: Any, *, verb: Verb = Verb.RESTART) -> str:
    """Why `verb` was refused, in the words of its `answer`, so each decision of authorize_restart or find_target is
    explained one way."""
    name = target or (decision.instance.ref.name if decision.instance else "")
    if answer is Answer.NOT_FOUND and not caller.is_organizer:  # as "not yours": no probing for names (issue 25)
        answer = Answer.NOT_YOURS
    if verb is Verb.BIGGER:  # asks for a machine, restarts nothing: refused in its own words
        if answer is Answer.CHOOSE:
            return say("cmd.choose_bigger", names=", ".join(f"`{i.ref.name}`" for i in decision.choices))
        if answer is Answer.NO_INSTANCE and caller.is_organizer:  # organizers own none: they name one
            return say("cmd.bigger_name_it")
        if answer is Answer.NOT_YOURS:
            return say("deny.not_yours_bigger", name=name)
    if answer is Answer.CHOOSE:
        return say("cmd.choose", names=", ".join(f"`{i.ref.name}`" for i in decision.choices))
    if answer is Answer.NO_EMAIL:
        return say("deny.email_not_plain") if caller.email_not_plain else say("deny.no_email")
    if answer is Answer.NO_INSTANCE:
        return say("deny.no_instance", email=caller.email or "")
    if answer is Answer.NOT_FOUND:
        return say("deny.not_found", name=name)
    if answer is Answer.AMBIGUOUS:
        return say("deny.ambiguous", name=name, zones=", ".join(i.ref.zone for i in decision.choices))
    if answer is Answer.NOT_YOURS:
        return say("deny.not_yours", name=name)
    if answer is Answer.HELD:
        since = (say("deny.held.since", time=messages.slack_date(decision.since, settings.tz))
                 if decision.since is not None else "")
        return say("deny.held", name=name, since=since)
    if answer is Answer.NOT_RESTARTABLE:
        if decision.instance.state is InstanceState.STOPPING:
            return say("deny.stopping", name=name)
        return say("deny.not_restartable", name=name, state=decision.instance.state.value)
    if answer is Answer.PAUSED:
        return say("deny.paused", name=name)
    if answer is Answer.ALREADY_RESTARTING:
        if decision.since is None:  # STARTING and the like, with no restart of ours on record
            return say("deny.starting", name=name, state=decision.instance.state.value)
        return say("deny.already", name=name, time=messages.slack_date(decision.since, settings.tz))
    seconds = int((decision.retry_after or timedelta(0)).total_seconds()) + 1
    if decision.since is not None:  # the last restart's end was not seen: not "restarted a moment ago"
        return say("deny.too_soon_unconfirmed", name=name, seconds=seconds,
                   time=messages.slack_date(decision.since, settings.tz))
    return say("deny.too_soon", name=name, seconds=seconds)


def bigger_words(say: messages.For, settings: Settings, instance: InstanceView, asker: str) -> dict[str, str] | str:
    """The words of a request for `instance`'s next machine up the ladder (resize.request, .queued, .asked: "next" is
    the machine), or the answer that there is none, so slack_app's answer and the worker's post say the same."""
    current, ladder = instance.machine_type, settings.machine_ladder
    bigger = next_size(current, ladder, gpus=bool(instance.accelerators))
    name = instance.ref.name
    if bigger is None:
        if current == ladder[-1]:
            return say("resize.largest", instance=name, current=current)
        why = (say("resize.why.no_fit", current=current, ladder=", ".join(ladder)) if current in ladder
               else say("resize.why.off_ladder", current=current, ladder=", ".join(ladder)))
        return say("resize.no_offer", instance=name, current=current, why=why)
    return {"instance": name, "current": current, "next": bigger, "current_mem": memory_text(current),
            "next_mem": memory_text(bigger), "cost": cost_text(current, bigger, settings.machine_prices,
                                                               settings.message_language),
            "requester": f"<@{asker}>"}


def shown_instances(caller: Caller, instances: list[InstanceView]) -> list[InstanceView]:
    """What `status` shows a caller, the fleet to an organizer and a participant their own, so nobody reads another's
    notebooks."""
    return instances if caller.is_organizer else [i for i in instances if is_owner(caller, i)]


def status_reply(say: messages.For, settings: Settings, caller: Caller, instances: list[InstanceView],
                 now: datetime) -> dict[str, Any]:
    """`status` as blocks, a title then the rows needing attention first, bounded to what one Slack message holds."""
    shown = shown_instances(caller, instances)
    title = say("status.title.fleet", count=len(instances)) if caller.is_organizer else say("status.title.mine")
    if not shown:
        return {"text": say("status.none")}
    rows = status_rows(shown, now, settings.policy)
    never = say("status.never")
    lines = [say("status.header")]
    for row in rows[:STATUS_ROWS]:
        view = row.instance
        # Paused is a mark beside the state, not a state: a paused instance may be ACTIVE or STOPPED.
        state = view.state.value
        if row.stopped is not None:  # why it is stopped, where the bot stopped it: who may start it again
            state = say("status.stopped.held" if row.stopped.held else "status.stopped.open", state=state)
        if row.paused:
            state = say("status.paused", state=state)
        # A code block shows no Slack dates: the time in DISPLAY_TIMEZONE, with its zone.
        last = row.last_kill.astimezone(settings.tz).strftime("%m-%d %H:%M %Z") if row.last_kill else never
        owner = " ".join((row.owner or "-").split())[:SHOWN_MAX]  # proxy-user-mail: outside text
        lines.append(f"{view.ref.name} | {state} | {view.health_state.replace('HEALTH_STATE_', '')} | "
                     f"{last} | {row.restarts} | {row.kills_today}/{row.interrupts_today} | {owner}")
    safe = [messages.escape(line.replace("```", "'''")) for line in lines]  # they stay inside the code block
    table, left_out = table_blocks(safe, max_blocks=MAX_BLOCKS - 2)  # the title before, "…and N more" after
    left_out += len(rows) - min(len(rows), STATUS_ROWS)
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": f"*{title}*"}}, *table]
    if left_out:
        more = say("status.more", count=left_out)
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": more}]})
    return {"text": title, "blocks": blocks}
