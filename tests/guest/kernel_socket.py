"""A kernel's websocket as JupyterLab's browser tab opens it (RFC 6455, client side): code run in a kernel, and how
its execute_request ended (rig.py's JupyterServer.execute, the guest tests, make bench and make demo).

Written on the socket, in Jupyter's JSON message format, so that nothing between the test and the kernel is a
library's guess: a kernel that dies under the request is seen as Jupyter reports it ("restarting", "dead").
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import struct
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol


class JupyterAddress(Protocol):
    """Where a Jupyter server listens on loopback and the token it takes (rig.JupyterServer is one)."""

    port: int
    token: str


@dataclass(frozen=True)
class ExecResult:
    """How one execute_request ended: "ok", "error", "restarting" (the kernel died under it), "dead" or "timeout"."""

    status: str
    stdout: str = ""
    error: str = ""


class KernelSocket:
    """The websocket JupyterLab opens to a kernel (/api/kernels/ID/channels), in the JSON message format."""

    def __init__(self, server: JupyterAddress, kernel_id: str, timeout: float) -> None:
        self.session = uuid.uuid4().hex
        # Every read ends by then: jupyter_server pings an open kernel websocket (every 30 s by default:
        # jupyter_server/base/websocket.py WS_PING_INTERVAL), and receive() answers pings without returning, so a
        # socket timeout alone never ended a read of a kernel that said nothing (a loaded run's
        # test_guard_provisioner waited out pytest's 600 s so).
        self.deadline = time.monotonic() + timeout
        self.sock = socket.create_connection(("127.0.0.1", server.port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((
            f"GET /api/kernels/{kernel_id}/channels?session_id={self.session} HTTP/1.1\r\n"
            f"Host: 127.0.0.1:{server.port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            f"Authorization: token {server.token}\r\n\r\n"
        ).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("the server closed the websocket handshake")
            head += chunk
        status_line = head.split(b"\r\n", 1)[0]
        if b" 101 " not in status_line:
            raise ConnectionError(f"websocket refused: {status_line.decode(errors='replace')}")
        self.buffer = head.split(b"\r\n\r\n", 1)[1]

    def _exact(self, count: int) -> bytes:
        while len(self.buffer) < count:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("nothing whole from the kernel's websocket before the deadline")
            self.sock.settimeout(left)
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("the websocket closed")
            self.buffer += chunk
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def send(self, message: dict[str, Any]) -> None:
        payload = json.dumps(message).encode()
        mask = os.urandom(4)
        length = len(payload)
        if length < 126:
            header = struct.pack("!BB", 0x81, 0x80 | length)
        elif length < 65536:
            header = struct.pack("!BBH", 0x81, 0x80 | 126, length)
        else:
            header = struct.pack("!BBQ", 0x81, 0x80 | 127, length)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(header + mask + masked)

    def receive(self) -> dict[str, Any]:
        """The next whole JSON message (pings answered, fragments joined)."""
        parts: list[bytes] = []
        while True:
            first, second = self._exact(2)
            length = second & 0x7F
            if length == 126:
                (length,) = struct.unpack("!H", self._exact(2))
            elif length == 127:
                (length,) = struct.unpack("!Q", self._exact(8))
            payload = self._exact(length)
            opcode = first & 0x0F
            if opcode == 0x8:
                raise ConnectionError("the server closed the websocket")
            if opcode == 0x9:  # ping: answer with a masked pong carrying the same payload
                mask = os.urandom(4)
                self.sock.sendall(struct.pack("!BB", 0x8A, 0x80 | len(payload)) + mask
                                  + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))
                continue
            if opcode in (0x1, 0x2, 0x0):
                parts.append(payload)
                if first & 0x80:
                    return dict(json.loads(b"".join(parts)))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


def execute(server: JupyterAddress, kernel_id: str, code: str, timeout: float = 30.0) -> ExecResult:
    """Runs `code` in the kernel as JupyterLab does (execute_request on the shell channel, over the websocket)."""
    try:
        ws = KernelSocket(server, kernel_id, timeout)
    except (OSError, ConnectionError) as refused:
        return ExecResult("dead", error=str(refused))
    msg_id = uuid.uuid4().hex
    ws.send({
        "header": {"msg_id": msg_id, "username": "test", "session": ws.session, "msg_type": "execute_request",
                   "version": "5.3", "date": datetime.now(UTC).isoformat()},
        "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
        "content": {"code": code, "silent": False, "store_history": False, "user_expressions": {},
                    "allow_stdin": False, "stop_on_error": True},
    })
    stdout: list[str] = []
    error, replied, idle = "", "", False
    try:
        while not (replied and idle):
            message = ws.receive()  # TimeoutError past the deadline (KernelSocket.deadline)
            kind = message.get("msg_type") or message.get("header", {}).get("msg_type")
            content = message.get("content", {})
            if kind == "status" and content.get("execution_state") in ("restarting", "dead", "autorestarting"):
                return ExecResult("restarting" if content["execution_state"] != "dead" else "dead",
                                  "".join(stdout), error)
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if kind == "stream" and content.get("name") == "stdout":
                stdout.append(content.get("text", ""))
            elif kind == "error":
                error = f"{content.get('ename')}: {content.get('evalue')}"
            elif kind == "execute_reply":
                replied = str(content.get("status", ""))
            elif kind == "status" and content.get("execution_state") == "idle":
                idle = True
    except TimeoutError:
        return ExecResult("timeout", "".join(stdout), error)
    except (OSError, ConnectionError) as closed:
        return ExecResult("dead", "".join(stdout), str(closed))
    finally:
        ws.close()
    return ExecResult("ok" if replied == "ok" else "error", "".join(stdout), error)
