"""slack_app refuses a body over MAX_BODY_BYTES before it reads it (issue 44 item 8), over a socket to the function
under functions-framework (gunicorn): a Content-Length over the limit is answered 413 while the body is still unsent,
a chunked body is cut at the limit and answered 413, and a body under the limit still reaches the signature check."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from shared.app.slack import MAX_BODY_BYTES
from simulators.polling import PATIENCE_S
from simulators.slack import SlackRequester
from simulators.stack import SIGNING_SECRET, LocalStack
from tests.integration.helpers import stack_with_organizer

pytestmark = pytest.mark.wire
CHUNK = 64 * 1024


@pytest.fixture(scope="module")
def stack() -> Iterator[LocalStack]:
    with stack_with_organizer() as running:
        yield running


def _connect(stack: LocalStack) -> socket.socket:
    url = urlsplit(stack.functions["slack_app"][0].url)
    conn = socket.create_connection((url.hostname, url.port), timeout=PATIENCE_S)
    conn.settimeout(PATIENCE_S)
    return conn


def _head(conn: socket.socket, **headers: str) -> None:
    lines = ["POST / HTTP/1.1", "Host: slack-app", "Content-Type: application/x-www-form-urlencoded",
             *(f"{name.replace('_', '-')}: {value}" for name, value in headers.items())]
    conn.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())


def _status(conn: socket.socket) -> int:
    """The status of the answer, read while the body may still be unsent."""
    answer = b""
    while b"\r\n" not in answer:
        got = conn.recv(4096)
        assert got, f"closed without an answer: {answer!r}"
        answer += got
    return int(answer.split(b" ", 2)[1])


def test_a_declared_length_over_the_limit_is_refused_before_the_body_is_sent(stack: LocalStack) -> None:
    with _connect(stack) as conn:
        _head(conn, Content_Length=str(30 * 1024 * 1024), X_Slack_Request_Timestamp="0", X_Slack_Signature="v0=0")
        conn.sendall(b"command=%2Frestart-notebook&text=")  # and never the rest: the answer must not wait for it
        assert _status(conn) == 413


def test_a_chunked_body_is_cut_at_the_limit(stack: LocalStack) -> None:
    sent = 0
    with _connect(stack) as conn:
        _head(conn, Transfer_Encoding="chunked", X_Slack_Request_Timestamp="0", X_Slack_Signature="v0=0")
        try:
            while sent <= MAX_BODY_BYTES + CHUNK:
                conn.sendall(f"{CHUNK:x}\r\n".encode() + b"a" * CHUNK + b"\r\n")
                sent += CHUNK
            conn.sendall(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the function answered and closed while the body was still coming
        assert _status(conn) == 413


def test_a_body_under_the_limit_still_reaches_the_signature_check(stack: LocalStack) -> None:
    text = "status " + "x" * (MAX_BODY_BYTES // 2)
    unsigned = SlackRequester("not-the-secret", stack.functions["slack_app"][0].url).slash_command(
        "U0NOBODY", text, response_url=stack.slack.new_response_url())
    assert unsigned.status == 401
    signed = SlackRequester(SIGNING_SECRET, stack.functions["slack_app"][0].url).slash_command(
        "U0NOBODY", "help", response_url=stack.slack.new_response_url())
    assert signed.status == 200

