"""The Workbench simulator over HTTP: the server, its lifecycle and endpoints, and the REST request handler."""

from __future__ import annotations

import json
import threading
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

from simulators.workbench.api import ApiState
from simulators.workbench.errors import AbortError, SimulatorError


class WorkbenchSimulator(ApiState):
    """In-memory Workbench v2 API served over plain HTTP on 127.0.0.1."""

    # --- lifecycle --------------------------------------------------------------------
    def start(self, port: int = 0, grpc_port: int = 0) -> Self:
        if self._server is not None:
            raise RuntimeError("simulator already started")
        self._stopping.clear()
        server = ThreadingHTTPServer(("127.0.0.1", port), _make_handler(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="workbench-sim",
            daemon=True,
        )
        self._thread.start()
        from simulators import workbench_grpc  # noqa: PLC0415 - grpc and the protos only when serving

        self._grpc_server, self._grpc_port = workbench_grpc.serve(self, grpc_port)
        return self

    def stop(self) -> None:
        self._stopping.set()  # wakes handlers sleeping in a "timeout" fault or latency
        grpc_server, self._grpc_server = self._grpc_server, None
        if grpc_server is not None:
            grpc_server.stop(grace=None)
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self if self._server is not None else self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("simulator not started")
        return int(self._server.server_address[1])

    @property
    def endpoint(self) -> str:
        """The REST endpoint (``transport="rest"``)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def grpc_endpoint(self) -> str:
        """The gRPC endpoint, the client's default transport; WORKBENCH_API_ENDPOINT's ``grpc://`` form."""
        if self._grpc_server is None:
            raise RuntimeError("simulator not started")
        return f"grpc://127.0.0.1:{self._grpc_port}"



def _make_handler(sim: WorkbenchSimulator) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "WorkbenchSimulator/1.0"
        timeout = 60  # idle keep-alive connections are dropped after this
        # Headers and body go out in two writes; with Nagle on, the body waits for the client's
        # delayed ACK (40 ms on Linux) on a kept-alive connection: latency the real API doesn't add.
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            try:
                status, payload = sim.handle(self.command, self.path, body)
            except AbortError:
                self.close_connection = True
                return
            except SimulatorError as err:
                status, payload = err.http_status, err.body()
            except Exception as exc:  # a simulator bug: report it as Google would
                traceback.print_exc()
                status, payload = 500, SimulatorError(500, f"Simulator error: {exc!r}").body()
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=UTF-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:  # the client gave up (e.g. its timeout fired)
                self.close_connection = True

        def do_GET(self) -> None:
            self._serve()

        def do_POST(self) -> None:
            self._serve()

        def do_PATCH(self) -> None:
            self._serve()

        def do_PUT(self) -> None:
            self._serve()

        def do_DELETE(self) -> None:
            self._serve()

    return Handler

