"""Comparison assignment (swarm document 4.2, eq. 7-8): the seed against hashlib, the stream's
uniformity and rejection sampling, the self-exclusion of 4.2.3, verification, and eq. 8 against
simulations of the draws."""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from itertools import permutations

import pytest
from scipy import stats

from trust.core.ranking.assignment import (
    Sha256Stream,
    assign_comparisons,
    assignment_seed,
    pair_missed_probability,
    pair_missed_probability_approx,
    pair_missed_probability_excluding_authors,
    verify_assignment,
)
from trust.errors import ParameterError, RankingError

STATE = hashlib.sha256(b"block 19000000").digest()
RESPONSES = [f"r{i}" for i in range(8)]
Z = 4.5  # two-sided z for the simulation intervals: a false alarm about once in 150,000 runs


def _state(trial: int) -> bytes:
    return hashlib.sha256(f"state {trial}".encode()).digest()


def test_eq7_seed_is_sha256_of_state_and_node_id() -> None:
    expected = hashlib.sha256(STATE + b"node-7").digest()
    assert assignment_seed(STATE, "node-7") == expected
    assert assignment_seed(STATE.hex(), "node-7") == expected
    assert assignment_seed("0x" + STATE.hex(), "node-7") == expected
    assert assignment_seed(STATE, "nöde") == hashlib.sha256(STATE + "nöde".encode()).digest()


def test_eq7_refuses_a_state_hash_of_the_wrong_size() -> None:
    with pytest.raises(ParameterError, match="31 bytes"):
        assignment_seed(STATE[:31], "n")
    with pytest.raises(ParameterError, match="hex digits"):
        assignment_seed("not hex", "n")
    with pytest.raises(ParameterError, match="node_id"):
        assignment_seed(STATE, "")


def test_stream_is_sha256_in_counter_mode() -> None:
    seed = assignment_seed(STATE, "n")
    stream = Sha256Stream(seed)
    words = [stream.word() for _ in range(8)]
    blocks = (
        hashlib.sha256(seed + (0).to_bytes(8, "big")).digest() + hashlib.sha256(seed + (1).to_bytes(8, "big")).digest()
    )
    assert words == [int.from_bytes(blocks[i : i + 8], "big") for i in range(0, 64, 8)]
    again = Sha256Stream(seed)
    assert [again.word() for _ in range(8)] == words


def test_below_is_uniform() -> None:
    stream = Sha256Stream(b"uniformity")
    counts = Counter(stream.below(6) for _ in range(60_000))
    assert set(counts) == set(range(6))
    assert stats.chisquare([counts[v] for v in range(6)]).pvalue > 1e-4


def test_below_rejects_the_incomplete_top_copy() -> None:
    # n = 3 * 2^62: a bare `w mod n` would give values below 2^62 half the time; uniform gives 1/3.
    n = 3 << 62
    stream = Sha256Stream(b"rejection")
    draws = [stream.below(n) for _ in range(4000)]
    assert all(0 <= value < n for value in draws)
    share = sum(value < (1 << 62) for value in draws) / len(draws)
    assert abs(share - 1 / 3) < Z * math.sqrt((1 / 3) * (2 / 3) / len(draws))
    assert Sha256Stream(b"x").below(1) == 0
    for bad in (0, -3, 1 << 65, 2.5):
        with pytest.raises(ParameterError):
            Sha256Stream(b"x").below(bad)  # type: ignore[arg-type]


def test_assignment_is_deterministic_and_order_free() -> None:
    first = assign_comparisons(STATE, "node-1", RESPONSES, own_response="r1")
    assert first == assign_comparisons(STATE, "node-1", list(reversed(RESPONSES)), own_response="r1")
    assert first.pairs != assign_comparisons(STATE, "node-2", RESPONSES, own_response="r1").pairs
    assert first.pairs != assign_comparisons(_state(1), "node-1", RESPONSES, own_response="r1").pairs
    assert len(first.pairs) == 3 * len(RESPONSES)
    assert first.seed == assignment_seed(STATE, "node-1")


def test_no_pair_holds_the_nodes_own_response() -> None:
    for trial in range(200):
        own = RESPONSES[trial % len(RESPONSES)]
        assignment = assign_comparisons(_state(trial), f"node-{trial}", RESPONSES, own_response=own)
        assert all(own not in pair and pair[0] != pair[1] for pair in assignment.pairs)


def test_pairs_are_uniform_over_the_ordered_pairs_of_the_others() -> None:
    responses = RESPONSES[:6]
    counts: Counter[tuple[str, str]] = Counter()
    for trial in range(600):
        counts.update(assign_comparisons(_state(trial), "node", responses, own_response="r0").pairs)
    cells = list(permutations(responses[1:], 2))  # 20 ordered pairs without r0
    assert set(counts) == set(cells)
    assert stats.chisquare([counts[cell] for cell in cells]).pvalue > 1e-4


def test_too_few_responses_or_bad_ids() -> None:
    with pytest.raises(RankingError, match="at least 2 responses other than its own"):
        assign_comparisons(STATE, "n", ["r0", "r1"], own_response="r0")
    with pytest.raises(RankingError, match="'r1'"):
        assign_comparisons(STATE, "n", ["r0", "r1", "r1"])
    with pytest.raises(RankingError, match="own_response 'zz'"):
        assign_comparisons(STATE, "n", RESPONSES, own_response="zz")


def test_verify_assignment() -> None:
    assigned = assign_comparisons(STATE, "node-3", RESPONSES, own_response="r3").pairs
    honest = verify_assignment(STATE, "node-3", RESPONSES, list(reversed(assigned)), own_response="r3")
    assert honest.ok and honest.assignment.pairs == assigned

    dropped = verify_assignment(STATE, "node-3", RESPONSES, assigned[1:], own_response="r3")
    assert not dropped.ok and dropped.missing == (assigned[0],) and dropped.unexpected == ()

    cheating = [*assigned[1:], ("r3", "r5")]
    check = verify_assignment(STATE, "node-3", RESPONSES, cheating, own_response="r3")
    assert check.self_comparisons == (("r3", "r5"),) and check.unexpected == (("r3", "r5"),)
    assert check.missing == (assigned[0],)

    a, b = assigned[0]
    swapped = verify_assignment(STATE, "node-3", RESPONSES, [(b, a), *assigned[1:]], own_response="r3")
    assert swapped.missing == ((a, b),) and swapped.unexpected == ((b, a),)


def test_eq8_by_hand() -> None:
    assert pair_missed_probability(6, 2) == pytest.approx((1 - 1 / 15) ** 36)
    assert pair_missed_probability_approx(6, 2) == pytest.approx(math.exp(-12 / 5))
    assert pair_missed_probability_excluding_authors(6, 2, 1) == pytest.approx((1 - 1 / 10) ** 18)
    assert pair_missed_probability_excluding_authors(6, 2, 2) == 1.0  # both drawers wrote the pair
    assert pair_missed_probability(2, 1) == 0.0  # the only pair is drawn every time
    # the approximation tightens as N grows with M ~ N
    gaps = [abs(pair_missed_probability(n, n // 4) - pair_missed_probability_approx(n, n // 4)) for n in (8, 40, 200)]
    assert gaps[0] > gaps[1] > gaps[2]
    with pytest.raises(ParameterError, match="authors_among_nodes"):
        pair_missed_probability_excluding_authors(6, 1, 2)


def _within(observed: int, trials: int, p: float) -> bool:
    return abs(observed / trials - p) <= Z * math.sqrt(p * (1 - p) / trials)


def test_eq8_matches_a_simulation_of_pure_rankers() -> None:
    """M = 2 nodes that authored no response, N = 6: eq. 8 as printed is exact."""
    responses, trials, missed = RESPONSES[:6], 3000, 0
    for trial in range(trials):
        drawn: set[frozenset[str]] = set()
        for node in ("n0", "n1"):
            drawn.update(frozenset(pair) for pair in assign_comparisons(_state(trial), node, responses).pairs)
        missed += frozenset(("r0", "r1")) not in drawn
    assert _within(missed, trials, pair_missed_probability(6, 2))


def test_eq8_with_authors_matches_a_simulation_and_the_printed_form_does_not() -> None:
    """N = 5 responses, M = 3 nodes who wrote r0, r1, r2, one comparison per response each."""
    responses, trials = RESPONSES[:5], 4000
    pairs = {0: frozenset(("r3", "r4")), 1: frozenset(("r0", "r3")), 2: frozenset(("r0", "r1"))}
    missed = Counter[int]()
    for trial in range(trials):
        drawn: set[frozenset[str]] = set()
        for index in range(3):
            assignment = assign_comparisons(_state(trial), f"n{index}", responses, f"r{index}", per_response=1)
            drawn.update(frozenset(pair) for pair in assignment.pairs)
        missed.update(authors for authors, pair in pairs.items() if pair not in drawn)
    for authors in pairs:
        expected = pair_missed_probability_excluding_authors(5, 3, authors, per_response=1)
        assert _within(missed[authors], trials, expected), (authors, missed[authors] / trials, expected)
    printed = pair_missed_probability(5, 3, per_response=1)  # 0.206, while a pair of two authors is missed 40%
    assert not _within(missed[2], trials, printed)
