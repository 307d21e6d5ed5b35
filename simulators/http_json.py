"""A JSON answer from a stand-in's HTTP handler, as Google's REST APIs send one (Content-Type with charset)."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any


def send_json(handler: BaseHTTPRequestHandler, status: int, body: Any, *, headers: dict[str, str] | None = None,
              raw: bytes | None = None) -> None:
    """Writes the status, the headers and the body (`raw` when the bytes are already made) in one place."""
    data = json.dumps(body).encode() if raw is None else raw
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json; charset=UTF-8")
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
