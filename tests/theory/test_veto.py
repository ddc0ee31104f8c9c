"""The veto adversary's exact theory (issue 16, M1), against hand counts and brute force."""

from __future__ import annotations

import itertools
import math

import pytest

from trust.errors import ParameterError
from trust.theory.consensus import verdict_probabilities_drawn
from trust.theory.veto import (
    SlashTerms,
    StakeClass,
    TierPool,
    VetoModel,
    expected_loss,
    reputation_path,
    round_split,
)

TERMS = SlashTerms(reward=6, penalty=8, p_min=0.35, p_max=0.5, gamma=0.1)


@pytest.mark.parametrize("vetoers", [0, 1, 2, 3, 4])
def test_equal_stakes_give_the_hypergeometric_split(vetoers: int) -> None:
    # With one stake the stake-weighted draw is the hypergeometric one of the Byzantine bench.
    classes = [StakeClass(1, 10 - vetoers)] + ([StakeClass(1, vetoers, vetoer=True)] if vetoers else [])
    split = round_split(TierPool(tuple(classes)), 4, 0.66)
    drawn = verdict_probabilities_drawn(4, 0.0, 10, vetoers, 0.66)
    assert (split.correct, split.wrong, split.blocked) == pytest.approx(
        (drawn.correct, drawn.wrong, drawn.undetermined)
    )
    # By hand: q = 3 of 4, so m <= 1 vetoer seats is correct, m >= 3 wrong, m = 2 blocked.
    pmf = [math.comb(vetoers, m) * math.comb(10 - vetoers, 4 - m) / math.comb(10, 4) for m in range(5)]
    assert split.blocked == pytest.approx(pmf[2])


def test_a_stake_weighted_draw_without_replacement_by_hand() -> None:
    # Members a (stake 1), b (stake 1) and the vetoer v (stake 3); committees of two.
    pool = TierPool((StakeClass(1, 2), StakeClass(3, 1, vetoer=True)))
    compositions = pool.compositions(2)
    # v is left out only when a and b are drawn: a then b or b then a, each 1/5 * 1/4.
    assert compositions[(2, 0)] == pytest.approx(2 * (1 / 5) * (1 / 4))
    assert compositions[(1, 1)] == pytest.approx(1 - 0.1)
    # With v seated the committee's weight is 4 and v holds 3/4 >= 0.66: the vetoer decides wrong.
    split = round_split(pool, 2, 0.66)
    assert (split.correct, split.wrong, split.blocked) == pytest.approx((0.1, 0.9, 0.0))


def test_a_vetoer_between_one_minus_tau_and_tau_blocks_every_committee_it_sits_on() -> None:
    # Stakes 1, 1, 2, 2 and a vetoer of 3, committees of three: the vetoer's share is 3/5 .. 3/7.
    pool = TierPool((StakeClass(1, 2), StakeClass(2, 2), StakeClass(3, 1, vetoer=True)))
    without = sum(p for taken, p in pool.compositions(3).items() if taken[2] == 0)
    split = round_split(pool, 3, 0.66)
    assert split.correct == pytest.approx(without) and split.wrong == 0
    assert split.blocked == pytest.approx(1 - without)
    # By hand: the vetoer is left out when the three of stakes 1, 1, 2, 2 are drawn in some order.
    by_hand = 0.0
    stakes = {"a": 1, "b": 1, "c": 2, "d": 2, "v": 3}
    for order in itertools.permutations(stakes, 3):
        p, left = 1.0, dict(stakes)
        for member in order:
            p *= left[member] / sum(left.values())
            del left[member]
        by_hand += p if "v" not in order else 0.0
    assert without == pytest.approx(by_hand)
    focal = round_split(pool, 3, 0.66, focal=2)
    assert (focal.blocked, focal.blocked_voting_wrong, focal.aligned) == pytest.approx((1.0, 1.0, 0.0))


def _model(max_rounds: int, tier2: TierPool | None = None) -> VetoModel:
    tier1 = TierPool((StakeClass(1, 2), StakeClass(2, 2), StakeClass(3, 1, vetoer=True)))
    tier2 = tier2 or TierPool((StakeClass(1, 7),))
    return VetoModel({1: tier1, 2: tier2}, k=3, tau=0.66, max_rounds=max_rounds)


def test_under_the_escalation_rule_a_persistent_vetoer_pays_when_a_later_round_decides() -> None:
    model = _model(2)
    assert model.size(1) == 7 and model.tier(1) == 2
    assert model.segment() == pytest.approx((1.0, 0.0, 0.0))  # the honest tier 2 always decides
    seat = model.seat(2)
    assert (seat.paid, seat.misaligned_late) == pytest.approx((0.0, 1.0))
    assert seat.payoff(TERMS, 0.5, "escalation") == pytest.approx(-8 * 0.425)
    assert seat.payoff(TERMS, 0.5, "free") == 0.0  # the old rule released it
    honest = model.seat(0)
    assert honest.settled_misaligned("escalation") == 0
    assert honest.paid + honest.aligned_late == pytest.approx(1.0)
    # The fee pays only the deciding round: the rule changes an honest seat's reputation, not its R.
    assert honest.payoff(TERMS, 0.5, "escalation") == pytest.approx(honest.payoff(TERMS, 0.5, "free"))
    assert honest.payoff(TERMS, 0.5, "free") > 0
    assert honest.settled_aligned("escalation") > honest.settled_aligned("free")


def test_a_seat_s_outcomes_add_up_with_honest_errors() -> None:
    noisy = TierPool((StakeClass(1, 3), StakeClass(2, 2), StakeClass(3, 1, vetoer=True)), epsilon=0.2)
    tier2 = TierPool((StakeClass(1, 6), StakeClass(2, 3)), epsilon=0.1)
    model = VetoModel({1: noisy, 2: tier2, 3: TierPool((StakeClass(1, 16),), epsilon=0.3)}, 3, 0.66, 3)
    for cls in range(3):
        seat = model.seat(cls)
        parts = (seat.paid, seat.misaligned_now, seat.aligned_late, seat.misaligned_late, seat.released_late)
        assert sum(parts) + seat.released_now == pytest.approx(1.0)
    assert sum(model.segment()) == pytest.approx(1.0)


def test_the_example_of_docs_theory_md() -> None:
    model = _model(2)
    assert model.rounds[0].blocked == pytest.approx(0.8142857, abs=1e-6)
    assert expected_loss(TERMS, 0.5, 0.0, 1.0, 20) == pytest.approx(74.7294599, abs=1e-6)
    # 3 of 11 stake units of tier 2: at most 3/9 of a committee of seven, below 1 - tau; it pays.
    in_tier_2 = _model(2, TierPool((StakeClass(1, 8), StakeClass(3, 1, vetoer=True))))
    assert in_tier_2.rounds[1].blocked == 0
    assert in_tier_2.seat(2).payoff(TERMS, 0.5, "escalation") == pytest.approx(-3.4)


def test_a_veto_is_free_only_where_the_vetoers_block_every_round() -> None:
    one_round = _model(1).seat(2)
    assert one_round.released_now == pytest.approx(1.0) and one_round.payoff(TERMS, 0.0, "escalation") == 0
    # Vetoers holding 3 of 7 stake units in tier 2 too: a committee of all seven (pool of seven) gives
    # them 3/7 of the weight, between 1 - tau and tau, so tier 2 is blocked as well: Undetermined.
    blocked_too = TierPool((StakeClass(1, 4), StakeClass(1, 3, vetoer=True)))
    model = _model(2, blocked_too)
    assert model.segment()[2] == pytest.approx(model.rounds[0].blocked)
    assert model.seat(2).released_late == pytest.approx(1.0)
    assert model.seat(2).payoff(TERMS, 0.0, "escalation") == 0


def test_reputation_path_and_expected_loss_agree_with_brute_force() -> None:
    aligned, misaligned, seats = 0.2, 0.5, 5
    mean_r = [0.0] * (seats + 1)
    loss = 0.0
    outcomes = (("a", aligned), ("m", misaligned), ("x", 1 - aligned - misaligned))
    for history in itertools.product(outcomes, repeat=seats):
        p = math.prod(q for _, q in history)
        r = 0.5
        for n, (kind, _) in enumerate(history):
            mean_r[n] += p * r
            if kind == "m":
                loss += p * 8 * TERMS.p_slash(r)
            if kind != "x":
                r = 0.9 * r + (0.1 if kind == "a" else 0.0)
        mean_r[seats] += p * r
    assert reputation_path(0.5, 0.1, aligned, misaligned, seats) == pytest.approx(mean_r)
    assert expected_loss(TERMS, 0.5, aligned, misaligned, seats) == pytest.approx(loss)
    # A vetoer settled misaligned on every seat: r_n = 0.9^n r_0.
    assert reputation_path(0.5, 0.1, 0.0, 1.0, 3) == pytest.approx([0.5, 0.45, 0.405, 0.3645])


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: StakeClass(0, 1), "stake = 0"),
        (lambda: StakeClass(1, 0), "count = 0"),
        (lambda: TierPool(()), "at least one stake class"),
        (lambda: TierPool((StakeClass(1, 2),)).compositions(3), "k = 3: the tier has only 2"),
        (lambda: round_split(TierPool((StakeClass(1, 3),)), 3, 0.5), "tau = 0.5"),
        (lambda: VetoModel({1: TierPool((StakeClass(1, 3),))}, 3, 0.66, 2), r"give pools\[2\]"),
        (lambda: SlashTerms(6, 8, 0.6, 0.5, 0.1), "p_min = 0.6 > p_max"),
        (lambda: reputation_path(0.5, 0.1, 0.6, 0.6, 1), "aligned \\+ misaligned"),
        (lambda: _model(2).seat(2).payoff(TERMS, 0.5, "old"), "rule = 'old'"),
    ],
)
def test_bad_parameters_are_named(build: object, match: str) -> None:
    with pytest.raises(ParameterError, match=match):
        build()  # type: ignore[operator]
