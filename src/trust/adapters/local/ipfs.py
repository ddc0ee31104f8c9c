"""Starting and stopping the local IPFS node (`ipfs/server.mjs`) as a real process.

The node is Helia with a filesystem blockstore and datastore behind a small Node.js HTTP server
that speaks the Kubo RPC subset TRUST uses (see `ipfs/rpc.mjs`), on 127.0.0.1, with no
peer-to-peer networking. It is managed the way `trust.adapters.local.anvil` manages Anvil:

- `trust ipfs up` runs it detached (`ipfs_up`): its pid, address, repo and home go to
  `<home>/ipfs-node.json`, its output to `<repo>/node.log`; a second `up` finds it running;
  `trust ipfs down` (`ipfs_down`) stops it with SIGTERM, and the node closes its stores first;
- tests and benchmarks start an ephemeral node on a free port (`IpfsNode.start`, a context manager).

Blocks and pins live in the repo (`<home>/ipfs` unless set): a restart loses nothing. The node
locks its repo (`repo.lock`), so two nodes never write one blockstore.

Each home has its own node, and a home's commands never touch another's. A record is only a claim:
a home copied from another carries the other's record, and the pid of a node that died without
`down` may since belong to another home's node. So a record is acted on only when it was written by
this home and its pid still runs the node script with the recorded repo and port (its command line,
read from /proc); a port held by another home's node is an error that names that node and the
settings that give this home another port, never a node to attach to.
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

from trust.adapters.local.processes import (
    alive,
    command_line,
    free_port,
    inspectable,
    option_value,
    processes,
    terminate,
    working_directory,
)
from trust.adapters.local.toolchain import project_root
from trust.errors import IpfsError, ToolchainError
from trust.settings import Settings

__all__ = [
    "IpfsNode",
    "IpfsStatus",
    "IpfsStopped",
    "NodeProcess",
    "ipfs_down",
    "ipfs_up",
    "node_process",
    "node_version",
]

SERVER_SCRIPT = Path("ipfs") / "server.mjs"
READY_PREFIX = "trust-ipfs ready "
IMPLEMENTATION_PREFIX = "trust-ipfs/"
DEFAULT_MAX_UPLOAD_BYTES = 64 * 1024 * 1024
_SERVER_DEFAULT_HOST = "127.0.0.1"
_SERVER_DEFAULT_PORT = 5101
"""What `server.mjs` listens on when its command line does not say."""
_LOG_TAIL_LINES = 12
_PORT_SUGGESTION_TRIES = 50


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


@dataclass(frozen=True, slots=True)
class NodeProcess:
    """A running local IPFS node as its command line shows it: which repo it serves, where it listens."""

    pid: int
    repo: Path
    host: str
    port: int


def _as_node(pid: int, argv: list[str]) -> NodeProcess | None:
    if not any(part.endswith(SERVER_SCRIPT.name) for part in argv):
        return None
    repo, port = option_value(argv, "--repo"), option_value(argv, "--port")
    if repo is None:
        return None
    if not Path(repo).is_absolute():  # relative to where that node was started
        base = working_directory(pid)
        if base is None:
            return None
        repo = str(base / repo)
    try:
        number = _SERVER_DEFAULT_PORT if port is None else int(port)
    except ValueError:
        return None
    return NodeProcess(pid, Path(os.path.normpath(repo)), option_value(argv, "--host") or _SERVER_DEFAULT_HOST, number)


def node_process(pid: int) -> NodeProcess | None:
    """The local IPFS node that `pid` runs now, or None when it runs something else, is gone, or its
    command line cannot be read."""
    argv = command_line(pid)
    return None if argv is None else _as_node(pid, argv)


def _is_node(pid: int, repo: Path, port: int) -> bool:
    """Whether `pid` is the node serving `repo` on `port` (not merely some node: after a reboot the
    pid a record names may belong to another home's). Without /proc only liveness can be checked,
    and the caller's check of what answers at the port has to do."""
    if not inspectable():
        return alive(pid)
    found = node_process(pid)
    return found is not None and found.port == port and found.repo == Path(os.path.normpath(repo))


def _nodes_on(port: int) -> list[NodeProcess]:
    """The local IPFS nodes this user can see listening on `port`."""
    return [node for pid, argv in processes() if (node := _as_node(pid, argv)) is not None and node.port == port]


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
        """The node with `pid`, if that process is the node serving `repo` on `port` and a local IPFS
        node answers at host:port. A pid that now runs another program, or another node (another
        home's, on another repo or port), is not attached to."""
        if not _is_node(pid, repo, port) or not _ours(node_version(f"http://{host}:{port}")):
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


@dataclass(frozen=True, slots=True)
class IpfsStopped:
    """What `ipfs_down` did: the pid of this home's node it stopped (None when none ran), and `note`,
    why a record it found was left alone (written by another home, or naming a pid that no longer
    runs this home's node)."""

    pid: int | None
    note: str | None = None

    @property
    def stopped(self) -> bool:
        return self.pid is not None


@dataclass(frozen=True, slots=True)
class _Record:
    """`<home>/ipfs-node.json`: the node `trust ipfs up` started for `home` (None in records written
    before homes were recorded, taken as this home's)."""

    pid: int
    host: str
    port: int
    repo: Path
    log: Path | None
    home: Path | None

    def as_json(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "host": self.host,
            "port": self.port,
            "repo": str(self.repo),
            "log": None if self.log is None else str(self.log),
            "home": None if self.home is None else str(self.home),
        }


def _home(settings: Settings) -> Path:
    return settings.home.expanduser().resolve()


def _state_file(settings: Settings) -> Path:
    return settings.home / "ipfs-node.json"


def _read_record(path: Path) -> _Record | None:
    try:
        state = json.loads(path.read_text())
        return _Record(
            pid=int(state["pid"]),
            host=str(state["host"]),
            port=int(state["port"]),
            repo=Path(str(state["repo"])),
            log=Path(str(state["log"])) if state.get("log") else None,
            home=Path(str(state["home"])) if state.get("home") else None,
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # no record, or not one of ours


def _foreign(record: _Record, settings: Settings) -> bool:
    """Whether `record` was written by another home (this one is a copy of it, or was moved)."""
    return record.home is not None and record.home != _home(settings)


def _attach(record: _Record) -> IpfsNode | None:
    return IpfsNode.attach(record.pid, record.host, record.port, record.repo, record.log)


def _free_port_near(host: str, port: int) -> int:
    """A port to suggest instead of `port`: the next free one above it, else any free one."""
    for candidate in range(port + 1, min(port + _PORT_SUGGESTION_TRIES, 65536)):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((host, candidate))
            except OSError:
                continue
            return candidate
    return free_port(host)


def _port_held(settings: Settings, host: str, port: int) -> IpfsError:
    """The error of `up` on a port something else holds: who holds it, and how this home gets its own."""
    holders = _nodes_on(port)
    if holders:
        other = holders[0]
        who = f"another IPFS node (pid {other.pid}, repo {other.repo}), not this home's"
    else:
        answer = node_version(f"http://{host}:{port}")
        who = (
            f"an IPFS node (version {answer.get('Version')}) that this home did not start"
            if answer
            else "another program"
        )
    suggestion = _free_port_near(host, port)
    return IpfsError(
        f"port {port} on {host} is taken by {who}; it was left alone. Give this home ({_home(settings)}) "
        f"its own port: set TRUST_IPFS__PORT={suggestion} for every command of this home "
        f"(or pass --port {suggestion} to `trust ipfs up` and set TRUST_IPFS__PORT for the others)"
    )


def ipfs_up(settings: Settings, *, repo: Path | None = None, port: int | None = None) -> IpfsStatus:
    """Starts this home's local node detached (or finds it running) and records it under `settings.home`.

    `repo` and `port` override `settings.ipfs`. This home's node already running elsewhere than asked
    is an error (stop it first with `ipfs_down`); so is the port held by anything else, another
    home's node included, which is never attached to or stopped.
    """
    wanted_repo = (repo or settings.ipfs.repo_path(settings.home)).expanduser().resolve()
    wanted_port = port or settings.ipfs.port
    state_file = _state_file(settings)
    record = _read_record(state_file)
    if record is not None and not _foreign(record, settings):
        node = _attach(record)
        if node is not None:
            if node.repo != wanted_repo or node.port != wanted_port:
                raise IpfsError(
                    f"this home's IPFS node already runs at {node.api_url} (pid {node.pid}, repo {node.repo}), "
                    f"not at port {wanted_port} with repo {wanted_repo}; run `trust ipfs down` first"
                )
            return IpfsStatus(node.api_url, node.pid, node.repo, node.log_file, started=False)
    state_file.unlink(missing_ok=True)  # a node that is gone, or another home's record
    if _port_taken(settings.ipfs.host, wanted_port):
        raise _port_held(settings, settings.ipfs.host, wanted_port)
    node = IpfsNode.from_settings(settings, repo=wanted_repo, port=wanted_port, detached=True)
    state = _Record(node.pid, node.host, node.port, node.repo, node.log_file, _home(settings))
    try:
        state_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(state.as_json(), indent=2) + "\n")
        os.replace(tmp, state_file)
    except OSError as exc:
        node.stop(settings.ipfs.stop_timeout_seconds)
        raise IpfsError(f"cannot record the local IPFS node in {state_file}: {exc}") from exc
    return IpfsStatus(node.api_url, node.pid, node.repo, node.log_file, started=True)


def ipfs_down(settings: Settings) -> IpfsStopped:
    """Stops this home's local node (it closes its stores on the way out) and drops its record.

    Only the node this home recorded, and only while its pid still runs it: a record written by
    another home, or whose pid now runs anything else, is dropped and its process left alone.
    """
    state_file = _state_file(settings)
    record = _read_record(state_file)
    state_file.unlink(missing_ok=True)
    if record is None:
        return IpfsStopped(None)
    if _foreign(record, settings):
        return IpfsStopped(
            None,
            f"{state_file} was written by home {record.home} (this home is a copy of it, or was moved); "
            f"its node (pid {record.pid}) belongs to that home and was left alone",
        )
    node = _attach(record)
    if node is None and inspectable() and _is_node(record.pid, record.repo, record.port):
        # This home's node, alive but not answering (hung or still starting): stop it all the same.
        node = IpfsNode(record.host, record.port, record.repo, record.pid)
    if node is None:
        if alive(record.pid):
            return IpfsStopped(None, f"the recorded pid {record.pid} no longer runs this home's node; left it alone")
        return IpfsStopped(None)
    node.stop(settings.ipfs.stop_timeout_seconds)
    return IpfsStopped(node.pid)
