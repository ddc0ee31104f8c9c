"""The provider SDK against a whole local network: Anvil, the local IPFS node, the contracts, and
auditors of all three tiers as separate `trust worker run` processes with their own wallets (tier 3
voted through the review pages by the scripted expert).

What is checked is what a provider relies on: the verdict, the statuses, the root causes with the
auditors' critiques, the proof matching the chain, the Table-3 phases, and that bad input is refused
before anything is uploaded or sent (the provider's nonce and pins unchanged, no session record).

The network runs the local protocol with a reveal window of `REVEAL_WINDOW_SECONDS` instead of two
minutes. A round closes early only when every seat has committed and then revealed; a tier-2 seat
whose model gives no judgment abstains and never commits, so its round (nearly every round of the
multi-agent log, where SmolLM2 often abstains) waits out the commit window and then the whole
reveal window. Workers reveal in the first tick after the commit window closes (0.2 s here), so a
short reveal window loses no vote. The commit window stays at five minutes: the shared CPU model
needs most of it for the twelve tier-2 seats of the multi-agent log.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from tests.core.graphs.cig_strategies import APPLES_LOG
from trust.adapters.chain.client import ChainClient
from trust.adapters.chain.compiler import compile_protocol
from trust.adapters.chain.protocol import AuditContract, Protocol
from trust.adapters.chain.types import SessionStatus
from trust.adapters.chain.wallets import load_keystore
from trust.adapters.local.processes import free_port
from trust.adapters.local.toolchain import Toolchain
from trust.core.graphs.status import NodeStatus
from trust.errors import (
    AuditTimeout,
    ChainError,
    ContractReverted,
    FeeTooLow,
    GraphError,
    InsufficientAuditors,
    IpfsError,
)
from trust.lab.bench.throughput import running_total_trace
from trust.lab.demo.clinical import FINAL, FLAWED_ERRORS, FLAWED_IDS, SOUND_IDS, flawed_trace, sound_trace
from trust.lab.demo.expert import run_scripted_expert
from trust.lab.localnet import LOCAL_PROTOCOL, LocalNetwork, WorkerSpec
from trust.services.refine import Regenerated, RepairRequest
from trust.services.sdk import AuditConfig, AuditResult, TrustClient, Verdict
from trust.services.sdk import session as session_driver
from trust.services.sdk.client import segment_profiles
from trust.services.sdk.result import PHASES

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

WORKERS = [WorkerSpec(1)] * 3 + [WorkerSpec(2)] * 3 + [WorkerSpec(3)] * 3
REVEAL_WINDOW_SECONDS = 30
PROTOCOL = LOCAL_PROTOCOL.model_copy(update={"reveal_window_seconds": REVEAL_WINDOW_SECONDS})


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def network(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[LocalNetwork]:
    async with LocalNetwork(tmp_path_factory.mktemp("network"), WORKERS, protocol_settings=PROTOCOL) as net:
        stop = asyncio.Event()
        expert = asyncio.create_task(run_scripted_expert(net.review_pages, stop))
        yield net
        stop.set()
        await expert


@pytest.fixture
def client(network: LocalNetwork, tmp_path: Path) -> TrustClient:
    return TrustClient(
        network.rpc_url, network.ipfs_url, account=network.provider, settings=network.settings, journal_dir=tmp_path
    )


async def _chain_view(network: LocalNetwork) -> tuple[ChainClient, Protocol]:
    chain = ChainClient(network.rpc_url, compile_protocol(Toolchain.discover()))
    await chain.connect()
    return chain, Protocol.bind(chain, network.deployment)


async def _nonce(network: LocalNetwork) -> int:
    chain, _ = await _chain_view(network)
    try:
        return int(await chain.w3.eth.get_transaction_count(network.provider.address))
    finally:
        await chain.close()


def _check_proof_and_phases(result: AuditResult) -> None:
    assert result.proof.finalized_block is not None and result.proof.finalize_tx is not None
    assert result.transactions["create_session"] and result.transactions["assign_auditors"]
    assert set(result.phases.seconds) == {key for key, _, _ in PHASES}
    assert 0 <= result.overhead_s <= result.phases.total_s
    assert result.phases.seconds["decomposition"] is not None


def _describe(result: AuditResult) -> dict[str, object]:
    return {node_id: node.to_json() for node_id, node in result.nodes.items()}


async def test_the_clinical_traces_sound_valid_flawed_invalid_at_the_right_nodes(
    network: LocalNetwork, client: TrustClient
) -> None:
    sound, flawed = await asyncio.gather(client.audit_trace(sound_trace()), client.audit_trace(flawed_trace()))

    assert sound.verdict is Verdict.VALID and sound.proof.valid_on_chain, _describe(sound)
    assert all(node.status is NodeStatus.VALID for node in sound.nodes.values())
    # Three draws per node: one to three seats (a member drawn twice holds one seat).
    assert sound.root_causes == () and len(sound.nodes) <= sound.seats <= 3 * len(sound.nodes)

    assert flawed.verdict is Verdict.INVALID and not flawed.proof.valid_on_chain
    roots = {cause.node_id for cause in flawed.root_causes}
    assert roots == set(FLAWED_ERRORS), _describe(flawed)
    for cause in flawed.root_causes:
        assert cause.status is NodeStatus.INVALID_ROOT
        assert cause.critiques, f"no critique reached the provider for {cause.node_id}"
        assert all(c.vote == "fail" and c.tier == 1 for c in cause.critiques)
    # Steps that are right but follow a wrong one inherit the failure.
    assert flawed.nodes[FLAWED_IDS["chf"]].status is NodeStatus.INVALID_CASCADE
    assert flawed.nodes[FLAWED_IDS["goal"]].status is NodeStatus.VALID
    for name, result in (("sound", sound), ("flawed", flawed)):
        _check_proof_and_phases(result)
        assert result.phases.seconds["tier1_verification"] is not None, name
        assert result.phases.seconds["tier3_verification"] is not None, name

    chain, protocol = await _chain_view(network)
    try:
        on_chain = await protocol.audit.session(flawed.session_id)
        assert on_chain.trace_root.hex() == flawed.proof.trace_root[2:]
        assert on_chain.valid is False
    finally:
        await chain.close()
    as_json = flawed.to_json()
    assert as_json["verdict"] == "INVALID" and {c["node"] for c in as_json["root_causes"]} == set(FLAWED_ERRORS)


def _draws(rounds: int, k: int = 3) -> int:
    """The draws of a node's `rounds` rounds: k, then 2k + 1 per escalation."""
    total = 0
    for _ in range(rounds):
        total += k
        k = 2 * k + 1
    return total


async def test_a_multi_agent_log_is_audited_turn_by_turn_and_message_by_message(client: TrustClient) -> None:
    result = await client.audit_agents(APPLES_LOG)
    assert result.kind == "agents"
    # The user's turn (t0) poses the task: it travels as context to the turns that use it, and only
    # the agents' turns are node segments on chain.
    assert list(result.nodes) == [f"t{i}" for i in range(1, len(APPLES_LOG["turns"]))], _describe(result)
    assert all(node.tier in (2, 3) for node in result.nodes.values()), _describe(result)  # 3: escalated
    # Every message into an agent's turn is a segment of its own (the telephone test): at tier 1 where
    # a message check decides it (a reply format asked for, a labelled value restated), else tier 2.
    edges = {(e.source, e.target): e for e in result.edges}
    assert list(edges) == [("t0", "t1"), ("t1", "t2"), ("t2", "t3"), ("t3", "t4")], result.to_json()["edges"]
    assert [edges[key].tier for key in list(edges)[1:]] == [1, 1, 1]
    # The aggregator restates the reviewer's "Remaining: 104" as 140: its incoming edge fails, and
    # Algorithm 1 makes it Invalid_Root for a protocol breach at its boundary, whatever its own seats said.
    assert edges[("t3", "t4")].outcome == "failed" and edges[("t2", "t3")].outcome == "passed"
    assert "t3 sent 104, t4 restated 140" in edges[("t3", "t4")].critiques[0].critique
    assert result.nodes["t4"].status is NodeStatus.INVALID_ROOT
    cause = next(c for c in result.root_causes if c.node_id == "t4")
    assert (cause.reason, cause.involved) == ("protocol breach at its boundary", ("t3",))
    assert result.stationary == () and result.to_json()["stationary"] == []
    units = [*result.nodes.values(), *result.edges]
    # Each round of k draws seats one to k members; an escalated segment's rounds draw 3, then 7.
    assert sum(u.rounds for u in units) <= result.seats <= sum(_draws(u.rounds) for u in units)
    _check_proof_and_phases(result)
    failed = {n for n, node in result.nodes.items() if node.outcome != "passed"}
    assert (result.verdict is Verdict.VALID) == result.proof.valid_on_chain
    for node_id, node in result.nodes.items():
        if node_id not in failed and node_id != "t4":
            assert node.status in (NodeStatus.VALID, NodeStatus.NEGLIGENT, NodeStatus.INVALID_CASCADE)


async def test_a_timeout_leaves_a_session_that_resume_finishes(client: TrustClient, tmp_path: Path) -> None:
    with pytest.raises(AuditTimeout) as raised:
        await client.audit_trace(sound_trace(), AuditConfig(max_latency_ms=1))
    session_id = raised.value.session_id
    assert list(tmp_path.glob("chain-*/*.json")), "the session record must survive the timeout"
    result = await client.resume(session_id, AuditConfig())
    assert result.session_id == session_id and result.verdict is Verdict.VALID


FINAL_ID = SOUND_IDS["final"]


async def test_refine_repairs_a_planted_leaf_error_and_reaudits_only_that_node(client: TrustClient) -> None:
    trace = sound_trace()
    trace.replace_node(dataclasses.replace(trace.node(FINAL_ID), content=FINAL.replace("= 2", "= 3")))
    first = await client.audit_trace(trace)
    assert first.verdict is Verdict.INVALID
    assert [cause.node_id for cause in first.root_causes] == [FINAL_ID], _describe(first)

    asked: list[tuple[str, str]] = []

    def regenerate(request: RepairRequest) -> Regenerated:
        assert request.feedback is not None, "the failed node is re-run with its auditors' feedback"
        asked.append((request.node, request.feedback.prompt()))
        return Regenerated(output=FINAL)

    refined = await client.refine(first, regenerate)

    assert [node for node, _ in asked] == [FINAL_ID]
    assert "= 3" in asked[0][1], "the feedback quotes the failed output"
    assert refined.valid and refined.verdict is Verdict.VALID
    # One new session whose only segment is the repaired leaf; the ten other nodes were frozen,
    # travelled as context, and kept their content.
    assert refined.reaudited == (1,)
    (again,) = refined.audits
    assert set(again.nodes) == {FINAL_ID} and again.verdict is Verdict.VALID and again.proof.valid_on_chain
    assert again.session_id != first.session_id
    assert refined.graph.node(FINAL_ID).content == FINAL
    for node in trace.nodes():
        if node.id != FINAL_ID:
            assert refined.graph.node(node.id) == node
    assert refined.to_json()["reaudited"] == [1]


async def test_bad_input_is_refused_before_anything_is_sent(
    network: LocalNetwork, client: TrustClient, tmp_path: Path
) -> None:
    before = await _nonce(network)
    with pytest.raises(GraphError, match="not valid JSON"):
        await client.audit_agents("{not json")
    with pytest.raises(GraphError, match="max_trace_chars"):
        await client.audit_trace("x " * 600_000)
    with pytest.raises(FeeTooLow, match="below the minimum"):
        await client.audit_trace(sound_trace(), AuditConfig(fee_wei=1))
    dead = f"http://127.0.0.1:{free_port()}"
    offline = TrustClient(network.rpc_url, dead, account=network.provider, settings=network.settings)
    with pytest.raises(IpfsError, match="does not answer"):
        await offline.audit_trace(sound_trace())
    no_chain = TrustClient(dead, network.ipfs_url, account=network.provider, settings=network.settings)
    with pytest.raises(ChainError, match="cannot reach the chain"):
        await no_chain.audit_trace(sound_trace())
    assert await _nonce(network) == before
    assert not list(tmp_path.glob("chain-*/*.json"))


async def test_a_tier_short_of_auditors_is_refused(network: LocalNetwork, client: TrustClient) -> None:
    chain, protocol = await _chain_view(network)
    password = (network.folder / "keystore-password").read_text().strip()
    # Committees are drawn with replacement: one human whose stake backs the committee's draws seats
    # it alone, so the tier is short only when no eligible human's stake backs them (all out here).
    humans = [load_keystore(Path(a.keystore), password) for a in network.auditors if a.tier == 3]
    try:
        for account in humans:
            await protocol.registry.set_available(account, False)
        before = await _nonce(network)
        with pytest.raises(InsufficientAuditors, match="tier 3") as short:
            await client.audit_trace(sound_trace())
        assert "the 0 tier-3 auditors eligible now stake 0 TRUST in all, which backs only 0" in str(short.value)
        assert await _nonce(network) == before
        # One human back: fewer auditors than the committee's three draws, but its stake backs them
        # all (it would sit alone, one seat of three votes), so the tier is not short. Checked up to
        # the fee, before anything is uploaded or sent.
        await protocol.registry.set_available(humans[0], True)
        config = AuditConfig()
        async with client._connection() as (view, kubo):
            fee = await client._preflight(view, kubo, segment_profiles(sound_trace(), config), config)
        assert fee > 0 and await _nonce(network) == before
        # Without the human tier the same trace goes to the LLM tier instead, and is accepted.
        config = AuditConfig(auditor_tiers=["computational", "llm"])
        assert {config.tier_for(t) for t in (1, 2, 3)} == {1, 2}
    finally:
        for account in humans:
            await protocol.registry.set_available(account, True)
        await chain.close()


async def test_a_trace_too_large_for_one_transaction_is_registered_drawn_and_finalized_in_runs(
    client: TrustClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trace past `SEGMENTS_PER_REGISTRATION` (128) is opened registering and its segments follow
    in runs; draws and finalizations are cut by their draws. The bounds are lowered here so that a
    ten-node trace takes the path a thousand-node one takes (`trust bench scale` runs that one)."""
    monkeypatch.setattr(session_driver, "SEGMENTS_PER_REGISTRATION", 4)
    monkeypatch.setattr(session_driver, "DRAWS_PER_TRANSACTION", 6)  # two committees of three
    monkeypatch.setattr(session_driver, "FINALIZE_DRAWS_PER_TRANSACTION", 6)
    trace = running_total_trace(10, random.Random(5), flawed_step=4)
    result = await client.audit_trace(trace, AuditConfig(auditor_tiers=["computational"]))
    assert result.verdict is Verdict.INVALID
    assert {cause.node_id for cause in result.root_causes} == {"s4"}
    assert len(result.transactions["create_session"]) == 1
    assert len(result.transactions["register_segments"]) == 3  # 4 + 4 + 2
    assert len(result.transactions["assign_auditors"]) >= 5  # ten committees, two a draw
    _check_proof_and_phases(result)


async def test_a_registration_cut_off_half_way_is_finished_by_resume(
    network: LocalNetwork, client: TrustClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The provider stops after the first `registerSegments` of a trace registered in runs (here a
    refusal stands in for a failure there): the session is left registering with its fee paid, so
    its record stays in the journal and its blobs pinned. `resume` registers the rest from the count
    the chain holds, then audits as usual."""
    monkeypatch.setattr(session_driver, "SEGMENTS_PER_REGISTRATION", 4)
    real = AuditContract.register_segments
    calls = 0

    async def register_once(self: AuditContract, *args: object, **kwargs: object) -> object:
        nonlocal calls
        calls += 1
        if calls > 1:
            raise ContractReverted("registerSegments reverted with a stand-in for a crash", "Stop", {})
        return await real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(AuditContract, "register_segments", register_once)
    trace = running_total_trace(10, random.Random(6))
    with pytest.raises(ContractReverted, match="stand-in") as raised:
        await client.audit_trace(trace, AuditConfig(auditor_tiers=["computational"]))
    # The fee is paid: the record and the blobs are kept, and the error says how to finish.
    assert "`trust submit --resume" in " ".join(raised.value.__notes__)
    chain, protocol = await _chain_view(network)
    try:
        session_id = int(await protocol.chain.call(protocol.audit.contract.functions.sessionCount()))
        left = await protocol.audit.session(session_id)
        assert left.status is SessionStatus.REGISTERING and (left.registered_count, left.segment_count) == (4, 10)
    finally:
        await chain.close()
    monkeypatch.setattr(AuditContract, "register_segments", real)
    result = await client.resume(session_id, AuditConfig(auditor_tiers=["computational"]))
    assert result.session_id == session_id and result.verdict is Verdict.VALID
