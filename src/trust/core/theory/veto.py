"""The veto adversary (issue 16, M1): what blocking consensus costs under the escalation rule, exactly.

A *vetoer* is a member that votes against the evidence every time it is seated (against its own
honest verdict, so against what the honest seats vote). When its seats hold more than 1 - tau of a
committee's weight and less than tau, neither side reaches the quorum: the round is undecided.

- **Old rule (free veto).** An undecided round released every revealed seat: no reward, no slash, no
  reputation change. The vetoer blocked at no cost, round after round, and the segment ended
  Undetermined.
- **New rule (`Tally._withEarlierRounds`).** An undecided round that escalates (2k + 1 seats of the
  next tier) keeps its revealed seats locked until the segment's final verdict. When a later round
  decides, every earlier revealed seat is settled against it: aligned, reputation up (the fee pays
  only the deciding round's aligned seats, so no R); misaligned, reputation down and slashed P with
  probability p_slash(r) (eq. 3.9). If the segment ends Undetermined after `max_rounds`, the earlier
  seats are released. Silent seats forfeit P when their round ends, under both rules.

So a veto is still free only when the segment ends Undetermined: the vetoers must block every round,
in every tier the segment escalates through (their share of each later, larger committee drawn from
that tier's stake above 1 - tau), or the later round decides against them.

What is computed, exactly (no sampling):

- `TierPool.compositions(k)`: the committee a tier's registry draws, as `AuditorRegistry.drawCommittee`
  does: k draws with replacement, each landing on a member with probability proportional to its
  stake. Members are grouped in `StakeClass`es (same stake, same role), so the state is how many
  units (draws) each class won: a multinomial, computed exactly by a dynamic program over the counts.
  A member that wins u draws holds one seat weighing u units and votes once.
- `round_split`: one round's correct / wrong / blocked probabilities, with vetoers voting wrong and
  each honest member wrong with its tier's epsilon (all its units at once: of a class's n members
  E ~ Binomial(n, epsilon) err, and given E each of the class's units is wrong with probability
  E / n), compared as the contract compares: units * BPS >= tau * k (tau read as its decimal), the
  whole committee's k units as denominator. With `focal`, the split is that of one given *draw*
  won by a given member of the class, so `SeatOutlook` and its payoff are per unit: a seat of u
  units earns u R or forfeits u P, all its units settled alike.
- `VetoModel`: rounds 0 .. max_rounds - 1, round t drawn in tier min(first_tier + t, 3) with
  k_{t+1} = 2 k_t + 1 (`ParamsLib.escalatedSize`), each round's draw independent (fresh randomness).
  `segment()` is the final verdict's distribution; `seat(cls)` is what happens to a round-0 seat of
  a class (a `SeatOutlook`), from which `SeatOutlook.payoff` gives the expected payoff under either
  rule.
- `reputation_path` / `expected_loss`: reputation moves by the EMA r <- (1 - gamma) r + gamma 1[aligned]
  (eq. 3.8) at every settled seat, and p_slash is linear in r, so the expected reputation after n
  seats and the expected slash of each follow in closed form (each seat's outcome is independent of
  the reputation it meets). A persistent vetoer that is settled misaligned at every seat has the
  deterministic path r_n = (1 - gamma)^n r_0, and its p_slash rises towards p_max.

Payoffs are in the paper's units (R, P); the stake-proportional staker share, which every staker
earns whatever it votes, is left out, as in `trust bench byzantine`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

from trust.core.theory.validate import integer_at_least, positive, probability, tau_value
from trust.errors import ParameterError

__all__ = [
    "RULES",
    "RoundSplit",
    "SeatOutlook",
    "SlashTerms",
    "StakeClass",
    "TierPool",
    "VetoModel",
    "expected_loss",
    "reputation_path",
    "round_split",
]

RULES = ("escalation", "free")
"""`escalation`: the new rule (earlier rounds' revealed seats settled against the final verdict);
`free`: the old rule (an escalated round releases its revealed seats)."""

_TOP_TIER = 3
"""Tier 3 (human) escalates into itself (`Tally._escalate`)."""


def _fraction(value: float) -> Fraction:
    return Fraction(value).limit_denominator(10**9)


@dataclass(frozen=True, slots=True)
class StakeClass:
    """`count` members of one tier that each hold `stake` (any unit: only ratios matter) and play the
    same role: `vetoer` votes against the evidence on every seat, else the member is honest."""

    stake: float
    count: int
    vetoer: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "stake", positive("stake", self.stake))
        object.__setattr__(self, "count", integer_at_least("count", self.count, 1))


@dataclass(frozen=True, slots=True)
class TierPool:
    """One tier's eligible members, by class, and the error rate `epsilon` of its honest seats."""

    classes: tuple[StakeClass, ...]
    epsilon: float = 0.0

    def __post_init__(self) -> None:
        if not self.classes:
            raise ParameterError("a tier pool needs at least one stake class")
        object.__setattr__(self, "classes", tuple(self.classes))
        object.__setattr__(self, "epsilon", probability("epsilon", self.epsilon))

    @property
    def members(self) -> int:
        return sum(c.count for c in self.classes)

    @property
    def vetoer_stake_share(self) -> float:
        """The vetoers' share of the tier's stake."""
        total = sum(c.stake * c.count for c in self.classes)
        return sum(c.stake * c.count for c in self.classes if c.vetoer) / total

    def compositions(self, k: int) -> dict[tuple[int, ...], float]:
        """The probability of each committee composition (units won by each class) of k
        stake-weighted draws with replacement."""
        k = integer_at_least("k", k, 0)
        return _compositions(self.classes, k)


def _compositions(classes: Sequence[StakeClass], k: int) -> dict[tuple[int, ...], float]:
    """Multinomial(k, each class's share of the stake) over the classes' unit counts."""
    weights = [c.stake * c.count for c in classes]
    total = sum(weights)
    shares = [w / total for w in weights]
    states: dict[tuple[int, ...], float] = {(0,) * len(classes): 1.0}
    for _ in range(k):
        grown: dict[tuple[int, ...], float] = {}
        for taken, p in states.items():
            for i, share in enumerate(shares):
                if share > 0:
                    nxt = taken[:i] + (taken[i] + 1,) + taken[i + 1 :]
                    grown[nxt] = grown.get(nxt, 0.0) + p * share
        states = grown
    return states


@dataclass(frozen=True, slots=True)
class RoundSplit:
    """How one round ends: `correct` or `wrong` (a side reached tau of the committee's weight), or
    `blocked` (neither: the round escalates, or ends Undetermined in the last round). For a focal
    seat the two decided outcomes are also split by the seat's own vote: `aligned` + `misaligned` =
    `correct` + `wrong`."""

    correct: float
    wrong: float
    blocked: float
    aligned: float = 0.0
    misaligned: float = 0.0
    blocked_voting_wrong: float = 0.0
    """For a focal seat: the probability that the round is blocked and the seat voted wrong."""


def _honest_errors(members: int, units: int, epsilon: float) -> dict[int, float]:
    """The wrong units among `units` won by `members` honest members of equal stake, each wrong with
    probability epsilon for all its units: E ~ Binomial(members, epsilon) err, and given E each unit
    sits with an erring member with probability E / members."""
    if units == 0 or epsilon == 0:
        return {0: 1.0}
    dist: dict[int, float] = {}
    for erring in range(members + 1):
        p_e = math.comb(members, erring) * epsilon**erring * (1 - epsilon) ** (members - erring)
        if p_e == 0:
            continue
        q = erring / members
        for wrong in range(units + 1):
            p = p_e * math.comb(units, wrong) * q**wrong * (1 - q) ** (units - wrong)
            if p > 0:
                dist[wrong] = dist.get(wrong, 0.0) + p
    return dist


def _wrong_units_distribution(pool: TierPool, classes: Sequence[StakeClass], taken: Sequence[int]) -> dict[int, float]:
    """The wrong side's units for one composition: every vetoer unit, and each honest class's errors."""
    dist: dict[int, float] = {0: 1.0}
    for cls, d in zip(classes, taken, strict=True):
        if cls.vetoer:
            dist = {w + d: p for w, p in dist.items()}
            continue
        grown: dict[int, float] = {}
        for errors, pe in _honest_errors(cls.count, d, pool.epsilon).items():
            for w, p in dist.items():
                grown[w + errors] = grown.get(w + errors, 0.0) + p * pe
        dist = grown
    return dist


def round_split(pool: TierPool, k: int, tau: float, focal: int | None = None) -> RoundSplit:
    """One round of k draws from `pool`; with `focal` (a class index), conditioned on one given draw
    landing on one given member of that class, with `aligned` / `misaligned` for that member's seat
    (which holds that draw and whatever others it won)."""
    k = integer_at_least("k", k, 1)
    tau_f = _fraction(tau_value("tau", tau))
    if tau_f <= Fraction(1, 2):
        raise ParameterError(f"tau = {tau}: a split needs tau > 1/2 (the contracts refuse such a tau too)")
    if focal is not None and not 0 <= focal < len(pool.classes):
        raise ParameterError(f"focal = {focal}: the pool has classes 0 .. {len(pool.classes) - 1}")
    if focal is None:
        classes = list(pool.classes)
        draws = k
        focal_votes: list[tuple[bool, float]] = [(False, 1.0)]
    else:
        # The focal member as a class of its own, last (it votes once, for all its units); the draw
        # it is given is fixed, the other k - 1 fall as usual. Splitting a class keeps every share.
        own = pool.classes[focal]
        classes = [c for i, c in enumerate(pool.classes) if i != focal]
        if own.count > 1:
            classes.append(StakeClass(own.stake, own.count - 1, own.vetoer))
        classes.append(StakeClass(own.stake, 1, own.vetoer))
        draws = k - 1
        focal_votes = [(True, 1.0)] if own.vetoer else [(True, pool.epsilon), (False, 1.0 - pool.epsilon)]
    correct = wrong = aligned = misaligned = blocked_wrong = 0.0
    for taken, p_comp in _compositions(classes, draws).items():
        others, focal_units = (taken, 0) if focal is None else (taken[:-1], taken[-1] + 1)
        errors = _wrong_units_distribution(pool, classes[: len(others)], others)
        for focal_wrong, p_vote in focal_votes:
            if p_vote == 0:
                continue
            for wrong_units, p in errors.items():
                mass = p_comp * p_vote * p
                w = Fraction(wrong_units + (focal_units if focal_wrong else 0))
                if (k - w) >= tau_f * k:
                    correct += mass
                    aligned, misaligned = (aligned, misaligned + mass) if focal_wrong else (aligned + mass, misaligned)
                elif w >= tau_f * k:
                    wrong += mass
                    aligned, misaligned = (aligned + mass, misaligned) if focal_wrong else (aligned, misaligned + mass)
                elif focal_wrong:
                    blocked_wrong += mass
    if focal is None:
        aligned = misaligned = blocked_wrong = 0.0
    return RoundSplit(correct, wrong, max(0.0, 1.0 - correct - wrong), aligned, misaligned, blocked_wrong)


@dataclass(frozen=True, slots=True)
class SlashTerms:
    """The seat economics: reward R and penalty P (paper units), p_slash(r) = p_min + (p_max -
    p_min)(1 - r) (eq. 3.9) and the reputation EMA rate gamma (eq. 3.8)."""

    reward: float
    penalty: float
    p_min: float
    p_max: float
    gamma: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "reward", positive("R", self.reward))
        object.__setattr__(self, "penalty", positive("P", self.penalty))
        object.__setattr__(self, "p_min", probability("p_min", self.p_min))
        object.__setattr__(self, "p_max", probability("p_max", self.p_max))
        object.__setattr__(self, "gamma", probability("gamma", self.gamma))
        if self.p_min > self.p_max:
            raise ParameterError(f"p_min = {self.p_min} > p_max = {self.p_max}: need p_min <= p_max (eq. 3.9)")

    def p_slash(self, r: float) -> float:
        r = probability("r", r)
        return self.p_min + (self.p_max - self.p_min) * (1.0 - r)


@dataclass(frozen=True, slots=True)
class SeatOutlook:
    """What happens to one round-0 seat, as probabilities that add up to 1:

    - `paid`: its round decided its way (R, reputation up);
    - `misaligned_now`: its round decided against it (reputation down, slashed with p_slash);
    - `aligned_late` / `misaligned_late`: its round was blocked and escalated, and a later round
      decided with it / against it (under the new rule: reputation up without R / reputation down
      and the slash roll; under the old rule: released);
    - `released_late`: escalated, and the segment ended Undetermined (released under both rules);
    - `released_now`: blocked in the last round (released under both rules)."""

    paid: float
    misaligned_now: float
    aligned_late: float
    misaligned_late: float
    released_late: float
    released_now: float

    def settled_aligned(self, rule: str) -> float:
        """The probability that the seat's reputation goes up."""
        return self.paid + (self.aligned_late if _rule(rule) == "escalation" else 0.0)

    def settled_misaligned(self, rule: str) -> float:
        """The probability that the seat is settled misaligned: reputation down and the slash roll."""
        return self.misaligned_now + (self.misaligned_late if _rule(rule) == "escalation" else 0.0)

    @property
    def escalated(self) -> float:
        return self.aligned_late + self.misaligned_late + self.released_late

    def payoff(self, terms: SlashTerms, r: float, rule: str) -> float:
        """The seat's expected payoff at reputation r: R paid - P p_slash(r) settled misaligned."""
        return terms.reward * self.paid - terms.penalty * terms.p_slash(r) * self.settled_misaligned(rule)


def _rule(rule: str) -> str:
    if rule not in RULES:
        raise ParameterError(f"rule = {rule!r}: expected one of {', '.join(RULES)}")
    return rule


@dataclass(frozen=True)
class VetoModel:
    """A segment's rounds: round 0 draws `k` seats in `first_tier`, each escalation 2k + 1 seats in
    the next tier (tier 3 stays 3), at most `max_rounds` rounds; `pools[tier]` is each tier's pool."""

    pools: Mapping[int, TierPool]
    k: int
    tau: float
    max_rounds: int
    first_tier: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "k", integer_at_least("k", self.k, 1))
        object.__setattr__(self, "max_rounds", integer_at_least("max_rounds", self.max_rounds, 1))
        object.__setattr__(self, "first_tier", integer_at_least("first_tier", self.first_tier, 1))
        object.__setattr__(self, "tau", tau_value("tau", self.tau))
        if self.first_tier > _TOP_TIER:
            raise ParameterError(f"first_tier = {self.first_tier}: tiers are 1 .. {_TOP_TIER}")
        for t in range(self.max_rounds):
            tier = self.tier(t)
            if tier not in self.pools:
                raise ParameterError(f"round {t} draws in tier {tier}, which has no pool: give pools[{tier}]")

    def tier(self, round_index: int) -> int:
        return min(self.first_tier + round_index, _TOP_TIER)

    def size(self, round_index: int) -> int:
        size = self.k
        for _ in range(round_index):
            size = 2 * size + 1
        return size

    @cached_property
    def rounds(self) -> tuple[RoundSplit, ...]:
        """Each round's unconditional split (its committee drawn afresh)."""
        return tuple(round_split(self.pools[self.tier(t)], self.size(t), self.tau) for t in range(self.max_rounds))

    def after(self, round_index: int) -> tuple[float, float, float]:
        """(correct, wrong, undetermined): the segment's final verdict given that round
        `round_index` was blocked."""
        correct = wrong = 0.0
        reach = 1.0  # the probability that round t is held, given the blocked round
        for split in self.rounds[round_index + 1 :]:
            correct += reach * split.correct
            wrong += reach * split.wrong
            reach *= split.blocked
        return correct, wrong, reach

    def segment(self) -> tuple[float, float, float]:
        """(correct, wrong, undetermined): the segment's final verdict."""
        first = self.rounds[0]
        correct, wrong, undetermined = self.after(0)
        return (
            first.correct + first.blocked * correct,
            first.wrong + first.blocked * wrong,
            first.blocked * undetermined,
        )

    def seat(self, cls: int) -> SeatOutlook:
        """The outlook of a round-0 seat held by a member of class `cls` of the first tier's pool."""
        split = round_split(self.pools[self.first_tier], self.k, self.tau, focal=cls)
        blocked = split.blocked
        if self.max_rounds == 1:
            return SeatOutlook(split.aligned, split.misaligned, 0.0, 0.0, 0.0, blocked)
        correct, wrong, undetermined = self.after(0)
        # Later rounds are drawn afresh, independently of round 0: a blocked seat that voted wrong
        # is aligned with a later wrong verdict, one that voted right with a later correct one.
        voted_wrong = split.blocked_voting_wrong
        voted_right = blocked - voted_wrong
        return SeatOutlook(
            split.aligned,
            split.misaligned,
            voted_right * correct + voted_wrong * wrong,
            voted_right * wrong + voted_wrong * correct,
            blocked * undetermined,
            0.0,
        )


def reputation_path(r0: float, gamma: float, aligned: float, misaligned: float, seats: int) -> list[float]:
    """E[r] before each of `seats` settled seats and after the last (`seats + 1` values): each seat is
    settled aligned with probability `aligned`, misaligned with `misaligned`, else released (no
    change). The EMA is linear in r, so E[r_{n+1}] = (1 - gamma (a + m)) E[r_n] + gamma a."""
    r = probability("r0", r0)
    gamma = probability("gamma", gamma)
    aligned = probability("aligned", aligned)
    misaligned = probability("misaligned", misaligned)
    if aligned + misaligned > 1 + 1e-12:
        raise ParameterError(f"aligned + misaligned = {aligned + misaligned}: must be at most 1")
    seats = integer_at_least("seats", seats, 0)
    path = [r]
    for _ in range(seats):
        r = (1 - gamma * (aligned + misaligned)) * r + gamma * aligned
        path.append(r)
    return path


def expected_loss(terms: SlashTerms, r0: float, aligned: float, misaligned: float, seats: int) -> float:
    """The expected stake slashed over `seats` seats (paper units): sum of P misaligned p_slash(E[r_n]).
    Exact because p_slash is linear in r and a seat's outcome does not depend on the reputation."""
    path = reputation_path(r0, terms.gamma, aligned, misaligned, seats)
    return sum(terms.penalty * misaligned * terms.p_slash(min(max(r, 0.0), 1.0)) for r in path[:-1])
