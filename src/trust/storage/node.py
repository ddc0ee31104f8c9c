"""Starting and stopping the local IPFS node (`ipfs/server.mjs`) as a real process.

The node is Helia with a filesystem blockstore and datastore behind a small Node.js HTTP server
that speaks the Kubo RPC subset TRUST uses (see `ipfs/rpc.mjs`), on 127.0.0.1, with no
peer-to-peer networking. It is managed the way `trust.chain.anvil` manages Anvil:

- `trust ipfs up` runs it detached (`ipfs_up`): its pid, address and repo go to
  `<home>/ipfs-node.json`, its output to `<repo>/node.log`; a second `up` finds it running;
  `trust ipfs down` (`ipfs_down`) stops it with SIGTERM, and the node closes its stores first;
- tests and benchmarks start an ephemeral node on a free port (`IpfsNode.start`, a context manager).

Blocks and pins live in the repo (`<home>/ipfs` unless set): a restart loses nothing. The node
locks its repo (`repo.lock`), so two nodes never write one blockstore.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from trust.errors import IpfsError, ToolchainError
from trust.processes import alive, free_port, terminate
from trust.settings import Settings
from trust.toolchain import project_root

__all__ = [
    "IpfsNode",
    "IpfsStatus",
    "ipfs_down",
    "ipfs_up",
    "node_version",
]

SERVER_SCRIPT = Path("ipfs") / "server.mjs"
READY_PREFIX = "trust-ipfs ready "
IMPLEMENTATION_PREFIX = "trust-ipfs/"
DEFAULT_MAX_UPLOAD_BYTES = 64 * 1024 * 1024
_LOG_TAIL_LINES = 12


def _port_taken(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def node_version(api_url: str, timeout_seconds: float = 1.0) -> dict[str, Any] | None:
    """What `POST /api/v0/version` answers at `api_url` (any Kubo RPC API), or None when nothing does."""
    try:
        response = httpx.post(f"{api_url}/api/v0/version", timeout=timeout_seconds, trust_env=False)
        answer = response.json()
    except (httpx.HTTPError, ValueError):
        return None
    if response.status_code != 200 or not isinstance(answer, dict) or "Version" not in answer:
        return None
    return answer


def _ours(answer: dict[str, Any] | None) -> bool:
    return answer is not None and str(answer.get("Implementation", "")).startswith(IMPLEMENTATION_PREFIX)


def _runs_our_server(pid: int) -> bool:
    """Whether `pid` is a local IPFS node process (so that `down` never signals a recycled pid)."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return any(part.endswith(b"server.mjs") for part in command)


def _log_tail(log_file: Path) -> str:
    try:
        lines = log_file.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-_LOG_TAIL_LINES:])


def _server_script(root: Path) -> Path:
    script = root / SERVER_SCRIPT
    if not script.is_file():
        raise ToolchainError(f"the local IPFS node is missing: {script} does not exist")
    if not (root / "node_modules" / "helia" / "package.json").is_file():
        raise ToolchainError(
            f"the local IPFS node's npm packages (helia, @helia/unixfs, blockstore-fs, datastore-fs) are not "
            f"installed under {root / 'node_modules'}; run scripts/setup.sh (or `npm ci` in {root})"
        )
    return script


def _node_binary(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise ToolchainError(
            f"Node.js was not found as {name!r}; install Node.js 20 or newer, or point TRUST_IPFS__NODE_BINARY at it"
        )
    return found


@dataclass
class IpfsNode:
    """One local IPFS node process."""

    host: str
    port: int
    repo: Path
    pid: int
    log_file: Path | None = None
    _process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def api_url(self) -> str:
        """The Kubo RPC API base URL (requests go to `{api_url}/api/v0/<command>`)."""
        return f"http://{self.host}:{self.port}"

    @classmethod
    def start(
        cls,
        repo: Path,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        max_upload_bytes: int = DEFAULT_MAX_UPLOAD_BYTES,
        node_binary: str = "node",
        root: Path | None = None,
        log_file: Path | None = None,
        detached: bool = False,
        startup_timeout_seconds: float = 30.0,
    ) -> IpfsNode:
        """Starts the node on `repo` and waits until it answers the Kubo RPC API.

        `port` None picks a free one. The output goes to `log_file` (default `<repo>/node.log`).
        `detached` puts the node in its own session so that it outlives the command that started it.
        """
        root = root or project_root()
        script = _server_script(root)
        binary = _node_binary(node_binary)
        repo = repo.expanduser().resolve()
        port = port or free_port(host)
        url = f"http://{host}:{port}"
        if _port_taken(host, port):
            held = node_version(url)
            what = f"an IPFS node (version {held.get('Version')})" if held else "another program"
            raise IpfsError(f"{what} already listens on {host}:{port}; stop it or pick another port (--port)")
        repo.mkdir(parents=True, exist_ok=True)
        log_file = log_file or repo / "node.log"
        log_file.parent.mkdir(parents=True, exist_ok=True)
        cmd = [
            binary,
            str(script),
            "--repo",
            str(repo),
            "--host",
            host,
            "--port",
            str(port),
            "--max-upload-bytes",
            str(max_upload_bytes),
        ]
        with open(log_file, "ab") as out:
            process = subprocess.Popen(
                cmd,
                cwd=root,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=detached,
            )
        node = cls(host=host, port=port, repo=repo, pid=process.pid, log_file=log_file, _process=process)
        deadline = time.monotonic() + startup_timeout_seconds
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise IpfsError(
                    f"the local IPFS node exited with code {process.returncode} while starting "
                    f"(repo {repo}, port {port}); its log ({log_file}) ends with:\n{_log_tail(log_file)}"
                )
            if _ours(node_version(url, 0.5)):
                return node
            time.sleep(0.1)
        node.stop()
        raise IpfsError(
            f"the local IPFS node did not answer at {url} within {startup_timeout_seconds} s; "
            f"see {log_file}:\n{_log_tail(log_file)}"
        )

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        repo: Path | None = None,
        port: int | None = None,
        detached: bool = False,
    ) -> IpfsNode:
        """`start` with the values of `settings.ipfs` (the repo under `settings.home` unless given)."""
        ipfs = settings.ipfs
        return cls.start(
            repo or ipfs.repo_path(settings.home),
            host=ipfs.host,
            port=port or ipfs.port,
            max_upload_bytes=ipfs.max_blob_bytes,
            node_binary=ipfs.node_binary,
            detached=detached,
            startup_timeout_seconds=ipfs.startup_timeout_seconds,
        )

    @classmethod
    def attach(cls, pid: int, host: str, port: int, repo: Path, log_file: Path | None = None) -> IpfsNode | None:
        """The node with `pid`, if that process is alive and a local IPFS node answers at host:port."""
        if not alive(pid) or not _ours(node_version(f"http://{host}:{port}")):
            return None
        return cls(host=host, port=port, repo=repo, pid=pid, log_file=log_file)

    def stop(self, timeout_seconds: float = 15.0) -> None:
        """SIGTERM (the node finishes requests in flight and closes its stores), SIGKILL after the timeout."""
        terminate(self.pid, self._process, timeout_seconds)

    def __enter__(self) -> IpfsNode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass(frozen=True, slots=True)
class IpfsStatus:
    """What `ipfs_up` started or found."""

    api_url: str
    pid: int
    repo: Path
    log_file: Path | None
    started: bool


def _state_file(settings: Settings) -> Path:
    return settings.home / "ipfs-node.json"


def _read_state(path: Path) -> dict[str, Any] | None:
    try:
        state = json.loads(path.read_text())
        return {
            "pid": int(state["pid"]),
            "host": str(state["host"]),
            "port": int(state["port"]),
            "repo": str(state["repo"]),
            "log": str(state["log"]) if state.get("log") else None,
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # no record, or not one of ours


def _running(settings: Settings) -> tuple[dict[str, Any] | None, IpfsNode | None]:
    state = _read_state(_state_file(settings))
    if state is None:
        return None, None
    log = Path(state["log"]) if state.get("log") else None
    node = IpfsNode.attach(int(state["pid"]), str(state["host"]), int(state["port"]), Path(state["repo"]), log)
    return state, node


def ipfs_up(settings: Settings, *, repo: Path | None = None, port: int | None = None) -> IpfsStatus:
    """Starts the local node detached (or finds it running) and records it under `settings.home`.

    `repo` and `port` override `settings.ipfs`. A node already running elsewhere than asked is an
    error: stop it first (`ipfs_down`).
    """
    wanted_repo = (repo or settings.ipfs.repo_path(settings.home)).expanduser().resolve()
    wanted_port = port or settings.ipfs.port
    state_file = _state_file(settings)
    _, node = _running(settings)
    if node is not None:
        if node.repo != wanted_repo or node.port != wanted_port:
            raise IpfsError(
                f"the local IPFS node already runs at {node.api_url} (pid {node.pid}, repo {node.repo}), not at "
                f"port {wanted_port} with repo {wanted_repo}; run `trust ipfs down` first"
            )
        return IpfsStatus(node.api_url, node.pid, node.repo, node.log_file, started=False)
    state_file.unlink(missing_ok=True)  # a node that is gone
    node = IpfsNode.from_settings(settings, repo=wanted_repo, port=wanted_port, detached=True)
    state = {
        "pid": node.pid,
        "host": node.host,
        "port": node.port,
        "repo": str(node.repo),
        "log": str(node.log_file) if node.log_file else None,
    }
    try:
        state_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=2) + "\n")
        os.replace(tmp, state_file)
    except OSError as exc:
        node.stop(settings.ipfs.stop_timeout_seconds)
        raise IpfsError(f"cannot record the local IPFS node in {state_file}: {exc}") from exc
    return IpfsStatus(node.api_url, node.pid, node.repo, node.log_file, started=True)


def ipfs_down(settings: Settings) -> bool:
    """Stops the local node (it closes its stores on the way out). False when none was running."""
    state_file = _state_file(settings)
    state, node = _running(settings)
    state_file.unlink(missing_ok=True)
    if node is None and state is not None and alive(int(state["pid"])) and _runs_our_server(int(state["pid"])):
        # Alive but not answering (hung or still starting): stop it all the same.
        node = IpfsNode(str(state["host"]), int(state["port"]), Path(state["repo"]), int(state["pid"]))
    if node is None:
        return False
    node.stop(settings.ipfs.stop_timeout_seconds)
    return True
