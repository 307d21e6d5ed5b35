"""describe_error: what organizers and participants read of an API error names the status the API answered."""

from __future__ import annotations

import json

import requests
from google.api_core import exceptions as gexc

from shared.adapters.workbench import describe_error


def rest_error(status: int, body: dict[str, object]) -> gexc.GoogleAPICallError:
    """An error as the REST transport raises it: its class chosen by the HTTP status alone, the body attached."""
    response = requests.Response()
    response.status_code = status
    response._content = json.dumps(body).encode()
    response.request = requests.Request("POST", "https://notebooks.googleapis.com/v2/x:reset").prepare()
    return gexc.from_http_response(response)


def test_grpc_failed_precondition_is_not_called_bad_request() -> None:
    assert describe_error(gexc.FailedPrecondition("instance is STOPPED")) == "FAILED_PRECONDITION: instance is STOPPED"
    assert describe_error(gexc.PermissionDenied("denied")) == "PERMISSION_DENIED: denied"


def test_rest_error_is_named_by_the_status_in_its_body_not_its_http_status() -> None:
    body = {"error": {"code": 400, "message": "Instance is STOPPED.", "status": "FAILED_PRECONDITION"}}
    error = rest_error(400, body)
    assert isinstance(error, gexc.BadRequest) and not isinstance(error, gexc.FailedPrecondition)
    assert describe_error(error) == "FAILED_PRECONDITION: Instance is STOPPED."


def test_an_error_without_the_apis_status_keeps_what_it_has() -> None:
    assert describe_error(rest_error(403, {"error": {"message": "denied"}})) == "FORBIDDEN: denied"
    assert describe_error(rest_error(502, {"oops": 1})).startswith("BAD_GATEWAY: ")
    assert describe_error(rest_error(400, {"error": {"message": "x", "status": "<!channel>"}})) == "BAD_REQUEST: x"
    assert describe_error(RuntimeError("label update failed")) == "RuntimeError: label update failed"
