"""Local helper processes (Anvil, the IPFS node): free ports, liveness, and a graceful stop.

Shared by `trust.chain.anvil` and `trust.storage.node`, which each start one kind of process and
record its pid so that a later command can find or stop it.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time

__all__ = ["alive", "free_port", "terminate"]


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def alive(pid: int) -> bool:
    """Whether a process with `pid` exists (one owned by another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def terminate(pid: int, process: subprocess.Popen[bytes] | None, timeout_seconds: float) -> None:
    """SIGTERM, so the process can write its state and close its stores; SIGKILL after the timeout.

    `process` is the handle when this interpreter started it (so it is reaped, not left a zombie),
    None when the pid came from a state file.
    """
    if process is not None and process.poll() is not None:
        return
    if not alive(pid):
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_seconds
    while time.monotonic() < deadline:
        if process is not None:
            if process.poll() is not None:
                return
        elif not alive(pid):
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    if process is not None:
        process.wait(timeout=5)
