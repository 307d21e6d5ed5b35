"""Every sentence the bot writes, in English and Japanese (MESSAGE_LANGUAGE=en|ja), and the one way to word them.

Keys are stable; placeholders are str.format fields. The words live in one module per audience or flow (alerts:
the organizers' alert; commands: buttons, /restart-notebook, refusals, status; memory: warnings and bigger
machines; replies: owners' DMs and answers to requesters), merged here into CATALOGUE, where a key defined twice
fails at import. Callers bind the reader's language once, `say = messages.For(lang)`, and write each key as a
literal: tests/unit/test_message_keys.py walks the code to check that every key used exists in every language, is
given every placeholder, and that no key goes unused. Layout (Block Kit) lives in blocks.py; this package is only
words.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from typing import Any, Final

from shared.core.messages import (
    alerts,
    causes,
    charts,
    commands,
    disk,
    disk_ask,
    fleet,
    gpu,
    guard,
    memory,
    replies,
    report,
    tickets,
)
from shared.core.messages.formatting import Lang, escape, human_bytes, human_duration, local_time, slack_date

__all__ = [
    "ASK_AGAIN",
    "CATALOGUE",
    "For",
    "Lang",
    "asks_again",
    "escape",
    "human_bytes",
    "human_duration",
    "local_time",
    "placeholders",
    "said",
    "slack_date",
    "text",
    "variant",
]


def _merged(*parts: Mapping[str, dict[Lang, str]]) -> dict[str, dict[Lang, str]]:
    """The parts as one catalogue, in order; a key in two parts would make one of them silently lost, so it raises."""
    catalogue: dict[str, dict[Lang, str]] = {}
    for part in parts:
        twice = catalogue.keys() & part.keys()
        if twice:
            raise ValueError(f"message keys defined twice: {sorted(twice)}")
        catalogue.update(part)
    return catalogue


CATALOGUE: Final[dict[str, dict[Lang, str]]] = _merged(alerts.ALERTS, commands.COMMANDS, memory.MEMORY,
                                                       replies.REPLIES, guard.GUARD, charts.CHARTS, report.REPORT,
                                                       fleet.FLEET, disk.DISK, tickets.TICKETS, causes.CAUSES,
                                                       disk_ask.DISK_ASK, gpu.GPU)


def text(key: str, lang: Lang, **params: Any) -> str:
    """The message for key in lang (English when a language lacks it), with params filled in."""
    entry = CATALOGUE[key]
    template = entry.get(lang) or entry["en"]
    return template.format(**params)


class For:
    """The catalogue bound to one reader's language, once: `say = messages.For(lang)`, then `say("key", x=...)`.

    Keys are written as literals at the call, so tests/unit/test_message_keys.py can check each one exists in
    every language and is given every placeholder it has."""

    def __init__(self, lang: Lang) -> None:
        self.lang = lang

    def __call__(self, key: str, **params: Any) -> str:
        return text(key, self.lang, **params)


def variant(key: str, case: str) -> str:
    """`key.case` where the catalogue words that case apart (a failed stop, not a failed restart), else `key`."""
    specific = f"{key}.{case}"
    return specific if specific in CATALOGUE else key


def placeholders(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def said(key: str, words: str) -> bool:
    """Whether `words` hold the message `key` in any language, whatever its placeholders were given: a reader of the
    bot's answers (the bench, the tests) tells them apart by the catalogue, where a copied phrase would go stale."""
    for template in CATALOGUE[key].values():
        parts = string.Formatter().parse(template)
        pattern = "".join(re.escape(literal) + (".*?" if name is not None else "") for literal, name, _, _ in parts)
        if re.search(pattern, words, re.DOTALL):
            return True
    return False


# The answers that say nothing was done for now and to ask again: a service unreachable or failing, or Slack's
# window too short for the reads or the publish. The one list the bench and the tests read them by.
ASK_AGAIN: Final = ("deny.unavailable", "deny.failed", "deny.slow", "deny.no_time")


def asks_again(words: str) -> bool:
    """Whether `words` are one of the ASK_AGAIN answers, in any language."""
    return any(said(key, words) for key in ASK_AGAIN)
