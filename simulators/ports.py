"""Ports for a stack's processes: each process of this machine's test runs draws from a block no other holds.

Its own module, below the stack and the emulator's launcher, which both need it (no import cycle).
"""

from __future__ import annotations

import itertools
import os
import socket
import threading
from pathlib import Path
from typing import Any

# Ports for the functions' processes, below the kernel's ephemeral range: bind(0) draws from that range, and so
# does the source port of every outgoing connection, so a port bind(0) handed out and released could be taken
# before functions-framework bound it (by another xdist worker's stack, or by a connection), and the port then
# answered for another process: once a stack's slack_app URL answered as another stack's restart_worker (204).
# Each process draws from a block of its own, claimed with an exclusive lock on a file for the process's life, so
# two test runs on one machine (a developer's and CI's, or two worktrees') never hand out the same block either.
PORT_BLOCK = 400
PORT_LOCKS = Path(os.environ.get("MEDIC_PORT_LOCKS", "/tmp/notebook-medic-ports"))
_next_port = itertools.count()
_claimed: dict[str, Any] = {}  # "block" -> (the locked file, the block's first port), held until the process ends
_claim_lock = threading.Lock()


def _port_blocks() -> range | None:
    """The blocks below the ephemeral range, or None when it starts too low to leave room for them."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    start = 10_000
    return range(start, low - PORT_BLOCK + 1, PORT_BLOCK) if low - start >= 8 * PORT_BLOCK else None


def _claimed_block(blocks: range) -> int | None:
    """The first port of this process's block: the first whose lock file no other process holds (None when all
    are held: then bind(0), as on a machine without room for blocks)."""
    import fcntl  # noqa: PLC0415 - POSIX only; the stack runs on Linux

    with _claim_lock:
        if "block" in _claimed:
            return int(_claimed["block"][1])
        PORT_LOCKS.mkdir(parents=True, exist_ok=True)
        worker = os.environ.get("PYTEST_XDIST_WORKER", "")
        first = int(worker[2:]) if worker[2:].isdigit() else os.getpid()
        for step in range(len(blocks)):
            base = blocks[(first + step) % len(blocks)]
            handle = (PORT_LOCKS / f"block-{base}.lock").open("a")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                handle.close()
                continue
            _claimed["block"] = (handle, base)
            return base
        return None


def free_port() -> int:
    """A port free to listen on now, that no other process of this machine's test runs is handed."""
    blocks = _port_blocks()
    base = _claimed_block(blocks) if blocks is not None else None
    if base is not None:
        for _ in range(PORT_BLOCK):
            port = base + next(_next_port) % PORT_BLOCK
            with socket.socket() as sock:
                try:
                    sock.bind(("127.0.0.1", port))
                except OSError:  # in use: one of this block's still closing
                    continue
                return port
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
