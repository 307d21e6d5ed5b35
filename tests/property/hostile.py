"""Hostile input as hypothesis strategies, and the oracles the properties compare against.

The oracles are written independently of shared/ (character sets and splits, not the product's
regexes), so a property compares two statements of each rule instead of one with itself.

Inputs are valid templates (real LogEntries, requests, Slack payloads) with hostile parts put in: that
reaches the deep paths, where a fully random input would stop at the first check. Hypothesis chooses the
structure and the hostile names; seeded generators fill in the bulk (see "building blocks" for why). The
events built from them (times, LogEntries, CloudEvents, Monitoring incidents) are in hostile_events.py.
"""

from __future__ import annotations

import copy
import random
import string
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from hypothesis import strategies as st

PROJECT = "contest-prj"
ZONE = "asia-northeast1-a"
OTHER_ZONE = "us-central1-a"
NOW = datetime(2026, 11, 20, 4, 13, 0, tzinfo=UTC)
PUBSUB_EVENT_TYPE = "google.cloud.pubsub.topic.v1.messagePublished"
NAME_LABEL = "compute.googleapis.com/resource_name"
# The organizer buttons that queue a request, and the one that only edits Slack (deny a resize).
QUEUEING_ACTIONS = ("medic_restart", "medic_pause", "medic_resume", "medic_stop", "medic_resize")
KNOWN_ACTIONS = (*QUEUEING_ACTIONS, "medic_resize_deny")
COMMAND_KEYWORDS = ("help", "-h", "--help", "?", "status", "bigger")

# ---- oracles ---------------------------------------------------------------------------------
_LOWER = frozenset(string.ascii_lowercase)
_DIGITS = frozenset(string.digits)
_LABEL = _LOWER | _DIGITS | {"-"}


def valid_name(value: Any) -> bool:
    """A Workbench/Compute Engine instance name: RFC 1035 label of 1-63 ASCII characters."""
    return (
        isinstance(value, str)
        and 1 <= len(value) <= 63
        and value[0] in _LOWER
        and value[-1] in _LOWER | _DIGITS
        and set(value) <= _LABEL
    )


def valid_project(value: Any) -> bool:
    return (
        isinstance(value, str)
        and 6 <= len(value) <= 30
        and value[0] in _LOWER
        and value[-1] in _LOWER | _DIGITS
        and set(value) <= _LABEL
    )


def valid_zone(value: Any) -> bool:
    """region-word + area-letters + digits + zone letter, e.g. asia-northeast1-a."""
    if not isinstance(value, str):
        return False
    parts = value.split("-")
    if len(parts) != 3:
        return False
    first, middle, last = parts
    letters = len(middle) - len(middle.lstrip(string.ascii_lowercase))
    return (
        bool(first) and set(first) <= _LOWER
        and 0 < letters < len(middle) and set(middle[letters:]) <= _DIGITS
        and len(last) == 1 and last in _LOWER
    )


def valid_full_name(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    parts = value.split("/")
    return (
        len(parts) == 6
        and (parts[0], parts[2], parts[4]) == ("projects", "locations", "instances")
        and valid_project(parts[1])
        and valid_zone(parts[3])
        and valid_name(parts[5])
    )


def valid_machine_type(value: str) -> bool:
    """e2-standard-4, n2-highmem-8: a family, a dash, then lowercase letters, digits and dashes."""
    family, dash, rest = value.partition("-")
    return (
        bool(dash) and bool(family) and family[0] in _LOWER and set(family) <= _LOWER | _DIGITS
        and 1 <= len(rest) <= 40 and set(rest) <= _LABEL
    )


def valid_user_id(value: Any) -> bool:
    """A Slack user id, or none (""): U or W, then 2 to 20 ASCII capitals and digits."""
    return isinstance(value, str) and (value == "" or (
        2 < len(value) <= 21 and value[0] in "UW" and set(value[1:]) <= set(string.ascii_uppercase + string.digits)))


def valid_button_value(action_id: str, value: str) -> bool:
    """What an organizer button may carry: an instance name; for a resize, `name|machine type|requester`."""
    if action_id not in ("medic_resize", "medic_resize_deny"):
        return valid_full_name(value)
    parts = value.split("|")
    return len(parts) == 3 and valid_full_name(parts[0]) and valid_machine_type(parts[1]) and valid_user_id(parts[2])


def full_name(name: str, zone: str = ZONE, project: str = PROJECT) -> str:
    return f"projects/{project}/locations/{zone}/instances/{name}"


def encodable(value: str) -> bool:
    """Can travel over HTTP as UTF-8 (no lone surrogates)."""
    try:
        value.encode()
    except UnicodeEncodeError:
        return False
    return True


# ---- building blocks -------------------------------------------------------------------------
# Speed: hypothesis spends ~25 us per draw and ~0.3 ms per example, and 100,000 inputs per entry point (make fuzz) must
# run in seconds. So hypothesis draws the structure (which field, which kind of attack, which name) and a
# seed; a seeded random.Random fills in the bulk (edits, junk values, kernel lines). Every strategy is
# built once, at import: building strategies inside a draw costs more than the draw.
INJECTIONS = (
    '"', "'", "`", "\\", "\n", "\r\n", "\t", "\x00", "\x1b[2J", "\x7f", " ",
    "/", "../", "/..", "//", "%2F", "%2e%2e%2f", "%00", "?", "?alt=json", "#", "&", "=", ";", "|", "*", ":", ":reset",
    "@", "~", "$", "-", "--", "_", ".", ",",
    'name="x" OR 1', '" OR name="wb-bob', "x' OR '1'='1", ") OR (1=1", 'labels.owner:*', ' AND state="ACTIVE"',
    "NOT name:wb", "/* */", "$(reboot)", "`id`", "${IFS}", "{{7*7}}", "{0}", "%s%n", "\\u0000",
    "<!channel>", "<!here>", "<!everyone>", "<@U0ORG>", "<#C0ALERTS>", "<https://evil.example|click>", "*", "_", "```",
    "\u202e", "\u200b", "\u200d", "\ufeff", "\u00a0", "\u3000", "\u2028", "\u0085", "\x1c", "\u180e",
    "ı", "İ", "ſ", "\u212a", "а", "е", "о", "ｗ", "ｂ", "－", "‐", "−", "٣", "𝟙", "🙂", "\ud800", "\udfff",
)
BASE_NAMES = ("wb-alice", "wb-bob", "wb-shared", "wb-stopped", "a", "x1", "notebook-01", "wb-" + "a" * 60)
LOOKALIKES = {
    "a": ("а", "ɑ", "ａ", "à", "A"), "b": ("Ь", "ｂ", "B"), "e": ("е", "é", "E"), "i": ("і", "ı", "í", "İ"),
    "l": ("1", "I", "ⅼ", "ӏ"), "o": ("о", "0", "ο"), "c": ("с", "ϲ"), "w": ("ѡ", "ｗ", "W"), "x": ("х", "×"),
    "-": ("‐", "‑", "－", "−", "_", "—", "\u00ad"), "1": ("１", "𝟏", "٣", "l"), "s": ("ѕ", "ſ"), "k": ("\u212a", "κ"),
}
TEN_KB = 10 * 1024
SEEDS = st.integers(0, 2**32 - 1)


def weighted(*options: tuple[int, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """One of `options`, chosen in proportion to its weight. (st.one_of does not weigh: it drops repeated
    branches, and hypothesis steers away from finite branches it has exhausted.)"""
    total = sum(weight for weight, _ in options)
    pick = st.integers(0, total - 1)

    @st.composite
    def choose(draw: st.DrawFn) -> Any:
        n = draw(pick)
        for weight, strategy in options:
            if n < weight:
                return draw(strategy)
            n -= weight
        raise AssertionError(n)

    return choose()


def salted(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """`strategy` behind a draw that is never the same twice, so no part of it looks exhausted to hypothesis
    and the weights hold (budget.run salts every strategy)."""
    return st.tuples(st.integers(0, 2**63), strategy).map(lambda pair: pair[1])


def huge(piece: str, size: int) -> str:
    piece = piece or "a"
    return (piece * (size // len(piece) + 1))[:size]


def random_text(rng: random.Random, most: int = 24) -> str:
    """Unicode of every kind: ASCII, controls, Latin, Cyrillic, CJK, symbols, injection pieces."""
    parts = []
    for _ in range(rng.randrange(most + 1)):
        roll = rng.random()
        if roll < 0.35:
            parts.append(rng.choice(string.printable))
        elif roll < 0.55:
            parts.append(rng.choice(INJECTIONS))
        elif roll < 0.65:
            parts.append(chr(rng.randrange(0x00, 0x20)))
        else:
            parts.append(chr(rng.choice((rng.randrange(0x80, 0x800), rng.randrange(0x3000, 0xD7FF),
                                         rng.randrange(0xE000, 0x10FFFF)))))
    return "".join(parts)[:most * 4]


def _text_from(seed: int) -> str:
    return random_text(random.Random(seed))


def _edit(rng: random.Random, s: str) -> str:
    """One hostile edit: an injected piece, a look-alike, case, filter syntax, path segments, whitespace,
    the length limit, a 10 kB repetition, separators."""
    kind = rng.randrange(12)
    if kind <= 2:
        at = rng.randrange(len(s) + 1)
        return s[:at] + rng.choice(INJECTIONS) + s[at:]
    if kind == 3:
        spots = [i for i, c in enumerate(s) if c in LOOKALIKES]
        if not spots:
            return s + "\u0430"
        i = rng.choice(spots)
        return s[:i] + rng.choice(LOOKALIKES[s[i]]) + s[i + 1:]
    if kind == 4:
        return rng.choice((s.upper(), s.title(), s.swapcase()))
    if kind == 5:
        return f'{s}" OR name="{rng.choice(BASE_NAMES)}'
    if kind == 6:
        return rng.choice((f"../{s}", f"{s}/../wb-bob", f"{s}/", f"/{s}", f"{s}/instances/wb-bob", f"./{s}",
                           f"{s}%2F..%2Fwb-bob", f"{s}\\..\\wb-bob"))
    if kind == 7:
        return rng.choice((f" {s}", f"{s} ", f"{s}\n", f"\t{s}", f"{s}\x00", f"{s} {s}", f"{s},{s}"))
    if kind == 8:
        return s + rng.choice(("-", "a" * max(1, 64 - len(s)), "0", "-x"))
    if kind == 9:
        return s[rng.randrange(4):] or "-"
    if kind == 10:
        return huge(s + rng.choice(("", "-", " ", '"')), rng.choice((TEN_KB, 64, 65, 100)))
    return s.replace("-", rng.choice(("_", ".", "--", "", " ")))


def edited(base: str, seed: int) -> str:
    rng = random.Random(seed)
    for _ in range(rng.randint(1, 3)):
        base = _edit(rng, base)
    return base


def mutated(bases: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """One to three hostile edits of a (usually valid) value drawn from `bases`."""
    return st.builds(edited, bases, SEEDS)


def _label_like(seed: int) -> str:
    """Lowercase letters, digits and dashes around the 63-character limit: mostly valid names."""
    rng = random.Random(seed)
    length = rng.randint(1, 70)
    return rng.choice(string.ascii_lowercase) + "".join(
        rng.choices(string.ascii_lowercase + string.digits + "-", k=length - 1))


BASE_NAME = st.sampled_from(BASE_NAMES)
_INJECTION = st.sampled_from(INJECTIONS)
NAMES: st.SearchStrategy[str] = weighted(
    (1, BASE_NAME),
    (8, mutated(BASE_NAME)),
    (2, st.builds(_label_like, SEEDS)),
    (2, st.text(max_size=30)),
    (1, st.builds(_text_from, SEEDS)),
    (1, st.builds(huge, st.sampled_from(BASE_NAMES + INJECTIONS), st.sampled_from((TEN_KB, 4096, 300)))),
)
"""Instance names: a few valid ones, mostly near misses and injection attempts, some arbitrary text."""

ZONES: st.SearchStrategy[str] = weighted(
    (4, st.sampled_from((ZONE, OTHER_ZONE))),
    (3, mutated(st.sampled_from((ZONE, OTHER_ZONE, "-", "asia-northeast1", "global")))),
    (1, st.text(max_size=20)),
)
PROJECTS: st.SearchStrategy[str] = weighted(
    (4, st.just(PROJECT)), (3, mutated(st.just(PROJECT))), (1, st.text(max_size=20))
)
hostile_text: st.SearchStrategy[str] = weighted(
    (3, st.text(min_size=1, max_size=24)),
    (3, st.builds(_text_from, SEEDS)),
    (3, _INJECTION),
    (3, NAMES),
    (1, st.builds(huge, st.sampled_from(INJECTIONS + BASE_NAMES), st.sampled_from((TEN_KB, 2000)))),
)
"""Text where text belongs, hostile: arbitrary Unicode, injection pieces, near-miss names, 10 kB runs."""

# ---- junk of every JSON type ---------------------------------------------------------------------
INTERESTING_KEYS = (
    "message", "data", "attributes", "textPayload", "jsonPayload", "labels", "resource", "type", "zone",
    "project_id", "timestamp", "insertId", NAME_LABEL, "action", "trigger", "instance", "requested_at",
    "event_id", "kill", "requester", "killed_at", "user", "id", "actions", "action_id", "value", "__proto__",
)
_SCALARS: tuple[Any, ...] = (
    None, True, False, 0, -1, 1, 2**31, 2**63, 2**64, -(2**63), 10**30, 1.5, -0.0, 1e308, float("nan"),
    float("inf"), float("-inf"), "", "x", "null", "{}", "[]", "0", "true", "wb-alice",
)


def junk_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(10 if depth < 3 else 6)
    if kind <= 2:
        return rng.choice(_SCALARS)
    if kind == 3:
        return rng.randrange(-(2**70), 2**70)
    if kind <= 5:
        return random_text(rng, 12)
    if kind <= 7:
        return [junk_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = (*INTERESTING_KEYS, "", "a", "__class__", "\x00")
    return {rng.choice(keys): junk_value(rng, depth + 1) for _ in range(rng.randrange(4))}


def _junk_from(seed: int) -> Any:
    return junk_value(random.Random(seed))


JUNK: st.SearchStrategy[Any] = weighted((6, st.builds(_junk_from, SEEDS)), (1, hostile_text))
"""A value of any JSON type (nested, NaN, 2**70, empty, look-alike strings) where something specific belongs."""

DELETE = object()  # a field value meaning "take the field out"
_DELETE = st.just(DELETE)


def field(values: st.SearchStrategy[Any], weight: int = 3) -> st.SearchStrategy[Any]:
    """What a mutation puts in a field: mostly `values`, else junk of any type, else nothing at all."""
    return weighted((weight, values), (1, JUNK), (1, _DELETE))


Path = tuple[str, ...]


def put_at(obj: dict[str, Any], path: Path, value: Any) -> None:
    for key in path[:-1]:
        child = obj.get(key)
        if not isinstance(child, dict):
            child = obj[key] = {}
        obj = child
    if value is DELETE:
        obj.pop(path[-1], None)
    else:
        obj[path[-1]] = value


def mutants(templates: tuple[dict[str, Any], ...], fields: tuple[tuple[Path, st.SearchStrategy[Any]], ...],
            *, least: int = 0, most: int = 3) -> st.SearchStrategy[dict[str, Any]]:
    """A valid template with `least` to `most` of its fields replaced: few draws per example, deep paths reached."""
    pick_template = st.sampled_from(templates)
    pick_field = st.sampled_from(fields)
    how_many = st.integers(least, most)

    @st.composite
    def mutant(draw: st.DrawFn) -> dict[str, Any]:
        obj = copy.deepcopy(draw(pick_template))
        for _ in range(draw(how_many)):
            path, values = draw(pick_field)
            value = draw(values)
            put_at(obj, path, value if value is DELETE else copy.deepcopy(value))
        return obj

    return mutant()


Generator = Callable[[random.Random], Any]


def filler_text(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.4:
        return random_text(rng)
    if roll < 0.65:
        return rng.choice(INJECTIONS)
    if roll < 0.95:
        return edited(rng.choice(BASE_NAMES), rng.randrange(2**32))
    return huge(rng.choice(INJECTIONS + BASE_NAMES), TEN_KB)


def one_of_values(*values: Any) -> Generator:
    return lambda rng: rng.choice(values)


def corrupt(obj: dict[str, Any], seed: int, fields: tuple[tuple[Path, Generator], ...], most: int) -> None:
    """Up to `most` fields of `obj` made hostile by a seeded generator: a hostile value of the right type
    (mostly), junk of any type, or the field taken out."""
    rng = random.Random(seed)
    for _ in range(rng.randint(0, most)):
        path, values = rng.choice(fields)
        roll = rng.random()
        put_at(obj, path, values(rng) if roll < 0.75 else junk_value(rng) if roll < 0.9 else DELETE)
