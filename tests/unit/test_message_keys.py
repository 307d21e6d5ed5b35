"""Every message the code asks for exists in every language and is given every placeholder; no key goes unused;
no key is built where the walker cannot see it (issue 16, part 6).

The walker (message_walk.py) reads shared/, functions/, demo/, bench/ and tools/ (the catalogue package itself
aside) and lists each lookup with the literal keys it may use. What it cannot check is named below, each with
its reason: keep both lists short."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from shared.core import messages
from tests.unit.message_walk import Code, Lookup

ROOT = Path(__file__).resolve().parents[2]
WALKED = ("shared", "functions", "demo", "bench", "tools")
CATALOGUE_PACKAGE = Path(messages.__file__).parent

# "path:function" of a lookup whose key is not resolved to literals, and why that is right.
NON_LITERAL: dict[str, str] = {}
# "path:function" of a lookup whose placeholders are splatted from something the walker cannot read, and why.
UNCHECKED: dict[str, str] = {}


def walked_sources() -> dict[str, str]:
    return {
        str(path.relative_to(ROOT)): path.read_text()
        for top in WALKED
        for path in sorted((ROOT / top).rglob("*.py"))
        if CATALOGUE_PACKAGE not in path.parents and "__pycache__" not in path.parts
    }


def function_of(lookup: Lookup) -> str:
    return lookup.where.rsplit(":", 1)[0]


def problems(code: Code, lookups: list[Lookup]) -> dict[str, list[str]]:
    """What is wrong, by kind: keys missing from a language, placeholders not given, keys not resolved, calls
    whose placeholders cannot be read, keys nobody uses."""
    catalogue = code.catalogue
    languages = {lang for entry in catalogue.values() for lang in entry}
    found: dict[str, list[str]] = {"missing": [], "placeholders": [], "non_literal": [], "unchecked": []}
    for lookup in lookups:
        if lookup.keys is None:
            found["non_literal"].append(function_of(lookup))
            continue
        for key in sorted(lookup.keys):
            entry = catalogue.get(key)
            absent = sorted(languages - {lang for lang, words in (entry or {}).items() if words})
            if absent:
                found["missing"].append(f"{lookup.where}: {key!r} has no {'/'.join(absent)}")
            elif lookup.needs_placeholders and lookup.given is not None:
                needed = set().union(*(messages.placeholders(words) for words in entry.values()))
                if needed - lookup.given:
                    found["placeholders"].append(f"{lookup.where}: {key!r} needs {sorted(needed - lookup.given)}")
        if lookup.needs_placeholders and lookup.given is None:
            found["unchecked"].append(function_of(lookup))
    found["missing"] += [f"{where}: {key!r} (in a table of keys) is not in the catalogue"
                         for where, key in code.table_keys() if key not in catalogue]
    found["unused"] = sorted(set(catalogue) - code.used_keys())
    return found


@pytest.fixture(scope="module")
def lookups() -> list[Lookup]:
    return Code(walked_sources(), messages.CATALOGUE).lookups()


@pytest.fixture(scope="module")
def found() -> dict[str, list[str]]:
    code = Code(walked_sources(), messages.CATALOGUE)
    return problems(code, code.lookups())


def test_the_walker_finds_the_code_s_lookups(lookups: list[Lookup]) -> None:
    """Else every check below would pass on nothing."""
    keys = {key for lookup in lookups for key in lookup.keys or ()}
    assert len(lookups) > 100 and {"alert.title", "button.stop.confirm", "cmd.help", "dm.advice", "resize.cost"} <= keys


def test_every_key_used_exists_in_every_language(found: dict[str, list[str]]) -> None:
    missing = found["missing"]
    assert not missing, "\n".join(missing)


def test_every_placeholder_is_given(found: dict[str, list[str]]) -> None:
    not_given = found["placeholders"]
    assert not not_given, "\n".join(not_given)


def test_every_key_is_a_literal_or_named_with_its_reason(found: dict[str, list[str]]) -> None:
    non_literal = sorted(set(found["non_literal"]))
    assert non_literal == sorted(NON_LITERAL), f"lookups whose key is not a literal: {non_literal}"


def test_placeholders_unchecked_only_where_named(found: dict[str, list[str]]) -> None:
    unchecked = sorted(set(found["unchecked"]))
    assert unchecked == sorted(UNCHECKED), f"lookups whose placeholders the walker cannot read: {unchecked}"


def test_every_key_in_the_catalogue_is_used(found: dict[str, list[str]]) -> None:
    unused = found["unused"]
    assert not unused, f"keys no code uses: {unused}"


SAMPLE_CATALOGUE: Mapping[str, Mapping[str, str]] = {
    "alert.title": {"en": "{instance} ran out", "ja": "{instance} 不足"},
    "reply.failed": {"en": "{instance}: {error}", "ja": "{instance}: {error}"},
    "reply.failed.stop": {"en": "stop {instance}: {error}", "ja": "停止 {instance}: {error}"},
    "reply.failed.resize": {"en": "resize {instance}: {error}", "ja": "変更 {instance}: {error}"},
    "warn.dm": {"en": "{percent}", "ja": "{percent}"},
    "warn.channel": {"en": "{percent} {owner}", "ja": "{percent} {owner}"},
    "only.english": {"en": "hello", "ja": ""},
    "never.used": {"en": "nobody", "ja": "誰も"},
}
SAMPLE = '''
from enum import StrEnum
from shared.core import messages

KEYS = {"a": ("warn.dm", "x"), "b": ("warn.channel", "y")}
ELSEWHERE = {Action.STOP: "reply.faild"}

class Action(StrEnum):
    STOP = "stop"

class Reporter:
    def __init__(self, lang):
        self.say = messages.For(lang)

    def title(self, name, action):
        key = messages.variant("reply.failed", action.value)
        return self.say("alert.title", instance=name), self.say(key, instance=name, error="e")

    def broken(self, name, kind, params):
        key, _ = KEYS[kind]
        self.say("no.such_key")
        self.say("alert.title")
        self.say(f"alert.{kind}", instance=name)
        self.say(key, percent=1)
        self.say("only.english", **params)
        return self.forward("warn.dm")

    def forward(self, which):
        return self.say(which, percent=2)

def layout(say: messages.For, lang):
    return say("reply.failed", instance="i"), messages.text("warn.dm", lang, **{"percent": 3})
'''


def test_the_walker_fails_a_missing_key_a_missing_placeholder_and_an_f_string() -> None:
    code = Code({"shared/sample.py": SAMPLE}, SAMPLE_CATALOGUE)
    found = problems(code, code.lookups())
    assert [line.split(": ", 1)[1] for line in found["missing"]] == [
        "'no.such_key' has no en/ja", "'only.english' has no ja",
        "'reply.faild' (in a table of keys) is not in the catalogue"]
    assert [line.split(":", 3)[1] + line.split(":", 3)[3] for line in found["placeholders"]] == [
        "Reporter.broken 'alert.title' needs ['instance']",
        "Reporter.broken 'warn.channel' needs ['owner']",  # a key unpacked from a dict of keys
        "layout 'reply.failed' needs ['error']",  # a For passed in as a parameter
    ]
    # the f-string; Reporter.forward's key is resolved through its caller, Reporter.title's through variant
    assert found["non_literal"] == ["shared/sample.py:Reporter.broken"]
    assert found["unchecked"] == ["shared/sample.py:Reporter.broken"]  # **params
    # reply.failed.stop is used through variant (Action.STOP's value); reply.failed.resize is not: no such member
    assert found["unused"] == ["never.used", "reply.failed.resize"]
