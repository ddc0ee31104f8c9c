"""The explorer against a session driven through its whole life on a real Anvil (tests/api/story.py):
the index must say what the transactions' receipts and the contracts' views say, the JSON API must
say what the index says, and the pages must show it, escape what users wrote and refuse bad ids."""

from __future__ import annotations

import asyncio
import html
import re
import xml.etree.ElementTree as ET
from collections import Counter
from typing import Any

import httpx
import markupsafe
import pytest
import pytest_asyncio
from web3.logs import DISCARD

from tests.api.story import (
    CRITIQUE,
    EXPECTED,
    FINAL_RESULTS,
    FINAL_ROUND,
    GOVERNANCE_REASON,
    GOVERNANCE_SLASH_UNITS,
    HOSTILE_URI,
    PROTOCOL,
    Story,
    aligned_seats,
    serve,
)
from trust.adapters.chain.client import SentTransaction
from trust.adapters.chain.compiler import Artifact
from trust.adapters.local.anvil import AnvilNode
from trust.adapters.storage.kubo import KuboClient
from trust.api.explorer.formatting import amount_text
from trust.api.explorer.pages import create_explorer_app
from trust.api.explorer.provider_view import ProviderView, ReadingState, ReportReader
from trust.api.index import (
    AuditorSort,
    ChainIndex,
    RoundResult,
    SeatOutcome,
    SegmentState,
    SessionState,
    UnknownEntity,
)

pytestmark = [pytest.mark.chain, pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

PENALTY_UNITS = PROTOCOL.to_params()["penaltyPerSeat"]
SVG = "{http://www.w3.org/2000/svg}"
UNREGISTERED = "0x000000000000000000000000000000000000dEaD"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def index(story: Story) -> ChainIndex:
    """An index read in ranges of 7 blocks, so that events of one story land in many requests."""
    built = ChainIndex(story.world.protocol, block_range=7)
    await built.refresh()
    return built


async def block_time(story: Story, sent: SentTransaction) -> int:
    return int((await story.world.chain.w3.eth.get_block(sent.block_number))["timestamp"])


def expected_outcome(story: Story, segment_id: int, round_id: int, member: str) -> SeatOutcome:
    revealed = story.reveals.get((segment_id, round_id, member))
    if revealed is None:
        return SeatOutcome.SILENT
    if segment_id not in FINAL_RESULTS:
        return SeatOutcome.RELEASED  # segment 3 ends undetermined: every revealed seat is released
    # A decided segment judges the revealed seats of every round against its verdict, the escalated
    # rounds' included (they stay locked until then, issue M1).
    return SeatOutcome.ALIGNED if revealed[0] == FINAL_RESULTS[segment_id] else SeatOutcome.MISALIGNED


def event_args(story: Story, contract: str, event: str, sent: SentTransaction) -> list[Any]:
    protocol = story.world.protocol
    handle = {"audit": protocol.audit.contract, "registry": protocol.registry.contract}[contract]
    return [log["args"] for log in handle.events[event]().process_receipt(sent.receipt, errors=DISCARD)]


# ---------------------------------------------------------------------------------------- the index


async def test_the_session_is_what_its_transactions_did(story: Story, index: ChainIndex) -> None:
    detail = await index.session(story.session_id)
    s = detail.session
    assert s.provider == story.world.provider.address
    assert s.trace_root == story.stored.root
    assert s.fee_wei == story.fee_wei
    assert (s.segment_count, s.registered_count) == (4, 4)
    assert s.state is SessionState.DISTRIBUTED and s.valid is False
    assert (s.passed, s.failed, s.undetermined, s.pending) == (2, 1, 1, 0)
    assert s.created.tx_hash == story.created.tx_hash
    assert s.created.timestamp == await block_time(story, story.created)
    assert story.trace_finalized is not None and s.trace_finalized is not None
    assert s.trace_finalized.tx_hash == story.trace_finalized.tx_hash

    # eq. 3.5-3.6: W = 2 of sum(w) = 4 < beta, and the critical segment 1 failed.
    assert (detail.pass_weight, detail.total_weight, detail.critical_failed) == (2, 4, 1)
    assert detail.beta_bps == 6_500 and detail.tau_bps == 6_600
    assert detail.share_bps == (7_000, 1_500, 1_000, 500)
    view = await story.world.protocol.audit.session(story.session_id)
    assert detail.aligned_seats == view.aligned_seats == sum(len(s) for s in aligned_seats(story).values())

    assert story.distributed is not None and detail.fee_split is not None
    (distributed,) = event_args(story, "audit", "RewardsDistributed", story.distributed)
    split = detail.fee_split
    assert split.at.tx_hash == story.distributed.tx_hash
    assert (split.auditors_wei, split.per_seat_wei) == (distributed["auditorsWei"], distributed["perSeatWei"])
    assert (split.treasury_wei, split.stakers_wei, split.insurance_wei) == (
        distributed["treasuryWei"],
        distributed["stakersWei"],
        distributed["insuranceWei"],
    )
    assert split.auditors_wei + split.treasury_wei + split.stakers_wei + split.insurance_wei == story.fee_wei
    claimed = {c.auditor: (c.units, c.amount_wei, c.at.tx_hash) for c in detail.claims}
    audit = story.world.protocol.audit
    assert claimed == {
        auditor: (audit.units_claimed_in(sent), audit.rewards_claimed_in(sent), sent.tx_hash)
        for auditor, sent in story.claims.items()
    }
    # One vote per seat here (story.PROTOCOL): the units claimed are the aligned seats.
    assert all(claimed[a][0] == len(aligned_seats(story)[a]) for a in story.claims)

    states = [g.state for g in detail.segments]
    assert states == [SegmentState.PASSED, SegmentState.FAILED, SegmentState.PASSED, SegmentState.UNDETERMINED]
    assert [(g.tier, g.current_tier, g.rounds) for g in detail.segments] == [(1, 1, 1), (1, 1, 1), (1, 2, 2), (2, 3, 2)]
    assert [g.critical for g in detail.segments] == [False, True, False, False]
    # The raw-leaf CID rebuilt from the digest on chain is where store_trace put the ciphertext.
    assert [g.cid for g in detail.segments] == [key.cid for key in story.stored.segments]
    assert [g.content_digest for g in detail.segments] == [spec.content_digest for spec in story.stored.specs()]


async def test_every_round_shows_its_committee_votes_and_deadlines(story: Story, index: ChainIndex) -> None:
    audit = story.world.protocol.audit
    latest_envelope = {(e.segment_id, e.round, e.seat_index): e.envelope_cid for e in story.envelopes}
    publications = Counter((e.segment_id, e.round, e.seat_index) for e in story.envelopes)
    claimants = set(story.claims)
    for (segment_id, round_id), committee in sorted(story.committees.items()):
        detail = await index.segment(story.session_id, segment_id)
        r = detail.rounds[round_id]
        assert r.drawn is not None and r.drawn.tx_hash == story.draws[(segment_id, round_id)].tx_hash
        assert r.drawn.timestamp == await block_time(story, story.draws[(segment_id, round_id)])
        # One seat per member; the committee size counts draws, each seat here weighing one (story.PROTOCOL).
        assert r.tier == committee.tier and r.committee_size == sum(seat.votes for seat in r.seats)
        assert all(seat.votes == 1 for seat in r.seats)
        assert r.scheduled_commit_deadline == committee.commit_deadline
        assert [seat.auditor for seat in r.seats] == list(committee.members)

        # Votes in chain order, each with its own transaction, block and block time.
        commits = sorted(
            ((m, sent) for (g, rd, m), sent in story.commits.items() if (g, rd) == (segment_id, round_id)),
            key=lambda item: item[1].block_number,
        )
        reveals = sorted(
            (
                (m, vote, sent)
                for (g, rd, m), (vote, sent) in story.reveals.items()
                if (g, rd) == (segment_id, round_id)
            ),
            key=lambda item: item[2].block_number,
        )
        assert [(e.auditor, e.at.tx_hash) for e in r.events if e.kind == "commit"] == [
            (m, sent.tx_hash) for m, sent in commits
        ]
        assert [(e.auditor, e.vote, e.at.tx_hash) for e in r.events if e.kind == "reveal"] == [
            (m, vote, sent.tx_hash) for m, vote, sent in reveals
        ]
        for event in r.events:
            sent = story.commits[(segment_id, round_id, event.auditor)] if event.kind == "commit" else None
            sent = sent or story.reveals[(segment_id, round_id, event.auditor)][1]
            assert event.at.block_number == sent.block_number
            assert event.at.timestamp == await block_time(story, sent)
            assert event.seat_index == committee.members.index(event.auditor)
        # Commits inside the commit window, reveals after it and inside the reveal window.
        assert r.commit_deadline is not None and r.reveal_deadline is not None
        assert r.reveal_deadline - r.commit_deadline == committee.reveal_deadline - committee.commit_deadline
        # (A window that closes early ends one second before the commit that filled the committee.)
        last_commit = r.commit_deadline + 1 if r.closed_early else r.commit_deadline
        assert r.scheduled_commit_deadline is not None and r.commit_deadline <= r.scheduled_commit_deadline
        assert all(r.drawn.timestamp <= e.at.timestamp <= last_commit for e in r.events if e.kind == "commit")
        assert all(r.commit_deadline < e.at.timestamp <= r.reveal_deadline for e in r.events if e.kind == "reveal")
        everyone_committed = all((segment_id, round_id, m) in story.commits for m in committee.members)
        if everyone_committed and r.closed_early:
            assert r.commits_complete is not None and r.commit_deadline == r.commits_complete.timestamp - 1

        for seat in r.seats:
            assert seat.committed == ((segment_id, round_id, seat.auditor) in story.commits)
            outcome = expected_outcome(story, segment_id, round_id, seat.auditor)
            assert seat.outcome is outcome, (segment_id, round_id, seat.index)
            if outcome is SeatOutcome.SILENT:
                assert seat.forfeited_units == PENALTY_UNITS  # a seat that never reveals always forfeits P
            elif outcome is SeatOutcome.MISALIGNED:
                assert seat.forfeited_units in (0, PENALTY_UNITS)  # forfeits with probability p_slash(r)
            else:
                assert seat.forfeited_units == 0
            # Only the deciding round's aligned seats are paid (an escalated round's earn reputation).
            rewarded = outcome is SeatOutcome.ALIGNED and FINAL_ROUND.get(segment_id) == round_id
            assert seat.claimed == (rewarded and seat.auditor in claimants)
            assert seat.envelope is not None
            key = (segment_id, round_id, seat.index)
            assert (seat.envelope.cid, seat.envelope.publications) == (latest_envelope[key], publications[key])
        # A seat's votes are the draws its member won, as the seat view holds them.
        view_weights = [
            (await audit.seat(story.session_id, segment_id, round_id, i)).weight for i in range(len(r.seats))
        ]
        assert [s.votes for s in r.seats] == view_weights
        assert r.total_votes == sum(view_weights) == r.committee_size
        assert r.pass_votes == sum(s.votes for s in r.seats if s.vote is True)
        assert r.fail_votes == sum(s.votes for s in r.seats if s.vote is False)

    # The forfeits attributed to seats are the AuditorSlashed events of the finalizations.
    slashed = Counter(a for sent in story.finalizations for a in audit.slashed_in(sent))
    attributed: Counter[tuple[str, int]] = Counter()
    for segment_id in range(4):
        for r in (await index.segment(story.session_id, segment_id)).rounds:
            attributed.update((s.auditor, s.forfeited_units) for s in r.seats if s.forfeited_units)
    assert attributed == slashed


async def test_escalations_and_a_committee_that_cannot_be_seated(story: Story, index: ChainIndex) -> None:
    escalated = await index.segment(story.session_id, 2)
    assert [r.result for r in escalated.rounds] == [RoundResult.ESCALATED, RoundResult.PASSED]
    assert escalated.rounds[1].committee_size == 7 and escalated.rounds[1].tier == 2
    assert escalated.rounds[0].closed is not None and escalated.rounds[1].closed is not None
    assert escalated.rounds[0].closed.tx_hash == story.finalizations[0].tx_hash
    assert escalated.rounds[1].closed.tx_hash == story.finalizations[1].tx_hash
    assert escalated.rounds[1].drawn is not None
    assert escalated.rounds[1].drawn.block_number > escalated.rounds[0].closed.block_number

    undetermined = await index.segment(story.session_id, 3)
    first, second = undetermined.rounds
    assert first.result is RoundResult.ESCALATED
    assert second.result is RoundResult.UNDETERMINED and second.seats == () and second.drawn is None
    assert (second.tier, second.committee_size) == (3, 7)
    assert [u.attempt for u in second.unavailable] == [1, 2, 3]
    assert [u.at.tx_hash for u in second.unavailable] == [sent.tx_hash for sent in story.unavailable_draws]
    assert len(second.randomness_refreshes) == 2  # attempts 1 and 2 fixed fresh randomness; 3 ended it
    assert second.closed is not None and second.closed.tx_hash == story.unavailable_draws[-1].tx_hash
    assert undetermined.segment.finalized == second.closed
    assert (await story.world.protocol.audit.segment(story.session_id, 3)).status.name == "UNDETERMINED"


async def test_auditors_are_what_the_registry_and_their_seats_say(story: Story, index: ChainIndex) -> None:
    registry, audit = story.world.protocol.registry, story.world.protocol.audit
    aligned = aligned_seats(story)
    per_seat = (await index.session(story.session_id)).fee_split.per_seat_wei  # type: ignore[union-attr]
    for address in story.world.wallets:
        detail = await index.auditor(address)
        a = detail.auditor
        info = await registry.auditor(address)
        assert (a.tier, a.stake_units, a.locked_units, a.reputation_wad) == (
            info.tier,
            info.stake,
            info.locked,
            info.reputation_wad,
        )
        assert a.locked_units == 0 and a.open_seats == 0  # every seat is settled
        assert a.forfeited_units == story.world.initial_stake[address] - info.stake
        assert a.staker_pending_wei == await registry.pending_staker_reward(address)

        seats = [(s.session_id, s.segment_id, s.round) for s in detail.seats]
        held = [(story.session_id, g, r) for (g, r), c in story.committees.items() if address in c.members]
        assert sorted(seats) == sorted(held)
        expected = Counter(expected_outcome(story, g, r, address) for _, g, r in held)
        assert (a.aligned, a.misaligned, a.silent, a.released) == (
            expected[SeatOutcome.ALIGNED],
            expected[SeatOutcome.MISALIGNED],
            expected[SeatOutcome.SILENT],
            expected[SeatOutcome.RELEASED],
        )
        # Rewarded seats are the deciding rounds' aligned seats; an escalated round's aligned seats
        # earn reputation only (M1), so they are counted as aligned but not rewarded.
        rewarded = aligned.get(address, [])
        deciding = sum(
            1
            for _, g, r in held
            if FINAL_ROUND.get(g) == r and expected_outcome(story, g, r, address) is SeatOutcome.ALIGNED
        )
        assert len(rewarded) == deciding <= a.aligned
        # Forfeits by reason: every silent seat, the misaligned seats whose roll fell under p_slash.
        reasons = Counter(f.reason for f in detail.forfeits)
        slashed_misaligned = sum(1 for s in detail.seats if s.outcome is SeatOutcome.MISALIGNED and s.forfeited_units)
        assert reasons["no reveal"] == a.silent
        assert reasons["vote against consensus"] == slashed_misaligned

        if address in story.claims:
            assert a.rewards_claimed_wei == audit.rewards_claimed_in(story.claims[address])
            assert a.rewards_claimable_wei == 0
        else:
            assert a.rewards_claimed_wei == 0
            assert a.rewards_claimable_wei == per_seat * len(aligned.get(address, []))
        assert a.earnings_wei == (
            a.rewards_claimed_wei + a.rewards_claimable_wei + a.staker_claimed_wei + a.staker_pending_wei
        )
        history = [change.reputation_wad for change in detail.reputation_history]
        if history:
            assert history[0] == info.reputation_wad  # newest first

    unclaimed = (await index.auditor(story.unclaimed)).auditor
    assert unclaimed.rewards_claimable_wei > 0

    assert story.staker_claim is not None
    (claim,) = event_args(story, "registry", "StakerRewardClaimed", story.staker_claim)
    staker = await index.auditor(story.staker_claimer)
    assert staker.auditor.staker_claimed_wei == claim["amountWei"] > 0
    assert [c.at.tx_hash for c in staker.staker_claims] == [story.staker_claim.tx_hash]

    # The governance slash is a forfeit of the auditor's, attributed to no seat.
    slashed = await index.auditor(story.governance_slashed)
    governance = [f for f in slashed.forfeits if f.reason == GOVERNANCE_REASON]
    assert [f.amount_units for f in governance] == [GOVERNANCE_SLASH_UNITS]
    seat_forfeits = sum(s.forfeited_units for s in slashed.seats)
    assert slashed.auditor.forfeited_units == seat_forfeits + GOVERNANCE_SLASH_UNITS

    hostile = await index.auditor(story.world.hostile.lower())
    assert hostile.auditor.metadata_uri == HOSTILE_URI
    assert hostile.auditor.tier == 3 and hostile.auditor.seats == 0 and hostile.auditor.credentialed


async def test_auditors_sort_and_paginate(story: Story, index: ChainIndex) -> None:
    everyone = (await index.auditors(per_page=100)).items
    assert len(everyone) == len(story.world.wallets)
    for sort, key in (
        (AuditorSort.STAKE, lambda a: a.stake_units),
        (AuditorSort.REPUTATION, lambda a: a.reputation_wad),
        (AuditorSort.EARNINGS, lambda a: a.earnings_wei),
    ):
        for descending in (True, False):
            listing = await index.auditors(sort=sort, descending=descending, per_page=100)
            values = [key(a) for a in listing.items]
            assert values == sorted(values, reverse=descending), (sort, descending)
            assert {a.address for a in listing.items} == set(story.world.wallets)
    count = len(story.world.wallets)  # 20
    pages = [await index.auditors(sort=AuditorSort.REPUTATION, page=p, per_page=8) for p in (1, 2, 3)]
    assert [len(p.items) for p in pages] == [8, 8, count - 16] and all(p.total == count for p in pages)
    whole = await index.auditors(sort=AuditorSort.REPUTATION, per_page=100)
    assert [a for p in pages for a in p.items] == list(whole.items)
    with pytest.raises(ValueError, match="per_page"):
        await index.auditors(per_page=101)
    with pytest.raises(ValueError, match="page"):
        await index.sessions(page=0)


async def test_unknown_and_malformed_ids(story: Story, index: ChainIndex) -> None:
    with pytest.raises(UnknownEntity, match="no session 99") as unknown:
        await index.session(99)
    assert unknown.value.kind == "session"
    with pytest.raises(UnknownEntity, match="numbered 0 to 3") as segment:
        await index.segment(story.session_id, 4)
    assert segment.value.kind == "segment"
    with pytest.raises(UnknownEntity, match="has not registered") as auditor:
        await index.auditor(UNREGISTERED)
    assert auditor.value.kind == "auditor"
    with pytest.raises(ValueError, match="not an address"):
        await index.auditor("0x1234")


# ---------------------------------------------------------------------------------------- JSON


async def test_json_says_what_the_index_says(site: str, story: Story, index: ChainIndex) -> None:
    async with httpx.AsyncClient(base_url=site) as client:
        status = (await client.get("/explorer/api/status")).json()
        assert status["chain_id"] == story.world.chain.chain_id and status["sessions"] == 1
        assert status["auditors"] == len(story.world.wallets) and status["head_block"] >= index.head_block
        assert status["contracts"]["TRUSTAudit"] == story.world.protocol.audit.address

        listing = (await client.get("/explorer/api/sessions")).json()
        assert listing["total"] == 1 and [s["session_id"] for s in listing["items"]] == [story.session_id]

        response = await client.get(f"/explorer/api/sessions/{story.session_id}")
        assert response.status_code == 200
        session = response.json()
        detail = await index.session(story.session_id)
        assert session["session"]["fee_wei"] == str(story.fee_wei)  # amounts are decimal strings
        assert session["session"]["trace_root"] == "0x" + story.stored.root.hex()
        assert session["session"]["state"] == "distributed" and session["session"]["valid"] is False
        assert [g["state"] for g in session["segments"]] == ["passed", "failed", "passed", "undetermined"]
        assert session["fee_split"]["per_seat_wei"] == str(detail.fee_split.per_seat_wei)  # type: ignore[union-attr]
        assert sorted(c["auditor"] for c in session["claims"]) == sorted(story.claims)

        segment = (await client.get(f"/explorer/api/sessions/{story.session_id}/segments/2")).json()
        expected = await index.segment(story.session_id, 2)
        assert [r["result"] for r in segment["rounds"]] == ["escalated", "passed"]
        for got, want in zip(segment["rounds"], expected.rounds, strict=True):
            assert [e["at"]["tx_hash"] for e in got["events"]] == [e.at.tx_hash for e in want.events]
            assert [s["outcome"] for s in got["seats"]] == [s.outcome.value for s in want.seats]
            assert [s["votes"] for s in got["seats"]] == [s.votes for s in want.seats]
            assert got["commit_deadline"] == want.commit_deadline

        by_reputation = (
            await client.get("/explorer/api/auditors", params={"sort": "reputation", "order": "asc"})
        ).json()
        want_order = await index.auditors(sort=AuditorSort.REPUTATION, descending=False)
        assert [a["address"] for a in by_reputation["items"]] == [a.address for a in want_order.items]

        auditor = (await client.get(f"/explorer/api/auditors/{story.unclaimed}")).json()
        want_auditor = await index.auditor(story.unclaimed)
        assert auditor["auditor"]["rewards_claimable_wei"] == str(want_auditor.auditor.rewards_claimable_wei)
        assert auditor["auditor"]["earnings_wei"] == str(want_auditor.auditor.earnings_wei)
        assert len(auditor["seats"]) == len(want_auditor.seats)

        hostile = (await client.get(f"/explorer/api/auditors/{story.world.hostile}")).json()
        assert hostile["auditor"]["metadata_uri"] == HOSTILE_URI  # JSON carries the string as it is


async def test_openapi_describes_the_json(site: str) -> None:
    async with httpx.AsyncClient(base_url=site) as client:
        schema = (await client.get("/openapi.json")).json()
    paths = schema["paths"]
    for path in (
        "/explorer/api/status",
        "/explorer/api/sessions",
        "/explorer/api/sessions/{session_id}",
        "/explorer/api/sessions/{session_id}/segments/{segment_id}",
        "/explorer/api/auditors",
        "/explorer/api/auditors/{address}",
    ):
        assert path in paths, path
    ok = paths["/explorer/api/sessions/{session_id}"]["get"]["responses"]["200"]
    assert ok["content"]["application/json"]["schema"]["$ref"].endswith("/SessionOut")
    fee = schema["components"]["schemas"]["SessionSummaryOut"]["properties"]["fee_wei"]
    assert fee["type"] == "string"


# ---------------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("path", "status", "says"),
    [
        ("/explorer/sessions/99", 404, "no session 99"),
        ("/explorer/sessions/abc", 422, "is not a number"),
        ("/explorer/sessions/0", 422, "out of range"),
        ("/explorer/sessions/99999999999999999999999", 422, "is not a number"),
        ("/explorer/sessions/1/segments/4", 404, "numbered 0 to 3"),
        ("/explorer/sessions/1/segments/-1", 422, "is not a number"),
        ("/explorer/sessions/99/segments/0", 404, "no session 99"),
        (f"/explorer/auditors/{UNREGISTERED}", 404, "has not registered"),
        ("/explorer/auditors/0x1234", 422, "not an address"),
        ("/explorer/auditors/0x000000000000000000000000000000000000DEad", 422, "checksum"),
        ("/explorer/auditors?sort=fees", 422, "use stake, reputation, earnings"),
        ("/explorer/auditors?order=up", 422, "asc or desc"),
        ("/explorer/sessions?page=7", 422, "past the last page"),
        ("/explorer/sessions?page=x", 422, "whole number"),
    ],
)
async def test_pages_refuse_unknown_and_malformed_ids(site: str, path: str, status: int, says: str) -> None:
    async with httpx.AsyncClient(base_url=site) as client:
        response = await client.get(path)
    assert response.status_code == status
    assert response.headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in response.headers["content-security-policy"]
    message = re.search(r'<p class="error-box" role="alert" id="message">(.*?)</p>', response.text, re.S)
    assert message is not None and says in html.unescape(message.group(1))


@pytest.mark.parametrize(
    ("path", "status", "says"),
    [
        ("/explorer/api/sessions/99", 404, "no session 99"),
        ("/explorer/api/sessions/abc", 422, ""),
        ("/explorer/api/sessions/0", 422, ""),
        ("/explorer/api/sessions/1/segments/4", 404, "numbered 0 to 3"),
        ("/explorer/api/sessions/1/segments/-1", 422, ""),
        (f"/explorer/api/auditors/{UNREGISTERED}", 404, "has not registered"),
        ("/explorer/api/auditors/0xzz", 422, ""),
        ("/explorer/api/sessions?per_page=101", 422, ""),
        ("/explorer/api/auditors?sort=fees", 422, ""),
    ],
)
async def test_json_refuses_unknown_and_malformed_ids(site: str, path: str, status: int, says: str) -> None:
    async with httpx.AsyncClient(base_url=site) as client:
        response = await client.get(path)
    assert response.status_code == status
    detail = response.json()["detail"]
    if says:
        assert says in detail
    else:
        assert detail  # FastAPI's validation error names the parameter
        assert isinstance(detail, list) and detail[0]["loc"][0] in ("path", "query")


# ---------------------------------------------------------------------------------------- pages


async def test_pages_show_the_story_and_escape_what_users_wrote(site: str, story: Story) -> None:
    async with httpx.AsyncClient(base_url=site) as client:
        pages = {
            "sessions": await client.get("/explorer/"),
            "session": await client.get(f"/explorer/sessions/{story.session_id}"),
            "segment": await client.get(f"/explorer/sessions/{story.session_id}/segments/3"),
            "auditors": await client.get("/explorer/auditors"),
            "hostile": await client.get(f"/explorer/auditors/{story.world.hostile}"),
            "slashed": await client.get(f"/explorer/auditors/{story.governance_slashed}"),
        }
        redirect = await client.get("/explorer")
    assert redirect.status_code == 307 and redirect.headers["location"] == "/explorer/sessions"
    for name, response in pages.items():
        assert response.status_code == 200, name
        policy = response.headers["content-security-policy"]
        assert "default-src 'none'" in policy and "script-src" not in policy and "unsafe-inline" not in policy
        assert "<script" not in response.text, name  # no script of ours, none of theirs
        assert response.headers["x-content-type-options"] == "nosniff"

    assert 'id="session-1"' in pages["sessions"].text
    session = pages["session"].text
    for segment_id in range(4):
        assert f"/explorer/sessions/{story.session_id}/segments/{segment_id}" in session
    assert "invalid" in session and "undetermined" in session
    segment = pages["segment"].text
    assert "attempt 3 of 3" in segment and "escalated" in segment

    hostile = pages["hostile"].text
    assert HOSTILE_URI not in hostile
    metadata = re.search(r'<code class="wrap" id="metadata">(.*?)</code>', hostile, re.S)
    assert metadata is not None and html.unescape(metadata.group(1)) == HOSTILE_URI
    assert "&lt;script&gt;" in hostile and "&lt;img" in hostile
    assert "<img" not in pages["auditors"].text  # the list shows the URI truncated, escaped too
    slashed = pages["slashed"].text
    assert GOVERNANCE_REASON not in slashed and str(markupsafe.escape(GOVERNANCE_REASON)) in slashed


# ---------------------------------------------------------------------------------------- drawings


def svg_of(page: str, element_id: str) -> ET.Element:
    """The inline `<svg id=element_id>` of a page, parsed as XML (so it must be well formed)."""
    found = re.search(rf'<svg xmlns="http://www.w3.org/2000/svg" id="{element_id}".*?</svg>', page, re.S)
    assert found is not None, f"no svg#{element_id} in the page"
    return ET.fromstring(found.group(0))


async def test_the_session_page_draws_the_graph_linked_and_coloured_by_verdict(site: str, story: Story) -> None:
    async with httpx.AsyncClient(base_url=site) as client:
        page = (await client.get(f"/explorer/sessions/{story.session_id}")).text
        data = (await client.get(f"/explorer/api/sessions/{story.session_id}/graph")).json()
    graph = svg_of(page, "graph")
    links = {a.get("id"): a for a in graph.iter(f"{SVG}a")}
    assert {key: a.get("href") for key, a in links.items()} == {
        f"node-s{g}": f"/explorer/sessions/{story.session_id}/segments/{g}" for g in range(4)
    }
    fills = {
        key: next(r.get("data-fill") for r in a.iter(f"{SVG}rect") if r.get("data-fill")) for key, a in links.items()
    }
    assert fills == {"node-s0": "passed", "node-s1": "failed", "node-s2": "passed", "node-s3": "undetermined"}
    marks = {key: [r.get("data-mark") for r in a.iter(f"{SVG}rect") if r.get("data-mark")] for key, a in links.items()}
    # s1 failed on the critical path; s2 passed but depends on it; s3 ended undetermined: never judged,
    # so its fill says undetermined and it carries no mark (it still counts as not passed on chain).
    assert marks == {"node-s0": [], "node-s1": ["root cause"], "node-s2": ["cascade"], "node-s3": []}
    labels = {key: [t.text for t in a.iter(f"{SVG}text")] for key, a in links.items()}
    assert [label for label in labels["node-s0"] if label == "g0"] and "s1" in labels["node-s1"]
    edges = sorted((p.get("data-edge"), p.get("data-style")) for p in graph.iter(f"{SVG}path") if p.get("data-edge"))
    assert edges == sorted(
        (f"s{story.stored.segments[0].segment_index if e.source == 'g0' else int(e.source[1:])}"
         f"->s{int(e.target[1:])}", e.type.value)
        for e in story.graph.edges()
    )  # fmt: skip
    assert svg_of(page, "legend") is not None
    assert "provider&#39;s record" in page or "provider's record" in page

    assert data["drawn_from"] == "shape"
    assert [(n["key"], n["fill"], n["mark"]) for n in data["nodes"]] == [
        ("s0", "passed", None),
        ("s1", "failed", "root cause"),
        ("s2", "passed", "cascade"),
        ("s3", "undetermined", None),
    ]
    assert len(data["edges"]) == 5


async def test_without_a_shape_source_the_segments_are_drawn_from_the_chain(
    story: Story, anvil: AnvilNode, artifacts: dict[str, Artifact]
) -> None:
    app = create_explorer_app(anvil.rpc_url, story.world.deployment, artifacts=artifacts)
    async with serve(app) as url, httpx.AsyncClient(base_url=url) as client:
        data = (await client.get(f"/explorer/api/sessions/{story.session_id}/graph")).json()
        page = (await client.get(f"/explorer/sessions/{story.session_id}")).text
    assert data["drawn_from"] == "chain" and data["edges"] == []
    assert [(n["label"], n["fill"], n["mark"]) for n in data["nodes"]] == [
        ("segment 0", "passed", None),
        ("segment 1", "failed", None),
        ("segment 2", "passed", None),
        ("segment 3", "undetermined", None),
    ]
    assert "no source of graph shapes" in data["note"]
    graph = svg_of(page, "graph")
    assert len(list(graph.iter(f"{SVG}a"))) == 4 and not [p for p in graph.iter(f"{SVG}path") if p.get("data-edge")]


async def test_a_segment_page_places_the_node_and_shows_the_seats_reports(site: str, story: Story) -> None:
    assert story.report is not None
    segment_id, round_id, seat, auditor, cid = story.report
    async with httpx.AsyncClient(base_url=site) as client:
        page = (await client.get(f"/explorer/sessions/{story.session_id}/segments/{segment_id}")).text
        data = (await client.get(f"/explorer/api/sessions/{story.session_id}/segments/{segment_id}")).json()
    reports = [(s["index"], s["report"]) for s in data["rounds"][round_id]["seats"]]
    assert [(i, r["cid"], r["publications"]) for i, r in reports if r] == [(seat, cid, 1)]
    assert data["rounds"][round_id]["seats"][seat]["auditor"] == auditor
    row = re.search(rf'<tr id="seat-{round_id}-{seat}">(.*?)</tr>', page, re.S)
    assert row is not None and f'title="{cid} (sealed to the provider)"' in row.group(1)
    place = re.search(r'<div class="card" id="place">(.*?)</div>', page, re.S)
    assert place is not None
    assert "s1" in place.group(1) and "root cause" in place.group(1)
    assert f'href="/explorer/sessions/{story.session_id}/segments/0">g0 (segment 0)</a>' in place.group(1)
    assert f'href="/explorer/sessions/{story.session_id}/segments/2">s2 (segment 2)</a>' in place.group(1)


# ---------------------------------------------------------------------------------------- critiques


def critique_block(page: str, round_id: int, seat: int) -> tuple[str, str] | None:
    """(state, inner HTML) of a seat's critique on a segment page, None when there is none."""
    found = re.search(rf'<div class="critique (\w+)" id="critique-{round_id}-{seat}">(.*?)\n    </div>', page, re.S)
    return None if found is None else (found.group(1), found.group(2))


async def test_the_provider_view_shows_each_seats_critique(provider_site: str, story: Story) -> None:
    assert story.report is not None
    segment_id, round_id, seat, auditor, cid = story.report
    async with httpx.AsyncClient(base_url=provider_site) as client:
        response = await client.get(f"/explorer/sessions/{story.session_id}/segments/{segment_id}")
    assert response.status_code == 200
    page = response.text
    assert "Provider view" in page
    block = critique_block(page, round_id, seat)
    assert block is not None and block[0] == "opened"
    text = block[1]
    assert f'<blockquote class="critique-text">{str(markupsafe.escape(CRITIQUE))}</blockquote>' in text
    assert "<b>2 mg</b>" not in page  # the auditor's words are text, never markup
    assert auditor in text and cid in text
    assert re.search(r"<dt>Vote</dt><dd><span class=\"badge fail\">fail</span></dd>", text)
    assert "<dt>Score</dt><dd>0.90</dd>" in text
    assert "<dt>Error type</dt><dd>factual</dd>" in text
    assert f"<dt>Expected</dt><dd>{EXPECTED}</dd>" in text
    assert re.search(r"<dt>Evaluation</dt><dd>8\.25 s at tier 1, started \d{4}-\d\d-\d\d [\d:]{8} UTC", text)
    # The other seats of the round published nothing: no critique, and the table says so.
    assert [critique_block(page, round_id, other) for other in range(3) if other != seat] == [None, None]
    assert f'href="#critique-{round_id}-{seat}">critique</a>' in page


async def test_the_provider_view_says_which_reports_it_could_not_read(provider_site: str, story: Story) -> None:
    (missing, why_missing), (wrong_key, why_wrong) = story.unreadable[(0, 0, 0)], story.unreadable[(0, 0, 1)]
    assert (why_missing, why_wrong) == ("unavailable", "unreadable")
    async with httpx.AsyncClient(base_url=provider_site) as client:
        response = await client.get(f"/explorer/sessions/{story.session_id}/segments/0")
    assert response.status_code == 200
    page = response.text
    lost = critique_block(page, 0, 0)
    assert lost is not None and lost[0] == "unavailable"
    assert "The report could not be fetched: the IPFS node at " in lost[1]
    assert f"could not provide {missing}" in lost[1]
    sealed_elsewhere = critique_block(page, 0, 1)
    assert sealed_elsewhere is not None and sealed_elsewhere[0] == "unreadable"
    assert "The report could not be opened: " in sealed_elsewhere[1] and wrong_key in sealed_elsewhere[1]
    assert "authentication failed: sealed to another reply key" in sealed_elsewhere[1]
    assert critique_block(page, 0, 2) is None  # seat 2 published no report
    assert "Traceback" not in page and str(markupsafe.escape(CRITIQUE)) not in page


async def test_without_the_provider_view_no_critique_is_shown(site: str, story: Story) -> None:
    """A public explorer says where each report lies and that only the provider reads it."""
    assert story.report is not None
    segment_id, round_id, seat, _auditor, cid = story.report
    async with httpx.AsyncClient(base_url=site) as client:
        pages = [(await client.get(f"/explorer/sessions/{story.session_id}/segments/{g}")).text for g in (0, 1)]
    for page in pages:
        assert str(markupsafe.escape(CRITIQUE)) not in page and EXPECTED not in page
        assert 'id="critique-' not in page and "Provider view" not in page
        assert "only the provider can read it" in page
    assert f'title="{cid} (sealed to the provider)"' in pages[1]
    assert all(f'title="{c} (sealed to the provider)"' in pages[0] for c, _ in story.unreadable.values())


async def test_a_provider_view_of_another_wallet_shows_no_critique(
    story: Story, anvil: AnvilNode, artifacts: dict[str, Artifact], ipfs_api_url: str
) -> None:
    assert story.report is not None
    segment_id, _round_id, _seat, _auditor, cid = story.report
    other = story.world.deployer
    app = create_explorer_app(
        anvil.rpc_url, story.world.deployment, artifacts=artifacts, provider_view=ProviderView(other, ipfs_api_url)
    )
    async with serve(app) as url, httpx.AsyncClient(base_url=url) as client:
        page = (await client.get(f"/explorer/sessions/{story.session_id}/segments/{segment_id}")).text
    assert str(markupsafe.escape(CRITIQUE)) not in page and 'id="critique-' not in page
    assert f'title="{cid} (sealed to the provider)"' in page
    assert f'title="{story.world.provider.address}"' in page and f'title="{other.address}"' in page
    assert "only that provider can read it" in page


async def test_the_reader_keeps_opened_reports_and_retries_failed_fetches(
    story: Story, index: ChainIndex, ipfs_api_url: str
) -> None:
    """Opened and unopenable reports are kept per seat; a report that could not be fetched is fetched
    again on the next read (here with a closed client, whose error says so)."""
    session = (await index.session(story.session_id)).session
    segments = {g: await index.segment(story.session_id, g) for g in (0, 1)}
    kubo = KuboClient(ipfs_api_url)
    reader = ReportReader(
        story.world.provider,
        kubo,
        chain_id=story.world.chain.chain_id,
        audit_contract=story.world.protocol.audit.address,
    )
    try:
        first = {g: await reader.read(session, segments[g]) for g in (0, 1)}
        assert [(key, r.state) for key, r in sorted(first[0].items())] == [
            ((0, 0), ReadingState.UNAVAILABLE),
            ((0, 1), ReadingState.UNREADABLE),
        ]
        assert [r.state for r in first[1].values()] == [ReadingState.OPENED]
        await kubo.aclose()
        again = {g: await reader.read(session, segments[g]) for g in (0, 1)}
        assert again[1] == first[1] and again[0][(0, 1)] == first[0][(0, 1)]
        assert "is closed" in again[0][(0, 0)].note and "is closed" not in first[0][(0, 0)].note
    finally:
        await reader.aclose()
        await kubo.aclose()


async def test_a_slow_ipfs_node_does_not_hold_the_page(story: Story, index: ChainIndex) -> None:
    """A node that accepts the connection and never answers: the read returns after its wait with the
    seat still being fetched, and closing the reader stops the fetch."""

    async def hold(incoming: asyncio.StreamReader, outgoing: asyncio.StreamWriter) -> None:
        await incoming.read()  # the request, then nothing: wait until the client hangs up
        outgoing.close()

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    session = (await index.session(story.session_id)).session
    kubo = KuboClient(f"http://127.0.0.1:{port}", max_retries=0)
    reader = ReportReader(
        story.world.provider,
        kubo,
        chain_id=story.world.chain.chain_id,
        audit_contract=story.world.protocol.audit.address,
        wait_seconds=0.2,
    )
    try:
        readings = await reader.read(session, await index.segment(story.session_id, 1))
        (reading,) = readings.values()
        assert reading.state is ReadingState.PENDING
        assert "still being fetched" in reading.note and "reload the page" in reading.note
    finally:
        await reader.aclose()
        await kubo.aclose()
        server.close()
        await server.wait_closed()


# ---------------------------------------------------------------------------------------- history and amounts


async def test_an_auditors_history_replays_to_the_registrys_figures(story: Story, index: ChainIndex) -> None:
    registry = story.world.protocol.registry
    initial = (await story.world.protocol.params.params())["initialReputationWad"]
    for address in story.world.wallets:
        detail = await index.auditor(address)
        a, history = detail.auditor, detail.history
        info = await registry.auditor(address)
        first, last = history[0], history[-1]
        assert first.event == "registered" and first.at == a.registered and first.reputation_wad == initial
        assert history[1].event == "staked" and history[1].stake_units == story.world.initial_stake[address]
        assert (last.stake_units, last.unbonding_units, last.reputation_wad) == (
            info.stake,
            info.unbonding,
            info.reputation_wad,
        )
        assert last.seat_rewards_wei == a.rewards_claimed_wei + a.rewards_claimable_wei
        # The share streams with time: the last point is the registry's figure at its block.
        pending_then = await registry.pending_staker_reward(address, block=last.at.block_number)
        assert last.staker_share_wei == a.staker_claimed_wei + pending_then
        assert last.earnings_wei == a.earnings_wei - (a.staker_pending_wei - pending_then)
        assert a.staker_pending_wei >= pending_then  # it only grew since
        assert last.claimed_wei == a.rewards_claimed_wei + a.staker_claimed_wei
        times = [p.at.timestamp for p in history]
        assert times == sorted(times) and detail.head_time >= times[-1]
        assert [p.reputation_wad for p in history if p.event == "reputation"] == [
            c.reputation_wad for c in reversed(detail.reputation_history)
        ]
        money = [(p.seat_rewards_wei, p.staker_share_wei, p.claimed_wei) for p in history]
        assert all(b >= a for pair in zip(money, money[1:], strict=False) for a, b in zip(*pair, strict=True))

    # The governance slash took the slashed auditor's free stake: its last step down.
    slashed = (await index.auditor(story.governance_slashed)).history
    assert (
        slashed[-1].event == "forfeit" and slashed[-2].stake_units - slashed[-1].stake_units == GOVERNANCE_SLASH_UNITS
    )


async def test_the_auditor_page_charts_and_the_json_history(site: str, story: Story, index: ChainIndex) -> None:
    address = story.governance_slashed
    async with httpx.AsyncClient(base_url=site) as client:
        page = (await client.get(f"/explorer/auditors/{address}")).text
        data = (await client.get(f"/explorer/api/auditors/{address}")).json()
    detail = await index.auditor(address)
    assert [p["stake_units"] for p in data["history"]] == [str(p.stake_units) for p in detail.history]
    assert [p["earnings_wei"] for p in data["history"]] == [str(p.earnings_wei) for p in detail.history]
    assert data["head_time"] == detail.head_time
    for name in ("stake", "reputation", "earnings"):
        chart = svg_of(page, f"chart-{name}")
        assert [p for p in chart.iter(f"{SVG}path") if p.get("data-label")], name
        ticks = [t.text or "" for t in chart.iter(f"{SVG}text") if t.get("data-tick")]
        assert len(ticks) >= 2 and all(re.fullmatch(r"-?\d+(\.\d+)?", t) for t in ticks), ticks
    stake = [int(c.get("data-value") or 0) for c in svg_of(page, "chart-stake").iter(f"{SVG}circle")
             if c.get("data-series") == "0"]  # fmt: skip
    assert stake[0] == story.world.initial_stake[address] and stake[-1] == detail.auditor.stake_units
    earned = [c for c in svg_of(page, "chart-earnings").iter(f"{SVG}circle") if c.get("data-series") == "0"]
    assert earned[-1].get("data-value") == str(detail.auditor.earnings_wei)
    note = earned[-1].find(f"{SVG}title")
    assert note is not None and amount_text(detail.auditor.earnings_wei, "ETH") in (note.text or "")


async def test_every_amount_on_the_pages_is_a_chain_integer_written_exactly(
    site: str, story: Story, index: ChainIndex
) -> None:
    """Each "x ETH" / "x TRUST" on a page is one of the chain's integers written by amount_text:
    0.007199999999999994 ETH is the auditors' pool (per-seat reward rounded down to the wei, times
    the aligned seats), exact, not a float's rounding."""
    session = await index.session(story.session_id)
    split = session.fee_split
    assert split is not None
    session_wei = {story.fee_wei, split.auditors_wei, split.per_seat_wei, split.treasury_wei, split.stakers_wei}
    session_wei |= {split.insurance_wei} | {c.amount_wei for c in session.claims}
    async with httpx.AsyncClient(base_url=site) as client:
        page = html.unescape((await client.get(f"/explorer/sessions/{story.session_id}")).text)
        assert set(re.findall(r"(?<![\d.])(-?\d[\d.]*) ETH\b", page)) == {
            amount_text(v, "ETH").split()[0] for v in session_wei
        }
        assert "0.007199999999999994 ETH" in page and split.auditors_wei == 7_199_999_999_999_994
        for address in (story.unclaimed, story.staker_claimer, story.governance_slashed):
            detail = await index.auditor(address)
            a = detail.auditor
            wei = {a.rewards_claimed_wei, a.rewards_claimable_wei, a.staker_claimed_wei, a.staker_pending_wei}
            wei |= (
                {a.earnings_wei} | {c.amount_wei for c in detail.claims} | {c.amount_wei for c in detail.staker_claims}
            )
            wei |= {p.earnings_wei for p in detail.history} | {p.claimed_wei for p in detail.history}
            units = {a.stake_units, a.locked_units, a.unbonding_units, a.forfeited_units}
            units |= {f.amount_units for f in detail.forfeits} | {s.forfeited_units for s in detail.seats}
            units |= {p.stake_units for p in detail.history} | {p.unbonding_units for p in detail.history}
            page = html.unescape((await client.get(f"/explorer/auditors/{address}")).text)
            shown_eth = set(re.findall(r"(?<![\d.])(-?\d[\d.]*) ETH\b", page))
            shown_tokens = set(re.findall(r"(?<![\d.])(-?\d[\d.]*) TRUST\b", page))
            assert shown_eth and shown_eth <= {amount_text(v, "ETH").split()[0] for v in wei}, address
            assert shown_tokens and shown_tokens <= {amount_text(v, "TRUST").split()[0] for v in units}, address
