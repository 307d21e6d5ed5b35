"""Each library's exceptions become the project's (shared/adapters/errors.py), named by the service's own status.

The exceptions are the libraries' own classes, built as the libraries build them (REST's from an HTTP response,
gRPC's from a real failed call); the wire tests (tests/integration/test_faults_adapter.py, test_rest_transport.py,
tests/unit/test_queue.py, test_compute.py, test_slack_notify.py) raise them through the real clients.
"""

from __future__ import annotations

import socket
import threading
import urllib.error
from datetime import timedelta

import grpc
import pytest
import requests
from google.api_core import exceptions as gexc
from google.protobuf import json_format
from slack_sdk.errors import SlackApiError
from slack_sdk.web import SlackResponse

from shared.adapters.errors import (
    BusyError,
    MaybeAppliedError,
    NotFoundError,
    RefusedError,
    ServiceError,
    TransientError,
)
from shared.adapters.google_errors import describe_error, from_google, may_have_been_applied, transient_errors
from shared.adapters.slack_notify import from_slack
from shared.adapters.workbench import Workbench
from tests.unit.test_describe_error import rest_error


def google_body(code: int, status: str, message: str = "said") -> dict[str, object]:
    return {"error": {"code": code, "message": message, "status": status}}


GRPC = [
    pytest.param(gexc.Aborted("unable to queue the operation"), BusyError, "ABORTED", id="aborted"),
    pytest.param(gexc.DeadlineExceeded("late"), MaybeAppliedError, "DEADLINE_EXCEEDED", id="deadline"),
    pytest.param(gexc.InternalServerError("oops"), MaybeAppliedError, "INTERNAL", id="internal"),
    pytest.param(gexc.ServiceUnavailable("down"), TransientError, "UNAVAILABLE", id="unavailable"),
    pytest.param(gexc.ResourceExhausted("quota"), TransientError, "RESOURCE_EXHAUSTED", id="exhausted"),
    pytest.param(gexc.NotFound("gone"), NotFoundError, "NOT_FOUND", id="not-found"),
    pytest.param(gexc.FailedPrecondition("STOPPED"), RefusedError, "FAILED_PRECONDITION", id="precondition"),
    pytest.param(gexc.PermissionDenied("denied"), RefusedError, "PERMISSION_DENIED", id="denied"),
    pytest.param(gexc.InvalidArgument("mask"), RefusedError, "INVALID_ARGUMENT", id="invalid"),
    pytest.param(gexc.AlreadyExists("twice"), RefusedError, "ALREADY_EXISTS", id="exists"),
]

REST = [
    pytest.param(409, google_body(409, "ABORTED"), BusyError, "ABORTED", id="409-aborted"),
    pytest.param(409, google_body(409, "ALREADY_EXISTS"), RefusedError, "ALREADY_EXISTS", id="409-exists"),
    pytest.param(400, google_body(400, "FAILED_PRECONDITION"), RefusedError, "FAILED_PRECONDITION", id="400"),
    pytest.param(403, {"error": {"message": "denied"}}, RefusedError, "FORBIDDEN", id="403-no-status"),
    pytest.param(404, google_body(404, "NOT_FOUND"), NotFoundError, "NOT_FOUND", id="404"),
    pytest.param(429, google_body(429, "RESOURCE_EXHAUSTED"), TransientError, "RESOURCE_EXHAUSTED", id="429"),
    pytest.param(500, google_body(500, "INTERNAL"), MaybeAppliedError, "INTERNAL", id="500"),
    pytest.param(502, {"oops": 1}, MaybeAppliedError, "BAD_GATEWAY", id="502"),
    pytest.param(503, google_body(503, "UNAVAILABLE"), TransientError, "UNAVAILABLE", id="503"),
    pytest.param(504, google_body(504, "DEADLINE_EXCEEDED"), MaybeAppliedError, "DEADLINE_EXCEEDED", id="504"),
]


@pytest.mark.parametrize(("error", "kind", "status"), GRPC)
def test_grpc_errors_become_their_family_named_by_the_apis_status(
    error: gexc.GoogleAPICallError, kind: type[ServiceError], status: str
) -> None:
    translated = from_google(error)
    assert type(translated) is kind and isinstance(translated, ServiceError) and translated.status == status
    assert describe_error(translated) == describe_error(error), "the words said of it are the same as before"
    assert may_have_been_applied(translated) == may_have_been_applied(error)
    assert isinstance(translated, transient_errors()) == isinstance(error, transient_errors())


@pytest.mark.parametrize(("http", "body", "kind", "status"), REST)
def test_rest_errors_become_their_family_named_by_the_status_in_their_body(
    http: int, body: dict[str, object], kind: type[ServiceError], status: str
) -> None:
    error = rest_error(http, body)
    translated = from_google(error)
    assert type(translated) is kind and isinstance(translated, ServiceError) and translated.status == status
    assert "https://" not in str(translated) and len(translated.detail) <= 200
    assert describe_error(translated) == describe_error(error)


def test_a_long_message_is_cut_and_keeps_no_request_url() -> None:
    translated = from_google(rest_error(400, google_body(400, "INVALID_ARGUMENT", "x" * 5000)))
    assert isinstance(translated, RefusedError) and translated.detail == "x" * 200


@pytest.mark.parametrize(("error", "kind"), [
    pytest.param(requests.exceptions.ReadTimeout("GET http://h/v2/p: read"), MaybeAppliedError, id="read-timeout"),
    pytest.param(requests.exceptions.ConnectTimeout("http://h/v2/p"), TransientError, id="connect-timeout"),
    pytest.param(requests.exceptions.ConnectionError("http://h/v2/p refused"), TransientError, id="refused"),
    pytest.param(requests.exceptions.ChunkedEncodingError("Connection broken: IncompleteRead(13 bytes read)"),
                 MaybeAppliedError, id="answer-cut-short"),
    pytest.param(requests.exceptions.ContentDecodingError("Received response with content-encoding: gzip"),
                 MaybeAppliedError, id="answer-undecodable"),
])
def test_requests_errors_of_the_rest_transport(error: Exception, kind: type[ServiceError]) -> None:
    """A connect timeout never sent the request (TransientError); a read timeout, or an answer that broke off, may
    have been applied."""
    translated = from_google(error)
    assert type(translated) is kind and isinstance(translated, ServiceError)
    assert translated.status == type(error).__name__ and "http" not in translated.detail and translated.detail


@pytest.mark.parametrize(("cause", "kind", "status"), [
    pytest.param(gexc.Aborted("unable to queue"), BusyError, "ABORTED", id="busy"),
    pytest.param(rest_error(409, google_body(409, "ABORTED")), BusyError, "ABORTED", id="busy-rest"),
    pytest.param(gexc.ServiceUnavailable("down"), TransientError, "UNAVAILABLE", id="unavailable"),
    pytest.param(None, TransientError, "DEADLINE_EXCEEDED", id="no-cause"),
])
def test_retries_run_out_are_transient_named_by_the_last_answer(
    cause: Exception | None, kind: type[ServiceError], status: str
) -> None:
    translated = from_google(gexc.RetryError("Timeout of 30.0s exceeded", cause))
    assert type(translated) is kind and isinstance(translated, ServiceError) and translated.status == status
    assert not may_have_been_applied(translated)


def test_a_grpc_error_google_api_core_did_not_wrap_is_read_as_it_would() -> None:
    with grpc.insecure_channel("127.0.0.1:9") as channel:  # nothing listens: a real failed call
        call = channel.unary_unary("/google.cloud.notebooks.v2.NotebookService/GetInstance")
        with pytest.raises(grpc.RpcError) as raised:
            call(b"", timeout=5)
    translated = from_google(raised.value)
    assert isinstance(translated, TransientError) and translated.status == "UNAVAILABLE"


@pytest.mark.parametrize("error", [json_format.ParseError("unknown field"), RuntimeError("bug"), ValueError("x")])
def test_what_is_no_answer_of_a_service_is_left_as_it_is(error: Exception) -> None:
    assert from_google(error) is error and from_slack(error) is error


def test_the_projects_errors_pass_unchanged_and_count_where_the_libraries_did() -> None:
    busy = BusyError("ABORTED", "unable to queue the operation")
    assert from_google(busy) is busy and from_slack(busy) is busy
    assert isinstance(busy, transient_errors()) and not may_have_been_applied(busy)
    assert may_have_been_applied(MaybeAppliedError("DEADLINE_EXCEEDED"))
    assert describe_error(RefusedError("FAILED_PRECONDITION", "Instance is STOPPED.")) == (
        "FAILED_PRECONDITION: Instance is STOPPED.")


def slack_api_error(error: str, status_code: int = 200) -> SlackApiError:
    response = SlackResponse(client=None, http_verb="POST", api_url="https://slack.com/api/chat.postMessage",
                             req_args={}, data={"ok": False, "error": error}, headers={}, status_code=status_code)
    return SlackApiError(f"The request to the Slack API failed. (error: {error})", response)


@pytest.mark.parametrize(("error", "kind", "status"), [
    pytest.param(slack_api_error("not_in_channel"), RefusedError, "not_in_channel", id="not-in-channel"),
    pytest.param(slack_api_error("invalid_auth"), RefusedError, "invalid_auth", id="token"),
    pytest.param(slack_api_error("channel_not_found"), NotFoundError, "channel_not_found", id="channel"),
    pytest.param(slack_api_error("users_not_found"), NotFoundError, "users_not_found", id="user"),
    pytest.param(slack_api_error("user_not_visible"), NotFoundError, "user_not_visible", id="invisible"),
    pytest.param(slack_api_error("ratelimited", 429), TransientError, "ratelimited", id="429"),
    pytest.param(slack_api_error("service_unavailable", 503), TransientError, "service_unavailable", id="503"),
    pytest.param(slack_api_error("internal_error"), MaybeAppliedError, "internal_error", id="internal"),
    pytest.param(slack_api_error("", 500), MaybeAppliedError, "HTTP 500", id="500"),
    pytest.param(TimeoutError("The read operation timed out"), MaybeAppliedError, "TimeoutError", id="timeout"),
    pytest.param(urllib.error.URLError(ConnectionRefusedError(111, "refused")), TransientError, "URLError",
                 id="refused"),
])
def test_slack_errors_become_their_family_named_by_slacks_error_code(
    error: Exception, kind: type[ServiceError], status: str
) -> None:
    translated = from_slack(error)
    assert type(translated) is kind and isinstance(translated, ServiceError) and translated.status == status


def test_a_body_that_is_not_googles_json_keeps_the_http_status() -> None:
    """A proxy's HTML page in front of the API: no status in it, so the HTTP one is said."""
    response = requests.Response()
    response.status_code = 502
    response._content = b"<html><body>Bad Gateway</body></html>"
    response.request = requests.Request("POST", "https://notebooks.googleapis.com/v2/x:reset").prepare()
    translated = from_google(gexc.from_http_response(response))
    assert isinstance(translated, MaybeAppliedError) and translated.status == "BAD_GATEWAY"


def test_a_rest_answer_cut_short_leaves_the_workbench_adapter_as_the_projects_error() -> None:
    """Through the real client over a socket: a server that closes mid-body (every answer, so the read's retries run
    out) gives the project's error, never requests' own, which a caller's `except ServiceError` would miss."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    cut = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"instances": ['

    def answer_cut_short() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                conn.sendall(cut)

    threading.Thread(target=answer_cut_short, daemon=True).start()
    try:
        workbench = Workbench(endpoint=f"http://127.0.0.1:{server.getsockname()[1]}",
                              timeout=timedelta(seconds=2), retry_deadline=timedelta(seconds=0.5))
        with pytest.raises(ServiceError) as raised:
            workbench.list("p", ("asia-northeast1-a",))
    finally:
        server.close()
    assert "ChunkedEncodingError" in str(raised.value), raised.value
