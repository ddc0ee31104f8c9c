"""Local helper processes (Anvil, the IPFS node): free ports, liveness, identity and a graceful stop.

Shared by `trust.adapters.local.anvil`, `trust.adapters.local.ipfs` and the local model server, which each start one
kind of process and record its pid so that a later command can find or stop it.

A recorded pid alone says nothing about whose process it is now: the process may have died and the
system given its pid to another (another home's node, after a reboot), and a home copied from
another carries the other's records. Before a record's pid is signalled, `command_line` shows what
that pid runs now, and the caller checks it is the recorded program with the recorded options
(`option_value`), not merely a program of the same kind.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = [
    "alive",
    "command_line",
    "free_port",
    "inspectable",
    "option_value",
    "parent",
    "processes",
    "terminate",
    "wait_ended",
    "working_directory",
]

_PROC = Path("/proc")


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


def inspectable() -> bool:
    """Whether this system shows other processes' command lines (Linux's /proc). Where it does not
    (macOS), callers can only check what a process answers over the network."""
    return (_PROC / "self" / "cmdline").is_file()


def command_line(pid: int) -> list[str] | None:
    """The arguments `pid` runs with now (argv, program first), or None when it is gone or they
    cannot be read (no /proc, or hidden from this user)."""
    try:
        raw = (_PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return None
    if not raw:
        return None  # a zombie, or a kernel thread: nothing to match
    return [part.decode(errors="replace") for part in raw.rstrip(b"\0").split(b"\0")]


def parent(pid: int) -> int | None:
    """The pid of `pid`'s parent, or None when it is gone or that cannot be read (no /proc)."""
    fields = _stat_fields(pid)
    return None if fields is None else int(fields[1])


def _stat_fields(pid: int) -> list[str] | None:
    """`/proc/<pid>/stat` after the command: state, parent pid, ... (see proc(5))."""
    try:
        stat = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # "pid (command) state ppid ...": the command may hold spaces and parentheses; split after the last ")".
    return stat[stat.rfind(")") + 2 :].split()


def working_directory(pid: int) -> Path | None:
    """The directory `pid` runs in (relative arguments are relative to it), or None when unreadable."""
    try:
        return Path(os.readlink(_PROC / str(pid) / "cwd"))
    except OSError:
        return None


def option_value(argv: Sequence[str], name: str) -> str | None:
    """The value of option `name` (`--port 5101` or `--port=5101`) in `argv`; the last one wins, as
    for the argument parsers of the programs we start. None when absent."""
    found: str | None = None
    for index, part in enumerate(argv):
        if part == name and index + 1 < len(argv):
            found = argv[index + 1]
        elif part.startswith(name + "="):
            found = part[len(name) + 1 :]
    return found


def processes() -> Iterator[tuple[int, list[str]]]:
    """(pid, argv) of every process whose command line this user can read; nothing without /proc."""
    try:
        entries = list(_PROC.iterdir())
    except OSError:
        return
    for entry in entries:
        if entry.name.isdigit():
            argv = command_line(int(entry.name))
            if argv is not None:
                yield int(entry.name), argv


def terminate(pid: int, process: subprocess.Popen[bytes] | None, timeout_seconds: float) -> None:
    """SIGTERM, so the process can write its state and close its stores; SIGKILL after the timeout.
    Returns once the process is gone (or a zombie its parent has yet to reap): a SIGKILLed process
    with a large address space takes a moment to die, and until then it still holds its files, its
    port and its working directory.

    `process` is the handle when this interpreter started it (so it is reaped, not left a zombie),
    None when the pid came from a state file.
    """
    if process is not None and process.poll() is not None:
        return
    if not alive(pid):
        return
    if not _signal(pid, signal.SIGTERM) or _ended(pid, process, timeout_seconds):
        return
    if _signal(pid, signal.SIGKILL) and not _ended(pid, process, _KILL_WAIT_SECONDS):
        raise OSError(f"process {pid} is still running {_KILL_WAIT_SECONDS:g} s after SIGKILL")


def wait_ended(pid: int, timeout_seconds: float) -> bool:
    """Waits up to `timeout_seconds` for `pid`, not this interpreter's child, to end (a zombie its
    parent has yet to reap counts as ended); whether it did."""
    return _ended(pid, None, timeout_seconds)


_KILL_WAIT_SECONDS = 10.0
"""How long a SIGKILLed process may take to die: the kernel frees its memory first."""


def _signal(pid: int, signum: signal.Signals) -> bool:
    """Sends `signum`; False when the process had already ended."""
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        return False
    return True


def _ended(pid: int, process: subprocess.Popen[bytes] | None, timeout_seconds: float) -> bool:
    """Waits up to `timeout_seconds` for the process to end; whether it did."""
    deadline = time.monotonic() + timeout_seconds
    while True:
        if process is not None:
            if process.poll() is not None:
                return True
        elif not alive(pid) or _zombie(pid):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def _zombie(pid: int) -> bool:
    """Whether `pid` has exited and waits for its parent to reap it (Linux; False where unknown)."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] == "Z"
