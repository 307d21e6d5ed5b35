"""Cloud Logging's `entries.list` on 127.0.0.1, as google-cloud-logging's HTTP transport calls it (issue 28).

The report (tools/report) reads the bot's audit entries with `google.cloud.logging.Client(_use_grpc=False,
client_options={"api_endpoint": url}).list_entries(filter_=..., order_by=...)`, which POSTs to
`{api_endpoint}/v2/entries:list` (google/cloud/logging_v2/_http.py, `_LoggingAPI.list_entries`). The HTTP
transport is chosen because a stdlib server answers it; the gRPC one would need a servicer for the same method.

What it answers, from the API reference (https://cloud.google.com/logging/docs/reference/v2/rest/v2/entries/list):
- the body's `resourceNames` is required ("projects/[PROJECT_ID]" and kin); entries of other projects are not
  returned (400 INVALID_ARGUMENT without one);
- `filter` in the Logging query language (simulators/logging_query.py: the subset it knows; any other filter is
  answered 400 INVALID_ARGUMENT rather than guessed), at most 20,000 characters (the field's documentation in
  gcloud's generated client, `generated_clients/apis/logging/v2/logging_v2_messages.py` `ListLogEntriesRequest`:
  "The maximum length of a filter is 20,000 characters"; a longer one is 400 here);
- `orderBy` "timestamp asc" (the default) or "timestamp desc"; anything else is 400;
- `pageSize`: default 50, at most 1000 (a larger one is cut to 1000), negative rejected; `pageToken` from the
  previous answer's `nextPageToken`, which is absent on the last page.
Entries are LogEntry JSON (jsonPayload, insertId, timestamp, logName, resource, severity).
"""

from __future__ import annotations

import http.server
import json
import threading
from typing import Any

from simulators.http_json import send_json
from simulators.logging_query import QueryError, as_time, compile_query

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000
MAX_FILTER_CHARS = 20_000


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        path = self.path.split("?", 1)[0]
        if path != "/v2/entries:list":
            self._answer(404, _error(404, "NOT_FOUND", f"no method at {path}"))
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._answer(400, _error(400, "INVALID_ARGUMENT", "the body is not JSON"))
            return
        status, answer = self.server.sim.list_entries(body if isinstance(body, dict) else {})
        self._answer(status, answer)

    def _answer(self, status: int, body: dict[str, Any]) -> None:
        send_json(self, status, body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read `calls` instead."""


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], sim: LoggingSimulator) -> None:
        self.sim = sim
        super().__init__(address, _Handler)


def _error(code: int, status: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status}}


def _project(entry: dict[str, Any]) -> str:
    """The project of projects/P/logs/ID."""
    parts = str(entry.get("logName", "")).split("/")
    return parts[1] if len(parts) > 3 and parts[0] == "projects" else ""


def _moment(entry: dict[str, Any]) -> tuple[float, str]:
    moment = as_time(str(entry.get("timestamp", "")))
    return (moment.timestamp() if moment else 0.0, str(entry.get("insertId", "")))


class LoggingSimulator:
    """Stored LogEntry dicts, listed as entries.list does."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []
        self.calls: list[dict[str, Any]] = []  # the request bodies, in order
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def add(self, *entries: dict[str, Any]) -> None:
        with self._lock:
            self.entries.extend(entries)

    def list_entries(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.calls.append(body)
            entries = list(self.entries)
        projects = [name.split("/", 1)[1] for name in body.get("resourceNames") or []
                    if isinstance(name, str) and name.startswith("projects/")]
        if not projects:
            return 400, _error(400, "INVALID_ARGUMENT", "resourceNames: at least one projects/[PROJECT_ID]")
        order = str(body.get("orderBy") or "timestamp asc").strip().lower()
        if order not in ("timestamp asc", "timestamp desc"):
            return 400, _error(400, "INVALID_ARGUMENT", f"orderBy: {order!r} is not supported")
        size = int(body.get("pageSize") or DEFAULT_PAGE_SIZE)
        if size < 0:
            return 400, _error(400, "INVALID_ARGUMENT", "pageSize is negative")
        if len(str(body.get("filter") or "")) > MAX_FILTER_CHARS:
            return 400, _error(400, "INVALID_ARGUMENT", f"filter: longer than {MAX_FILTER_CHARS} characters")
        try:
            wanted = compile_query(str(body["filter"])) if body.get("filter") else (lambda entry: True)
        except QueryError as exc:
            return 400, _error(400, "INVALID_ARGUMENT", f"filter: {exc}")
        chosen = [entry for entry in entries if _project(entry) in projects and wanted(entry)]
        chosen.sort(key=_moment, reverse=order.endswith("desc"))
        start = int(body.get("pageToken") or 0)
        page = chosen[start:start + min(size, MAX_PAGE_SIZE)]
        answer: dict[str, Any] = {"entries": page}
        if start + len(page) < len(chosen):
            answer["nextPageToken"] = str(start + len(page))
        return 200, answer

    def start(self) -> LoggingSimulator:
        self._server = _Server(("127.0.0.1", 0), self)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="logging-sim", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> LoggingSimulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
