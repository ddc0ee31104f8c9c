"""`trust bench byzantine`: adversarial auditors on a local network, against the consensus toolkit.

For each adversarial fraction rho (0.1, 0.2, 0.3 by default) a provider audits traces of arithmetic
claims through the SDK while `round(rho * pool)` of the `pool` tier-1 auditors run `trust worker run
--adversary wrong`: they audit honestly, then vote the opposite. The run counts how each segment
ended against its ground truth (correct, wrong, undetermined), compares the rates with the exact
probabilities of `trust.core.theory.consensus`, does the same for the traces' final verdicts, and follows
every auditor's money (ETH rewards, staked tokens and slashing) from before the first audit to after
the last claim.

Why the network is set up as it is, so that what is measured is what the theory models:

- **Exact honest auditors.** Every segment is one arithmetic claim ("37 * 41 = 1517", right or wrong
  by construction, and a goal that states a true sum), which the tier-1 checks decide exactly: an
  honest seat is never wrong (epsilon = 0, `HONEST_EPSILON`), an adversarial one always is, so
  "correct" means the segment's verdict equals the claim's truth.
- **Committees of four, one round** (`byzantine_protocol`). With q = ceil(0.66 k), a committee of
  three draws always gives one side a quorum of two votes, so nothing could end undetermined; with
  k = 4, q = 3 and a 2-2 split of the votes is undetermined. `max_rounds = 1` makes "no quorum"
  final at once (Undetermined, counted as failed): escalation would go to tier 2 with 2k + 1 seats,
  which a tier-1 network cannot seat (it ends Undetermined too, via `CommitteeUnavailable`, only three
  randomness delays later), and the theory's "escalated past the last round" is exactly this event.
- **Equal stakes, never short of unlocked stake.** A committee is k stake-weighted draws *with
  replacement* (`AuditorRegistry.drawCommittee`, issue 16's L2): a member drawn u times holds one
  seat of u units (votes). With equal stakes each draw lands on an adversary with probability
  adversaries / pool = rho, the adversaries' share of the stake, so the adversarial units m are
  Binomial(k, rho): eq. 3.4 exactly, and `verdict_probabilities_drawn` (with epsilon = 0 the i.i.d.
  figure of Lemma 4.1, `verdict_probabilities`, printed beside it) is exact. Each stake backs
  `SEAT_CAPACITY` units so that no member is ever passed over for want of unlocked stake, and
  slashing moves stakes by well under 1% (the run reports the largest drift as `stake_drift`), so
  draw weights stay equal.
- **Every seat votes.** Windows are long (`COMMIT_WINDOW_SECONDS`) so that no seat on a busy machine
  misses its commit; a silent seat would count against both outcomes, which the model leaves out. The
  run counts silent seats and checks every verdict against what its committee's composition implies
  (m <= k - q adversarial units: correct, m >= q: wrong, else undetermined).
- **One network, the pool changed between phases.** Starting `pool - min(adversaries)` honest and
  `max(adversaries)` adversarial workers once, each phase marks exactly `pool - adversaries` honest and
  `adversaries` adversarial auditors available (`setAvailable`) and the rest unavailable, checks that
  the tier's eligible count is the pool, and audits. Each phase takes the auditors of each role that
  sat in the fewest phases so far, so that every adversary's seats are spread over two phases
  (rho = 0.1 and 0.3, or 0.2 and 0.3) rather than some sitting only at rho = 0.3, where an
  adversary wins a sixth of its seats and is released on half. Auditors keep their role for the whole
  run, so the money is followed once, before the first phase and after the last claim; the gas of the
  availability switches (the benchmark's doing, not the protocol's) is added back.

Statistics. Each rate is a binomial proportion with its Wilson interval (`montecarlo.proportion`); a
prediction agrees when it lies inside the interval. There are four comparisons per rho (three
segment rates and the rate of wrong trace verdicts), so each interval is taken at level
1 - (1 - family_level) / comparisons (Bonferroni): with `family_level = 0.99` the chance that a
correct model fails any comparison is at most 1%. A trace's verdict is wrong when the chain's verdict
differs from the one its claims' truth gives (`trace_pass_probability`: W >= beta sum(w) and every
critical segment passed, with each segment passing with probability `correct` when its claim is true
and `wrong` when it is false); the traces' probabilities differ, and the interval of a binomial with
their mean is conservative for their sum (a Poisson-binomial count varies less).

Money. An auditor's position is its wallet ETH plus its pending staker reward, and its staked tokens.
The payoff in the paper's units (section 4.7: R = 6, P = 8) converts both with the deployment's own
R and P (docs/protocol.md: R = 0.0006 ETH is the paper's 6 units, P = 8 TRUST its 8), so gas, rewards
and slashes add up as in eq. 4.15-4.17. A seat earns R and forfeits P once per unit (draw) it won.
The run checks that every honest auditor gained, and that every adversary was slashed and the
adversaries lost in all; it prints beside them what the units each role won were expected to earn
(`ByzantineBench.expected_payoff`). One adversary's payoff may come out positive: at rho = 0.3 a
committee of four decides wrong often enough, and slashes a misaligned seat only with probability
p_slash, that an adversarial unit is expected to earn between -0.08 (p_slash = 0.5) and +0.34
(p_slash = 0.35) units, far less than the spread of one auditor's fifty-odd units (see
`ByzantineBench.adversaries_lost`).

The veto (`--adversary veto`, `run_veto_benchmark`, issue 16 M1). One vetoer (`trust worker run
--adversary veto`) staking 6 floors among eight honest tier-1 auditors staking 1 or 2 (a third of the
stake), committees of five draws, `max_rounds = 2`. At tau = 0.66 a committee of three cannot be
vetoed (any split of three votes gives one side 2/3), one of five can: a round where the vetoer won 2
or 3 of the 5 votes is blocked (more than 1 - tau, less than tau), keeps its revealed seats locked and
escalates to 2k + 1 = 11 draws of tier 2's seven auditors; 4 or 5 votes decide against the truth, 0
or 1 leave the honest votes a quorum. Tier 2 must decide exactly for the exact theory to apply, and
the embedded model does not, so its workers audit with the tier-1 checks
(`WorkerSettings.tier2_checks`): this run measures the escalation rule's economics, not a model. The
exact model (`trust.core.theory.veto.VetoModel`, committees drawn with replacement) is built from the
stakes on chain; the run compares the escalated rate with `rounds[0].blocked`, the final verdicts with
`segment()` and the traces' with the trace rule, the vetoer's slashed seats with the sum of p_slash
along its reputation path (a Poisson-binomial count, its binomial Wilson interval conservative; a
slashed seat forfeits P per unit) and its reputation with the exact path when its seats all settled
one way (reputation moves once a seat), and prints each role's payoff beside the expected figure
under the escalation rule and under the old rule (the free veto: 0 for the vetoer). Every verdict and
escalation is also checked against what its committees' weights (units) imply
(`SegmentRecord.implied_by_weights`). Records read every round of a segment and settle earlier
rounds' seats as `Tally._withEarlierRounds` does (`SegmentRecord.settlements`).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from eth_account.signers.local import LocalAccount
from rich.console import Console
from rich.table import Table
from scipy import stats

from trust.adapters.chain.client import SentTransaction
from trust.adapters.chain.protocol import Protocol
from trust.adapters.chain.wallets import load_keystore
from trust.core.graphs.hdag import Difficulty, EdgeType, Hdag, HdagNode, Level, Tier
from trust.core.theory.consensus import (
    VerdictProbabilities,
    quorum,
    trace_pass_probability,
    verdict_probabilities,
    verdict_probabilities_drawn,
)
from trust.core.theory.montecarlo import Proportion, proportion
from trust.core.theory.params import DEFAULT_PARAMETERS
from trust.core.theory.veto import (
    SlashTerms,
    StakeClass,
    TierPool,
    VetoModel,
    expected_loss,
    reputation_path,
    round_split,
)
from trust.errors import ConfigError, DevnetError
from trust.lab.localnet import LOCAL_PROTOCOL, LocalNetwork, WorkerSpec
from trust.services.sdk.client import TrustClient, segment_profiles
from trust.services.sdk.config import AuditConfig
from trust.services.sdk.result import AuditResult, Outcome
from trust.settings import ProtocolSettings

__all__ = [
    "ADVERSARY",
    "RHOS",
    "AuditorBalance",
    "ByzantineBench",
    "Comparison",
    "LabelledTrace",
    "ADVERSARIES",
    "VETO",
    "RhoPhase",
    "RoundRecord",
    "SegmentRecord",
    "TraceRecord",
    "VetoAuditor",
    "VetoBench",
    "byzantine_protocol",
    "byzantine_trace",
    "render",
    "render_veto",
    "run_byzantine_benchmark",
    "run_veto_benchmark",
    "veto_protocol",
]

RHOS: tuple[float, ...] = (0.1, 0.2, 0.3)
"""The adversarial fractions of the issue's Byzantine run."""
POOL = 20
"""Tier-1 auditors eligible in each phase: 2, 4 and 6 adversaries at rho = 0.1, 0.2, 0.3."""
COMMITTEE_SIZE = 4
"""k of tier 1 (q = ceil(0.66 * 4) = 3, so a 2-2 split is undetermined); see the module docstring."""
SEGMENTS_PER_RHO = 200
SEGMENTS_PER_TRACE = 10
"""A goal and nine claims per trace (one session each)."""
SESSIONS_IN_PARALLEL = 8
FAMILY_LEVEL = 0.99
"""Confidence of all comparisons together (Bonferroni): a correct model fails one at most 1% of runs."""
ADVERSARY = "wrong"
"""The adversarial mode: audit, then vote the opposite. `random` and `copy` vote a coin flip without
reading, which the model can take as rho / 2 wrong seats but not as adversaries; `silent` never
reveals, which the model leaves out."""
HONEST_EPSILON = 0.0
"""An honest tier-1 seat's error rate on these claims: the arithmetic check is exact."""
FLAW_RATE = 0.3
"""In a flawed trace, the chance that a claim other than the answer is wrong (the answer always is)."""
SEAT_CAPACITY = 4096
"""Seats each stake backs at once (`LocalNetwork.seat_capacity`): 65,536 TRUST at P = 8, so that no
member is passed over and slashing (8 TRUST a time) leaves draw weights equal to well under 1%."""
COMMIT_WINDOW_SECONDS = 900
"""Long enough that no seat misses its commit on a loaded machine; an honest round never waits it
out (the window closes when every seat has committed)."""
REVEAL_WINDOW_SECONDS = 60
"""Workers reveal in the tick after the window closes; they claim rewards once it has passed."""
WORKER_POLL_SECONDS = 1.0
"""How often workers read the chain: each tick costs reads per open seat, and many segments are in
flight at once, so a slower tick raises throughput on two cores."""
AUDIT_BUDGET_MS = 1_800_000
"""Latency budget of one trace (`AuditConfig.max_latency_ms`): a stuck session fails the run."""
CLAIM_TIMEOUT_SECONDS = 300.0
"""How long to wait after the last audit for every aligned seat's reward to be claimed."""
_READ_CONCURRENCY = 16
_VERDICTS = ("correct", "wrong", "undetermined")
_BPS = 10_000
"""The contracts' basis-point scale (`tauBps`)."""
_TRACE_QUANTITY = "trace wrong"


def byzantine_protocol() -> ProtocolSettings:
    """The local protocol with committees of `COMMITTEE_SIZE`, one round and long windows."""
    return ProtocolSettings.model_validate(
        LOCAL_PROTOCOL.model_dump()
        | {
            "committee_size_tier1": COMMITTEE_SIZE,
            "max_rounds": 1,
            "commit_window_seconds": COMMIT_WINDOW_SECONDS,
            "reveal_window_seconds": REVEAL_WINDOW_SECONDS,
        }
    )


# ---------------------------------------------------------------------------------------- traces


@dataclass(frozen=True, slots=True)
class LabelledTrace:
    """An HDAG of claims and, per node id, whether its claim holds."""

    graph: Hdag
    truth: Mapping[str, bool]

    @property
    def sound(self) -> bool:
        return all(self.truth.values())


_OPERAND_MIN, _OPERAND_MAX = 12, 99
_ERROR_MIN, _ERROR_MAX = 1, 9


def byzantine_trace(index: int, rng: random.Random, segments: int = SEGMENTS_PER_TRACE) -> LabelledTrace:
    """A goal that states a true sum, then `segments - 1` products under it. Even `index`: every claim
    holds (a sound trace). Odd: the last product (the answer, on the critical path) is wrong, and each
    other product is wrong with probability `FLAW_RATE`. Every node is a tier-1 segment."""
    if segments < 2:
        raise ConfigError(f"segments_per_trace = {segments}: a trace needs its goal and at least one claim")
    graph = Hdag()
    a, b = rng.randint(_OPERAND_MIN, _OPERAND_MAX), rng.randint(_OPERAND_MIN, _OPERAND_MAX)
    goal = f"Worksheet {index}: check every product below; the header total is {a} + {b} = {a + b}."
    graph.add_node(_node("g0", Level.GOAL, goal))
    truth = {"g0": True}
    flawed = index % 2 == 1
    for i in range(1, segments):
        x, y = rng.randint(_OPERAND_MIN, _OPERAND_MAX), rng.randint(_OPERAND_MIN, _OPERAND_MAX)
        holds = not flawed or (i < segments - 1 and rng.random() >= FLAW_RATE)
        stated = x * y if holds else x * y + rng.choice((-1, 1)) * rng.randint(_ERROR_MIN, _ERROR_MAX)
        node_id = f"op{i}"
        graph.add_node(_node(node_id, Level.OPERATION, f"{x} * {y} = {stated}", f"{x} * {y} == {stated}"))
        graph.add_edge("g0", node_id, EdgeType.DECOMPOSES_TO)
        truth[node_id] = holds
    return LabelledTrace(graph, truth)


def _node(node_id: str, level: Level, content: str, expression: str | None = None) -> HdagNode:
    return HdagNode(node_id, level, content, Difficulty.EASY, "math", "low", Tier.COMPUTATIONAL, expression=expression)


# ---------------------------------------------------------------------------------------- records


@dataclass(frozen=True, slots=True)
class RoundRecord:
    """One round of a segment's committee: its tier, members (auditor addresses, one seat each), and
    each seat's reveal, vote and weight (its units: the draws its member won), with how many of the
    round's units adversaries won."""

    tier: int
    members: tuple[str, ...]
    adversarial_units: int
    revealed: tuple[bool, ...]
    votes: tuple[bool, ...]
    weights: tuple[int, ...] = ()

    @property
    def units(self) -> int:
        """The round's units (its committee size): the seats' weights, one a seat when not read."""
        return sum(self.weights) if self.weights else len(self.members)

    def split(self, truth: bool, tau_bps: int, adversaries: frozenset[str]) -> str:
        """How the round ends when every seat votes as its role says (honest: the truth, adversary:
        the opposite) and the contract compares weights (`Tally._count`: side * BPS >= tau * total,
        the whole committee's weight below): "correct", "wrong" or "blocked"."""
        total = sum(self.weights)
        wrong = sum(w for m, w in zip(self.members, self.weights, strict=True) if m in adversaries)
        if (total - wrong) * _BPS >= tau_bps * total:
            return "correct"
        return "wrong" if wrong * _BPS >= tau_bps * total else "blocked"


@dataclass(frozen=True, slots=True)
class SegmentRecord:
    """One audited segment: its claim's truth, how it ended on chain, and its round-0 committee
    (auditor addresses, one seat each) with each seat's reveal, vote and units; `later` holds the
    rounds it escalated to."""

    session_id: int
    segment_id: int
    node_id: str
    truth: bool
    outcome: Outcome
    members: tuple[str, ...]
    adversarial_units: int
    revealed: tuple[bool, ...]
    votes: tuple[bool, ...]
    weights: tuple[int, ...] = ()
    tier: int = 1
    later: tuple[RoundRecord, ...] = ()

    @property
    def verdict(self) -> str:
        if self.outcome is Outcome.UNDETERMINED:
            return "undetermined"
        return "correct" if (self.outcome is Outcome.PASSED) == self.truth else "wrong"

    @property
    def escalated(self) -> bool:
        """Round 0 reached no quorum and a later round was drawn."""
        return bool(self.later)

    @property
    def rounds(self) -> tuple[RoundRecord, ...]:
        first = RoundRecord(self.tier, self.members, self.adversarial_units, self.revealed, self.votes, self.weights)
        return (first, *self.later)

    @property
    def units(self) -> int:
        """Round 0's units: its committee size."""
        return self.rounds[0].units

    @property
    def silent_seats(self) -> int:
        return sum(1 for r in self.rounds for revealed in r.revealed if not revealed)

    def implied_verdict(self, q: int) -> str:
        """What the committee's composition gives when every seat votes as its role says: q of its
        k units (votes) decide."""
        k = self.units
        if k - self.adversarial_units >= q:
            return "correct"
        return "wrong" if self.adversarial_units >= q else "undetermined"

    def implied_by_weights(self, tau_bps: int, adversaries: frozenset[str]) -> tuple[bool, str]:
        """(round 0 blocked, final verdict) that the rounds' weights give when every seat votes as
        its role says: the first round that is not blocked decides, else undetermined."""
        for split in (r.split(self.truth, tau_bps, adversaries) for r in self.rounds):
            if split != "blocked":
                return self.escalated, split
        return self.escalated, "undetermined"

    def aligned_seats(self) -> list[tuple[int, int]]:
        """(round, seat index) of the seats paid R: those of the deciding (last) round that voted
        its outcome; none when the segment ended undetermined."""
        if self.outcome is Outcome.UNDETERMINED:
            return []
        passed = self.outcome is Outcome.PASSED
        last = len(self.later)
        final = self.rounds[-1]
        return [
            (last, i) for i, (r, v) in enumerate(zip(final.revealed, final.votes, strict=True)) if r and v == passed
        ]

    def settlements(self) -> list[tuple[str, str]]:
        """(auditor, outcome) of every seat, as the contract settles it: "paid" (aligned in the
        deciding round), "misaligned" (against a decided verdict in its own round), "aligned_late" /
        "misaligned_late" (a revealed seat of an escalated round, judged against the final verdict,
        `Tally._withEarlierRounds`), "released" (a revealed seat of a segment that ended
        undetermined) or "silent" (never revealed: forfeited when its round ended)."""
        decided = self.outcome is not Outcome.UNDETERMINED
        passed = self.outcome is Outcome.PASSED
        last = len(self.later)
        found = []
        for index, r in enumerate(self.rounds):
            for member, revealed, vote in zip(r.members, r.revealed, r.votes, strict=True):
                if not revealed:
                    found.append((member, "silent"))
                elif not decided:
                    found.append((member, "released"))
                elif index == last:
                    found.append((member, "paid" if vote == passed else "misaligned"))
                else:
                    found.append((member, "aligned_late" if vote == passed else "misaligned_late"))
        return found


@dataclass(frozen=True, slots=True)
class TraceRecord:
    """One trace's final verdict: the chain's, the one its claims' truth gives, and the theory's
    probability that the chain says VALID."""

    session_id: int
    sound: bool
    valid_on_chain: bool
    truly_valid: bool
    p_valid: float

    @property
    def wrong(self) -> bool:
        return self.valid_on_chain != self.truly_valid

    @property
    def p_wrong(self) -> float:
        return 1.0 - self.p_valid if self.truly_valid else self.p_valid


@dataclass(frozen=True, slots=True)
class Comparison:
    """One predicted probability against the observed rate's interval."""

    rho: float
    quantity: str
    predicted: float
    iid: float | None
    observed: Proportion

    @property
    def agrees(self) -> bool:
        return self.observed.contains(self.predicted)

    def to_json(self) -> dict[str, Any]:
        return {
            "rho": self.rho,
            "quantity": self.quantity,
            "predicted": round(self.predicted, 6),
            "iid": None if self.iid is None else round(self.iid, 6),
            "observed": self.observed.successes,
            "n": self.observed.trials,
            "rate": round(self.observed.rate, 6),
            "ci": [round(self.observed.low, 6), round(self.observed.high, 6)],
            "agrees": self.agrees,
        }


@dataclass(frozen=True, slots=True)
class RhoPhase:
    """One adversarial fraction: the pool, the predictions, and every segment and trace audited."""

    rho: float
    pool: int
    adversaries: int
    committee_size: int
    tau: float
    predicted: VerdictProbabilities
    iid: VerdictProbabilities
    segments: tuple[SegmentRecord, ...]
    traces: tuple[TraceRecord, ...]
    seconds: float

    @property
    def quorum(self) -> int:
        return quorum(self.committee_size, self.tau)

    def counts(self) -> dict[str, int]:
        found = {verdict: 0 for verdict in _VERDICTS}
        for segment in self.segments:
            found[segment.verdict] += 1
        return found

    def observed(self, level: float) -> dict[str, Proportion]:
        n = len(self.segments)
        return {verdict: proportion(count, n, level) for verdict, count in self.counts().items()}

    def agrees_with(self, prediction: VerdictProbabilities, level: float) -> bool:
        """Whether every segment rate's interval at `level` holds `prediction` (the test feeds it a
        prediction for the wrong rho to show that this can fail)."""
        observed = self.observed(level)
        return all(observed[v].contains(prediction.as_dict()[v]) for v in _VERDICTS)

    def comparisons(self, level: float) -> list[Comparison]:
        observed = self.observed(level)
        rows = [
            Comparison(self.rho, v, self.predicted.as_dict()[v], self.iid.as_dict()[v], observed[v]) for v in _VERDICTS
        ]
        wrong = sum(1 for t in self.traces if t.wrong)
        rows.append(
            Comparison(
                self.rho,
                _TRACE_QUANTITY,
                self.expected_wrong_traces / len(self.traces),
                None,
                proportion(wrong, len(self.traces), level),
            )
        )
        return rows

    @property
    def expected_wrong_traces(self) -> float:
        return sum(t.p_wrong for t in self.traces)

    def composition(self) -> list[int]:
        """How many segments had m = 0 .. k adversarial units."""
        found = [0] * (self.committee_size + 1)
        for segment in self.segments:
            found[segment.adversarial_units] += 1
        return found

    def expected_composition(self) -> list[float]:
        """Binomial(k, adversaries / pool): each of the k draws lands on an adversary with its share."""
        m = np.arange(self.committee_size + 1)
        pmf = stats.binom.pmf(m, self.committee_size, self.adversaries / self.pool)
        return [float(p) * len(self.segments) for p in pmf]

    @property
    def adversarial_units(self) -> int:
        return sum(s.adversarial_units for s in self.segments)

    @property
    def honest_units(self) -> int:
        return sum(s.units - s.adversarial_units for s in self.segments)

    def unit_payoff(self, adversary: bool, p_slash: float) -> float:
        """The expected payoff of one unit (a draw won) in the paper's units (eq. 4.15-4.17, before
        the staker share): R when its seat votes the decided outcome, -P with probability `p_slash`
        when it votes against it (the seat's one roll forfeits P per unit), nothing when the segment
        ends undetermined (the lock is released). The committee's other k - 1 draws are independent
        (with replacement), so the adversarial units j among them are Binomial(k - 1, rho); an
        adversarial unit is aligned when 1 + j >= q (the committee decides wrong) and misaligned when
        1 + j <= k - q, an honest one the other way round."""
        k, q = self.committee_size, self.quorum
        j = stats.binom(k - 1, self.adversaries / self.pool)
        if adversary:
            aligned, misaligned = float(j.sf(q - 2)), float(j.cdf(k - q - 1))
        else:
            aligned, misaligned = float(j.cdf(k - q)), float(j.sf(q - 1))
        return _PAPER_R * aligned - _PAPER_P * p_slash * misaligned

    @property
    def mismatched(self) -> int:
        """Segments whose verdict is not what their committee's composition implies."""
        return sum(1 for s in self.segments if s.verdict != s.implied_verdict(self.quorum))

    @property
    def silent_seats(self) -> int:
        return sum(s.silent_seats for s in self.segments)


@dataclass(frozen=True, slots=True)
class AuditorBalance:
    """One auditor's money before the first phase and after the last claim. ETH is the wallet plus
    the pending staker reward, with the gas of the benchmark's availability switches added back;
    stake is in token base units. `seats` and `aligned` count seats (a seat weighs the draws it won:
    `units` and `aligned_units` count those)."""

    address: str
    adversary: bool
    rhos: tuple[float, ...]
    seats: int
    aligned: int
    eth_before_wei: int
    eth_after_wei: int
    stake_before: int
    stake_after: int
    unit_wei: int
    unit_token: int
    units: int = 0
    """The committee draws it won over its seats (0 when not counted)."""

    @property
    def eth_change_wei(self) -> int:
        return self.eth_after_wei - self.eth_before_wei

    @property
    def stake_change(self) -> int:
        return self.stake_after - self.stake_before

    @property
    def slashes(self) -> int:
        """Forfeited units of P (a slashed seat forfeits P per unit it won)."""
        return max(0, -self.stake_change) // (self.unit_token * _PAPER_P)

    @property
    def payoff_units(self) -> float:
        """The change in the paper's units (section 4.7: R = 6, P = 8)."""
        return self.eth_change_wei / self.unit_wei + self.stake_change / self.unit_token

    def to_json(self) -> dict[str, Any]:
        return {
            "address": self.address,
            "role": "adversary" if self.adversary else "honest",
            "rhos": list(self.rhos),
            "seats": self.seats,
            "units": self.units,
            "aligned": self.aligned,
            "eth_change": self.eth_change_wei / 10**18,
            "stake_change_tokens": self.stake_change / 10**18,
            "slashes": self.slashes,
            "payoff_units": round(self.payoff_units, 3),
        }


_PAPER_R = int(DEFAULT_PARAMETERS["economics"]["R"])
_PAPER_P = int(DEFAULT_PARAMETERS["economics"]["P"])


@dataclass(frozen=True, slots=True)
class ByzantineBench:
    """The whole run: one `RhoPhase` per rho, every auditor's balance, and how long it took."""

    phases: tuple[RhoPhase, ...]
    balances: tuple[AuditorBalance, ...]
    family_level: float
    stake_drift: float
    """The largest relative change of any auditor's stake (draw weight) over the run."""
    unclaimed_seats: int
    """Aligned seats whose reward was still unclaimed when the run stopped waiting."""
    p_slash: tuple[float, float]
    """The deployment's (p_min, p_max): a misaligned seat is slashed with a probability between them."""
    seconds: float
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def comparisons_count(self) -> int:
        return sum(len(_VERDICTS) + 1 for _ in self.phases)

    @property
    def level(self) -> float:
        return _bonferroni_level(self.family_level, self.comparisons_count)

    def comparisons(self) -> list[Comparison]:
        return [row for phase in self.phases for row in phase.comparisons(self.level)]

    @property
    def agrees(self) -> bool:
        return all(row.agrees for row in self.comparisons())

    def expected_payoff(self, adversary: bool) -> tuple[float, float]:
        """The role's summed expected payoff from the units it won, in the paper's units, at
        p_slash = p_max and at p_min (a seat's p_slash lies between them, by its reputation), before
        the stake-proportional staker share, which every auditor earns on top."""
        bounds = (self.p_slash[1], self.p_slash[0])
        units = [(p.adversarial_units if adversary else p.honest_units, p) for p in self.phases]
        low, high = (sum(n * p.unit_payoff(adversary, bound) for n, p in units) for bound in bounds)
        return low, high

    def total_payoff(self, adversary: bool) -> float:
        return sum(b.payoff_units for b in self.balances if b.adversary == adversary)

    @property
    def adversaries_lost(self) -> bool:
        """Every adversary was slashed, and the adversaries lost in total.

        Not every adversary's payoff need be negative: at rho = 0.3 with k = 4 an adversarial unit
        is paid R on the 22% of its committees that decide wrong and slashed on the 34% that decide
        right only with probability p_slash, an expected -0.08 to +0.34 units a unit, so over an
        adversary's fifty-odd units the spread of its payoff (about 4 units a unit, 28 over fifty)
        dwarfs the mean, and the staker share comes on top. The group's expected loss over the run
        (`expected_payoff`) is several of its standard deviations below zero."""
        adversaries = [b for b in self.balances if b.adversary]
        return all(b.stake_change < 0 for b in adversaries) and self.total_payoff(True) < 0

    @property
    def honest_gained(self) -> bool:
        return all(b.payoff_units > 0 and b.eth_change_wei > 0 for b in self.balances if not b.adversary)

    def summary(self) -> dict[str, Any]:
        def role(adversary: bool) -> dict[str, Any]:
            group = [b for b in self.balances if b.adversary == adversary]
            payoffs = [b.payoff_units for b in group]
            return {
                "auditors": len(group),
                "seats": sum(b.seats for b in group),
                "mean_eth_change": sum(b.eth_change_wei for b in group) / max(len(group), 1) / 10**18,
                "mean_stake_change_tokens": sum(b.stake_change for b in group) / max(len(group), 1) / 10**18,
                "slashes": sum(b.slashes for b in group),
                "payoff_units": [round(min(payoffs), 3), round(max(payoffs), 3)] if payoffs else [],
                "total_payoff_units": round(sum(payoffs), 3),
                "units": sum(b.units for b in group),
                "expected_seat_payoff_units": [round(x, 3) for x in self.expected_payoff(adversary)],
            }

        return {
            "family_level": self.family_level,
            "level": round(self.level, 6),
            "agrees": self.agrees,
            "comparisons": [row.to_json() for row in self.comparisons()],
            "phases": [
                {
                    "rho": p.rho,
                    "pool": p.pool,
                    "adversaries": p.adversaries,
                    "k": p.committee_size,
                    "q": p.quorum,
                    "segments": len(p.segments),
                    "traces": len(p.traces),
                    "counts": p.counts(),
                    "composition": p.composition(),
                    "expected_composition": [round(x, 2) for x in p.expected_composition()],
                    "mismatched": p.mismatched,
                    "silent_seats": p.silent_seats,
                    "wrong_traces": sum(1 for t in p.traces if t.wrong),
                    "expected_wrong_traces": round(p.expected_wrong_traces, 3),
                    "seconds": round(p.seconds, 1),
                    "segments_per_s": round(len(p.segments) / p.seconds, 3) if p.seconds > 0 else None,
                }
                for p in self.phases
            ],
            "honest": role(False),
            "adversaries": role(True),
            "adversaries_lost": self.adversaries_lost,
            "honest_gained": self.honest_gained,
            "stake_drift": round(self.stake_drift, 6),
            "unclaimed_seats": self.unclaimed_seats,
            "seconds": round(self.seconds, 1),
            "settings": self.settings,
        }


# ---------------------------------------------------------------------------------------- the run


def _check_family_level(family_level: float) -> None:
    if not 0 < family_level < 1:
        raise ConfigError(f"family_level = {family_level}: must be in (0, 1)")


def _bonferroni_level(family_level: float, comparisons: int) -> float:
    """The level of each of `comparisons` intervals: 1 - (1 - family_level) / comparisons
    (Bonferroni), so that all of them hold together with probability `family_level`."""
    return 1.0 - (1.0 - family_level) / comparisons


def _adversary_counts(rhos: Sequence[float], pool: int) -> list[int]:
    if pool < COMMITTEE_SIZE:
        raise ConfigError(f"pool = {pool}: a committee of {COMMITTEE_SIZE} needs at least {COMMITTEE_SIZE} auditors")
    if not rhos:
        raise ConfigError("rhos is empty: name at least one adversarial fraction")
    counts = []
    for rho in rhos:
        adversaries = round(rho * pool)
        if not 0 <= rho <= 1 or not math.isclose(adversaries, rho * pool, abs_tol=1e-9):
            raise ConfigError(
                f"rho = {rho} of a pool of {pool} is {rho * pool:g} auditors: pick a pool that makes every "
                "rho a whole number of auditors (20 for 0.1, 0.2, 0.3)"
            )
        counts.append(adversaries)
    return counts


async def run_byzantine_benchmark(
    *,
    rhos: Sequence[float] = RHOS,
    pool: int = POOL,
    segments_per_rho: int = SEGMENTS_PER_RHO,
    segments_per_trace: int = SEGMENTS_PER_TRACE,
    sessions_in_parallel: int = SESSIONS_IN_PARALLEL,
    family_level: float = FAMILY_LEVEL,
    seed: int = 0,
    folder: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> ByzantineBench:
    """Runs the Byzantine benchmark (see the module docstring) on one fresh local network, in
    `folder` (kept, with the workers' logs) or a temporary one. `segments_per_rho` is rounded up to
    whole traces of `segments_per_trace` segments; `seed` fixes the claims."""
    counts = _adversary_counts(rhos, pool)
    if segments_per_rho < 1 or sessions_in_parallel < 1:
        raise ConfigError(
            f"segments_per_rho = {segments_per_rho}, sessions_in_parallel = {sessions_in_parallel}: both must be >= 1"
        )
    _check_family_level(family_level)
    traces_per_rho = math.ceil(segments_per_rho / segments_per_trace)
    say = progress or (lambda _message: None)
    honest_workers, adversarial_workers = pool - min(counts), max(counts)
    specs = [WorkerSpec(1)] * honest_workers + [WorkerSpec(1, ADVERSARY)] * adversarial_workers
    settings = {
        "rhos": list(rhos),
        "pool": pool,
        "k": COMMITTEE_SIZE,
        "max_rounds": 1,
        "adversary": ADVERSARY,
        "segments_per_trace": segments_per_trace,
        "traces_per_rho": traces_per_rho,
        "sessions_in_parallel": sessions_in_parallel,
        "seed": seed,
        "workers": len(specs),
    }
    protocol = byzantine_protocol()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="trust-byzantine-") as scratch:
        root = folder or Path(scratch)
        say(f"starting the local network: {honest_workers} honest and {adversarial_workers} adversarial workers")
        async with LocalNetwork(
            root,
            specs,
            protocol_settings=protocol,
            equal_stakes=True,
            seat_capacity=SEAT_CAPACITY,
            worker_poll_seconds=WORKER_POLL_SECONDS,
        ) as network:
            async with _Run.bound(network, say, sessions_in_parallel, segments_per_trace) as run:
                rng = random.Random(seed)
                phases = []
                for rho, adversaries in zip(rhos, counts, strict=True):
                    phases.append(await run.phase(rho, pool, adversaries, traces_per_rho, rng))
                unclaimed = await run.wait_for_claims()
                balances, drift = await run.balances()
    return ByzantineBench(
        phases=tuple(phases),
        balances=balances,
        family_level=family_level,
        stake_drift=drift,
        unclaimed_seats=unclaimed,
        p_slash=(float(protocol.p_min), float(protocol.p_max)),
        seconds=time.monotonic() - started,
        settings=settings,
    )


@dataclass
class _Run:
    network: LocalNetwork
    say: Callable[[str], None]
    sessions_in_parallel: int
    segments_per_trace: int
    protocol: Protocol = field(init=False)
    accounts: dict[str, LocalAccount] = field(init=False, default_factory=dict)
    roles: dict[str, bool] = field(init=False, default_factory=dict)
    before: dict[str, tuple[int, int]] = field(init=False, default_factory=dict)
    switch_gas_wei: dict[str, int] = field(init=False, default_factory=dict)
    sat_in: dict[str, list[float]] = field(init=False, default_factory=dict)
    segments: list[SegmentRecord] = field(init=False, default_factory=list)
    params: dict[str, int] = field(init=False, default_factory=dict)

    @classmethod
    @contextlib.asynccontextmanager
    async def bound(
        cls, network: LocalNetwork, say: Callable[[str], None], sessions_in_parallel: int, segments_per_trace: int
    ) -> AsyncIterator[_Run]:
        """A run on `network`: its protocol bound for as long as the run lasts, the auditors' wallets
        and roles, the parameters and every balance before the first audit read."""
        run = cls(network, say, sessions_in_parallel, segments_per_trace)
        async with Protocol.connect(network.settings, network.rpc_url, deployment=network.deployment) as protocol:
            run.protocol = protocol
            await run.prepare()
            yield run

    async def prepare(self) -> None:
        password = (self.network.folder / "keystore-password").read_text().strip()
        adversaries = self.network.adversaries()
        for auditor in self.network.auditors:
            self.accounts[auditor.address] = load_keystore(Path(auditor.keystore), password)
            self.roles[auditor.address] = auditor.address in adversaries
        self.params = await self.protocol.params.params()
        for address in self.accounts:
            self.before[address] = (await self._eth(address), (await self.protocol.registry.auditor(address)).stake)

    def _least_used(self, adversary: bool, count: int) -> list[str]:
        """`count` auditors of the role that sat in the fewest phases so far (earliest first on a tie):
        every auditor's seats spread over more than one phase where the counts allow."""
        role = [a for a, bad in self.roles.items() if bad == adversary]
        return sorted(role, key=lambda a: len(self.sat_in.get(a, [])))[:count]

    async def _eth(self, address: str) -> int:
        return await self.protocol.chain.balance(address) + await self.protocol.registry.pending_staker_reward(address)

    async def _switch(self, address: str, available: bool) -> None:
        info = await self.protocol.registry.auditor(address)
        if info.available == available:
            return
        # Each switch writes the tier's sortition tree, whose history costs an extra slot per node and
        # block. Gas estimated in the block of the previous switch prices it as an overwrite, and the
        # transaction, mined in the next block, runs out of gas; estimating in a fresh block avoids it.
        await self._next_block()
        sent = await self.protocol.registry.set_available(self.accounts[address], available)
        self.switch_gas_wei[address] = self.switch_gas_wei.get(address, 0) + _gas_cost(sent)

    async def _next_block(self) -> None:
        chain = self.protocol.chain
        start = await chain.block_number()
        while await chain.block_number() == start:
            await asyncio.sleep(self.network.block_seconds / 2)

    async def phase(self, rho: float, pool: int, adversaries: int, traces: int, rng: random.Random) -> RhoPhase:
        honest = self._least_used(False, pool - adversaries)
        bad = [a for a, is_bad in self.roles.items() if is_bad]
        chosen = set(honest) | set(self._least_used(True, adversaries))
        for address in self.accounts:
            await self._switch(address, address in chosen)
        eligible = await self.protocol.registry.eligible_count(1)
        if eligible != pool:
            raise DevnetError(f"rho = {rho}: {eligible} tier-1 auditors are eligible, expected the pool of {pool}")
        for address in chosen:
            self.sat_in.setdefault(address, []).append(rho)
        self.say(f"rho = {rho}: {pool - adversaries} honest and {adversaries} adversarial auditors, {traces} traces")

        labelled = [byzantine_trace(i, rng, self.segments_per_trace) for i in range(traces)]
        results, seconds = await self.audit(labelled, f"rho = {rho}")
        bad_set = set(bad)
        segments: list[SegmentRecord] = []
        for trace, result in zip(labelled, results, strict=True):
            segments += await self._segments(trace, result, bad_set)
        self.segments += segments
        tau = int(self.params["tauBps"]) / 10_000
        beta = int(self.params["betaBps"]) / 10_000
        predicted = verdict_probabilities_drawn(COMMITTEE_SIZE, HONEST_EPSILON, pool, adversaries, tau)
        iid = verdict_probabilities(COMMITTEE_SIZE, HONEST_EPSILON, rho, tau)
        trace_records = [_trace_record(t, r, predicted, beta) for t, r in zip(labelled, results, strict=True)]
        return RhoPhase(
            rho, pool, adversaries, COMMITTEE_SIZE, tau, predicted, iid, tuple(segments), tuple(trace_records), seconds
        )

    async def audit(self, labelled: Sequence[LabelledTrace], label: str) -> tuple[list[AuditResult], float]:
        """Audits the traces through the SDK, `sessions_in_parallel` at once; returns their results
        and the seconds it took."""
        client = TrustClient(
            self.network.rpc_url,
            self.network.ipfs_url,
            account=self.network.provider,
            settings=self.network.settings,
            journal_dir=self.network.folder / "journal",
        )
        gate = asyncio.Semaphore(self.sessions_in_parallel)
        done = 0

        async def audit(trace: LabelledTrace) -> AuditResult:
            nonlocal done
            async with gate:
                result = await client.audit_trace(trace.graph, _CONFIG)
            done += 1
            self.say(f"{label}: trace {done} of {len(labelled)} {result.verdict} (session {result.session_id})")
            return result

        started = time.monotonic()
        results = await asyncio.gather(*(audit(t) for t in labelled))
        return list(results), time.monotonic() - started

    async def _segments(self, trace: LabelledTrace, result: AuditResult, bad: set[str]) -> list[SegmentRecord]:
        gate = asyncio.Semaphore(_READ_CONCURRENCY)
        session = result.session_id

        first_tier = int(Tier.COMPUTATIONAL)
        k = int(self.params[f"committeeSizeTier{first_tier}"])

        async def one(node_id: str) -> SegmentRecord:
            node = result.nodes[node_id]
            rounds = []
            size, tier = k, first_tier
            async with gate:
                last_round = (await self.protocol.audit.segment(session, node.segment)).round
            # Every round the segment needed: round r + 1 makes 2k + 1 draws of the next tier
            # (`Tally._escalate`). A round of `size` draws seats at most `size` members (a member drawn
            # u times holds one seat weighing u); the seats past its last are empty (weight 0).
            for round_id in range(last_round + 1):
                async with gate:
                    read = [await self.protocol.audit.seat(session, node.segment, round_id, i) for i in range(size)]
                seats = [s for s in read if s.weight > 0]
                members = tuple(s.auditor for s in seats)
                rounds.append(
                    RoundRecord(
                        tier,
                        members,
                        sum(s.weight for s in seats if s.auditor in bad),
                        tuple(s.revealed for s in seats),
                        tuple(s.vote for s in seats),
                        tuple(s.weight for s in seats),
                    )
                )
                size, tier = 2 * size + 1, min(tier + 1, int(Tier.HUMAN))
            first = rounds[0]
            return SegmentRecord(
                session,
                node.segment,
                node_id,
                trace.truth[node_id],
                node.outcome,
                first.members,
                first.adversarial_units,
                first.revealed,
                first.votes,
                first.weights,
                first.tier,
                tuple(rounds[1:]),
            )

        return list(await asyncio.gather(*(one(node_id) for node_id in trace.truth)))

    async def wait_for_claims(self) -> int:
        """Waits until every aligned seat's reward is claimed by its worker; returns how many were
        still unclaimed after `CLAIM_TIMEOUT_SECONDS`."""
        pending = [(s.session_id, s.segment_id, r, i) for s in self.segments for r, i in s.aligned_seats()]
        self.say(f"waiting for the workers to claim {len(pending)} aligned seats")
        deadline = time.monotonic() + CLAIM_TIMEOUT_SECONDS
        gate = asyncio.Semaphore(_READ_CONCURRENCY)

        async def claimed(seat: tuple[int, int, int, int]) -> bool:
            async with gate:
                return (await self.protocol.audit.seat(*seat)).claimed

        while pending and time.monotonic() < deadline:
            flags = await asyncio.gather(*(claimed(seat) for seat in pending))
            pending = [seat for seat, done in zip(pending, flags, strict=True) if not done]
            if pending:
                await asyncio.sleep(WORKER_POLL_SECONDS * 4)
        return len(pending)

    async def balances(self) -> tuple[tuple[AuditorBalance, ...], float]:
        unit_wei = int(self.params["rewardPerSeatWei"]) // _PAPER_R
        unit_token = int(self.params["penaltyPerSeat"]) // _PAPER_P
        seats: dict[str, int] = {}
        units: dict[str, int] = {}
        aligned: dict[str, int] = {}
        for segment in self.segments:
            rounds = segment.rounds
            for r in rounds:
                for member, weight in zip(r.members, r.weights, strict=True):
                    seats[member] = seats.get(member, 0) + 1
                    units[member] = units.get(member, 0) + weight
            for round_id, i in segment.aligned_seats():
                member = rounds[round_id].members[i]
                aligned[member] = aligned.get(member, 0) + 1
        rows = []
        drift = 0.0
        for address, adversary in self.roles.items():
            eth_before, stake_before = self.before[address]
            eth_after = await self._eth(address) + self.switch_gas_wei.get(address, 0)
            stake_after = (await self.protocol.registry.auditor(address)).stake
            drift = max(drift, abs(stake_after - stake_before) / stake_before)
            rows.append(
                AuditorBalance(
                    address,
                    adversary,
                    tuple(self.sat_in.get(address, [])),
                    seats.get(address, 0),
                    aligned.get(address, 0),
                    eth_before,
                    eth_after,
                    stake_before,
                    stake_after,
                    unit_wei,
                    unit_token,
                    units.get(address, 0),
                )
            )
        return tuple(rows), drift


_CONFIG = AuditConfig(auditor_tiers=[1], report_grace_ms=0, max_latency_ms=AUDIT_BUDGET_MS)


def _gas_cost(sent: SentTransaction) -> int:
    receipt = sent.receipt
    return int(receipt["gasUsed"]) * int(receipt["effectiveGasPrice"])


def _trace_record(
    trace: LabelledTrace, result: AuditResult, predicted: VerdictProbabilities, beta: float
) -> TraceRecord:
    profiles = segment_profiles(trace.graph, _CONFIG)
    order = list(trace.truth)
    weights = [profiles[n].weight for n in order]
    critical = [profiles[n].critical for n in order]
    # A true claim passes when the round is correct; a false one when it is wrong.
    p_pass = [predicted.correct if trace.truth[n] else predicted.wrong for n in order]
    # The verdict the claims' truth gives: the same rule with every segment passing exactly when it holds.
    truth = [1.0 if trace.truth[n] else 0.0 for n in order]
    truly_valid = trace_pass_probability(truth, beta, weights=weights, critical=critical) == 1.0
    return TraceRecord(
        result.session_id,
        trace.sound,
        result.proof.valid_on_chain,
        truly_valid,
        trace_pass_probability(p_pass, beta, weights=weights, critical=critical),
    )


# ---------------------------------------------------------------------------------------- output


def _observation_cells(row: Comparison) -> tuple[str, str, str]:
    """A comparison's last three table cells: the observed rate, its interval, whether they agree."""
    observed = row.observed
    return (
        f"{observed.successes}/{observed.trials} = {observed.rate:.4f}",
        f"[{observed.low:.4f}, {observed.high:.4f}]",
        "yes" if row.agrees else "NO",
    )


def render(bench: ByzantineBench, console: Console) -> None:
    """The comparison table (rho, predicted, observed with its interval, agreement), the committees'
    compositions, and the money by role."""
    table = Table(
        title=(
            f"Byzantine run: k = {COMMITTEE_SIZE}, one round, adversaries vote '{ADVERSARY}'; "
            f"{bench.level:.4%} intervals (family {bench.family_level:.0%}, Bonferroni over "
            f"{bench.comparisons_count})"
        )
    )
    for column in ("rho", "adversaries", "quantity", "predicted", "i.i.d.", "observed", "interval", "agrees"):
        table.add_column(column, justify="left" if column == "quantity" else "right")
    for phase in bench.phases:
        for row in phase.comparisons(bench.level):
            table.add_row(
                f"{row.rho:g}",
                f"{phase.adversaries}/{phase.pool}",
                row.quantity,
                f"{row.predicted:.4f}",
                "-" if row.iid is None else f"{row.iid:.4f}",
                *_observation_cells(row),
            )
    console.print(table)

    drawn = Table(title="Committees: adversarial units m per segment, observed (expected, binomial)")
    drawn.add_column("rho", justify="right")
    for m in range(COMMITTEE_SIZE + 1):
        drawn.add_column(f"m = {m}", justify="right")
    drawn.add_column("verdict != composition", justify="right")
    drawn.add_column("silent seats", justify="right")
    drawn.add_column("segments/s", justify="right")
    for phase in bench.phases:
        cells = [f"{o} ({e:.1f})" for o, e in zip(phase.composition(), phase.expected_composition(), strict=True)]
        rate = f"{len(phase.segments) / phase.seconds:.2f}" if phase.seconds > 0 else "-"
        drawn.add_row(f"{phase.rho:g}", *cells, str(phase.mismatched), str(phase.silent_seats), rate)
    console.print(drawn)

    money = Table(title="Money, before the first audit to after the last claim (payoff in the paper's units)")
    columns = (
        "role",
        "auditors",
        "seats",
        "mean ETH change",
        "mean stake change (TRUST)",
        "slashes",
        "payoff each",
        "payoff in all",
        "expected from seats",
    )
    for column in columns:
        money.add_column(column, justify="left" if column == "role" else "right")
    summary = bench.summary()
    for key, verdict, said in (
        ("honest", bench.honest_gained, "each gained"),
        ("adversaries", bench.adversaries_lost, "each slashed, lost in all"),
    ):
        group = summary[key]
        low, high = group["payoff_units"] or [0.0, 0.0]
        at_p_max, at_p_min = group["expected_seat_payoff_units"]
        money.add_row(
            f"{key} ({said if verdict else 'NOT ' + said})",
            str(group["auditors"]),
            str(group["seats"]),
            f"{group['mean_eth_change']:+.6f}",
            f"{group['mean_stake_change_tokens']:+.2f}",
            str(group["slashes"]),
            f"{low:+.1f} .. {high:+.1f}",
            f"{group['total_payoff_units']:+.1f}",
            f"{at_p_max:+.1f} .. {at_p_min:+.1f}",
        )
    console.print(money)
    console.print(
        f"expected from seats: at p_slash = {bench.p_slash[1]:g} .. {bench.p_slash[0]:g}, before the staker share; "
        f"stake drift {bench.stake_drift:.3%}, unclaimed aligned seats {bench.unclaimed_seats}, "
        f"{bench.seconds:.0f} s in all"
    )


# ---------------------------------------------------------------------------------------- the veto

VETO = "veto"
ADVERSARIES = (ADVERSARY, VETO)
"""`--adversary`: `wrong` (the rho phases above) or `veto` (the persistent veto of issue 16, M1)."""
VETO_COMMITTEE_SIZE = 5
"""k of tier 1 in the veto run (draws): round 1 makes 2k + 1 = 11 draws of tier 2. Three could not be
vetoed at tau = 0.66."""
VETO_MAX_ROUNDS = 2
"""A blocked tier-1 round escalates once, to tier 2, which decides (it holds no vetoer)."""
VETO_HONEST_STAKES: tuple[int, ...] = (1, 1, 1, 1, 2, 2, 2, 2)
"""The honest tier-1 auditors' stakes, in multiples of the tier's floor."""
VETOER_STAKE = 6
"""The vetoer's stake in floors: a third of tier 1's (6 of 18), so each draw lands on it with
probability 1/3 and it blocks the rounds where it won 2 or 3 of the 5 votes (49% of them), decides 4%
against the truth (4 or 5 votes) and is out-voted in the rest."""
VETO_TIER2_AUDITORS = 7
"""Tier 2's auditors: any one backs an escalated round's 11 draws (draws are with replacement); seven
spread them over several seats."""
VETO_SEGMENTS = 200
_ESCALATED = "escalated"
_SLASHED = "vetoer slashed"


def veto_protocol() -> ProtocolSettings:
    """The local protocol with tier-1 committees of five draws, two rounds (tier 1, then 11 draws of
    tier 2) and the long windows of `byzantine_protocol`."""
    return ProtocolSettings.model_validate(
        LOCAL_PROTOCOL.model_dump()
        | {
            "committee_size_tier1": VETO_COMMITTEE_SIZE,
            "max_rounds": VETO_MAX_ROUNDS,
            "commit_window_seconds": COMMIT_WINDOW_SECONDS,
            "reveal_window_seconds": REVEAL_WINDOW_SECONDS,
        }
    )


@dataclass(frozen=True, slots=True)
class VetoAuditor:
    """One auditor of the veto run: its money (`balance`, with its seats and units), tier, stake in
    floors, reputation before the first audit and after the last settlement, how its seats were
    settled (`SegmentRecord.settlements`: paid, misaligned, aligned_late, misaligned_late, released,
    silent) and how many of its seats the slash roll took (`StakeForfeited` "vote against
    consensus": P per unit of the seat)."""

    balance: AuditorBalance
    tier: int
    stake_floors: float
    reputation_before: float
    reputation_after: float
    settled: Mapping[str, int]
    slashed_seats: int

    @property
    def vetoer(self) -> bool:
        return self.balance.adversary

    @property
    def role(self) -> str:
        if self.vetoer:
            return "vetoer"
        if self.tier == int(Tier.COMPUTATIONAL):
            return f"tier 1, {self.stake_floors:g}x"
        return f"tier {self.tier} (checks)"

    @property
    def settled_aligned(self) -> int:
        return self.settled.get("paid", 0) + self.settled.get("aligned_late", 0)

    @property
    def settled_misaligned(self) -> int:
        return self.settled.get("misaligned", 0) + self.settled.get("misaligned_late", 0)

    @property
    def reputation_exact(self) -> bool:
        """Every settled seat went the same way, so the EMA's path does not depend on their order:
        the reputation after is exactly `VetoBench.predicted_reputation`."""
        return self.settled_aligned == 0 or self.settled_misaligned == 0


def _paper_terms(params: Mapping[str, int]) -> SlashTerms:
    return SlashTerms(
        float(_PAPER_R),
        float(_PAPER_P),
        int(params["pMinBps"]) / _BPS,
        int(params["pMaxBps"]) / _BPS,
        int(params["gammaWad"]) / 10**18,
    )


def _pool(members: Sequence[tuple[float, bool]], epsilon: float) -> tuple[TierPool, dict[tuple[float, bool], int]]:
    """A tier's pool from its members' (stake, vetoer): one class per distinct pair, and its index."""
    counts: dict[tuple[float, bool], int] = {}
    for member in members:
        counts[member] = counts.get(member, 0) + 1
    keys = sorted(counts)
    pool = TierPool(tuple(StakeClass(stake, counts[(stake, vetoer)], vetoer) for stake, vetoer in keys), epsilon)
    return pool, {key: i for i, key in enumerate(keys)}


@dataclass(frozen=True)
class VetoBench:
    """The veto run: the exact model of its network (`VetoModel`, built from the stakes on chain),
    every segment and trace, and every auditor's money and reputation."""

    model: VetoModel
    terms: SlashTerms
    classes: Mapping[tuple[int, float, bool], int]
    """(tier, stake in floors, vetoer) -> the class index in that tier's pool."""
    segments: tuple[SegmentRecord, ...]
    traces: tuple[TraceRecord, ...]
    auditors: tuple[VetoAuditor, ...]
    family_level: float
    tau_bps: int
    stake_drift: float
    unclaimed_seats: int
    seconds: float
    audit_seconds: float
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def vetoers(self) -> list[VetoAuditor]:
        return [a for a in self.auditors if a.vetoer]

    @property
    def comparisons_count(self) -> int:
        return len(_VERDICTS) + 2 + (1 if self._misaligned_vetoer_seats else 0)

    @property
    def level(self) -> float:
        return _bonferroni_level(self.family_level, self.comparisons_count)

    @property
    def vetoer_share(self) -> float:
        return self.model.pools[self.model.first_tier].vetoer_stake_share

    def _class(self, auditor: VetoAuditor) -> int:
        return self.classes[(auditor.tier, auditor.stake_floors, auditor.vetoer)]

    def predicted_reputation(self, auditor: VetoAuditor) -> float:
        """E[r] after its settled seats, each aligned / misaligned at the rates it was settled with
        (exact when they all went one way, `VetoAuditor.reputation_exact`)."""
        n = auditor.settled_aligned + auditor.settled_misaligned
        if n == 0:
            return auditor.reputation_before
        aligned, misaligned = auditor.settled_aligned / n, auditor.settled_misaligned / n
        return reputation_path(auditor.reputation_before, self.terms.gamma, aligned, misaligned, n)[-1]

    def expected_slashes(self, auditor: VetoAuditor) -> float:
        """The expected number of its settled misaligned seats that were slashed: sum of p_slash(r)
        along its reputation path (eq. 3.9); exact for the vetoer, all of whose seats go one way."""
        n = auditor.settled_aligned + auditor.settled_misaligned
        if n == 0:
            return 0.0
        aligned, misaligned = auditor.settled_aligned / n, auditor.settled_misaligned / n
        return expected_loss(self.terms, auditor.reputation_before, aligned, misaligned, n) / self.terms.penalty

    @property
    def _misaligned_vetoer_seats(self) -> int:
        return sum(a.settled_misaligned for a in self.vetoers)

    def comparisons(self) -> list[Comparison]:
        level = self.level
        n = len(self.segments)
        share = self.vetoer_share
        rows = [
            Comparison(
                share,
                _ESCALATED,
                self.model.rounds[0].blocked,
                None,
                proportion(sum(1 for s in self.segments if s.escalated), n, level),
            )
        ]
        final = dict(zip(_VERDICTS, self.model.segment(), strict=True))
        for verdict in _VERDICTS:
            count = sum(1 for s in self.segments if s.verdict == verdict)
            rows.append(Comparison(share, verdict, final[verdict], None, proportion(count, n, level)))
        wrong = sum(1 for t in self.traces if t.wrong)
        expected = sum(t.p_wrong for t in self.traces) / len(self.traces)
        rows.append(Comparison(share, _TRACE_QUANTITY, expected, None, proportion(wrong, len(self.traces), level)))
        seats = self._misaligned_vetoer_seats
        if seats:
            # A Poisson-binomial count (each seat slashed with its own p_slash): the Wilson interval
            # of a binomial with their mean is conservative for it.
            slashes = sum(a.slashed_seats for a in self.vetoers)
            predicted = sum(self.expected_slashes(a) for a in self.vetoers) / seats
            rows.append(Comparison(share, _SLASHED, predicted, None, proportion(slashes, seats, level)))
        return rows

    @property
    def mismatched(self) -> int:
        """Segments whose escalation or verdict is not what their committees' weights imply."""
        bad = frozenset(a.balance.address for a in self.vetoers)
        return sum(1 for s in self.segments if s.implied_by_weights(self.tau_bps, bad) != (s.escalated, s.verdict))

    @property
    def silent_seats(self) -> int:
        return sum(s.silent_seats for s in self.segments)

    @property
    def reputations_agree(self) -> bool:
        """Every auditor whose seats all settled one way ended at exactly the predicted reputation
        (up to the contract's WAD rounding, one wei a step)."""
        return all(
            abs(a.reputation_after - self.predicted_reputation(a)) <= 1e-12 * (1 + a.settled_misaligned)
            for a in self.auditors
            if a.reputation_exact
        )

    @property
    def agrees(self) -> bool:
        return all(row.agrees for row in self.comparisons()) and self.reputations_agree and self.mismatched == 0

    def expected_payoff(self, auditor: VetoAuditor, rule: str) -> float:
        """Its expected payoff from the units it won, in the paper's units, before the staker share:
        a tier-1 auditor's round-0 units by `VetoModel.seat` (per unit: R when paid; P p_slash(r)
        when settled misaligned), a tier-2 unit by its round's split (`round_split`). The slash roll
        and the reputation step come once a seat, so the loss follows the reputation path over its
        seats, each forfeiting its mean units. `rule`: "escalation" (the contracts) or "free" (the
        old rule)."""
        tier = auditor.tier
        cls = self._class(auditor)
        if tier == self.model.first_tier:
            outlook = self.model.seat(cls)
            paid = outlook.paid
            aligned, misaligned = outlook.settled_aligned(rule), outlook.settled_misaligned(rule)
        else:
            split = round_split(self.model.pools[tier], self.model.size(1), self.model.tau, focal=cls)
            paid, aligned, misaligned = split.aligned, split.aligned, split.misaligned
        units, seats = auditor.balance.units, auditor.balance.seats
        if seats == 0:
            return 0.0
        loss = expected_loss(self.terms, auditor.reputation_before, aligned, misaligned, seats) * units / seats
        return self.terms.reward * paid * units - loss

    @property
    def vetoer_lost(self) -> bool:
        """Every vetoer was slashed and lost money, where the old rule would have cost it nothing."""
        return all(a.balance.stake_change < 0 and a.balance.payoff_units < 0 for a in self.vetoers)

    @property
    def honest_gained(self) -> bool:
        return all(a.balance.payoff_units > 0 and a.balance.eth_change_wei > 0 for a in self.auditors if not a.vetoer)

    @property
    def passed(self) -> bool:
        return self.agrees and self.vetoer_lost and self.honest_gained

    def roles(self) -> dict[str, list[VetoAuditor]]:
        found: dict[str, list[VetoAuditor]] = {}
        for auditor in sorted(self.auditors, key=lambda a: (not a.vetoer, a.tier, a.stake_floors)):
            found.setdefault(auditor.role, []).append(auditor)
        return found

    def summary(self) -> dict[str, Any]:
        def role(group: list[VetoAuditor]) -> dict[str, Any]:
            payoffs = [a.balance.payoff_units for a in group]
            settled: dict[str, int] = {}
            for a in group:
                for key, count in a.settled.items():
                    settled[key] = settled.get(key, 0) + count
            return {
                "auditors": len(group),
                "seats": sum(a.balance.seats for a in group),
                "settled": settled,
                "units": sum(a.balance.units for a in group),
                "slashed_seats": sum(a.slashed_seats for a in group),
                "forfeited_units": sum(a.balance.slashes for a in group),
                "expected_slashed_seats": round(sum(self.expected_slashes(a) for a in group), 3),
                "reputation": [[round(a.reputation_before, 6), round(a.reputation_after, 6)] for a in group],
                "predicted_reputation": [round(self.predicted_reputation(a), 6) for a in group],
                "payoff_units": [round(min(payoffs), 3), round(max(payoffs), 3)] if payoffs else [],
                "total_payoff_units": round(sum(payoffs), 3),
                "expected_payoff_units": round(sum(self.expected_payoff(a, "escalation") for a in group), 3),
                "expected_payoff_old_rule_units": round(sum(self.expected_payoff(a, "free") for a in group), 3),
            }

        escalated = sum(1 for s in self.segments if s.escalated)
        return {
            "adversary": VETO,
            "family_level": self.family_level,
            "level": round(self.level, 6),
            "agrees": self.agrees,
            "comparisons": [row.to_json() for row in self.comparisons()],
            "vetoer_stake_share": round(self.vetoer_share, 6),
            "segments": len(self.segments),
            "traces": len(self.traces),
            "escalated": escalated,
            "mismatched": self.mismatched,
            "silent_seats": self.silent_seats,
            "reputations_agree": self.reputations_agree,
            "roles": {name: role(group) for name, group in self.roles().items()},
            "vetoer_lost": self.vetoer_lost,
            "honest_gained": self.honest_gained,
            "stake_drift": round(self.stake_drift, 6),
            "unclaimed_seats": self.unclaimed_seats,
            "segments_per_s": round(len(self.segments) / self.audit_seconds, 3) if self.audit_seconds > 0 else None,
            "seconds": round(self.seconds, 1),
            "settings": self.settings,
        }


async def run_veto_benchmark(
    *,
    segments: int = VETO_SEGMENTS,
    honest_stakes: Sequence[int] = VETO_HONEST_STAKES,
    vetoer_stake: int = VETOER_STAKE,
    segments_per_trace: int = SEGMENTS_PER_TRACE,
    sessions_in_parallel: int = SESSIONS_IN_PARALLEL,
    family_level: float = FAMILY_LEVEL,
    seed: int = 0,
    folder: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> VetoBench:
    """The veto run (issue 16, M1) on one fresh local network: one vetoer (`trust worker run
    --adversary veto`) of `vetoer_stake` floors among honest tier-1 auditors of `honest_stakes`,
    committees of `VETO_COMMITTEE_SIZE` draws, two rounds, and `VETO_TIER2_AUDITORS` tier-2 auditors that audit with the
    tier-1 checks (`LocalNetwork.tier2_checks`): a benchmark of the escalation rule's economics, not
    of a model, so tier 2 must decide exactly (epsilon = 0 in both tiers)."""
    if segments < 1 or sessions_in_parallel < 1:
        raise ConfigError(f"segments = {segments}, sessions_in_parallel = {sessions_in_parallel}: both must be >= 1")
    _check_family_level(family_level)
    if not honest_stakes or any(m < 1 for m in (*honest_stakes, vetoer_stake)):
        raise ConfigError(
            f"honest_stakes = {tuple(honest_stakes)}, vetoer_stake = {vetoer_stake}: tier 1 needs an honest auditor "
            "beside the vetoer, each staking at least one floor"
        )
    traces = math.ceil(segments / segments_per_trace)
    say = progress or (lambda _message: None)
    specs = (
        [WorkerSpec(1, stake_multiple=m) for m in honest_stakes]
        + [WorkerSpec(1, VETO, vetoer_stake)]
        + [WorkerSpec(2, stake_multiple=1)] * VETO_TIER2_AUDITORS
    )
    settings = {
        "adversary": VETO,
        "honest_stakes": list(honest_stakes),
        "vetoer_stake": vetoer_stake,
        "k": VETO_COMMITTEE_SIZE,
        "max_rounds": VETO_MAX_ROUNDS,
        "tier2_auditors": VETO_TIER2_AUDITORS,
        "tier2_auditor": "the tier-1 checks",
        "segments_per_trace": segments_per_trace,
        "traces": traces,
        "sessions_in_parallel": sessions_in_parallel,
        "seed": seed,
        "workers": len(specs),
    }
    protocol = veto_protocol()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="trust-veto-") as scratch:
        root = folder or Path(scratch)
        say(
            f"starting the local network: {len(honest_stakes)} honest tier-1 workers, a vetoer and "
            f"{VETO_TIER2_AUDITORS} tier-2 workers"
        )
        async with LocalNetwork(
            root,
            specs,
            protocol_settings=protocol,
            seat_capacity=SEAT_CAPACITY,
            worker_poll_seconds=WORKER_POLL_SECONDS,
            tier2_checks=True,
            # The pool is the model's: no worker leaves the draw on its own (the windows are long).
            worker_env={"TRUST_WORKER__BACKPRESSURE": "false"},
        ) as network:
            async with _Run.bound(network, say, sessions_in_parallel, segments_per_trace) as run:
                return await _veto(run, specs, traces, family_level, seed, started, settings)


async def _veto(
    run: _Run,
    specs: Sequence[WorkerSpec],
    traces: int,
    family_level: float,
    seed: int,
    started: float,
    settings: dict[str, Any],
) -> VetoBench:
    registry = run.protocol.registry
    tiers = {a.address: spec.tier for a, spec in zip(run.network.auditors, specs, strict=True)}
    for tier in (1, 2):
        eligible = await registry.eligible_count(tier)
        expected = sum(1 for t in tiers.values() if t == tier)
        if eligible != expected:
            raise DevnetError(f"{eligible} tier-{tier} auditors are eligible, expected the {expected} started")
    infos = {address: await registry.auditor(address) for address in tiers}
    floors = {tier: min(i.stake for a, i in infos.items() if tiers[a] == tier) for tier in (1, 2)}
    stake_floors = {a: i.stake / floors[tiers[a]] for a, i in infos.items()}
    pools = {}
    classes: dict[tuple[int, float, bool], int] = {}
    for tier in (1, 2):
        members = [(stake_floors[a], run.roles[a]) for a in tiers if tiers[a] == tier]
        pools[tier], index = _pool(members, HONEST_EPSILON)
        classes |= {(tier, stake, vetoer): i for (stake, vetoer), i in index.items()}
    tau = int(run.params["tauBps"]) / _BPS
    model = VetoModel(pools, VETO_COMMITTEE_SIZE, tau, VETO_MAX_ROUNDS)
    terms = _paper_terms(run.params)

    rng = random.Random(seed)
    labelled = [byzantine_trace(i, rng, run.segments_per_trace) for i in range(traces)]
    run.say(f"veto: {traces} traces, the vetoer holds {pools[1].vetoer_stake_share:.1%} of tier 1")
    results, audit_seconds = await run.audit(labelled, "veto")
    bad = {a for a, is_bad in run.roles.items() if is_bad}
    for trace, result in zip(labelled, results, strict=True):
        run.segments += await run._segments(trace, result, bad)
    correct, wrong, undetermined = model.segment()
    predicted = VerdictProbabilities(correct, wrong, undetermined)
    beta = int(run.params["betaBps"]) / _BPS
    trace_records = [_trace_record(t, r, predicted, beta) for t, r in zip(labelled, results, strict=True)]
    unclaimed = await run.wait_for_claims()
    balances, drift = await run.balances()

    settled: dict[str, dict[str, int]] = {a: {} for a in tiers}
    for segment in run.segments:
        for member, outcome in segment.settlements():
            settled[member][outcome] = settled[member].get(outcome, 0) + 1
    # Slash rolls that took a seat (its P per unit), as the registry recorded them.
    slashed: dict[str, int] = {}
    for who, _amount, reason, _block in await registry.forfeits(0):
        if reason == "vote against consensus":
            slashed[who] = slashed.get(who, 0) + 1
    auditors = []
    for balance in balances:
        address = balance.address
        after = await registry.auditor(address)
        auditors.append(
            VetoAuditor(
                balance,
                tiers[address],
                stake_floors[address],
                infos[address].reputation,
                after.reputation,
                settled[address],
                slashed.get(address, 0),
            )
        )
    return VetoBench(
        model=model,
        terms=terms,
        classes=classes,
        segments=tuple(run.segments),
        traces=tuple(trace_records),
        auditors=tuple(auditors),
        family_level=family_level,
        tau_bps=int(run.params["tauBps"]),
        stake_drift=drift,
        unclaimed_seats=unclaimed,
        seconds=time.monotonic() - started,
        audit_seconds=audit_seconds,
        settings=settings,
    )


def render_veto(bench: VetoBench, console: Console) -> None:
    """The comparison table, the segments' rounds, and money and reputation by role, each beside the
    exact expected figure (`trust.core.theory.veto`)."""
    table = Table(
        title=(
            f"Veto run: k = {VETO_COMMITTEE_SIZE}, {VETO_MAX_ROUNDS} rounds, one vetoer with "
            f"{bench.vetoer_share:.1%} of tier 1; tier 2 audits with the tier-1 checks (a bench of the "
            f"economics, not of a model); {bench.level:.4%} intervals (family {bench.family_level:.0%}, "
            f"Bonferroni over {bench.comparisons_count})"
        )
    )
    for column in ("quantity", "predicted", "observed", "interval", "agrees"):
        table.add_column(column, justify="left" if column == "quantity" else "right")
    for row in bench.comparisons():
        table.add_row(
            row.quantity,
            f"{row.predicted:.4f}",
            *_observation_cells(row),
        )
    console.print(table)

    money = Table(title="Money by role, before the first audit to after the last claim (paper's units)")
    columns = (
        "role",
        "auditors",
        "seats (units)",
        "paid/late/misal.",
        "slashed seats (exp.)",
        "payoff",
        "expected",
        "old rule",
    )
    for column in columns:
        money.add_column(column, justify="left" if column == "role" else "right")
    for name, group in bench.roles().items():
        paid = sum(a.settled.get("paid", 0) for a in group)
        late = sum(a.settled.get("aligned_late", 0) for a in group)
        money.add_row(
            name,
            str(len(group)),
            f"{sum(a.balance.seats for a in group)} ({sum(a.balance.units for a in group)})",
            f"{paid}/{late}/{sum(a.settled_misaligned for a in group)}",
            f"{sum(a.slashed_seats for a in group)} ({sum(bench.expected_slashes(a) for a in group):.1f})",
            f"{sum(a.balance.payoff_units for a in group):+.1f}",
            f"{sum(bench.expected_payoff(a, 'escalation') for a in group):+.1f}",
            f"{sum(bench.expected_payoff(a, 'free') for a in group):+.1f}",
        )
    console.print(money)
    for vetoer in bench.vetoers:
        console.print(
            f"vetoer {vetoer.balance.address}: reputation {vetoer.reputation_before:.4f} -> "
            f"{vetoer.reputation_after:.6f} (predicted {bench.predicted_reputation(vetoer):.6f}), "
            f"{vetoer.slashed_seats} slashed of {vetoer.settled_misaligned} misaligned seats "
            f"(expected {bench.expected_slashes(vetoer):.2f}), payoff {vetoer.balance.payoff_units:+.1f}"
        )
    escalated = sum(1 for s in bench.segments if s.escalated)
    console.print(
        f"{escalated} of {len(bench.segments)} segments escalated (expected "
        f"{bench.model.rounds[0].blocked * len(bench.segments):.1f}); verdicts != committees' weights: "
        f"{bench.mismatched}; silent seats {bench.silent_seats}; reputations as predicted: "
        f"{'yes' if bench.reputations_agree else 'NO'}; vetoer "
        f"{'lost' if bench.vetoer_lost else 'did NOT lose'} (the old rule: 0); payoff counts gas and the staker "
        f"share, expected and old rule do not; stake drift {bench.stake_drift:.3%}, "
        f"unclaimed paid seats {bench.unclaimed_seats}, "
        f"{bench.seconds:.0f} s in all"
    )
