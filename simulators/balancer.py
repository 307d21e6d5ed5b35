"""The stack's stand-in for Cloud Run's front end: round robin over a function's instances, 429 when all are busy."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class RoundRobin:
    """A tiny load balancer: what Cloud Run puts in front of a function's instances.

    With `concurrency` (Cloud Run's max_instance_request_concurrency; infra/functions.tf gives the worker 1), a
    backend takes at most that many requests at once, and a request that finds every backend busy is answered
    429, as Cloud Run answers when no instance is free and max_instance_count is reached ("The request was
    aborted because there was no available instance": Cloud Run troubleshooting, HTTP 429; the Pub/Sub push docs
    count any status but 102/200/201/202/204 as a failed delivery, so toward a dead-letter policy's attempts;
    docs/fidelity.md). Without it, every request is passed on (the functions-framework process queues it)."""

    def __init__(self, backends: list[str], *, concurrency: int | None = None) -> None:
        self.backends = backends
        self.concurrency = concurrency
        self.busy = [0] * len(backends)
        self.refused = 0  # requests answered 429
        self._next = 0
        self._lock = threading.Lock()
        balancer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                index = balancer.admit()
                if index is None:
                    refusal = b"Rate exceeded."
                    self.send_response(429)
                    self.send_header("Content-Length", str(len(refusal)))
                    self.end_headers()
                    self.wfile.write(refusal)
                    return
                try:
                    status, payload = self.forward(balancer.backends[index], body)
                finally:
                    balancer.release(index)
                self.send_response(status)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def forward(self, backend: str, body: bytes) -> tuple[int, bytes]:
                request = urllib.request.Request(backend + self.path.lstrip("/"), data=body, method="POST")
                for key in ("Content-Type", "Authorization", "ce-id", "ce-type", "ce-source", "ce-specversion",
                            "ce-time"):
                    if self.headers.get(key):
                        request.add_header(key, self.headers[key])
                try:
                    with urllib.request.urlopen(request, timeout=600) as response:
                        return int(response.status), response.read()
                except urllib.error.HTTPError as err:
                    return err.code, err.read()
                except OSError:
                    return 502, b"backend unreachable"

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def admit(self) -> int | None:
        """The backend that takes the next request, round robin among those with room; None: all are busy."""
        with self._lock:
            for offset in range(len(self.backends)):
                index = (self._next + offset) % len(self.backends)
                if self.concurrency is None or self.busy[index] < self.concurrency:
                    self._next = index + 1
                    self.busy[index] += 1
                    return index
            self.refused += 1
            return None

    def release(self, index: int) -> None:
        with self._lock:
            self.busy[index] -= 1

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
