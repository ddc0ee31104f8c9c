"""Auditor workers as processes of their own on this machine: the `trust worker run` command line and
environment, the start, the wait until each follows the chain, and a stop that never signals a
process other than the one recorded.

Shared by `trust.lab.localnet` (the workers of a throw-away network, children of the demo, benchmark or
test that runs it) and `trust.lab.devnet_processes` (the detached workers of the persistent devnet,
recorded under its home and stopped by a later `trust devnet down`).

A worker is *ready* once its log shows the line `Worker.run` writes when its loop starts ("worker
0x.. (tier t) following ..."): by then it has checked its registration, opened its state and, for
tier 3, serves its review page. A recorded pid is trusted only while `/proc/<pid>/cmdline` is still
`trust worker run` with the recorded keystore, so a pid the system recycled for another program, or
a worker of another `TRUST_HOME` (its keystores live in that home), is never signalled.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from trust.adapters.local.processes import alive, command_line, free_port, option_value, working_directory
from trust.errors import DevnetError

__all__ = [
    "READY_LINE",
    "ReviewPage",
    "StartedProcess",
    "log_tail",
    "running",
    "runs_trust_run",
    "runs_worker",
    "start_process",
    "stop_processes",
    "wait_ready",
    "worker_command",
    "worker_environment",
]

READY_LINE = ") following "
"""What a worker logs when its loop starts (`Worker.run`: "worker 0x.. (tier t) following <rpc> ..."),
and a beacon signer once it follows the chain ("beacon signer i (0x..) following <beacon> ..."):
the same words, so `wait_ready` waits for both alike."""
_REVIEW_PASSWORD_BYTES = 12
_LOG_TAIL_CHARS = 2000
_POLL_SECONDS = 0.2


@dataclass(frozen=True, slots=True)
class ReviewPage:
    """The review page of one tier-3 worker: where it answers and the expert's password."""

    auditor: str
    url: str
    password: str

    @classmethod
    def new(cls, auditor: str, host: str = "127.0.0.1", port: int | None = None) -> ReviewPage:
        """A page on `port` (a free one when None) with a fresh password."""
        return cls(auditor, f"http://{host}:{port or free_port(host)}", secrets.token_urlsafe(_REVIEW_PASSWORD_BYTES))

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])


@dataclass
class StartedProcess:
    """A process this machine runs for a network: who it is (an auditor's address, or a role), its
    pid and log, and its handle when this interpreter started it (None when found from a record)."""

    name: str
    pid: int
    log_file: Path
    process: subprocess.Popen[bytes] | None = None

    def exit_code(self) -> int | None:
        """The exit code once it ended, else None (a process found from a record reports -1)."""
        if self.process is not None:
            return self.process.poll()
        return None if running(self.pid) else -1


def worker_command(
    *,
    keystore: Path,
    password_file: Path,
    tier: int,
    rpc_url: str,
    ipfs_url: str,
    auto_claim: bool = True,
    adversary: str | None = None,
) -> list[str]:
    """The `trust worker run` command line of one auditor, with this interpreter."""
    command = [
        sys.executable,
        "-m",
        "trust",
        "worker",
        "run",
        "--keystore",
        str(keystore),
        "--password-file",
        str(password_file),
        "--tier",
        str(tier),
        "--rpc",
        rpc_url,
        "--ipfs",
        ipfs_url,
    ]
    if auto_claim:
        command.append("--auto-claim")
    if adversary:
        command += ["--adversary", adversary]
    return command


def worker_environment(
    base: Mapping[str, str], overrides: Mapping[str, str], review: ReviewPage | None
) -> dict[str, str]:
    """`base` (the caller decides whether the user's `TRUST_*` settings pass through), then the
    `TRUST_*` values of `overrides`, then the review page's port and password for a tier-3 worker."""
    env = dict(base) | dict(overrides)
    if review is not None:
        env |= {"TRUST_WORKER__REVIEW__PORT": str(review.port), "TRUST_WORKER__REVIEW__PASSWORD": review.password}
    return env


def start_process(
    command: Sequence[str], env: Mapping[str, str], log_file: Path, *, detached: bool
) -> subprocess.Popen[bytes]:
    """Starts `command` with its output appended to `log_file`. `detached` puts it in a session of
    its own, so that it outlives the command that started it and a Ctrl-C there does not reach it."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with open(log_file, "ab") as out:
        return subprocess.Popen(
            list(command),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=dict(env),
            start_new_session=detached,
        )


def log_tail(log_file: Path, chars: int = _LOG_TAIL_CHARS) -> str:
    try:
        return log_file.read_text(errors="replace")[-chars:]
    except OSError:
        return "(no log)"


def _logged(log_file: Path, line: str) -> bool:
    try:
        return line in log_file.read_text(errors="replace")
    except OSError:
        return False


async def wait_ready(
    processes: Sequence[StartedProcess],
    timeout_seconds: float,
    *,
    ready_line: str = READY_LINE,
    describe: Mapping[str, str] | None = None,
) -> None:
    """Until every process logged `ready_line`; `DevnetError` naming the first that died (with its
    log's tail) or those still starting at the deadline. `describe` maps a name to the words used
    for it in messages (default: the name)."""
    words = describe or {}
    deadline = time.monotonic() + timeout_seconds
    pending = list(processes)
    while pending:
        for started in list(pending):
            code = started.exit_code()
            if code is not None:
                what = words.get(started.name, started.name)
                how = f" with code {code}" if code >= 0 else ""
                raise DevnetError(
                    f"{what} exited{how} while starting; its log {started.log_file} ends with:\n"
                    f"{log_tail(started.log_file)}"
                )
            if _logged(started.log_file, ready_line):
                pending.remove(started)
        if not pending:
            return
        if time.monotonic() > deadline:
            names = ", ".join(words.get(p.name, p.name) for p in pending)
            raise DevnetError(
                f"{len(pending)} did not start within {timeout_seconds:.0f} s: {names}; see their logs "
                f"({', '.join(str(p.log_file) for p in pending)})"
            )
        await asyncio.sleep(_POLL_SECONDS)


def running(pid: int) -> bool:
    """Whether `pid` exists and has not exited: a zombie (ended, not yet reaped) does not count."""
    if not alive(pid):
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return alive(pid)
    # The state follows the command name, which is in parentheses and may itself hold spaces.
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


def runs_trust_run(pid: int, group: str, option: str, path: Path) -> bool:
    """Whether `pid` is a running `trust <group> run` whose `option` names the file `path`: a
    process this home started, not another home's or a recycled pid."""
    args = command_line(pid)
    if args is None or not running(pid) or group not in args or "run" not in args:
        return False
    given = option_value(args, option)
    if given is None:
        return False
    # A relative path is relative to the process's own folder.
    where = working_directory(pid) or Path.cwd()
    return os.path.realpath(where / given) == os.path.realpath(path)


def runs_worker(pid: int, keystore: Path) -> bool:
    """Whether `pid` is a running `trust worker run` with `keystore`: a worker of this network."""
    return runs_trust_run(pid, "worker", "--keystore", keystore)


def stop_processes(processes: Sequence[StartedProcess], timeout_seconds: float) -> None:
    """SIGTERM to all at once (each finishes its current step and closes its state), SIGKILL to
    those still running after `timeout_seconds`. The caller checked that each pid is what it
    recorded; the handles of processes this interpreter started are reaped."""

    def still_running(started: StartedProcess) -> bool:
        if started.process is not None:
            return started.process.poll() is None
        return running(started.pid)

    live = [p for p in processes if still_running(p)]
    for started in live:
        try:
            os.kill(started.pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
    deadline = time.monotonic() + timeout_seconds
    while time.monotonic() < deadline:
        live = [p for p in live if still_running(p)]
        if not live:
            return
        time.sleep(0.05)
    for started in live:
        try:
            os.kill(started.pid, signal.SIGKILL)
        except ProcessLookupError:
            continue
        if started.process is not None:
            started.process.wait(timeout=5)
