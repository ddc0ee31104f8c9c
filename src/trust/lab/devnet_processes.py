"""What `trust devnet up` runs beside the node, so that an audit submitted to the devnet is audited
with no other command: this home's IPFS node, the embedded model server of tier 2, the signers of
the randomness beacon when the deployment uses it (`trust.adapters.local.beacon.processes`, under `<home>/beacon`),
one `trust worker run` process per provisioned auditor, and, only when asked, the demo's scripted
tier-3 expert. `trust devnet down` stops them.

Added to the devnet folder (`Settings.home / "devnet"`, `trust.lab.devnet`):

    processes.json         what `up` started: each worker's pid, tier and keystore, the scripted
                           expert's pid, and the pids of the IPFS node and the model server when
                           `up` started them (mode 0600)
    review-pages.json      each tier-3 worker's review page: auditor, URL and the password a person
                           signs in with (mode 0600); kept across restarts, so a page keeps its
                           address and password while its port is free
    workers/<address>.log  one log per worker
    expert.log             the scripted expert's log

Each worker runs with its own keystore, the devnet's password file and this home (`TRUST_HOME`),
so its state is `<home>/worker/<address>` and it finds the model server recorded in `<home>/llm`.
The user's other `TRUST_*` settings reach the workers (an `auditor_llm` endpoint instead of the
embedded model, for example), except a shared `TRUST_WORKER__DATA_DIR`, which would make the
workers share one state file. Tier-2 workers on the embedded model audit one seat at a time: the
server answers one request at a time, and parallel audits would only queue there.

`up` is idempotent: processes whose recorded pid still runs what was recorded (the worker of that
keystore, the expert on this home's page file) are kept; missing or dead ones are started. `down`
signals only such processes, so it never touches another home's processes or a recycled pid, and
stops the IPFS node and the model server only when `up` started them (a node started by
`trust ipfs up` stays up).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trust.adapters.local.beacon.processes import SignerState, beacon_down, beacon_status, beacon_up
from trust.adapters.local.ipfs import IpfsNode, ipfs_down, ipfs_up
from trust.adapters.local.llama import HOME_SUBDIRECTORY, LocalModelServer
from trust.adapters.local.private_files import write_private
from trust.adapters.local.processes import command_line, option_value
from trust.adapters.local.workers import (
    ReviewPage,
    StartedProcess,
    running,
    runs_worker,
    start_process,
    stop_processes,
    wait_ready,
    worker_command,
    worker_environment,
)
from trust.lab.devnet import AuditorAccount, DevnetStatus, check_node_port, devnet_auditors, devnet_down, devnet_up
from trust.settings import Settings

__all__ = [
    "EXPERT_LABEL",
    "DevnetProcesses",
    "ExpertState",
    "StoppedProcesses",
    "WorkerState",
    "devnet_down_with_workers",
    "devnet_processes",
    "devnet_up_with_workers",
    "start_devnet_processes",
    "stop_devnet_processes",
]

Progress = Callable[[str], None]

EXPERT_LABEL = "[scripted expert, not a person]"
_EXPERT_MODULE = "trust.lab.demo.expert"
_EXPERT_READY_LINE = "following the review pages in "
"""`trust.lab.demo.expert.READY_LINE` (not imported: the expert is a process of its own)."""
_EXPERT_READY_SECONDS = 60.0
_EXPERT_STOP_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class WorkerState:
    """One auditor's worker: its pid (None when none was started), whether it runs, whether this
    call started it, its log, and its review page for tier 3."""

    address: str
    tier: int
    pid: int | None
    running: bool
    started: bool
    log_file: Path
    review: ReviewPage | None


@dataclass(frozen=True, slots=True)
class ExpertState:
    pid: int
    running: bool
    started: bool
    log_file: Path


@dataclass(frozen=True, slots=True)
class DevnetProcesses:
    """What runs beside the node: where IPFS and the model answer, the workers, the scripted expert
    (None when it does not run), and the file with the review pages' passwords."""

    ipfs_url: str | None
    model_url: str | None
    workers: list[WorkerState]
    expert: ExpertState | None
    review_pages_file: Path
    ipfs_started_here: bool = False
    model_started_here: bool = False
    beacon_signers: list[SignerState] = field(default_factory=list)
    """The randomness beacon's signers (`trust.adapters.local.beacon.processes`), when the deployment
    uses the beacon."""


@dataclass(frozen=True, slots=True)
class StoppedProcesses:
    """What `stop_devnet_processes` stopped."""

    workers: int
    expert: bool
    model_server: bool
    ipfs: bool
    beacon_signers: int = 0


class _Files:
    def __init__(self, settings: Settings) -> None:
        self.home = settings.home.expanduser().resolve()
        self.dir = settings.devnet_dir.expanduser().resolve()
        self.record = self.dir / "processes.json"
        self.review_pages = self.dir / "review-pages.json"
        self.logs = self.dir / "workers"
        self.expert_log = self.dir / "expert.log"
        self.keystores = self.dir / "keystores"
        self.password = self.dir / "keystore-password"

    def keystore(self, auditor: AuditorAccount) -> Path:
        # Always this home's keystore folder, whatever path an older record spelled.
        return self.keystores / Path(auditor.keystore).name

    def log(self, address: str) -> Path:
        return self.logs / f"{address.lower()}.log"

    def load(self) -> dict[str, Any]:
        try:
            record = json.loads(self.record.read_text())
        except (OSError, ValueError):
            record = {}
        if not isinstance(record, dict):
            record = {}
        workers = record.get("workers")
        return {
            "workers": workers if isinstance(workers, dict) else {},
            "expert": record.get("expert") if isinstance(record.get("expert"), dict) else None,
            "ipfs_pid": record.get("ipfs_pid") if isinstance(record.get("ipfs_pid"), int) else None,
            "model_pid": record.get("model_pid") if isinstance(record.get("model_pid"), int) else None,
        }

    def save(self, record: dict[str, Any]) -> None:
        write_private(self.record, json.dumps(record, indent=2) + "\n")

    def pages(self) -> dict[str, ReviewPage]:
        try:
            entries = json.loads(self.review_pages.read_text())
            pages = [ReviewPage(str(e["auditor"]), str(e["url"]), str(e["password"])) for e in entries]
        except (OSError, ValueError, KeyError, TypeError):
            return {}
        return {page.auditor: page for page in pages}

    def save_pages(self, pages: Sequence[ReviewPage]) -> None:
        entries = [{"auditor": p.auditor, "url": p.url, "password": p.password} for p in pages]
        write_private(self.review_pages, json.dumps(entries, indent=2) + "\n")


def _port_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def _runs_expert(pid: int, pages_file: Path) -> bool:
    """Whether `pid` is the scripted expert on this home's page file (started with its absolute path)."""
    args = command_line(pid)
    if args is None or not running(pid) or _EXPERT_MODULE not in args:
        return False
    given = option_value(args, "--pages")
    return given is not None and os.path.realpath(given) == os.path.realpath(pages_file)


def _ensure_ipfs(settings: Settings, recorded_pid: int | None) -> tuple[str, int | None]:
    """The IPFS API URL the workers and `trust submit` use, and the pid of the node when `up`
    started it (now or before). A Kubo endpoint of the user's own (`TRUST_IPFS__API_URL`) is used
    as it is; otherwise this home's local node is found or started."""
    ipfs = settings.ipfs
    if ipfs.api_url.rstrip("/") != ipfs.local_url:
        return ipfs.api_url, None
    # A port held by another home's node is an error naming TRUST_IPFS__PORT (`ipfs_up`).
    status = ipfs_up(settings)
    if status.started:
        return status.api_url, status.pid
    return status.api_url, recorded_pid if recorded_pid == status.pid else None


def _ensure_model(settings: Settings, recorded_pid: int | None) -> tuple[LocalModelServer, int | None]:
    """This home's embedded model server, started when none runs; with its pid when `up` started it."""
    server = LocalModelServer.from_settings(settings)
    if server.started_here:
        return server, server.pid
    return server, recorded_pid if recorded_pid == server.pid else None


def _environment(
    settings: Settings,
    files: _Files,
    deployments_dir: Path,
    ipfs_url: str,
    tier: int,
    review: ReviewPage | None,
    *,
    embedded: bool,
) -> dict[str, str]:
    # A shared data dir would make every worker open one state file: each keeps <home>/worker/<address>.
    base = {key: value for key, value in os.environ.items() if key != "TRUST_WORKER__DATA_DIR"}
    overrides = {
        "TRUST_HOME": str(files.home),
        "TRUST_DEPLOYMENTS_DIR": str(deployments_dir),
        "TRUST_IPFS__API_URL": ipfs_url,
        # A worker started after a session opened still finds its seats: the devnet's chain is short.
        "TRUST_WORKER__START_BLOCK": "0",
    }
    if tier == 2 and embedded:
        overrides["TRUST_WORKER__AUDITS_IN_PARALLEL"] = "1"
    # A worker leaves the draw while a seat drawn now would miss its commit window, judged by how long
    # its audits take; before a person has voted once, that is the worker's prior for a person, which
    # for a production window is longer than the devnet's. The user's own value wins.
    person = "TRUST_WORKER__AUDIT_SECONDS_TIER3"
    if tier == 3 and person not in base and "audit_seconds_tier3" in type(settings.worker).model_fields:
        overrides[person] = f"{settings.devnet.person_seconds:g}"
    return worker_environment(base, overrides, review)


def _recorded_workers(files: _Files, record: dict[str, Any]) -> list[StartedProcess]:
    """The recorded workers that still run what was recorded: the worker of a keystore of this
    home (a record copied from another home names that home's keystores, and is ignored)."""
    found = []
    for address, entry in record["workers"].items():
        pid = entry.get("pid") if isinstance(entry, dict) else None
        keystore = entry.get("keystore") if isinstance(entry, dict) else None
        if not isinstance(pid, int) or not isinstance(keystore, str):
            continue
        ours = Path(os.path.realpath(keystore)).parent == Path(os.path.realpath(files.keystores))
        if ours and runs_worker(pid, Path(keystore)):
            found.append(StartedProcess(address, pid, files.log(address)))
    return found


def start_devnet_processes(
    settings: Settings, devnet: DevnetStatus, *, scripted_expert: bool = False, progress: Progress | None = None
) -> DevnetProcesses:
    """Starts what is missing of the devnet's processes (see the module docstring) and waits until
    each worker follows the chain; `DevnetError` naming a worker that died while starting, with its
    log's tail. Every pid is recorded as soon as its process starts, so `down` stops it whatever
    happens next."""
    say = progress or (lambda _msg: None)
    files = _Files(settings)
    record = files.load()
    say("starting the IPFS node")
    ipfs_url, ipfs_pid = _ensure_ipfs(settings, record["ipfs_pid"])
    record["ipfs_pid"] = ipfs_pid
    files.save(record)
    embedded = not settings.auditor_llm.configured
    model: LocalModelServer | None = None
    if embedded and any(a.tier == 2 for a in devnet.auditors):
        say("starting the embedded model server of tier 2")
        model, record["model_pid"] = _ensure_model(settings, record["model_pid"])
        files.save(record)
    deployments_dir = devnet.deployment_file.parent.resolve()
    if devnet.deployed:
        # A fresh deployment (the chain was reset): workers still running follow contracts that are gone.
        stop_processes(_recorded_workers(files, record), settings.devnet.worker_stop_timeout_seconds)
        record["workers"] = {}
    signers: list[SignerState] = []
    if "ThresholdBeacon" in devnet.deployment.contracts:
        if devnet.deployed:
            beacon_down(settings)  # they served the beacon of a chain that is gone
        say("starting the randomness beacon's signers")
        signers = beacon_up(settings, devnet.rpc_url, deployments_dir, progress=say)
    pages = files.pages()
    review = settings.worker.review
    states: dict[str, WorkerState] = {}
    to_start: list[tuple[AuditorAccount, ReviewPage | None]] = []
    for auditor in devnet.auditors:
        keystore = files.keystore(auditor)
        entry = record["workers"].get(auditor.address)
        pid = entry.get("pid") if isinstance(entry, dict) else None
        page = pages.get(auditor.address) if auditor.tier == 3 else None
        if isinstance(pid, int) and runs_worker(pid, keystore):
            states[auditor.address] = WorkerState(
                auditor.address, auditor.tier, pid, True, False, files.log(auditor.address), page
            )
            continue
        if auditor.tier == 3 and (page is None or not _port_free(review.host, page.port)):
            page = ReviewPage.new(auditor.address, review.host)
        to_start.append((auditor, page))
    for auditor, page in to_start:
        if page is not None:
            pages[auditor.address] = page
    files.save_pages([pages[a.address] for a in devnet.auditors if a.address in pages])
    started: list[StartedProcess] = []
    if to_start:
        say(f"starting {len(to_start)} workers")
    for auditor, page in to_start:
        command = worker_command(
            keystore=files.keystore(auditor),
            password_file=files.password,
            tier=auditor.tier,
            rpc_url=devnet.rpc_url,
            ipfs_url=ipfs_url,
        )
        env = _environment(settings, files, deployments_dir, ipfs_url, auditor.tier, page, embedded=embedded)
        log_file = files.log(auditor.address)
        process = start_process(command, env, log_file, detached=True)
        started.append(StartedProcess(auditor.address, process.pid, log_file, process))
        record["workers"][auditor.address] = {
            "pid": process.pid,
            "tier": auditor.tier,
            "keystore": str(files.keystore(auditor)),
        }
        files.save(record)
        states[auditor.address] = WorkerState(auditor.address, auditor.tier, process.pid, True, True, log_file, page)
    if started:
        say(f"waiting for {len(started)} workers to follow the chain")
        tiers = {a.address: a.tier for a in devnet.auditors}
        asyncio.run(
            wait_ready(
                started,
                settings.devnet.worker_start_timeout_seconds,
                describe={p.name: f"the worker of auditor {p.name} (tier {tiers[p.name]})" for p in started},
            )
        )
    expert = _ensure_expert(files, record, say) if scripted_expert else _recorded_expert(files, record)
    return DevnetProcesses(
        ipfs_url=ipfs_url,
        model_url=model.base_url if model is not None else None,
        workers=[states[a.address] for a in devnet.auditors],
        expert=expert,
        review_pages_file=files.review_pages,
        ipfs_started_here=ipfs_pid is not None,
        model_started_here=record["model_pid"] is not None,
        beacon_signers=signers,
    )


def _recorded_expert(files: _Files, record: dict[str, Any]) -> ExpertState | None:
    entry = record["expert"]
    pid = entry.get("pid") if entry else None
    if isinstance(pid, int) and _runs_expert(pid, files.review_pages):
        return ExpertState(pid, True, False, files.expert_log)
    return None


def _ensure_expert(files: _Files, record: dict[str, Any], say: Progress) -> ExpertState:
    found = _recorded_expert(files, record)
    if found is not None:
        return found
    say(f"starting the scripted expert {EXPERT_LABEL}")
    command = [sys.executable, "-m", _EXPERT_MODULE, "--pages", str(files.review_pages)]
    process = start_process(command, dict(os.environ), files.expert_log, detached=True)
    record["expert"] = {"pid": process.pid}
    files.save(record)
    asyncio.run(
        wait_ready(
            [StartedProcess("expert", process.pid, files.expert_log, process)],
            _EXPERT_READY_SECONDS,
            ready_line=_EXPERT_READY_LINE,
            describe={"expert": f"the scripted expert {EXPERT_LABEL}"},
        )
    )
    return ExpertState(process.pid, True, True, files.expert_log)


def devnet_processes(settings: Settings) -> DevnetProcesses:
    """What runs now of what `up` recorded (for `trust devnet status`); starts nothing."""
    files = _Files(settings)
    record = files.load()
    pages = files.pages()
    workers = []
    for auditor in devnet_auditors(settings):
        entry = record["workers"].get(auditor.address)
        pid = entry.get("pid") if isinstance(entry, dict) else None
        alive = isinstance(pid, int) and runs_worker(pid, files.keystore(auditor))
        workers.append(
            WorkerState(
                auditor.address,
                auditor.tier,
                pid if isinstance(pid, int) else None,
                alive,
                False,
                files.log(auditor.address),
                pages.get(auditor.address) if auditor.tier == 3 else None,
            )
        )
    model = LocalModelServer.attach(settings.home / HOME_SUBDIRECTORY)
    ipfs = settings.ipfs
    ipfs_node = None
    if record["ipfs_pid"] is not None:
        ipfs_node = IpfsNode.attach(record["ipfs_pid"], ipfs.host, ipfs.port, ipfs.repo_path(settings.home))
    return DevnetProcesses(
        ipfs_url=ipfs.api_url,
        model_url=model.base_url if model is not None else None,
        workers=workers,
        expert=_recorded_expert(files, record),
        review_pages_file=files.review_pages,
        ipfs_started_here=ipfs_node is not None,
        model_started_here=model is not None and model.pid == record["model_pid"],
        beacon_signers=beacon_status(settings),
    )


def stop_devnet_processes(settings: Settings) -> StoppedProcesses:
    """Stops the scripted expert and the workers (SIGTERM: each finishes its step and closes its
    state; SIGKILL after `DevnetSettings.worker_stop_timeout_seconds`), then the model server and
    the IPFS node if `up` started them. Only processes that still run what was recorded are
    signalled."""
    files = _Files(settings)
    record = files.load()
    expert = _recorded_expert(files, record)
    workers = _recorded_workers(files, record)
    if expert is not None:
        stop_processes([StartedProcess("expert", expert.pid, files.expert_log)], _EXPERT_STOP_SECONDS)
    stop_processes(workers, settings.devnet.worker_stop_timeout_seconds)
    signers = beacon_down(settings)
    record["workers"], record["expert"] = {}, None
    files.save(record)
    model_stopped = False
    if record["model_pid"] is not None:
        server = LocalModelServer.attach(settings.home / HOME_SUBDIRECTORY)
        if server is not None and server.pid == record["model_pid"]:
            server.stop()
            model_stopped = True
        record["model_pid"] = None
        files.save(record)
    ipfs_stopped = False
    if record["ipfs_pid"] is not None:
        ipfs = settings.ipfs
        node = IpfsNode.attach(record["ipfs_pid"], ipfs.host, ipfs.port, ipfs.repo_path(settings.home))
        if node is not None:
            ipfs_stopped = ipfs_down(settings).stopped
        record["ipfs_pid"] = None
    files.record.unlink(missing_ok=True)
    return StoppedProcesses(len(workers), expert is not None, model_stopped, ipfs_stopped, signers)


def devnet_up_with_workers(
    settings: Settings,
    auditors: int | None = None,
    *,
    scripted_expert: bool = False,
    progress: Progress | None = None,
) -> tuple[DevnetStatus, DevnetProcesses]:
    """`trust devnet up`: both ports checked first (this home's node, then its IPFS node started), so
    that a port held by another home fails in seconds, before the deployment; then the node and its
    auditors (`trust.lab.devnet.devnet_up`), then the model server, the workers and the expert."""
    say = progress or (lambda _msg: None)
    check_node_port(settings)
    files = _Files(settings)
    record = files.load()
    say("starting the IPFS node")
    _, record["ipfs_pid"] = _ensure_ipfs(settings, record["ipfs_pid"])
    files.save(record)
    status = devnet_up(settings, auditors, progress=say)
    return status, start_devnet_processes(settings, status, scripted_expert=scripted_expert, progress=say)


def devnet_down_with_workers(settings: Settings) -> tuple[StoppedProcesses, bool]:
    """`trust devnet down`: the processes (`stop_devnet_processes`), then the node; whether one ran."""
    stopped = stop_devnet_processes(settings)
    return stopped, devnet_down(settings)
