"""The veto adversary's exact theory (issue 16, M1), against hand counts and brute force."""

from __future__ import annotations

import itertools
import math

import pytest

from trust.core.theory.consensus import verdict_probabilities, verdict_probabilities_drawn
from trust.core.theory.veto import (
    SlashTerms,
    StakeClass,
    TierPool,
    VetoModel,
    expected_loss,
    reputation_path,
    round_split,
)
from trust.errors import ParameterError

TERMS = SlashTerms(reward=6, penalty=8, p_min=0.35, p_max=0.5, gamma=0.1)


@pytest.mark.parametrize("vetoers", [0, 1, 2, 3, 4])
def test_equal_stakes_give_the_binomial_split(vetoers: int) -> None:
    # With one stake, k draws with replacement give the vetoers Binomial(k, vetoers / pool) units:
    # the draw of `verdict_probabilities_drawn`, and eq. 3.4 itself.
    classes = [StakeClass(1, 10 - vetoers)] + ([StakeClass(1, vetoers, vetoer=True)] if vetoers else [])
    split = round_split(TierPool(tuple(classes)), 4, 0.66)
    drawn = verdict_probabilities_drawn(4, 0.0, 10, vetoers, 0.66)
    assert (split.correct, split.wrong, split.blocked) == pytest.approx(
        (drawn.correct, drawn.wrong, drawn.undetermined)
    )
    # By hand: q = 3 of 4, so m <= 1 vetoer units is correct, m >= 3 wrong, m = 2 blocked.
    rho = vetoers / 10
    pmf = [math.comb(4, m) * rho**m * (1 - rho) ** (4 - m) for m in range(5)]
    assert split.blocked == pytest.approx(pmf[2])


def test_a_stake_weighted_draw_with_replacement_by_hand() -> None:
    # Members a (stake 1), b (stake 1) and the vetoer v (stake 3); committees of two draws.
    pool = TierPool((StakeClass(1, 2), StakeClass(3, 1, vetoer=True)))
    compositions = pool.compositions(2)
    assert compositions == pytest.approx({(2, 0): 0.4**2, (1, 1): 2 * 0.4 * 0.6, (0, 2): 0.6**2})
    # q = 2 of 2: one vetoer unit blocks, two decide wrong, none lets the honest decide.
    split = round_split(pool, 2, 0.66)
    assert (split.correct, split.wrong, split.blocked) == pytest.approx((0.16, 0.36, 0.48))


def _by_hand(stakes: dict[str, int], k: int, vetoer: str, given: str | None = None) -> dict[int, float]:
    """The vetoer's units over every sequence of k draws (with replacement), optionally given that
    the first draw is `given`'s: {units: probability}."""
    total = sum(stakes.values())
    dist: dict[int, float] = {}
    for order in itertools.product(stakes, repeat=k):
        if given is not None and order[0] != given:
            continue
        p = math.prod(stakes[m] / total for m in (order[1:] if given is not None else order))
        units = order.count(vetoer)
        dist[units] = dist.get(units, 0.0) + p
    return dist


def test_a_vetoer_with_half_of_a_committee_blocks_it() -> None:
    # Stakes 1, 1, 2, 2 and a vetoer of 3 (a third of the stake), committees of four draws, q = 3.
    pool = TierPool((StakeClass(1, 2), StakeClass(2, 2), StakeClass(3, 1, vetoer=True)))
    stakes = {"a": 1, "b": 1, "c": 2, "d": 2, "v": 3}
    units = _by_hand(stakes, 4, "v")
    split = round_split(pool, 4, 0.66)
    assert split.blocked == pytest.approx(units[2]) == pytest.approx(24 / 81)
    assert split.wrong == pytest.approx(units[3] + units[4]) == pytest.approx(9 / 81)
    # Three units always decide at tau = 0.66 (2 of 3 >= 0.66): a committee of three cannot be vetoed.
    assert round_split(pool, 3, 0.66).blocked == pytest.approx(0.0, abs=1e-12)
    # One of the vetoer's draws, given: its other units are Binomial(3, 1/3).
    focal = round_split(pool, 4, 0.66, focal=2)
    given = _by_hand(stakes, 4, "v", given="v")
    assert (focal.blocked, focal.blocked_voting_wrong) == pytest.approx((given[2], given[2]))
    assert (focal.aligned, focal.misaligned) == pytest.approx((given[3] + given[4], given[1]))
    assert (focal.aligned, focal.misaligned, focal.blocked) == pytest.approx((7 / 27, 8 / 27, 12 / 27))


def test_an_honest_member_errs_once_for_all_its_units() -> None:
    # One honest member (never wrong by itself but with epsilon) and nothing else: every unit is its,
    # so the committee is wrong exactly when it errs, never blocked.
    split = round_split(TierPool((StakeClass(1, 1),), epsilon=0.3), 5, 0.66)
    assert (split.correct, split.wrong, split.blocked) == pytest.approx((0.7, 0.3, 0.0))
    # `verdict_probabilities_drawn` agrees; the i.i.d. model, where each unit errs on its own,
    # leaves some of these rounds undecided.
    assert verdict_probabilities_drawn(5, 0.3, 1, 0, 0.66).as_dict() == pytest.approx(
        {"correct": 0.7, "wrong": 0.3, "undetermined": 0.0}
    )
    assert verdict_probabilities(5, 0.3, 0.0, 0.66).undetermined > 0.1


def _model(max_rounds: int, tier2: TierPool | None = None) -> VetoModel:
    tier1 = TierPool((StakeClass(1, 2), StakeClass(2, 2), StakeClass(3, 1, vetoer=True)))
    tier2 = tier2 or TierPool((StakeClass(1, 7),))
    return VetoModel({1: tier1, 2: tier2}, k=4, tau=0.66, max_rounds=max_rounds)


def test_under_the_escalation_rule_a_persistent_vetoer_pays_when_a_later_round_decides() -> None:
    model = _model(2)
    assert model.size(1) == 9 and model.tier(1) == 2
    # The honest tier 2 decides every blocked segment right; only round 0's wrong verdicts stand.
    assert model.segment() == pytest.approx((8 / 9, 1 / 9, 0.0))
    seat = model.seat(2)
    assert (seat.paid, seat.misaligned_now, seat.misaligned_late) == pytest.approx((7 / 27, 8 / 27, 12 / 27))
    slash = 8 * 0.425  # P p_slash(0.5)
    assert seat.payoff(TERMS, 0.5, "escalation") == pytest.approx(6 * 7 / 27 - slash * 20 / 27)
    assert seat.payoff(TERMS, 0.5, "free") == pytest.approx(6 * 7 / 27 - slash * 8 / 27)  # blocked: released
    assert seat.payoff(TERMS, 0.5, "escalation") < 0 < seat.payoff(TERMS, 0.5, "free")
    honest = model.seat(0)
    assert honest.settled_misaligned("escalation") == pytest.approx(honest.misaligned_now)
    assert honest.paid + honest.misaligned_now + honest.aligned_late == pytest.approx(1.0)
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
    assert model.rounds[0].blocked == pytest.approx(24 / 81)
    assert model.seat(2).payoff(TERMS, 0.5, "escalation") == pytest.approx(-0.962963, abs=1e-6)
    assert model.seat(2).payoff(TERMS, 0.5, "free") == pytest.approx(0.548148, abs=1e-6)
    assert expected_loss(TERMS, 0.5, 0.0, 1.0, 20) == pytest.approx(74.7294599, abs=1e-6)
    # 3 of 11 stake units of tier 2: Binomial(9, 3/11) units of its committees of nine, 4 or 5 of
    # which block (q = 6); it blocks 19.5% of them and still pays.
    in_tier_2 = _model(2, TierPool((StakeClass(1, 8), StakeClass(3, 1, vetoer=True))))
    rho = 3 / 11
    assert in_tier_2.rounds[1].blocked == pytest.approx(
        sum(math.comb(9, m) * rho**m * (1 - rho) ** (9 - m) for m in (4, 5))
    )
    assert in_tier_2.seat(2).payoff(TERMS, 0.5, "escalation") == pytest.approx(-0.644632, abs=1e-6)


def test_a_veto_is_free_only_where_the_vetoers_block_every_round() -> None:
    one_round = _model(1).seat(2)
    # With one round a blocked segment ends Undetermined: the rules agree, the veto costs nothing.
    assert one_round.released_now == pytest.approx(12 / 27)
    assert one_round.payoff(TERMS, 0.0, "escalation") == pytest.approx(one_round.payoff(TERMS, 0.0, "free"))
    # Vetoers holding 3 of 7 equal stakes in tier 2 too block some of its committees of nine as
    # well: those segments end Undetermined and the vetoer's seat is released.
    blocked_too = TierPool((StakeClass(1, 4), StakeClass(1, 3, vetoer=True)))
    model = _model(2, blocked_too)
    assert model.segment()[2] == pytest.approx(model.rounds[0].blocked * model.rounds[1].blocked)
    assert model.seat(2).released_late == pytest.approx(12 / 27 * model.rounds[1].blocked)


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
        (lambda: round_split(TierPool((StakeClass(1, 2),)), 0, 0.66), "k = 0"),
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
