"""Incremental refresh: the index reads only blocks it has not read, in bounded ranges, picks up new
sessions (also through a running explorer), equals an index built in one go, and rebuilds itself
when the chain it read is replaced (a reorganization, here an Anvil snapshot reverted)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import pytest_asyncio
from eth_account.signers.local import LocalAccount

from tests.api.story import PASSWORD, PROTOCOL, serve
from trust.api.explorer import create_explorer_app
from trust.api.index import ChainIndex, SeatOutcome, SegmentState, SessionState
from trust.chain.anvil import AnvilNode
from trust.chain.client import ChainClient
from trust.chain.compiler import Artifact
from trust.chain.deployment import deploy_protocol
from trust.chain.protocol import Protocol
from trust.chain.types import SegmentSpec
from trust.chain.wallets import load_keystore
from trust.devnet import dev_account, provision_auditors
from trust.settings import GovernanceSettings

pytestmark = [pytest.mark.chain, pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

BLOCK_RANGE = 4


@dataclass
class Net:
    chain: ChainClient
    protocol: Protocol
    provider: LocalAccount
    auditors: dict[str, LocalAccount]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def net(
    anvil: AnvilNode, artifacts: dict[str, Artifact], mnemonic: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Net]:
    async with ChainClient(anvil.rpc_url, artifacts) as chain:
        await chain.rpc("evm_setAutomine", [True])
        deployer = dev_account(mnemonic, 0)
        deployment = await deploy_protocol(chain, deployer, PROTOCOL, GovernanceSettings())
        protocol = Protocol.bind(chain, deployment)
        keystores: Path = tmp_path_factory.mktemp("keystores")
        provisioned = await provision_auditors(protocol, deployer, [1, 1, 1], keystores, PASSWORD, scrypt_n=2**10)
        wallets = {a.address: load_keystore(Path(a.keystore), PASSWORD) for a in provisioned}
        yield Net(chain, protocol, dev_account(mnemonic, 3), wallets)


async def open_session(net: Net, root: bytes, segments: int = 2) -> int:
    specs = [SegmentSpec(tier=1, weight=1, content_digest=bytes([i + 1]) * 32) for i in range(segments)]
    session_id, _ = await net.protocol.audit.create_session(net.provider, root, specs)
    return session_id


async def test_refresh_reads_only_new_blocks_in_bounded_ranges(net: Net) -> None:
    index = ChainIndex(net.protocol, block_range=BLOCK_RANGE)
    first = await index.refresh()
    head = await net.chain.block_number()
    assert (first.from_block, first.to_block) == (net.protocol.deployment.block_number, head)
    assert first.log_requests == -(-(head - first.from_block + 1) // BLOCK_RANGE)
    assert first.logs > 0 and not first.rebuilt
    assert index.auditor_count == 3 and index.session_count == 0

    idle = await index.refresh()
    assert (idle.from_block, idle.to_block, idle.log_requests, idle.logs) == (head + 1, head, 0, 0)

    session_id = await open_session(net, b"\x01" * 32)
    created = await index.refresh()
    assert (created.from_block, created.to_block, created.log_requests) == (head + 1, head + 1, 1)
    assert created.logs == 4  # SessionCreated, SessionOpened and two SegmentRegistered
    assert index.session_count == 1
    detail = await index.session(session_id)
    assert detail.session.state is SessionState.OPEN and detail.session.trace_root == b"\x01" * 32
    assert [g.state for g in detail.segments] == [SegmentState.AWAITING_DRAW] * 2

    # The draw reaches the index at the next refresh; the summary's pending count follows.
    randomness = (await net.protocol.audit.session(session_id)).randomness_block
    while await net.chain.block_number() <= randomness:
        await net.chain.rpc("evm_mine", [])
    await net.protocol.audit.assign_auditors(net.provider, session_id, [0, 1])
    await index.refresh()
    segment = await index.segment(session_id, 0)
    assert segment.segment.state is SegmentState.VOTING and len(segment.rounds[0].seats) == 3

    # Built in one go, with one request, the index says the same.
    whole = ChainIndex(net.protocol, block_range=10_000)
    report = await whole.refresh()
    assert report.log_requests == 1 and report.to_block == index.head_block
    assert await whole.session(session_id) == await index.session(session_id)
    assert await whole.segment(session_id, 0) == await index.segment(session_id, 0)
    assert await whole.auditors() == await index.auditors()


async def test_a_running_explorer_shows_new_sessions(
    net: Net, anvil: AnvilNode, artifacts: dict[str, Artifact]
) -> None:
    app = create_explorer_app(anvil.rpc_url, net.protocol.deployment, artifacts=artifacts, block_range=BLOCK_RANGE)
    older_id = await open_session(net, b"\x12" * 32)
    async with serve(app) as url, httpx.AsyncClient(base_url=url) as client:
        before = (await client.get("/explorer/api/sessions")).json()
        assert before["items"][0]["session_id"] == older_id
        newer = await open_session(net, b"\x02" * 32)
        after = (await client.get("/explorer/api/sessions", params={"per_page": 1})).json()
        assert after["total"] == before["total"] + 1
        assert [s["session_id"] for s in after["items"]] == [newer]  # newest first
        older = (await client.get("/explorer/api/sessions", params={"per_page": 1, "page": 2})).json()
        assert [s["session_id"] for s in older["items"]] == [older_id]
        page = await client.get(f"/explorer/sessions/{newer}")
        assert page.status_code == 200 and ("0x" + "02" * 32) in page.text


async def test_cancelled_sessions_and_fees_topped_up_after_creation(net: Net) -> None:
    audit = net.protocol.audit
    index = ChainIndex(net.protocol)
    await index.refresh()
    # Created empty, then cancelled before its segments were registered: the fee goes back.
    create = audit.contract.functions.createSession(b"\x03" * 32, 2)
    await net.chain.transact(create, net.provider, value=10**15)
    cancelled = await audit.contract.functions.sessionCount().call()
    await net.chain.transact(audit.contract.functions.cancelSession(cancelled), net.provider)
    # Created empty, then registered with a payment that tops the fee up to the minimum.
    spec = SegmentSpec(tier=1, weight=3, content_digest=b"\x07" * 32, critical=True)
    minimum = await audit.minimum_fee([spec])
    await net.chain.transact(audit.contract.functions.createSession(b"\x04" * 32, 1), net.provider, value=1)
    topped = await audit.contract.functions.sessionCount().call()
    register = audit.contract.functions.registerSegments(topped, [spec.as_tuple()])
    await net.chain.transact(register, net.provider, value=minimum - 1)
    await index.refresh()

    refunded = await index.session(cancelled)
    assert refunded.session.state is SessionState.CANCELLED and refunded.refund_wei == 10**15
    assert refunded.session.fee_wei == 0 and refunded.session.registered_count == 0

    opened = await index.session(topped)
    assert opened.session.state is SessionState.OPEN and opened.session.fee_wei == minimum
    assert [(g.weight, g.critical) for g in opened.segments] == [(3, True)]


async def test_a_replaced_chain_is_read_again_from_the_start(net: Net) -> None:
    index = ChainIndex(net.protocol, block_range=BLOCK_RANGE)
    await index.refresh()
    snapshot = await net.chain.rpc("evm_snapshot", [])
    doomed = await open_session(net, b"\x05" * 32)
    await index.refresh()
    assert (await index.session(doomed)).session.trace_root == b"\x05" * 32

    await net.chain.rpc("evm_revert", [snapshot])  # the blocks the index read are gone
    replacement = await open_session(net, b"\x06" * 32)
    assert replacement == doomed
    for _ in range(3):
        await net.chain.rpc("evm_mine", [])
    report = await index.refresh()
    assert report.rebuilt and report.from_block == net.protocol.deployment.block_number
    assert (await index.session(replacement)).session.trace_root == b"\x06" * 32
    assert index.session_count == (await net.protocol.audit.contract.functions.sessionCount().call())


async def test_seats_released_for_want_of_a_key_envelope_show_as_undelivered(net: Net) -> None:
    """The provider publishes no key envelope; past the delivery deadline each seat claims its release
    (issue M3). The index shows the seats undelivered, not silent, and nothing forfeited."""
    audit = net.protocol.audit
    session_id = await open_session(net, b"\x05" * 32, segments=1)
    randomness = (await audit.session(session_id)).randomness_block
    while await net.chain.block_number() <= randomness:
        await net.chain.rpc("evm_mine", [])
    await audit.assign_auditors(net.provider, session_id, [0])
    segment = await audit.segment(session_id, 0)
    assert not segment.delivered and segment.delivery_deadline < segment.commit_deadline
    await net.chain.rpc("evm_setNextBlockTimestamp", [segment.delivery_deadline + 1])
    await net.chain.rpc("evm_mine", [])
    members = await audit.committee(session_id, 0)
    for seat_index, member in enumerate(members):
        await audit.claim_undelivered(net.auditors[member], session_id, 0, seat_index)
    index = ChainIndex(net.protocol)
    await index.refresh()
    seats = (await index.segment(session_id, 0)).rounds[0].seats
    assert [s.outcome for s in seats] == [SeatOutcome.UNDELIVERED] * len(members)
    assert all(s.forfeited_units == 0 for s in seats)
