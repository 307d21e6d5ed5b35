"""A small evaluator of the Cloud Logging query language, for the subset the OOM sink filter uses.

The local stack's sink applies the filter with it, as Logging does, so nothing reaches on_oom locally that
the real sink would drop; tests/infra/test_sink_filter.py checks the filter against the samples with it.

Supported: AND / OR / NOT (and juxtaposition as AND), parentheses, `field:"text"` (substring), `field="value"`
and `field!="value"` (equality), `field>="value"` (and >, <, <=: as times when both sides are RFC 3339 timestamps,
as Logging compares `timestamp`, else as text; the report's time range, issue 28), and the function
`log_id("ID")` (the log whose logName ends in /logs/ID, the ID URL-encoded there: Logging query language
reference, "log_id"). Fields are dotted paths into the LogEntry JSON; a segment may be quoted
(labels."compute.googleapis.com/resource_name"). As in Logging, string comparisons ignore case and a comparison
on a missing field is false. Anything outside the subset raises QueryError rather than guessing, so a filter that
grows past it fails the test instead of passing it.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

_TOKEN = re.compile(
    r'\s*(?:(?P<lparen>\()|(?P<rparen>\))|(?P<op>!=|>=|<=|=|:|<|>)|(?P<string>"(?:[^"\\]|\\.)*")'
    r'|(?P<word>[A-Za-z_@][\w@/-]*(?:\.(?:[A-Za-z_@][\w@/-]*|"(?:[^"\\]|\\.)*"))*))'
)

Predicate = Callable[[dict[str, Any]], bool]


class QueryError(ValueError):
    pass


@dataclass(frozen=True)
class Token:
    kind: str
    text: str


def tokenize(query: str) -> list[Token]:
    tokens: list[Token] = []
    position = 0
    while position < len(query):
        if query[position:].strip() == "":
            break
        match = _TOKEN.match(query, position)
        if not match or match.end() == position:
            raise QueryError(f"cannot read the query at {query[position:position + 20]!r}")
        kind = match.lastgroup or ""
        tokens.append(Token(kind, match.group(kind)))
        position = match.end()
    return tokens


def _unquote(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text[1:-1])


def _path(field: str) -> list[str]:
    return [_unquote(part) if part.startswith('"') else part for part in re.findall(r'"(?:[^"\\]|\\.)*"|[^.]+', field)]


def _lookup(entry: Any, path: list[str]) -> Any:
    for part in path:
        if not isinstance(entry, dict) or part not in entry:
            return None
        entry = entry[part]
    return entry


class _Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.index = 0

    def peek(self) -> Token | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def take(self) -> Token:
        token = self.peek()
        if token is None:
            raise QueryError("the query ends too early")
        self.index += 1
        return token

    def parse(self) -> Predicate:
        predicate = self.or_expr()
        if self.peek() is not None:
            raise QueryError(f"unexpected {self.peek()}")
        return predicate

    def or_expr(self) -> Predicate:
        terms = [self.and_expr()]
        while (token := self.peek()) and token.kind == "word" and token.text == "OR":
            self.take()
            terms.append(self.and_expr())
        return terms[0] if len(terms) == 1 else (lambda entry: any(term(entry) for term in terms))

    def and_expr(self) -> Predicate:
        terms = [self.unary()]
        while (token := self.peek()) and not (token.kind == "rparen" or (token.kind == "word" and token.text == "OR")):
            if token.kind == "word" and token.text == "AND":
                self.take()
            terms.append(self.unary())
        return terms[0] if len(terms) == 1 else (lambda entry: all(term(entry) for term in terms))

    def unary(self) -> Predicate:
        token = self.peek()
        if token and token.kind == "word" and token.text == "NOT":
            self.take()
            inner = self.unary()
            return lambda entry: not inner(entry)
        return self.primary()

    def primary(self) -> Predicate:
        token = self.take()
        if token.kind == "lparen":
            inner = self.or_expr()
            if self.take().kind != "rparen":
                raise QueryError("missing )")
            return inner
        if token.kind != "word":
            raise QueryError(f"expected a field, got {token.text!r}")
        if token.text == "log_id" and (after := self.peek()) is not None and after.kind == "lparen":
            return self.log_id()
        op = self.take()
        value = self.take()
        if op.kind != "op" or value.kind not in ("string", "word"):
            raise QueryError(f"only field:value, field=value and field!=value are supported (at {token.text})")
        path = _path(token.text)
        raw = _unquote(value.text) if value.kind == "string" else value.text
        if op.text in _ORDER:
            return _ordered(path, op.text, raw)
        wanted = raw.lower()

        def compare(entry: dict[str, Any]) -> bool:
            found = _lookup(entry, path)
            if found is None or isinstance(found, dict | list):
                return False
            text = str(found).lower()
            if op.text == ":":
                return wanted in text
            return (text == wanted) if op.text == "=" else (text != wanted)

        return compare


    def log_id(self) -> Predicate:
        """log_id("ID"): the entry's logName is projects/*/logs/ID, its ID URL-encoded there ("%2F" for "/")."""
        self.take()
        argument = self.take()
        if argument.kind != "string" or self.take().kind != "rparen":
            raise QueryError('log_id takes one quoted log ID: log_id("syslog")')
        wanted = _unquote(argument.text)

        def compare(entry: dict[str, Any]) -> bool:
            name = entry.get("logName")
            if not isinstance(name, str) or "/logs/" not in name:
                return False
            return urllib.parse.unquote(name.split("/logs/", 1)[1]) == wanted

        return compare


_ORDER: dict[str, Callable[[Any, Any], bool]] = {
    ">=": lambda a, b: a >= b, ">": lambda a, b: a > b, "<=": lambda a, b: a <= b, "<": lambda a, b: a < b}


def as_time(text: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text.replace("z", "Z").replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else None


def _ordered(path: list[str], op: str, wanted: str) -> Predicate:
    """field >= value and kin: as times when both are timestamps with a zone, else as text."""
    wanted_time = as_time(wanted)

    def compare(entry: dict[str, Any]) -> bool:
        found = _lookup(entry, path)
        if found is None or isinstance(found, dict | list):
            return False
        found_time = as_time(str(found))
        if wanted_time is not None and found_time is not None:
            return _ORDER[op](found_time, wanted_time)
        return _ORDER[op](str(found), wanted)

    return compare


def compile_query(query: str) -> Predicate:
    return _Parser(tokenize(query)).parse()


def matches(query: str, entry: dict[str, Any]) -> bool:
    return compile_query(query)(entry)
