"""A provider's session against a whole local network whose RPC and IPFS node go away mid-session, and
a node nobody can decide.

The network: Anvil keeping its chain in a state file (stopped with SIGTERM it writes the chain out, and
starts again from it on the same port, as a restarted devnet does), the local IPFS node, three honest
tier-1 workers as separate processes, and three tier-3 auditors registered with no worker: a segment
that reaches them is seated and never voted on. Tier-3 committees are one seat, so an escalation seats
three (2k + 1): a tier-3 segment goes through two seated rounds and ends undetermined.

- The RPC restarting, or the IPFS node restarting, right after the session opened: the session loop
  waits for it with backoff, says so in the progress, and the audit finishes VALID.
- The RPC gone for good (past `TRUST_PROVIDER__OUTAGE_SECONDS`): `trust submit` ends with exit code 1
  and one error line naming `trust submit --resume N`, no traceback; once the RPC is back, `--resume N`
  finishes the session; the node nobody decided is reported as undetermined with its tier, rounds and
  why, never as failed; no progress bar counts past its total. The gateway's audit fails the same way
  with a `chain_error` state and nothing but warnings in its log.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from trust.adapters.chain.wallets import dev_account
from trust.adapters.local.anvil import rpc_ready
from trust.api.gateway.models import AuditStatus, SubmitRequest
from trust.api.gateway.service import Gateway, GatewayOptions
from trust.core.graphs.hdag import EdgeType, Hdag, HdagNode, Level, Tier
from trust.core.graphs.serialization import dumps
from trust.lab.localnet import LOCAL_PROTOCOL, LocalNetwork, WorkerSpec
from trust.services.sdk import AuditConfig, ProgressEvent, TrustClient, Verdict
from trust.settings import DevnetSettings, ProviderSettings, Settings

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

PROTOCOL = LOCAL_PROTOCOL.model_copy(
    update={"committee_size_tier3": 1, "max_rounds": 2, "commit_window_seconds": 20, "reveal_window_seconds": 8}
)
"""Two rounds; windows long enough for tier-1 workers on a busy machine whose keys waited for a
restarted IPFS node (it takes seconds to start, and a worker gives up on a seat whose key has not come
5 s before the commit window closes; once all have committed, the reveal window is all they have), and
short enough that a silent tier-3 round ends in half a minute."""
RPC_DOWN_SECONDS = 4.0
"""How long the chain stays stopped: longer than web3's own retries of a read (five tries over about
2 s), so that the session loop sees it gone."""
IPFS_DOWN_SECONDS = 1.0
"""How long the IPFS node stays stopped before its start (which takes seconds of its own)."""
RETRY = ProviderSettings(outage_seconds=60, backoff_seconds=0.2, max_backoff_seconds=1.0)
GIVE_UP = ProviderSettings(outage_seconds=2, backoff_seconds=0.2, max_backoff_seconds=0.5)
GATEWAY_INDEX = 5


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def network(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LocalNetwork]:
    async with LocalNetwork(
        tmp_path_factory.mktemp("network"),
        [WorkerSpec(1)] * 3,
        protocol_settings=PROTOCOL,
        equal_stakes=True,
        idle_auditors=(3, 3, 3),
        keep_chain_state=True,
    ) as net:
        yield net


def additions(count: int, *, human: str | None = None) -> Hdag:
    """ "Add 1 to `count` one at a time": every node a calculation tier 1 decides, except `human`,
    routed to tier 3 (where nobody votes)."""
    graph = Hdag()
    terms = " + ".join(str(i) for i in range(1, count + 1))
    expected = count * (count + 1) // 2
    # The goal states the sum, so that tier 1 decides it too (a goal without one goes to tier 2).
    statement = f"Add the numbers one at a time: {terms} = {expected}."
    graph.add_node(HdagNode("goal", Level.GOAL, statement, domain="math", tier=Tier.COMPUTATIONAL))
    total, previous = 0, "goal"
    for i in range(1, count + 1):
        text = f"{total} + {i} = {total + i}"
        node_id = f"add{i}"
        tier = Tier.HUMAN if node_id == human else Tier.COMPUTATIONAL
        graph.add_node(HdagNode(node_id, Level.OPERATION, text, domain="math", tier=tier, expression=text))
        graph.add_edge(previous, node_id, EdgeType.DECOMPOSES_TO if previous == "goal" else EdgeType.DEPENDS_ON)
        total, previous = total + i, node_id
    return graph


def _settings(network: LocalNetwork, retry: ProviderSettings) -> Settings:
    return network.settings.model_copy(update={"provider": retry})


def _restart_when_opened(
    stop: Callable[[], None], start: Callable[[], None], down_seconds: float, *, stage: str = "session"
) -> tuple[list[ProgressEvent], Callable[[ProgressEvent], None], threading.Event]:
    """A progress callback that stops a service as soon as the session is open (`stage` "session"),
    or its first committee is drawn ("draw": the key envelopes, which need IPFS, come next), and
    starts it again `down_seconds` later (from a thread: the audit's event loop goes on meanwhile)."""
    events: list[ProgressEvent] = []
    back, stopped = threading.Event(), threading.Event()

    def restart() -> None:
        start()
        back.set()

    def progress(event: ProgressEvent) -> None:
        events.append(event)
        reached = event.done == event.total if stage == "session" else event.done >= 1
        if event.stage == stage and reached and not back.is_set() and not stopped.is_set():
            stopped.set()
            stop()
            threading.Timer(down_seconds, restart).start()

    return events, progress, back


def _check_totals(events: list[ProgressEvent]) -> None:
    over = [e for e in events if e.done > e.total]
    assert not over, f"progress past its total: {over}"


async def test_the_rpc_restarting_mid_session_is_waited_for(network: LocalNetwork, tmp_path: Path) -> None:
    events, progress, back = _restart_when_opened(network.stop_anvil, network.start_anvil, RPC_DOWN_SECONDS)
    client = TrustClient(
        network.rpc_url,
        network.ipfs_url,
        account=network.provider,
        settings=_settings(network, RETRY),
        progress=progress,
        journal_dir=tmp_path,
    )
    result = await client.audit_trace(additions(3), AuditConfig(auditor_tiers=[1]))
    assert back.is_set(), "the chain was never restarted"
    assert result.verdict is Verdict.VALID, result.to_json()
    notes = [e.message for e in events if e.stage == "connection"]
    assert any(note.startswith("RPC unreachable, retrying in") for note in notes), notes
    assert any(note.startswith("the RPC is back after") for note in notes), notes
    _check_totals(events)


async def test_the_ipfs_node_restarting_mid_session_is_waited_for(network: LocalNetwork, tmp_path: Path) -> None:
    events, progress, back = _restart_when_opened(
        network.stop_ipfs, network.start_ipfs, IPFS_DOWN_SECONDS, stage="draw"
    )
    # The storage client's own quick retries off: the outage must reach the session loop, whatever
    # the machine's speed (they would otherwise hide it when the node is back within them).
    settings = _settings(network, RETRY)
    settings = settings.model_copy(update={"ipfs": settings.ipfs.model_copy(update={"max_retries": 0})})
    client = TrustClient(
        network.rpc_url,
        network.ipfs_url,
        account=network.provider,
        settings=settings,
        progress=progress,
        journal_dir=tmp_path,
    )
    result = await client.audit_trace(additions(3), AuditConfig(auditor_tiers=[1]))
    assert back.is_set(), "the IPFS node was never restarted"
    assert result.verdict is Verdict.VALID, result.to_json()
    notes = [e.message for e in events if e.stage == "connection"]
    assert any(note.startswith("IPFS node unreachable, retrying in") for note in notes), notes
    assert any(note.startswith("the IPFS node is back after") for note in notes), notes
    _check_totals(events)


async def _until(condition: Callable[[], bool], timeout_seconds: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        await asyncio.sleep(0.02)


async def test_the_gateway_fails_an_audit_whose_rpc_stays_away_in_one_state(
    network: LocalNetwork, caplog: pytest.LogCaptureFixture
) -> None:
    gateway = Gateway(
        dev_account(DevnetSettings().mnemonic, GATEWAY_INDEX),
        _settings(network, GIVE_UP),
        rpc_url=network.rpc_url,
        ipfs_url=network.ipfs_url,
        options=GatewayOptions(max_traces_per_epoch=1),
    )
    # The tier-3 node keeps the session open (nobody votes on it) while the RPC goes away.
    trace = json.loads(dumps(additions(2, human="add2")))
    with caplog.at_level(logging.INFO):
        audit = await gateway.submit(SubmitRequest(trace=trace, config={"auditor_tiers": [1, 3]}))
        await _until(lambda: audit.session_id is not None)
        await asyncio.to_thread(network.stop_anvil)
        try:
            await _until(lambda: audit.status.terminal)
        finally:
            await asyncio.to_thread(network.start_anvil)
            await gateway.aclose()
    assert audit.status is AuditStatus.FAILED and audit.error is not None
    assert audit.error.code == "chain_error", audit.error
    message = audit.error.message
    assert f"lost the RPC at {network.rpc_url} while session {audit.session_id} was running" in message
    assert "submit the trace again" in message
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR], "a traceback in the log"


def _trust(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "trust", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _records(home: Path) -> Iterator[dict[str, object]]:
    for path in home.glob("provider/chain-*/*.json"):
        try:
            yield json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue  # being replaced at this moment


async def test_trust_submit_losing_the_rpc_for_good_ends_in_one_line_and_resume_finishes(
    network: LocalNetwork, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    env = {key: value for key, value in os.environ.items() if not key.startswith("TRUST_")}
    env |= {
        "TRUST_HOME": str(home),
        "TRUST_DEPLOYMENTS_DIR": str(network.settings.deployments_path(network.folder)),
        "TRUST_PROVIDER__OUTAGE_SECONDS": str(GIVE_UP.outage_seconds),
        "TRUST_PROVIDER__BACKOFF_SECONDS": str(GIVE_UP.backoff_seconds),
        "COLUMNS": "200",
    }
    trace = tmp_path / "trace.json"
    trace.write_text(dumps(additions(2, human="add2")))
    where = ["--rpc-url", network.rpc_url, "--ipfs", network.ipfs_url, "--tier", "1", "--tier", "3"]

    submitted = _trust(env, "submit", str(trace), *where)
    try:
        await _until(lambda: any(record.get("session_id") for record in _records(home)))
        (session_id,) = {record["session_id"] for record in _records(home)}
        await asyncio.to_thread(network.stop_anvil)
        _, stderr = await asyncio.to_thread(submitted.communicate, timeout=120)
    finally:
        if submitted.poll() is None:
            submitted.kill()
        if not _answers(network):
            await asyncio.to_thread(network.start_anvil)
    assert submitted.returncode == 1, stderr
    assert "Traceback" not in stderr
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, stderr
    assert [line for line in stderr.splitlines() if line.strip()][-1] == errors[0], stderr
    assert f"lost the RPC at {network.rpc_url} while session {session_id} was running" in errors[0]
    assert f"run `trust submit --resume {session_id}`" in errors[0]

    resumed = _trust(env, "submit", "--resume", str(session_id), *where[:4], "--json")
    stdout, stderr = await asyncio.to_thread(resumed.communicate, timeout=300)
    assert resumed.returncode == 0, stderr
    result = json.loads(stdout)
    assert result["session_id"] == session_id and result["verdict"] == "INVALID"
    undecided = result["nodes"]["add2"]
    assert undecided["status"] == "Undetermined" and undecided["outcome"] == "undetermined", undecided
    assert undecided["tier"] == 3 and undecided["rounds"] == 2
    # Three draws among three idle experts: one to three seats, three votes.
    assert re.match(
        r"undetermined after 2 rounds, the last at tier 3: none of the [123] seats? of its last committee \(3 votes\)",
        undecided["reason"],
    ), undecided["reason"]
    assert result["undetermined"] == ["add2"] and result["root_causes"] == []
    assert all(node["status"] == "Valid" for name, node in result["nodes"].items() if name != "add2")
    assert any("'add2' undetermined after 2 rounds" in reason for reason in result["failure_reasons"])
    assert "failed its audit" not in stdout
    # What the progress bars showed at the end: each "done/total" within its total.
    counts = [(int(a), int(b)) for a, b in re.findall(r"\b(\d+)/(\d+)\b", stderr)]
    assert counts, stderr
    assert all(done <= total for done, total in counts), stderr
    assert f"{len(result['nodes']) + 1}/{len(result['nodes']) + 1}" in stderr, stderr


def _answers(network: LocalNetwork) -> bool:
    return rpc_ready(network.rpc_url) is not None
