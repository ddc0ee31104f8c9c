"""Judge credibility, the seeded draws, label randomization, eligibility and selection (judge ranking
document, sections 2 and 3), each rule on small hand-made matches."""

from __future__ import annotations

import hashlib
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trust.core.ranking import credibility as cr
from trust.core.ranking.anomalies import PastVote
from trust.core.ranking.credibility import (
    ArenaMatch,
    CredibilityBook,
    JudgedMatch,
    JudgeProfile,
    JudgeState,
    MatchKind,
    Reason,
    Vote,
    choice_of,
    consensus,
    eligible,
    ineligibility,
    label_of,
    schedule,
    select_judges,
    shown_order,
    shown_swapped,
)
from trust.errors import ParameterError, RankingError

SAMPLE = 100_000


def _match(match_id: str, *choices: str, audit: str | None = None, honeypot: str | None = None) -> JudgedMatch:
    votes = tuple(Vote(f"j{i + 1}", choice) for i, choice in enumerate(choices))  # type: ignore[arg-type]
    return JudgedMatch(match_id, "x", "y", votes, audit=audit, honeypot=honeypot)  # type: ignore[arg-type]


def _deltas(book: CredibilityBook, match: JudgedMatch) -> dict[str, tuple[int, Reason]]:
    return {c.judge: (c.delta, c.reason) for c in book.process(match).changes}


# ------------------------------------------------------------------------------------------ rules


def test_the_documents_constants() -> None:
    assert (cr.START, cr.THRESHOLD, cr.FLOOR) == (100, 50, 30)
    assert (cr.AGREE, cr.DISAGREE, cr.AUDIT_OVERTURNED, cr.HONEYPOT_FAILED) == (1, -1, -10, -20)
    assert (cr.JUDGES_PER_MATCH, cr.AUDIT_RATE, cr.HONEYPOT_RATE, cr.MIN_POOL) == (3, 0.10, 0.05, 10)
    assert (cr.MIN_ACCOUNT_AGE_DAYS, cr.MIN_ARENA_MATCHES, cr.HISTORY_LENGTH) == (7, 5, 50)


def test_majority_agrees_plus_one_dissenter_minus_one() -> None:
    book = CredibilityBook()
    outcome = book.process(_match("m1", "a", "a", "b"))
    assert outcome.consensus == "a" and outcome.verdict == "a" and not outcome.overturned
    assert outcome.kind is MatchKind.ORDINARY
    assert book.scores() == {"j1": 101, "j2": 101, "j3": 99}
    j3 = book.state("j3")
    assert (j3.votes, j3.consensus_votes, j3.agreements, j3.agreement_rate) == (1, 1, 0, 0.0)
    assert book.state("j1").history == (PastVote("x", "A"),)


def test_a_tie_can_be_the_consensus_and_a_three_way_split_is_none() -> None:
    book = CredibilityBook()
    assert _deltas(book, _match("m1", "tie", "tie", "b")) == {
        "j1": (1, Reason.AGREED),
        "j2": (1, Reason.AGREED),
        "j3": (-1, Reason.DISAGREED),
    }
    outcome = book.process(_match("m2", "a", "b", "tie"))
    assert outcome.consensus is None and {c.delta for c in outcome.changes} == {0}
    assert {c.reason for c in outcome.changes} == {Reason.NO_CONSENSUS}
    j1 = book.state("j1")
    assert (j1.votes, j1.consensus_votes, j1.credibility) == (2, 1, 101)


def test_consensus_is_a_strict_majority_of_the_votes_cast() -> None:
    assert consensus(["a", "a", "b"]) == "a"
    assert consensus(["a", "a", "a", "b", "b"]) == "a"  # 3 of 5
    assert consensus(["a", "a", "b", "b", "tie"]) is None  # 2 of 5
    assert consensus(["a", "a", "b", "b"]) is None  # half is not more than half
    assert consensus(["b"]) == "b" and consensus([]) is None


def test_an_audit_that_confirms_changes_nothing_beyond_plus_minus_one() -> None:
    book = CredibilityBook()
    outcome = book.process(_match("m1", "a", "a", "b", audit="a"))
    assert outcome.kind is MatchKind.AUDITED and not outcome.overturned and outcome.verdict == "a"
    assert book.scores() == {"j1": 101, "j2": 101, "j3": 99}
    assert (book.state("j1").audits, book.state("j1").audits_agreed) == (1, 1)
    assert (book.state("j3").audits, book.state("j3").audits_agreed) == (1, 0)


def test_an_audit_that_overturns_costs_the_majority_ten_and_credits_the_upheld_dissenter() -> None:
    book = CredibilityBook()
    outcome = book.process(_match("m1", "a", "a", "b", audit="b"))
    assert outcome.overturned and outcome.consensus == "a" and outcome.verdict == "b"
    assert {c.judge: (c.delta, c.reason) for c in outcome.changes} == {
        "j1": (-10, Reason.OVERTURNED),
        "j2": (-10, Reason.OVERTURNED),
        "j3": (1, Reason.UPHELD),
    }
    assert book.scores() == {"j1": 90, "j2": 90, "j3": 101}
    # The majority still agreed with the consensus (the agreement rate is with the consensus).
    assert book.state("j1").agreements == 1 and book.state("j3").audits_agreed == 1


def test_a_dissenter_matching_neither_consensus_nor_audit_loses_one() -> None:
    book = CredibilityBook()
    assert _deltas(book, _match("m1", "a", "a", "tie", audit="b")) == {
        "j1": (-10, Reason.OVERTURNED),
        "j2": (-10, Reason.OVERTURNED),
        "j3": (-1, Reason.DISAGREED),
    }


def test_an_audit_without_consensus_moves_nobody_but_counts_for_audit_agreement() -> None:
    book = CredibilityBook()
    outcome = book.process(_match("m1", "a", "b", "tie", audit="b"))
    assert outcome.consensus is None and outcome.verdict == "b" and not outcome.overturned
    assert book.scores() == {"j1": 100, "j2": 100, "j3": 100}
    assert [book.state(j).audits_agreed for j in ("j1", "j2", "j3")] == [0, 1, 0]


def test_failing_a_honeypot_costs_twenty_passing_costs_nothing() -> None:
    book = CredibilityBook()
    outcome = book.process(_match("h1", "b", "a", "tie", honeypot="b"))
    assert outcome.kind is MatchKind.HONEYPOT and outcome.consensus is None and outcome.verdict is None
    assert {c.judge: (c.delta, c.reason) for c in outcome.changes} == {
        "j1": (-20, Reason.HONEYPOT_FAILED),
        "j2": (0, Reason.HONEYPOT_PASSED),
        "j3": (0, Reason.HONEYPOT_PASSED),
    }
    j1 = book.state("j1")
    assert (j1.honeypots, j1.honeypots_failed, j1.votes, j1.history) == (1, 1, 0, ())
    # A honeypot's votes never form a consensus: two judges failing together still both lose 20.
    book.process(_match("h2", "a", "a", "b", honeypot="a"))
    assert book.scores() == {"j1": 60, "j2": 80, "j3": 100}


def test_the_floor_holds_after_every_change() -> None:
    book = CredibilityBook([JudgeState("low", credibility=35), JudgeState("j2", credibility=31)])
    failed = JudgedMatch("h", "x", "y", (Vote("low", "a"),), honeypot="a")
    change = book.process(failed).changes[0]
    assert (change.before, change.after, change.delta, change.reason) == (35, 30, -5, Reason.HONEYPOT_FAILED)
    overturned = JudgedMatch("m", "x", "y", (Vote("low", "a"), Vote("j2", "a"), Vote("j3", "b")), audit="b")
    book.process(overturned)
    assert book.scores() == {"low": 30, "j2": 30, "j3": 101}
    book.process(JudgedMatch("m2", "x", "y", (Vote("low", "b"), Vote("j2", "a"), Vote("j3", "a"))))
    assert book.state("low").credibility == 30 and book.state("low").lowest == 30
    with pytest.raises(ParameterError, match=">= 30"):
        JudgeState("bad", credibility=29)


def test_deactivation_below_fifty_and_reactivation_by_agreeing() -> None:
    book = CredibilityBook([JudgeState("j1", credibility=55)])
    assert book.state("j1").active
    book.process(_match("m1", "a", "a", "b", audit="b"))  # j1 voted with the overturned consensus
    assert book.state("j1").credibility == 45 and not book.state("j1").active
    for i in range(4):
        book.process(_match(f"r{i}", "a", "a", "a"))
    assert book.state("j1").credibility == 49 and not book.state("j1").active
    book.process(_match("r4", "a", "a", "a"))
    assert book.state("j1").credibility == 50 and book.state("j1").active
    assert book.state("j1").lowest == 45


def test_the_history_keeps_the_last_fifty_votes_with_their_labels() -> None:
    book = CredibilityBook()
    for i in range(60):
        votes = (Vote("j1", "b", "ba" if i % 2 else "ab"), Vote("j2", "b"), Vote("j3", "tie"))
        book.process(JudgedMatch(f"m{i}", f"c{i}", "z", votes))
    j1 = book.state("j1")
    assert len(j1.history) == 50 and j1.votes == 60
    assert j1.history[-1] == PastVote("z", "A") and j1.history[-2] == PastVote("z", "B")
    assert (j1.label_a, j1.label_b) == (30, 30)
    assert book.state("j3").history[-1] == PastVote(None, None)


def test_a_match_is_validated() -> None:
    with pytest.raises(RankingError, match="more than once"):
        JudgedMatch("m", "x", "y", (Vote("j", "a"), Vote("j", "b")))
    with pytest.raises(RankingError, match="one kind"):
        JudgedMatch("m", "x", "y", (Vote("j", "a"),), audit="a", honeypot="b")
    with pytest.raises(RankingError, match="two different"):
        JudgedMatch("m", "x", "x", (Vote("j", "a"),))
    with pytest.raises(RankingError, match="no votes"):
        JudgedMatch("m", "x", "y", ())
    with pytest.raises(RankingError, match="'a', 'b' or 'tie'"):
        Vote("j", "c")  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------- randomness


def _binomial_ok(count: int, n: int, p: float) -> bool:
    return abs(count - n * p) <= 5 * math.sqrt(n * p * (1 - p))


def test_schedule_rates_over_a_hundred_thousand_matches() -> None:
    draws = [schedule("arena-2025-10", f"match-{i}") for i in range(SAMPLE)]
    honeypots = sum(d.kind is MatchKind.HONEYPOT for d in draws)
    audited = sum(d.kind is MatchKind.AUDITED for d in draws)
    assert _binomial_ok(honeypots, SAMPLE, 0.05), honeypots
    assert _binomial_ok(audited, SAMPLE, 0.10), audited
    assert all(0.0 <= d.u < 1.0 for d in draws)
    # Reproducible from the seed, and another seed draws other matches.
    again = [schedule("arena-2025-10", f"match-{i}").kind for i in range(1000)]
    assert again == [d.kind for d in draws[:1000]]
    other = [schedule("arena-2025-11", f"match-{i}").kind for i in range(1000)]
    assert other != again


def test_the_draw_is_the_documented_hash() -> None:
    """Anyone holding the seed recomputes u: SHA-256 of length-prefixed (tag, seed, match id), the
    first 53 bits over 2^53."""
    fields = [b"trust.ranking.credibility/schedule/v1", b"seed", b"match-7"]
    payload = b"".join(len(f).to_bytes(8, "big") + f for f in fields)
    digest = hashlib.sha256(payload).digest()
    u = (int.from_bytes(digest[:8], "big") >> 11) / 2**53
    draw = schedule(b"seed", "match-7")
    assert draw.u == u and draw.digest == digest.hex()
    assert schedule("seed", "match-7") == draw  # text seeds are their UTF-8 bytes
    assert schedule(42, "m") == schedule("42", "m")  # integer seeds their decimal text


def test_schedule_bands_and_rate_checks() -> None:
    draw = schedule("s", "m")
    kind = MatchKind.HONEYPOT if draw.u < 0.05 else MatchKind.AUDITED if draw.u < 0.15 else MatchKind.ORDINARY
    assert draw.kind is kind
    assert all(schedule("s", f"{i}", honeypot_rate=0.0, audit_rate=0.0).kind is MatchKind.ORDINARY for i in range(50))
    assert all(schedule("s", f"{i}", honeypot_rate=0.0, audit_rate=1.0).audited for i in range(50))
    with pytest.raises(ParameterError, match="audit_rate"):
        schedule("s", "m", audit_rate=1.5)
    with pytest.raises(ParameterError, match="at most 1"):
        schedule("s", "m", honeypot_rate=0.6, audit_rate=0.6)


def test_labels_are_swapped_half_of_the_time_independently_per_judge() -> None:
    swaps = [shown_swapped("seed", f"m{i // 3}", f"judge{i % 3}") for i in range(SAMPLE)]
    assert _binomial_ok(sum(swaps), SAMPLE, 0.5), sum(swaps)
    # The three judges of one match see different orders in 3/4 of the matches (1 - 2 x 1/8).
    matches = SAMPLE // 3
    mixed = sum(len({swaps[3 * m], swaps[3 * m + 1], swaps[3 * m + 2]}) == 2 for m in range(matches))
    assert _binomial_ok(mixed, matches, 0.75), mixed
    assert shown_order("seed", "m0", "judge0") == ("ba" if swaps[0] else "ab")
    # The label bit hashes another domain than the schedule: among the honeypots (u < 0.05 under the
    # same seed and ids) the swap rate is still one half.
    honeypots = [m for m in range(matches) if schedule("seed", f"m{m}").honeypot]
    swapped = sum(swaps[3 * m] for m in honeypots)
    assert _binomial_ok(swapped, len(honeypots), 0.5), (swapped, len(honeypots))


def test_label_mapping_by_hand() -> None:
    assert [label_of("a", "ab"), label_of("b", "ab"), label_of("a", "ba"), label_of("b", "ba")] == ["A", "B", "B", "A"]
    assert label_of("tie", "ba") is None and choice_of(None, "ab") == "tie"
    assert [choice_of("A", "ab"), choice_of("A", "ba")] == ["a", "b"]
    with pytest.raises(ParameterError, match="shown order"):
        label_of("a", "xy")  # type: ignore[arg-type]


@given(st.sampled_from(["a", "b", "tie"]), st.sampled_from(["ab", "ba"]))
def test_label_mapping_round_trips(choice: cr.Choice, shown: cr.Order) -> None:
    label = label_of(choice, shown)
    assert choice_of(label, shown) == choice
    assert Vote("j", choice, shown).label == label
    if label is not None:
        other: cr.Order = "ba" if shown == "ab" else "ab"
        assert label_of(choice, other) != label  # swapping the order swaps the label


# ------------------------------------------------------------------------- eligibility, selection


def _profile(name: str, owner: str | None = None, **changes: object) -> JudgeProfile:
    values: dict[str, object] = {"qualified": True, "account_age_days": 30.0, "arena_matches": 12}
    values.update(changes)
    return JudgeProfile(name, owner or f"@{name}", **values)  # type: ignore[arg-type]


MATCH = ArenaMatch("m1", "bot_x", "bot_y", owner_a="@alice", owner_b="@bob")


def test_the_eligibility_requirements() -> None:
    assert eligible(_profile("j"), MATCH)
    assert not eligible(_profile("j", qualified=False), MATCH)
    assert not eligible(_profile("j", account_age_days=6.99), MATCH)
    assert eligible(_profile("j", account_age_days=7.0), MATCH)
    assert not eligible(_profile("j", arena_matches=4), MATCH)
    assert eligible(_profile("j", arena_matches=5), MATCH)
    reasons = ineligibility(_profile("j", qualified=False, account_age_days=1.0, arena_matches=0), MATCH)
    assert len(reasons) == 3 and "7" in reasons[1] and "5" in reasons[2]


def test_owner_exclusion() -> None:
    assert not eligible(_profile("alices_judge", "@alice"), MATCH)
    assert not eligible(_profile("bobs_judge", "@bob"), MATCH)
    assert not eligible(_profile("bot_x", "@carol"), MATCH)  # a contestant never judges itself
    assert "owns a contestant" in ineligibility(_profile("j", "@alice"), MATCH)[0]
    pool = [_profile("alices_judge", "@alice"), _profile("bobs_judge", "@bob")] + [_profile(f"j{i}") for i in range(4)]
    for seed in range(300):
        drawn = select_judges(pool, MATCH, seed).judges
        assert len(drawn) == 3 and len(set(drawn)) == 3
        assert not {"alices_judge", "bobs_judge"} & set(drawn)


def test_selection_is_a_reproducible_uniform_draw() -> None:
    pool = [_profile(f"j{i}") for i in range(6)]
    first = select_judges(pool, MATCH, "seed")
    assert first == select_judges(pool, MATCH, "seed")
    assert select_judges(list(reversed(pool)), MATCH, "seed").judges == first.judges  # pool order is irrelevant
    seeds = 3000
    picks = {p.name: 0 for p in pool}
    subsets = set()
    for seed in range(seeds):
        judges = select_judges(pool, MATCH, seed).judges
        subsets.add(frozenset(judges))
        for judge in judges:
            picks[judge] += 1
    assert all(_binomial_ok(n, seeds, 0.5) for n in picks.values()), picks  # each judge in 3 of 6
    assert len(subsets) == 20  # every 3-subset of 6 occurs


def test_inactive_judges_are_not_drawn() -> None:
    pool = [_profile(f"j{i}") for i in range(5)]
    scores = {"j0": 49, "j1": 30, "j2": 50}
    for seed in range(100):
        selection = select_judges(pool, MATCH, seed, credibility=scores)
        assert set(selection.judges) == {"j2", "j3", "j4"}
        assert selection.candidates == 3 and selection.active_pool == 3


def test_too_few_eligible_judges_is_the_api_fallback() -> None:
    pool = [_profile("j1"), _profile("j2"), _profile("alices", "@alice"), _profile("new", account_age_days=2)]
    selection = select_judges(pool, MATCH, "seed")
    assert selection.api_fallback and selection.judges == () and selection.candidates == 2
    assert selection.pool_short  # 3 judges meet the requirements, 10 are needed


def test_a_pool_below_ten_active_judges_is_flagged() -> None:
    nine = [_profile(f"j{i}") for i in range(9)]
    assert select_judges(nine, MATCH, 1).pool_short
    assert not select_judges([*nine, _profile("j9")], MATCH, 1).pool_short
    # An owner-excluded judge still counts for the pool (the pool does not depend on the match).
    assert not select_judges([*nine, _profile("alices", "@alice")], MATCH, 1).pool_short
    assert select_judges([*nine, _profile("j9")], MATCH, 1, credibility={"j9": 49}).pool_short


def test_selection_arguments_are_checked() -> None:
    with pytest.raises(ParameterError, match="more than once"):
        select_judges([_profile("j"), _profile("j")], MATCH, 1)
    with pytest.raises(ParameterError, match="k"):
        select_judges([_profile("j")], MATCH, 1, k=0)
    with pytest.raises(ParameterError, match="account_age_days"):
        _profile("j", account_age_days=-1.0)
