"""The Byzantine benchmark's pure parts: its traces are decided exactly by the tier-1 checks (so an
honest seat is never wrong), its protocol, and its refusal of pools that do not fit the rhos. The run
on a local network is tests/services/sdk/test_byzantine.py."""

from __future__ import annotations

import math
import os
import random
import subprocess
import sys

import pytest

from trust.auditors.base import Outcome, request_for
from trust.auditors.tiers import computational_auditor
from trust.core.graphs.analysis import critical_path
from trust.core.graphs.hdag import Tier
from trust.core.graphs.validation import validate
from trust.core.theory.consensus import quorum, verdict_probabilities, verdict_probabilities_drawn
from trust.core.theory.veto import SlashTerms, StakeClass, TierPool, VetoModel
from trust.errors import ConfigError
from trust.lab.bench.byzantine import (
    COMMITTEE_SIZE,
    SEGMENTS_PER_TRACE,
    VETO_COMMITTEE_SIZE,
    AuditorBalance,
    ByzantineBench,
    RhoPhase,
    RoundRecord,
    SegmentRecord,
    TraceRecord,
    VetoAuditor,
    VetoBench,
    byzantine_protocol,
    byzantine_trace,
    run_byzantine_benchmark,
    run_veto_benchmark,
    veto_protocol,
)
from trust.services.sdk.result import Outcome as SegmentOutcome
from trust.settings import SandboxSettings


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
    """A unit's committee has three other draws, each adversarial with probability rho (with
    replacement: independent of the unit's own), j of them in all: an adversarial unit is paid 6
    when j >= 2 (three or four wrong votes decide) and slashed 8 when j = 0 (three honest votes
    decide); an honest unit is paid when j <= 1 and slashed when j >= 3."""
    rho = adversaries / 20
    pmf = [math.comb(3, j) * rho**j * (1 - rho) ** (3 - j) for j in range(4)]
    paid, slashed = (pmf[2] + pmf[3], pmf[0]) if adversary else (pmf[0] + pmf[1], pmf[3])
    return 6 * paid - 8 * p_slash * slashed


@pytest.mark.parametrize("adversaries", [2, 4, 6])
@pytest.mark.parametrize("adversary", [True, False])
@pytest.mark.parametrize("p_slash", [0.35, 0.5])
def test_a_unit_s_expected_payoff_counts_its_committee_s_other_draws(
    adversaries: int, adversary: bool, p_slash: float
) -> None:
    assert _phase(adversaries).unit_payoff(adversary, p_slash) == pytest.approx(
        _by_hand(adversaries, adversary, p_slash)
    )


def test_at_rho_0_3_an_adversarial_unit_is_expected_to_earn_little_either_way() -> None:
    # Why one adversary's payoff may come out positive while the group's is negative.
    phase = _phase(6)
    assert -0.1 < phase.unit_payoff(True, 0.5) < 0 < phase.unit_payoff(True, 0.35) < 0.4
    assert _phase(2).unit_payoff(True, 0.5) < -2 and _phase(4).unit_payoff(True, 0.35) < -0.5


def test_the_expected_composition_is_binomial_in_the_adversaries_share() -> None:
    # k = 4 draws with replacement at rho = 0.3: m adversarial units ~ Binomial(4, 0.3), eq. 3.4.
    phase = _phase(6, tuple(_segment(m) for m in (0, 1, 1, 2, 4)))
    expected = [5 * math.comb(4, m) * 0.3**m * 0.7 ** (4 - m) for m in range(5)]
    assert phase.expected_composition() == pytest.approx(expected)
    assert phase.composition() == [1, 2, 1, 0, 1]
    # A committee's composition implies its verdict: q = 3 of its four votes decide.
    assert [s.implied_verdict(phase.quorum) for s in phase.segments] == [
        "correct", "correct", "correct", "undetermined", "wrong",
    ]  # fmt: skip


def _segment(adversarial_units: int) -> SegmentRecord:
    """A committee of four seats of one unit each, the first `adversarial_units` adversarial."""
    members = tuple(f"0x{i:040x}" for i in range(COMMITTEE_SIZE))
    votes = tuple(i >= adversarial_units for i in range(COMMITTEE_SIZE))
    return SegmentRecord(
        1, 0, "op0", True, SegmentOutcome.PASSED, members, adversarial_units, (True,) * COMMITTEE_SIZE, votes
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


def test_the_expected_payoff_sums_each_role_s_units_over_the_phases() -> None:
    bench = _bench()
    phase = bench.phases[0]
    assert (phase.adversarial_units, phase.honest_units) == (3, 9)
    low, high = bench.expected_payoff(adversary=True)
    assert low == pytest.approx(3 * phase.unit_payoff(True, 0.5))
    assert high == pytest.approx(3 * phase.unit_payoff(True, 0.35))
    assert bench.summary()["adversaries"]["expected_seat_payoff_units"] == [round(low, 3), round(high, 3)]


# ---------------------------------------------------------------------------------------- the veto

_HONEST_A, _HONEST_B, _VETOER = ("0x" + "0a" * 20, "0x" + "0b" * 20, "0x" + "0c" * 20)
_TIER2 = tuple(f"0x{i + 0x20:040x}" for i in range(7))


def _escalated(outcome: SegmentOutcome, tier2_votes: tuple[bool, ...] = (True,) * 7) -> SegmentRecord:
    """A true claim whose round 0 (three seats of 1, 3 and 2 units, the vetoer's 3 voting fail) was
    blocked, then seven tier-2 seats voted `tier2_votes` and the chain ended the segment `outcome`."""
    later = RoundRecord(2, _TIER2, 0, (True,) * 7, tier2_votes, (1,) * 7)
    return SegmentRecord(
        7,
        3,
        "op3",
        True,
        outcome,
        (_HONEST_A, _VETOER, _HONEST_B),
        3,
        (True, True, True),
        (True, False, True),
        (1, 3, 2),
        1,
        (later,),
    )


def test_an_escalated_segment_pays_the_deciding_round_and_judges_round_0_against_it() -> None:
    segment = _escalated(SegmentOutcome.PASSED)
    assert segment.escalated and len(segment.rounds) == 2
    # Paid seats are those of round 1, not of round 0 (which the old reading of round 0 only reported).
    assert segment.aligned_seats() == [(1, i) for i in range(7)]
    settled = dict(segment.settlements()[:3])
    assert settled == {_HONEST_A: "aligned_late", _VETOER: "misaligned_late", _HONEST_B: "aligned_late"}
    assert [o for _, o in segment.settlements()[3:]] == ["paid"] * 7
    assert segment.implied_by_weights(6600, frozenset({_VETOER})) == (True, "correct")


def test_an_undetermined_segment_releases_every_revealed_seat_and_pays_none() -> None:
    segment = _escalated(SegmentOutcome.UNDETERMINED, (True, True, True, False, False, False, False))
    assert segment.aligned_seats() == []
    assert {o for _, o in segment.settlements()} == {"released"}
    assert segment.verdict == "undetermined"


def test_a_round_splits_by_its_seats_units_as_the_contract_compares() -> None:
    # Weights are units (the draws each member won): six draws here, the vetoer won three.
    blocked = RoundRecord(1, (_HONEST_A, _VETOER, _HONEST_B), 3, (True,) * 3, (True, False, True), (1, 3, 2))
    assert blocked.split(True, 6600, frozenset({_VETOER})) == "blocked"  # 3/6 on each side of 0.66
    assert blocked.units == 6
    decided = RoundRecord(1, (_HONEST_A, _VETOER, _HONEST_B), 1, (True,) * 3, (True, False, True), (2, 1, 2))
    assert decided.split(True, 6600, frozenset({_VETOER})) == "correct"  # 4/5 >= 0.66
    assert decided.split(True, 6600, frozenset({_HONEST_A, _HONEST_B})) == "wrong"


def _veto_auditor(
    address: str,
    tier: int,
    floors: float,
    settled: dict[str, int],
    r_after: float,
    slashed_seats: int,
    units_per_seat: int = 2,
) -> VetoAuditor:
    """An auditor whose seats each weighed `units_per_seat` draws; each slashed seat forfeited that
    many P."""
    seats = sum(settled.values())
    stake_change = -8 * units_per_seat * slashed_seats
    balance = AuditorBalance(
        address, address == _VETOER, (), seats, settled.get("paid", 0), 10**20, 10**20, 10**22,
        10**22 + stake_change * 10**18, 10**14, 10**18, seats * units_per_seat,
    )  # fmt: skip
    return VetoAuditor(balance, tier, floors, 0.5, r_after, settled, slashed_seats)


def _veto_bench(vetoer: VetoAuditor, segments: tuple[SegmentRecord, ...]) -> VetoBench:
    # The run's tier 1: honest stakes of 1 and 2 floors, four each, and a vetoer of 6 (a third).
    pools = {
        1: TierPool((StakeClass(1, 4), StakeClass(2, 4), StakeClass(6, 1, vetoer=True))),
        2: TierPool((StakeClass(1, 7),)),
    }
    classes = {(1, 1.0, False): 0, (1, 2.0, False): 1, (1, 6.0, True): 2, (2, 1.0, False): 0}
    terms = SlashTerms(6, 8, 0.35, 0.5, 0.1)
    return VetoBench(
        VetoModel(pools, VETO_COMMITTEE_SIZE, 0.66, 2), terms, classes, segments,
        (TraceRecord(7, True, True, True, 1.0),), (vetoer,), 0.99, 6600, 0.0, 0, 1.0, 1.0,
    )  # fmt: skip


def test_the_vetoer_s_reputation_slashes_and_payoff_follow_the_escalation_rule() -> None:
    seats = 10
    r_after = 0.5 * 0.9**seats  # misaligned at every seat: r <- (1 - gamma) r, once a seat
    vetoer = _veto_auditor(_VETOER, 1, 6.0, {"misaligned_late": seats}, r_after, 5)
    bench = _veto_bench(vetoer, (_escalated(SegmentOutcome.PASSED),))
    assert bench.vetoer_share == pytest.approx(6 / 18)
    assert bench.predicted_reputation(vetoer) == pytest.approx(r_after, abs=1e-15) and bench.reputations_agree
    by_hand = sum(0.35 + 0.15 * (1 - 0.5 * 0.9**i) for i in range(seats))
    assert bench.expected_slashes(vetoer) == pytest.approx(by_hand)
    # The escalation rule settles a blocked round's vetoer against the later verdict, so it is
    # expected to lose; the old rule released it, and its veto cost nothing.
    escalation, free = bench.expected_payoff(vetoer, "escalation"), bench.expected_payoff(vetoer, "free")
    assert escalation < 0 and escalation < free
    assert bench.vetoer_lost
    slashed = next(row for row in bench.comparisons() if row.quantity == "vetoer slashed")
    assert (slashed.observed.successes, slashed.observed.trials) == (5, seats)
    assert slashed.predicted == pytest.approx(by_hand / seats) and slashed.agrees
    assert bench.comparisons_count == len(bench.comparisons()) == 6 and bench.mismatched == 0


def test_a_reputation_off_the_exact_path_or_a_vetoer_never_slashed_fails_the_run() -> None:
    off = _veto_auditor(_VETOER, 1, 6.0, {"misaligned_late": 10}, 0.5 * 0.9**9, 5)
    assert not _veto_bench(off, ()).reputations_agree
    unslashed = _veto_auditor(_VETOER, 1, 6.0, {"misaligned_late": 40}, 0.5 * 0.9**40, 0)
    bench = _veto_bench(unslashed, (_escalated(SegmentOutcome.PASSED),))
    assert not bench.vetoer_lost and not bench.passed
    slashed = next(row for row in bench.comparisons() if row.quantity == "vetoer slashed")
    assert not slashed.agrees  # 0 of 40 slashed, each with p_slash >= 0.35


def test_the_veto_protocol_escalates_a_blocked_round_once() -> None:
    protocol = veto_protocol()
    assert (protocol.committee_size_tier1, protocol.max_rounds) == (VETO_COMMITTEE_SIZE, 2) == (5, 2)
    # At tau 0.66 three votes always give one side a quorum: a committee of three cannot be vetoed.
    assert quorum(3, 0.66) == 2 and quorum(5, 0.66) == 4


async def test_bad_veto_settings_are_refused_before_any_network_starts() -> None:
    with pytest.raises(ConfigError, match="tier 1 needs an honest auditor"):
        await run_veto_benchmark(honest_stakes=())
    with pytest.raises(ConfigError, match="segments = 0"):
        await run_veto_benchmark(segments=0)


@pytest.mark.parametrize(
    ("args", "message"),
    [(["--adversary", "lazy"], "expected one of wrong, veto"), (["--adversary", "veto", "--pool", "9"], "drop --pool")],
)
def test_the_cli_refuses_an_unknown_adversary_and_a_pool_for_the_veto(args: list[str], message: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "trust", "bench", "byzantine", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=dict(os.environ, COLUMNS="200"),
    )
    assert done.returncode == 2 and message in done.stderr, done.stderr
