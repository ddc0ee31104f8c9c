"""The beacon's signer processes on this machine: one `trust beacon run` per signer of this home's
group, started detached, recorded, and stopped by a later `trust beacon down` (or `trust devnet down`).

Added to the beacon folder (`Settings.beacon_dir`, `<home>/beacon`, beside the dealer's files of
`trust.adapters.local.beacon.keys`):

    processes.json      each running signer's pid and key file (mode 0600)
    signer-<i>.log      one log per signer

A recorded pid is trusted only while `/proc/<pid>/cmdline` is still `trust beacon run` with that
signer's key file of this home, so another home's signers, or a pid the system recycled, are never
signalled. `up` is idempotent: signers that run are kept, missing or dead ones are started.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trust.adapters.local.beacon.keys import load_group, signer_file
from trust.adapters.local.private_files import write_private
from trust.adapters.local.workers import (
    READY_LINE,
    StartedProcess,
    runs_trust_run,
    start_process,
    stop_processes,
    wait_ready,
)
from trust.errors import BeaconError
from trust.settings import Settings

__all__ = ["SignerState", "beacon_down", "beacon_status", "beacon_up", "runs_signer", "signer_command"]

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class SignerState:
    """One signer process: its index and operator, its pid (None when none was recorded), whether it
    runs, whether this call started it, and its log. `process` is the handle when this interpreter
    started it, so that a caller that outlives it (a local network) reaps it after `beacon_down`."""

    index: int
    operator: str
    pid: int | None
    running: bool
    started: bool
    log_file: Path
    process: subprocess.Popen[bytes] | None = field(default=None, compare=False, repr=False)


class _Files:
    def __init__(self, settings: Settings) -> None:
        self.home = settings.home.expanduser().resolve()
        self.dir = settings.beacon_dir.expanduser().resolve()
        self.record = self.dir / "processes.json"

    def key(self, index: int) -> Path:
        return signer_file(self.dir, index)

    def log(self, index: int) -> Path:
        return self.dir / f"signer-{index}.log"

    def load(self) -> dict[str, Any]:
        try:
            record = json.loads(self.record.read_text())
        except (OSError, ValueError):
            return {}
        return record if isinstance(record, dict) else {}

    def save(self, record: dict[str, Any]) -> None:
        write_private(self.record, json.dumps(record, indent=2) + "\n")

    def recorded_pid(self, record: dict[str, Any], index: int) -> int | None:
        entry = record.get(str(index))
        pid = entry.get("pid") if isinstance(entry, dict) else None
        return pid if isinstance(pid, int) else None


def signer_command(key_file: Path, rpc_url: str) -> list[str]:
    """The `trust beacon run` command line of one signer, with this interpreter."""
    return [sys.executable, "-m", "trust", "beacon", "run", "--key-file", str(key_file), "--rpc-url", rpc_url]


def runs_signer(pid: int, key_file: Path) -> bool:
    """Whether `pid` is a running `trust beacon run` with `key_file`."""
    return runs_trust_run(pid, "beacon", "--key-file", key_file)


def beacon_up(
    settings: Settings, rpc_url: str, deployments_dir: Path, *, progress: Progress | None = None
) -> list[SignerState]:
    """Starts the signers of this home's group that do not run, and waits until each follows the
    chain; `DevnetError` naming a signer that died while starting, with its log's tail. The group
    must have been dealt (`trust devnet up` deals it) and its beacon deployed."""
    say = progress or (lambda _msg: None)
    files = _Files(settings)
    group = load_group(files.dir)
    record = files.load()
    states: list[SignerState] = []
    started: list[StartedProcess] = []
    env = dict(os.environ) | {
        "TRUST_HOME": str(files.home),
        "TRUST_DEPLOYMENTS_DIR": str(deployments_dir.resolve()),
        "TRUST_BEACON__POLL_SECONDS": str(settings.beacon.poll_seconds),
    }
    for index, operator in enumerate(group.operators, start=1):
        key = files.key(index)
        if not key.is_file():
            raise BeaconError(f"signer {index}'s key file {key} is missing: the group in {files.dir} is incomplete")
        pid = files.recorded_pid(record, index)
        if pid is not None and runs_signer(pid, key):
            states.append(SignerState(index, operator, pid, True, False, files.log(index)))
            continue
        process = start_process(signer_command(key, rpc_url), env, files.log(index), detached=True)
        record[str(index)] = {"pid": process.pid, "key_file": str(key)}
        files.save(record)
        started.append(StartedProcess(str(index), process.pid, files.log(index), process))
        states.append(SignerState(index, operator, process.pid, True, True, files.log(index), process))
    if started:
        say(f"waiting for {len(started)} beacon signers to follow the chain")
        asyncio.run(
            wait_ready(
                started,
                settings.beacon.start_timeout_seconds,
                ready_line=READY_LINE,
                describe={p.name: f"beacon signer {p.name}" for p in started},
            )
        )
    return states


def beacon_status(settings: Settings) -> list[SignerState]:
    """Each signer of this home's group and whether its recorded process runs; starts nothing.
    Empty when no group was dealt."""
    files = _Files(settings)
    try:
        group = load_group(files.dir)
    except BeaconError:
        return []
    record = files.load()
    states = []
    for index, operator in enumerate(group.operators, start=1):
        pid = files.recorded_pid(record, index)
        alive = pid is not None and runs_signer(pid, files.key(index))
        states.append(SignerState(index, operator, pid, alive, False, files.log(index)))
    return states


def beacon_down(settings: Settings) -> int:
    """Stops the recorded signers that still run what was recorded (SIGTERM, then SIGKILL after
    `BeaconSettings.stop_timeout_seconds`); the number stopped."""
    files = _Files(settings)
    record = files.load()
    live = []
    for name in record:
        pid = files.recorded_pid(record, int(name)) if name.isdigit() else None
        if pid is not None and runs_signer(pid, files.key(int(name))):
            live.append(StartedProcess(name, pid, files.log(int(name))))
    stop_processes(live, settings.beacon.stop_timeout_seconds)
    files.record.unlink(missing_ok=True)
    return len(live)
