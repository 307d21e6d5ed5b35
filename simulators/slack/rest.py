"""The Slack simulator over HTTP: the server, its lifecycle, the public `handle()` every request goes through,
and the admin paths for manual use."""

from __future__ import annotations

import http.server
import threading
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from simulators.slack.model import RESPONSE_URL_METHOD, ApiCall, JsonDict, _decode_args, _Reply, _str_arg
from simulators.slack.web_api import WebApi
from simulators.slack_files import UPLOAD_PATH


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"
    server_version = "SlackSimulator/1.0"

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        self.server.sim._dispatch(self, "POST", raw)

    def do_GET(self) -> None:
        self.server.sim._dispatch(self, "GET", b"")

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log; the transcript callback replaces it."""


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], sim: SlackSimulator) -> None:
        self.sim = sim
        super().__init__(address, _Handler)




class SlackSimulator(WebApi):
    """A Slack workspace on 127.0.0.1 that the real slack_sdk.WebClient can talk to."""

    # ------------------------------------------------------------------ lifecycle

    def start(self, port: int = 0) -> SlackSimulator:
        """Serve on 127.0.0.1:port (0 = any free port) in a daemon thread."""
        if self._server is not None:
            raise RuntimeError("SlackSimulator already started")
        self._stopping.clear()
        self._server = _Server(("127.0.0.1", port), self)
        self._port = int(self._server.server_address[1])
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"slack-sim-{self._port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; wakes requests sleeping in latency or a ``timeout`` fault."""
        self._stopping.set()
        server, thread = self._server, self._thread
        self._server, self._thread = None, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> SlackSimulator:
        return self if self._server is not None else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


    # ------------------------------------------------------------------ request plumbing

    def _dispatch(self, handler: _Handler, verb: str, raw: bytes) -> None:
        """Serve one request: the answer `handle()` gives is sent, then the transcript callback sees the call."""
        reply, call = self.handle(verb, handler.path, handler.headers.get("Content-Type", ""),
                                  handler.headers.get("Authorization", ""), raw)
        if reply is None:
            return
        self._send(handler, reply)
        if call is not None and self.on_call is not None:
            self.on_call(call)

    def handle(
        self, verb: str, raw_path: str, content_type: str, authorization: str, raw: bytes, *, threaded: bool = True
    ) -> tuple[_Reply | None, ApiCall | None]:
        """One request as it arrives (method, path with query, Content-Type, Authorization, body): the reply to
        send (None when the simulator stops under it) and the Web API or response_url call it was recorded as
        (None for an upload's bytes and the admin paths, which the transcript does not show). `threaded=False`:
        in process, where a `timeout` fault holds nothing (`_faulted`)."""
        arrived = self._time()
        parsed = urllib.parse.urlsplit(raw_path)
        path = parsed.path
        if path.startswith(UPLOAD_PATH):  # the external upload's bytes: no arguments to decode
            return self._upload(path, raw, arrived), None
        try:
            args = _decode_args(raw, content_type, parsed.query)
        except ValueError:
            args = {"_raw": raw.decode("utf-8", "replace")}
            args_ok = False
        else:
            args_ok = True

        if path.startswith("/api/"):
            method = path[len("/api/") :]
        elif path.startswith("/response/"):
            method = RESPONSE_URL_METHOD
        elif path.startswith("/_sim/"):
            return self._admin(path, args), None
        else:
            method = path

        token_field = args.pop("token", None) if method != RESPONSE_URL_METHOD else None
        call = ApiCall(method=method, args=args, time=arrived)
        with self._lock:
            self.calls.append(call)

        if self.latency_s > 0 and self._stopping.wait(self.latency_s):
            return None, None

        reply = self._faulted(method, call, threaded=threaded)
        if reply is None:
            if method == RESPONSE_URL_METHOD:
                reply = self._response_url_post(path, verb, args if args_ok else None)
            elif path.startswith("/api/"):
                token = authorization[len("Bearer ") :] if authorization.startswith("Bearer ") else None
                if token is None and isinstance(token_field, str):
                    token = token_field
                reply = self._web_api(method, token, args, args_ok)
            else:
                reply = _Reply.text(404, "Not Found")
        if self._stopping.is_set():
            return None, None
        call.status = reply.status
        call.error = reply.error
        return reply, call

    def _upload(self, path: str, raw: bytes, arrived: float) -> _Reply:
        """The bytes of an external upload, at the upload_url files.getUploadURLExternal gave (step 2)."""
        call = ApiCall(method="upload", args={"path": path, "length": len(raw)}, time=arrived)
        with self._lock:
            self.calls.append(call)
        reply = self._faulted("upload", call)
        if reply is None:
            with self._lock:
                status, body = self.files.receive(path, raw)
            reply = _Reply.text(status, body)
        call.status = reply.status
        return reply

    def _send(self, handler: _Handler, reply: _Reply) -> None:
        try:
            handler.send_response(reply.status)
            handler.send_header("Content-Type", reply.content_type)
            handler.send_header("Content-Length", str(len(reply.body)))
            for name, value in reply.headers.items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(reply.body)
        except OSError:
            pass  # client went away (e.g. its timeout fired)


    # ------------------------------------------------------------------ admin (manual use)

    def _admin(self, path: str, args: JsonDict) -> _Reply:
        """Tiny control surface for other processes: /_sim/new_response_url, /_sim/messages
        ?channel=C.., /_sim/responses?url=.., /_sim/calls. Not part of Slack."""
        if path == "/_sim/new_response_url":
            url = self.new_response_url(
                channel=_str_arg(args, "channel"), message_ts=_str_arg(args, "message_ts")
            )
            return _Reply.text(200, url)
        if path == "/_sim/messages":
            return _Reply.json(200, {"messages": self.messages(_str_arg(args, "channel") or "")})
        if path == "/_sim/responses":
            try:
                return _Reply.json(200, {"responses": self.responses(_str_arg(args, "url") or "")})
            except KeyError:
                return _Reply.text(404, "unknown response_url")
        if path == "/_sim/calls":
            with self._lock:
                calls = [c.__dict__.copy() for c in self.calls]
            return _Reply.json(200, {"calls": calls})
        return _Reply.text(404, "Not Found")


# ---------------------------------------------------------------------- arg decoding
