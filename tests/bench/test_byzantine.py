"""The Byzantine benchmark's pure parts: its traces are decided exactly by the tier-1 checks (so an
honest seat is never wrong), its protocol, and its refusal of pools that do not fit the rhos. The run
on a local network is tests/sdk/test_byzantine.py."""

from __future__ import annotations

import math
import random

import pytest

from trust.auditors.base import Outcome, request_for
from trust.auditors.tiers import computational_auditor
from trust.bench.byzantine import (
    COMMITTEE_SIZE,
    SEGMENTS_PER_TRACE,
    AuditorBalance,
    ByzantineBench,
    RhoPhase,
    SegmentRecord,
    TraceRecord,
    byzantine_protocol,
    byzantine_trace,
    run_byzantine_benchmark,
)
from trust.errors import ConfigError
from trust.graphs.analysis import critical_path
from trust.graphs.hdag import Tier
from trust.graphs.validation import validate
from trust.sdk.result import Outcome as SegmentOutcome
from trust.settings import SandboxSettings
from trust.theory.consensus import quorum, verdict_probabilities, verdict_probabilities_drawn


async def test_every_claim_is_decided_by_the_tier_1_checks_as_its_truth_says() -> None:
    auditor = computational_auditor(SandboxSettings())
    rng = random.Random(7)
    seen = {True: 0, False: 0}
    for index in range(6):
        trace = byzantine_trace(index, rng)
        validate(trace.graph)
        assert len(trace.graph) == SEGMENTS_PER_TRACE
        assert trace.sound == (index % 2 == 0)
        # The answer is the last claim: on the critical path, and false in every flawed trace.
        answer = critical_path(trace.graph)[-1]
        assert answer == f"op{SEGMENTS_PER_TRACE - 1}" and trace.truth[answer] == trace.sound
        for node in trace.graph.nodes():
            assert node.tier is Tier.COMPUTATIONAL
            verdict = await auditor.audit(request_for(trace.graph, node.id))
            expected = Outcome.PASS if trace.truth[node.id] else Outcome.FAIL
            assert verdict.vote is expected, (node.content, verdict.critique)
            seen[trace.truth[node.id]] += 1
    assert seen[True] > 0 and seen[False] > 0


def test_the_same_seed_gives_the_same_traces() -> None:
    first = byzantine_trace(3, random.Random(1))
    again = byzantine_trace(3, random.Random(1))
    assert [n.content for n in first.graph.nodes()] == [n.content for n in again.graph.nodes()]
    assert first.truth == again.truth


def test_the_protocol_leaves_a_two_two_split_undetermined_in_one_round() -> None:
    protocol = byzantine_protocol()
    assert protocol.committee_size_tier1 == COMMITTEE_SIZE and protocol.max_rounds == 1
    q = quorum(COMMITTEE_SIZE, float(protocol.tau))
    assert q == 3 and COMMITTEE_SIZE - 2 < q  # two wrong votes leave neither side a quorum


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"pool": 15}, r"rho = 0.1 of a pool of 15 is 1.5 auditors"),
        ({"pool": 3}, "pool = 3: a committee of 4"),
        ({"rhos": ()}, "rhos is empty"),
        ({"segments_per_rho": 0}, "segments_per_rho = 0"),
        ({"family_level": 1.0}, "family_level = 1.0"),
    ],
)
async def test_bad_settings_are_refused_before_any_network_starts(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        await run_byzantine_benchmark(**kwargs)  # type: ignore[arg-type]


def test_a_trace_needs_a_claim() -> None:
    with pytest.raises(ConfigError, match="segments_per_trace = 1"):
        byzantine_trace(0, random.Random(0), segments=1)


# ---------------------------------------------------------------------------------------- money


def _phase(adversaries: int, segments: tuple[SegmentRecord, ...] = ()) -> RhoPhase:
    tau = 0.66
    predicted = verdict_probabilities_drawn(COMMITTEE_SIZE, 0.0, 20, adversaries, tau)
    iid = verdict_probabilities(COMMITTEE_SIZE, 0.0, adversaries / 20, tau)
    traces = (TraceRecord(1, True, True, True, 0.9),)
    return RhoPhase(adversaries / 20, 20, adversaries, COMMITTEE_SIZE, tau, predicted, iid, segments, traces, 1.0)


def _by_hand(adversaries: int, adversary: bool, p_slash: float) -> float:
    """An adversarial seat's three neighbours hold j of the other adversaries: it is paid 6 when
    j >= 2 (three or four wrong votes decide) and slashed 8 when j = 0 (three honest votes decide);
    an honest seat is paid when j <= 1 and slashed when j >= 3."""
    others = adversaries - 1 if adversary else adversaries
    pmf = [math.comb(others, j) * math.comb(19 - others, 3 - j) / math.comb(19, 3) for j in range(4)]
    paid, slashed = (pmf[2] + pmf[3], pmf[0]) if adversary else (pmf[0] + pmf[1], pmf[3])
    return 6 * paid - 8 * p_slash * slashed


@pytest.mark.parametrize("adversaries", [2, 4, 6])
@pytest.mark.parametrize("adversary", [True, False])
@pytest.mark.parametrize("p_slash", [0.35, 0.5])
def test_a_seat_s_expected_payoff_counts_its_committee_s_other_seats(
    adversaries: int, adversary: bool, p_slash: float
) -> None:
    assert _phase(adversaries).seat_payoff(adversary, p_slash) == pytest.approx(
        _by_hand(adversaries, adversary, p_slash)
    )


def test_at_rho_0_3_an_adversarial_seat_is_expected_to_lose_little() -> None:
    # Why one adversary's payoff may come out positive while the group's is negative.
    phase = _phase(6)
    assert -0.6 < phase.seat_payoff(True, 0.5) < phase.seat_payoff(True, 0.35) < 0
    assert _phase(2).seat_payoff(True, 0.35) < -2


def _segment(adversarial_seats: int) -> SegmentRecord:
    members = tuple(f"0x{i:040x}" for i in range(COMMITTEE_SIZE))
    votes = tuple(i >= adversarial_seats for i in range(COMMITTEE_SIZE))
    return SegmentRecord(
        1, 0, "op0", True, SegmentOutcome.PASSED, members, adversarial_seats, (True,) * COMMITTEE_SIZE, votes
    )


def _balance(adversary: bool, stake_change: int, eth_units: int) -> AuditorBalance:
    unit_wei, unit_token = 10**14, 10**18
    return AuditorBalance(
        "0x" + "ab" * 20,
        adversary,
        (0.2, 0.3),
        40,
        5,
        10**20,
        10**20 + eth_units * unit_wei,
        10**22,
        10**22 + stake_change * unit_token,
        unit_wei,
        unit_token,
    )


def _bench(*balances: AuditorBalance) -> ByzantineBench:
    phases = (_phase(6, (_segment(1), _segment(2), _segment(0))),)
    return ByzantineBench(phases, balances, 0.99, 0.0, 0, (0.35, 0.5), 1.0)


def test_the_adversaries_lose_when_each_is_slashed_and_their_sum_is_negative() -> None:
    one_won = _bench(_balance(True, -8, 20), _balance(True, -40, 6), _balance(False, 0, 300))
    assert one_won.adversaries_lost and one_won.honest_gained
    assert one_won.total_payoff(True) == pytest.approx(-22)
    never_slashed = _bench(_balance(True, 0, -20), _balance(True, -40, 6))
    assert not never_slashed.adversaries_lost
    won_in_all = _bench(_balance(True, -8, 20), _balance(True, -8, 6))
    assert not won_in_all.adversaries_lost
    assert not _bench(_balance(False, -8, 6)).honest_gained


def test_the_expected_payoff_sums_each_role_s_seats_over_the_phases() -> None:
    bench = _bench()
    phase = bench.phases[0]
    assert (phase.adversarial_seats, phase.honest_seats) == (3, 9)
    low, high = bench.expected_payoff(adversary=True)
    assert low == pytest.approx(3 * phase.seat_payoff(True, 0.5))
    assert high == pytest.approx(3 * phase.seat_payoff(True, 0.35))
    assert bench.summary()["adversaries"]["expected_seat_payoff_units"] == [round(low, 3), round(high, 3)]
