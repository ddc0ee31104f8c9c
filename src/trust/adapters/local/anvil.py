"""Starting and stopping Anvil, the local EVM node, as a real process.

Used three ways: the persistent devnet (`trust devnet up`: detached, state saved to a file so a
restart loses nothing), the gas benchmark and the test suite (ephemeral: a fresh chain on a free
port, stopped on exit).

Anvil keeps the state of each recent block in memory and writes older ones to disk (up to 3,600
of them, each a dump of the whole state: half a megabyte on a fresh deployment, far more after a
long run), by default under `~/.foundry/anvil/tmp`, and leaves them there when it is stopped. Runs
of many blocks filled whole disks that way. Every node started here writes them to a folder of its
own instead (`--cache-path`), which `stop` removes.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from trust.adapters.local.processes import alive, free_port, terminate
from trust.adapters.local.toolchain import Toolchain
from trust.errors import DevnetError

__all__ = ["AnvilNode", "rpc_ready"]


def rpc_ready(url: str, timeout_seconds: float = 1.0) -> int | None:
    """The chain id answered at `url`, or None when nothing answers there."""
    try:
        response = httpx.post(
            url, json={"jsonrpc": "2.0", "id": 1, "method": "eth_chainId", "params": []}, timeout=timeout_seconds
        )
        return int(response.json()["result"], 16)
    except (httpx.HTTPError, ValueError, KeyError):
        return None


@dataclass
class AnvilNode:
    """One Anvil process."""

    host: str
    port: int
    chain_id: int
    pid: int
    log_file: Path | None = None
    states_dir: Path | None = None
    """Where Anvil writes the states of past blocks that no longer fit in memory; removed by `stop`."""
    _process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def rpc_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @classmethod
    def start(
        cls,
        toolchain: Toolchain,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        chain_id: int = 31337,
        mnemonic: str | None = None,
        state_file: Path | None = None,
        state_interval_seconds: int | None = None,
        log_file: Path | None = None,
        detached: bool = False,
        genesis_timestamp: int | None = None,
        block_seconds: float | None = None,
        states_dir: Path | None = None,
        startup_timeout_seconds: float = 30.0,
    ) -> AnvilNode:
        """Starts Anvil and waits until it answers JSON-RPC.

        With `state_file`, Anvil loads the chain from it at start and writes it back every
        `state_interval_seconds` and on exit. `detached` puts it in its own session so it outlives
        the command that started it. With `block_seconds`, Anvil mines in mixed mode: every
        transaction at once (automine) and an empty block every `block_seconds` when idle, so the
        chain's clock and block height move on their own (commit windows and randomness blocks)
        while transactions never wait for the next interval. `states_dir` is where Anvil writes the
        states of past blocks beyond those it keeps in memory (emptied first: no live node uses it
        when this one starts); a fresh temporary folder when None. `stop` removes it.
        """
        port = port or free_port(host)
        if rpc_ready(f"http://{host}:{port}") is not None:
            raise DevnetError(
                f"something already answers JSON-RPC at http://{host}:{port}; stop it or pick another port"
            )
        cmd = [str(toolchain.anvil), "--host", host, "--port", str(port), "--chain-id", str(chain_id), "--silent"]
        if mnemonic:
            cmd += ["--mnemonic", mnemonic]
        if genesis_timestamp is not None:
            cmd += ["--timestamp", str(genesis_timestamp)]
        if block_seconds is not None:
            if not block_seconds > 0:
                raise DevnetError(f"block_seconds must be positive, got {block_seconds}")
            cmd += ["--block-time", f"{block_seconds:g}", "--mixed-mining"]
        if state_file is not None:
            state_file.parent.mkdir(parents=True, exist_ok=True)
            cmd += ["--state", str(state_file)]
            if state_interval_seconds:
                cmd += ["--state-interval", str(state_interval_seconds)]
        if states_dir is None:
            states_dir = Path(tempfile.mkdtemp(prefix="trust-anvil-states-"))
        else:
            shutil.rmtree(states_dir, ignore_errors=True)
            states_dir.mkdir(parents=True)
        cmd += ["--cache-path", str(states_dir)]
        out = open(log_file, "ab") if log_file else subprocess.DEVNULL  # noqa: SIM115 - handed to the child
        try:
            process = subprocess.Popen(
                cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=detached
            )
        finally:
            if log_file:
                out.close()  # type: ignore[union-attr]
        node = cls(
            host=host,
            port=port,
            chain_id=chain_id,
            pid=process.pid,
            log_file=log_file,
            states_dir=states_dir,
            _process=process,
        )
        deadline = time.monotonic() + startup_timeout_seconds
        while time.monotonic() < deadline:
            if process.poll() is not None:
                hint = f"; see {log_file}" if log_file else ""
                raise DevnetError(f"anvil exited with code {process.returncode} while starting{hint}")
            answered = rpc_ready(node.rpc_url, 0.5)
            if answered is not None:
                if answered != chain_id:
                    node.stop()
                    raise DevnetError(f"anvil at {node.rpc_url} reports chain {answered}, expected {chain_id}")
                return node
            time.sleep(0.1)
        node.stop()
        raise DevnetError(f"anvil did not answer at {node.rpc_url} within {startup_timeout_seconds} s")

    @classmethod
    def attach(
        cls, pid: int, host: str, port: int, chain_id: int, *, states_dir: Path | None = None
    ) -> AnvilNode | None:
        """The node with `pid`, if that process is alive and answers at host:port; `states_dir` is
        the folder it was started with, for `stop` to remove."""
        if not alive(pid) or rpc_ready(f"http://{host}:{port}") != chain_id:
            return None
        return cls(host=host, port=port, chain_id=chain_id, pid=pid, states_dir=states_dir)

    def stop(self, timeout_seconds: float = 15.0) -> None:
        """SIGTERM (Anvil writes its state file on the way out), then SIGKILL after the timeout;
        then removes the folder of past states, which Anvil leaves behind."""
        terminate(self.pid, self._process, timeout_seconds)
        if self.states_dir is not None:
            shutil.rmtree(self.states_dir, ignore_errors=True)

    def __enter__(self) -> AnvilNode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
