"""Anomaly detection of the judge ranking document (section 4): collusion (>10 votes for one
contestant in the last 50), position bias (>80% on one label), audit disagreement (<50%)."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trust.core.ranking.anomalies import (
    AUDIT_AGREEMENT_MIN_AUDITS,
    COLLUSION_MAX_VOTES,
    COLLUSION_WINDOW,
    POSITION_BIAS_MIN_VOTES,
    AnomalyFlags,
    Collusion,
    PastVote,
    PositionBias,
    detect,
)
from trust.core.ranking.credibility import CredibilityBook, JudgedMatch, Vote, label_of
from trust.errors import ParameterError


def test_the_documents_thresholds() -> None:
    assert (COLLUSION_WINDOW, COLLUSION_MAX_VOTES) == (50, 10)
    assert POSITION_BIAS_MIN_VOTES == 10 and AUDIT_AGREEMENT_MIN_AUDITS == 4


def _votes(contestant: str, n: int, label: str = "A") -> list[PastVote]:
    return [PastVote(contestant, "A" if label == "A" else "B") for _ in range(n)]


def _filler(n: int) -> list[PastVote]:
    """n votes spread over distinct contestants, alternating labels (no anomaly of their own)."""
    return [PastVote(f"other{i}", "A" if i % 2 else "B") for i in range(n)]


def test_collusion_exactly_ten_in_fifty_is_not_flagged() -> None:
    history = _filler(40) + _votes("friend", 10)
    assert detect(history).collusion == ()


def test_collusion_eleven_in_fifty_is_flagged_naming_the_contestant() -> None:
    history = _filler(39) + _votes("friend", 11)
    flags = detect(history)
    assert flags.collusion == (Collusion("friend", 11, 50),)
    assert flags


def test_collusion_ignores_votes_older_than_the_window() -> None:
    # 20 votes for "friend" in all, but only 10 of them among the last 50.
    history = _votes("friend", 10) + _filler(40) + _votes("friend", 10)
    assert len(history) == 60
    assert detect(history).collusion == ()
    # One more recent vote for friend pushes an old filler vote out and makes 11.
    assert detect([*history, PastVote("friend", "B")]).collusion == (Collusion("friend", 11, 50),)


def test_collusion_does_not_count_ties_and_can_name_several_contestants() -> None:
    ties = [PastVote(None, None)] * 20
    assert detect(ties + _votes("x", 10) + _votes("y", 10)).collusion == ()
    flags = detect(_filler(2) + _votes("y", 12) + _votes("x", 25) + _votes("z", 11))
    assert [c.contestant for c in flags.collusion] == ["x", "y", "z"]  # most votes first


@given(st.lists(st.sampled_from(["p", "q", "r", "s", None]), max_size=120))
def test_collusion_matches_a_brute_force_count(choices: list[str | None]) -> None:
    history = [PastVote(c, None if c is None else "A") for c in choices]
    recent = Counter(c for c in choices[-50:] if c is not None)
    expected = {c for c, n in recent.items() if n > 10}
    assert {f.contestant for f in detect(history).collusion} == expected


def test_position_bias_eighty_percent_is_not_flagged_eighty_one_is() -> None:
    assert detect([], votes=100, label_a=80, label_b=20).position_bias is None
    flags = detect([], votes=100, label_a=81, label_b=19)
    assert flags.position_bias == PositionBias("A", 0.81, 100)
    assert detect([], votes=100, label_a=19, label_b=81).position_bias == PositionBias("B", 0.81, 100)
    assert detect([], votes=5, label_a=4, label_b=1).position_bias is None  # 4/5 is exactly 80%, and few


def test_position_bias_needs_ten_votes() -> None:
    assert detect(_votes("x", 9)).position_bias is None  # 100% A, but only 9 votes
    assert detect(_votes("x", 10)).position_bias == PositionBias("A", 1.0, 10)


def test_ties_dilute_position_bias() -> None:
    # 9 of 10 votes are for label A, but 2 more ties make it 9/12 = 75%.
    assert detect([], votes=10, label_a=9, label_b=1).position_bias is not None
    assert detect([], votes=12, label_a=9, label_b=1).position_bias is None


def test_audit_agreement_below_half_is_flagged_from_four_audits() -> None:
    assert detect([], audits=4, audits_agreed=2).audit_agreement is None  # exactly 50%
    low = detect([], audits=4, audits_agreed=1).audit_agreement
    assert low is not None and low.rate == 0.25 and low.audits == 4
    assert detect([], audits=3, audits_agreed=0).audit_agreement is None  # too few audits
    assert detect([], audits=100, audits_agreed=49).audit_agreement is not None


def test_tallies_are_all_or_nothing_and_consistent() -> None:
    with pytest.raises(ParameterError, match="give all of votes"):
        detect([], votes=10)
    with pytest.raises(ParameterError, match="exceeds votes"):
        detect([], votes=10, label_a=8, label_b=3)
    with pytest.raises(ParameterError, match="audits_agreed"):
        detect([], audits=2, audits_agreed=3)
    with pytest.raises(ParameterError, match="count"):
        detect([], votes=-1, label_a=0, label_b=0)
    with pytest.raises(ParameterError, match="a tie has neither"):
        PastVote("x", None)


def test_to_json_and_truthiness() -> None:
    assert not AnomalyFlags() and AnomalyFlags().to_json() == {
        "collusion": [],
        "position_bias": None,
        "audit_agreement": None,
    }
    flags = detect(_votes("friend", 11), audits=4, audits_agreed=0)
    assert flags.to_json() == {
        "collusion": [{"contestant": "friend", "votes": 11, "window": 11}],
        "position_bias": {"side": "A", "share": 1.0, "votes": 11},
        "audit_agreement": {"rate": 0.0, "audits": 4},
    }


def test_a_judge_always_voting_label_a_is_caught_through_the_book() -> None:
    """Label randomization at work: the lazy judge always picks whatever is shown first. Its votes
    for contestants look balanced, and only the label tally shows the bias."""
    book = CredibilityBook()
    for i in range(40):
        shown = "ab" if i % 2 else "ba"
        lazy_choice = "a" if shown == "ab" else "b"
        votes = (Vote("lazy", lazy_choice, shown), Vote("j2", "a"), Vote("j3", "a"))
        book.process(JudgedMatch(f"m{i}", f"x{i % 7}", f"y{i % 5}", votes))
    lazy = book.state("lazy")
    assert lazy.label_a == 40 and lazy.label_b == 0
    assert lazy.anomalies().position_bias == PositionBias("A", 1.0, 40)
    assert label_of("b", "ba") == "A"
    # j3 always voted contestant a, which it saw as label A too (default order): also flagged.
    assert book.state("j3").anomalies().position_bias is not None
