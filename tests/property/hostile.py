"""Hostile input as hypothesis strategies, and the oracles the properties compare against.

The oracles are written independently of shared/ (character sets and splits, not the product's
regexes), so a property compares two statements of each rule instead of one with itself.

Inputs are valid templates (real LogEntries, requests, Slack payloads) with hostile parts put in: that
reaches the deep paths, where a fully random input would stop at the first check. Hypothesis chooses the
structure and the hostile names; seeded generators fill in the bulk (see "building blocks" for why).
"""

from __future__ import annotations

import base64
import copy
import json
import random
import string
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import strategies as st

from simulators.entries import FORMS, noise_entry, oom_entry

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


def _random_text(rng: random.Random, most: int = 24) -> str:
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
    return _random_text(random.Random(seed))


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
        return _random_text(rng, 12)
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
        return _random_text(rng)
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


# ---- times ---------------------------------------------------------------------------------------
# Strings that fit where a "time" is expected, and the ways they go wrong (RFC 3339 edge cases included).
EDGE_TIMES = (
    "0001-01-01T00:00:00+23:59", "9999-12-31T23:59:59-23:59", "9999-12-31T23:59:59.999999999Z",
    "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "9999-12-31T20:00:00+00:00", "0000-00-00T00:00:00Z",
    "2026-02-30T00:00:00Z", "2026-11-20T24:00:00Z", "2026-11-20T04:12:33+99:99", "2026-11-20T04:12:33.1234567890123Z",
    "2026-11-20 04:12:33", " 2026-11-20T04:12:33Z ", "２０２６-11-20T04:12:33Z", "2026-11-20T04:12:33+09:00",
    "1970-01-01T00:00:00Z", "2026-11-20T04:12:33-00:00", "now", "", "2026-11-20T04:12:33Z\n",
)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


RECENT_TIMES = st.integers(-7200, 7200).map(lambda s: _iso(NOW + timedelta(seconds=s)))


def random_time(rng: random.Random) -> str:
    return rng.choice(EDGE_TIMES) if rng.random() < 0.5 else _iso(NOW + timedelta(seconds=rng.randint(-7200, 7200)))
TIME_TEXT: st.SearchStrategy[str] = weighted(
    (3, st.sampled_from(EDGE_TIMES)),
    (3, RECENT_TIMES),
    (2, st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)).map(_iso)),
    (1, hostile_text),
)
TIMES: st.SearchStrategy[Any] = weighted((4, TIME_TEXT), (1, JUNK))

# ---- LogEntries ----------------------------------------------------------------------------------
KILL_TEMPLATES = (
    "Out of memory: Killed process {pid} ({proc}) total-vm:{n}kB, anon-rss:{m}kB, file-rss:0kB, shmem-rss:4kB",
    "Out of memory (oom_kill_allocating_task): Killed process {pid} ({proc})",
    "Out of memory: Kill process {pid} ({proc}) score {n} or sacrifice child",
    "Memory cgroup out of memory: Killed process {pid} ({proc}) total-vm:{n}kB, anon-rss:{m}kB, file-rss:0kB",
    "Memory cgroup out of memory: Kill process {pid} ({proc}) score {n} or sacrifice child",
    "out of memory: killed process {pid} ({proc})",
    "Out of memory: Killed process ({proc}) {pid}",
)
NOT_KILL_TEMPLATES = (
    "{proc} invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0, oom_score_adj=0",
    "oom_reaper: reaped process {pid} ({proc}), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB",
    "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),task={proc},pid={pid},uid=1000",
    "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate {n} MiB",
    "MemoryError: Unable to allocate {n} GiB for an array",
    "Out of memory: Killed process {pid} ({proc}) -- MemoryError",
)
ODD_NUMBERS = ("9" * 5000, "1" * 4301, "٣٤٥", "１２３", "00000000000000000001", "-1", "1e9", "0x10", "", "4194304")
PROCESSES = ("python", "python3", "jupyter-lab", "java", "a b", "x)", "(", ")", "((", "python (x)", "a" * 16, "a" * 17)
_LINE_TEMPLATES = KILL_TEMPLATES * 2 + NOT_KILL_TEMPLATES


def _number(rng: random.Random) -> str:
    return rng.choice(ODD_NUMBERS) if rng.random() < 0.2 else str(rng.randrange(2**rng.choice((8, 22, 40))))


def _kernel_line(seed: int, host: str) -> str:
    """A kernel line, kill or not, in any wording, with odd pids, process names and hosts, pieces injected."""
    rng = random.Random(seed)
    proc = rng.choice(PROCESSES) if rng.random() < 0.6 else _random_text(rng, 18)
    line = rng.choice(_LINE_TEMPLATES).format(pid=_number(rng), proc=proc, n=_number(rng), m=_number(rng))
    prefix = rng.randrange(4)
    if prefix == 0:
        line = f"Nov 20 04:12:33 {host} kernel: [53211.918273] {line}"
    elif prefix == 1:
        line = f"2026-11-20T04:12:33.518204+00:00 {host} kernel: {line}"
    if rng.random() < 0.4:
        at = rng.randrange(len(line) + 1)
        line = line[:at] + rng.choice(INJECTIONS) + line[at:]
    if rng.random() < 0.05:
        line = huge(line + " ", TEN_KB * rng.randint(1, 4))
    return line


LOG_LINES: st.SearchStrategy[str] = weighted((9, st.builds(_kernel_line, SEEDS, NAMES)), (1, hostile_text))
"""Kernel lines: kills in every wording with hostile pids, process names and hosts, look-alikes, junk."""


def _entry_templates() -> tuple[dict[str, Any], ...]:
    entries = [
        oom_entry(PROJECT, ZONE, "wb-alice", at=NOW, form=form, pid=23817, insert_id="1x9f0a2g1abc3d",
                  ops_agent=ops_agent, with_name_label=label)
        for form in FORMS for ops_agent in (True, False) for label in (True, False)
    ]
    for template in NOT_KILL_TEMPLATES:
        line = template.format(pid=23817, proc="python", n=1024, m=0)
        entries.append({**noise_entry(PROJECT, ZONE, "wb-alice", line, at=NOW), "insertId": "2y8g1b3h2bcd4e"})
    return tuple(entries)


_RESOURCE_TYPES = st.sampled_from(
    ("gce_instance", "k8s_container", "cloud_run_revision", "gce_instance ", "GCE_INSTANCE", "global", "")
)
LOG_FIELDS: tuple[tuple[Path, st.SearchStrategy[Any]], ...] = (
    (("labels", NAME_LABEL), field(NAMES)),
    (("labels", NAME_LABEL), field(NAMES, 4)),
    (("labels",), field(JUNK)),
    (("resource", "labels", "zone"), field(ZONES)),
    (("resource", "labels", "project_id"), field(PROJECTS)),
    (("resource", "type"), field(_RESOURCE_TYPES)),
    (("resource",), field(JUNK)),
    (("logName",), field(PROJECTS.map(lambda p: f"projects/{p}/logs/syslog"))),
    (("timestamp",), field(TIMES)),
    (("receiveTimestamp",), field(TIMES)),
    (("insertId",), field(hostile_text)),
    (("jsonPayload", "message"), field(LOG_LINES)),
    (("jsonPayload", "message"), field(LOG_LINES, 4)),
    (("textPayload",), field(LOG_LINES)),
    (("jsonPayload",), field(JUNK)),
)
LOG_ENTRIES = mutants(_entry_templates(), LOG_FIELDS, most=4)
"""LogEntries as a sink publishes them (every agent and wording), then 0-4 fields made hostile or the wrong type."""

# ---- Pub/Sub messages and CloudEvents ------------------------------------------------------------


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def dumps(value: Any) -> bytes:
    return json.dumps(value).encode()


BAD_BASE64 = (
    "", "=", "====", "eyJ4IjoxfQ", "eyJ4IjoxfQ==\n", " eyJ4IjoxfQ==", "eyJ4I-oxfQ==", "eyJ4I_oxfQ==",
    "e\u00e9J4IjoxfQ==", "eyJ4IjoxfQ===", "!!!!", "ey JxIjoxfQ==", "\x00", "ｅｙＪ４ＩｊｏｘｆＱ＝＝",
)


def _broken_data(seed: int, junk: Any) -> Any:
    """A Pub/Sub message's `data` broken at one layer: base64, UTF-8, JSON, nesting, size, type."""
    rng = random.Random(seed)
    kind = rng.randrange(7)
    if kind == 0:
        return rng.choice(BAD_BASE64)
    if kind == 1:
        odd = (b"\xff\xfe{}", b"{", b"NaN", b"[]", b"null", bytes(rng.randrange(256) for _ in range(9)))
        return b64(rng.choice(odd))
    if kind == 2:
        return b64((rng.choice(("[", '{"a":')) * rng.choice((900, 5000, 100_000))).encode())
    if kind == 3:
        return b64(dumps(junk))
    if kind == 4:
        return b64(huge('{"a":', rng.choice((TEN_KB, 700_000))).encode())
    if kind == 5:
        return "A" * rng.choice((700_004, 1_000_004, 1_400_000))
    return junk


BROKEN_DATA = st.builds(_broken_data, SEEDS, JUNK)
LAYERS = st.integers(0, 11)
_EVENT_TYPES = weighted((1, hostile_text), (1, mutated(st.just(PUBSUB_EVENT_TYPE))))
EVENT_ID = "4210000000000001"
EVENT_TIME = "2026-11-20T04:12:35.402Z"


def pubsub_message(payload: Any) -> dict[str, Any]:
    return {
        "data": b64(dumps(payload)),
        "messageId": EVENT_ID,
        "publishTime": EVENT_TIME,
        "attributes": {"logging.googleapis.com/timestamp": "2026-11-20T04:12:33.518204Z"},
    }


def break_envelope(draw: st.DrawFn, layer: int, data: dict[str, Any]) -> Any:
    """Layers 4-7 of a Pub/Sub envelope broken (the others leave it whole)."""
    if layer == 4:
        return draw(JUNK)
    if layer == 5:
        data["message"] = draw(JUNK)
    elif layer == 6:
        data["message"]["data"] = draw(BROKEN_DATA)
    elif layer == 7:
        data["message"] = {key: draw(JUNK) for key in data["message"]}
    return data


@st.composite
def _cloudevents(draw: st.DrawFn, payloads: st.SearchStrategy[Any], subscription: str) -> tuple[str, str, str, Any]:
    data: dict[str, Any] = {"message": pubsub_message(draw(payloads)),
                            "subscription": f"projects/{PROJECT}/subscriptions/{subscription}"}
    event_type, event_id, event_time = PUBSUB_EVENT_TYPE, EVENT_ID, EVENT_TIME
    layer = draw(LAYERS)
    if layer == 1:
        event_type = draw(_EVENT_TYPES)
    elif layer == 2:
        event_time = draw(TIME_TEXT)
    elif layer == 3:
        event_id = draw(hostile_text)
    return event_type, event_id, event_time, break_envelope(draw, layer, data)


CLOUDEVENTS = _cloudevents(LOG_ENTRIES, "on-oom-eventarc")
"""(type, id, time, data) of a CloudEvent as functions-framework hands them to on_oom: one layer broken,
or none (then the LogEntry inside is the hostile part)."""

# ---- Monitoring incidents (on_memory_alert) ------------------------------------------------------
MEMORY_INCIDENT: dict[str, Any] = {
    "incident": {
        "incident_id": "0.nxbgwq4mvxo1",
        "scoping_project_id": PROJECT,
        "url": f"https://console.cloud.google.com/monitoring/alerting/incidents/0.nxbgwq4mvxo1?project={PROJECT}",
        "started_at": 1795993100,
        "ended_at": None,
        "state": "open",
        "summary": f"Memory utilization for {PROJECT} wb-alice is above the threshold of 90 with a value of 93.2.",
        "observed_value": "93.2",
        "threshold_value": "90",
        "resource": {"type": "gce_instance",
                     "labels": {"instance_id": "4410287765349125621", "project_id": PROJECT, "zone": ZONE}},
        "resource_type_display_name": "VM Instance",
        "resource_display_name": "wb-alice",
        "resource_name": f"{PROJECT} wb-alice",
        "metadata": {"system_labels": {"name": "wb-alice"}, "user_labels": {}},
        "metric": {"type": "agent.googleapis.com/memory/percent_used", "displayName": "Memory utilization"},
        "policy_name": "notebook-medic memory pressure",
        "condition_name": "VM Instance - Memory utilization",
    },
    "version": "1.2",
}


def _memory_templates() -> tuple[dict[str, Any], ...]:
    """Open and closed incidents as Monitoring publishes them (schema 1.2), the value as percent or fraction."""
    closed = copy.deepcopy(MEMORY_INCIDENT)
    closed["incident"].update(state="closed", ended_at=1795993700, observed_value="71.0")
    fraction = copy.deepcopy(MEMORY_INCIDENT)
    fraction["incident"]["observed_value"] = "0.932"
    named_by_metadata = copy.deepcopy(MEMORY_INCIDENT)
    named_by_metadata["incident"].pop("resource_display_name")
    return MEMORY_INCIDENT, closed, fraction, named_by_metadata


_STATES = weighted((3, st.sampled_from(("open", "closed", "OPEN", "Closed"))), (1, hostile_text))
_NUMBERS_AS_TEXT = weighted(
    (3, st.floats(allow_nan=True, allow_infinity=True).map(str)),
    (2, st.sampled_from(("93.2", "0.95", "100", "101", "-1", "1e308", "nan", "inf", "", " 93 ", "93,2"))),
    (1, hostile_text),
)
MEMORY_FIELDS: tuple[tuple[Path, st.SearchStrategy[Any]], ...] = (
    (("incident", "state"), field(_STATES)),
    (("incident", "resource", "type"), field(_RESOURCE_TYPES)),
    (("incident", "resource", "labels", "project_id"), field(PROJECTS)),
    (("incident", "resource", "labels", "zone"), field(ZONES)),
    (("incident", "resource", "labels"), field(JUNK)),
    (("incident", "resource"), field(JUNK)),
    (("incident", "resource_display_name"), field(NAMES, 4)),
    (("incident", "resource_name"), field(NAMES.map(lambda n: f"{PROJECT} {n}"))),
    (("incident", "metadata", "system_labels", "name"), field(NAMES)),
    (("incident", "metadata"), field(JUNK)),
    (("incident", "observed_value"), field(_NUMBERS_AS_TEXT)),
    (("incident", "started_at"), field(weighted((2, st.integers()), (1, TIME_TEXT)))),
    (("incident", "incident_id"), field(hostile_text)),
    (("incident", "policy_name"), field(hostile_text)),
    (("incident", "url"), field(hostile_text)),
    (("incident",), field(JUNK)),
    (("version",), field(hostile_text)),
)
MEMORY_INCIDENTS = mutants(_memory_templates(), MEMORY_FIELDS, most=4)
"""Monitoring notifications, then 0-4 fields made hostile or the wrong type."""

MEMORY_EVENTS = _cloudevents(MEMORY_INCIDENTS, "on-memory-alert-eventarc")
"""(type, id, time, data) of a CloudEvent as functions-framework hands them to on_memory_alert."""
