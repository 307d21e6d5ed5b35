"""A gRPC server on a loopback port of the kernel's choosing, as the local stand-ins that speak gRPC start theirs."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent import futures
from typing import Any

import grpc


def serve(handlers: Sequence[Any], *, name: str, workers: int) -> tuple[grpc.Server, int]:
    """Started, with its port: SO_REUSEPORT off, so a port another process holds is never shared with it."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name),
                         options=[("grpc.so_reuseport", 0)])
    server.add_generic_rpc_handlers(tuple(handlers))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, port
