"""The arena's cross-validation score (arena document Part II): W_rank's endpoints and examples, the
consensus and user-tag tables, the evidence classifier on realistic claims, and cross_validate."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trust.core.ranking.arena import (
    EVIDENCE_GROUNDED,
    EVIDENCE_PLAIN,
    USER_TAG_EFFECTS,
    Claim,
    ClaimKind,
    EvidenceLevel,
    UserSignal,
    UserTag,
    consensus_weight,
    cross_validate,
    evidence_level,
    evidence_weight,
    rank_weight,
    user_weight,
)
from trust.errors import ParameterError, RankingError


def test_rank_weight_centre_and_endpoints() -> None:
    assert rank_weight(1000) == pytest.approx(1.25)
    assert rank_weight(-1e6) == pytest.approx(0.5) and rank_weight(-1e6) >= 0.5
    assert rank_weight(1e6) == pytest.approx(2.0) and rank_weight(1e6) <= 2.0
    assert 0.5 < rank_weight(0) < rank_weight(2000) < 2.0


def test_rank_weight_documented_examples_are_scores_near_1139_and_723() -> None:
    assert rank_weight(1000 + 200 * math.log(2)) == pytest.approx(1.5)  # "Rank #1 ~ 1.5"
    assert rank_weight(1000 + 200 * math.log(0.25)) == pytest.approx(0.8)  # "bottom ~ 0.8"
    assert rank_weight(1139) == pytest.approx(1.5, abs=1e-3)
    assert rank_weight(723) == pytest.approx(0.8, abs=1e-3)


@given(st.floats(min_value=-5000, max_value=5000), st.floats(min_value=-5000, max_value=5000))
def test_rank_weight_is_monotone_and_in_range(a: float, b: float) -> None:
    low, high = min(a, b), max(a, b)
    assert 0.5 <= rank_weight(low) <= rank_weight(high) <= 2.0


def test_consensus_weight_table() -> None:
    assert [consensus_weight(n) for n in (1, 2, 3, 4)] == [1.0, 1.0, 1.5, 2.0]
    with pytest.raises(ParameterError, match="overlap"):
        consensus_weight(0)


def _claim(kind: ClaimKind, model: str = "m1") -> Claim:
    return Claim(text="x = 42", model=model, kind=kind)


@pytest.mark.parametrize(
    ("tag", "kind", "winner_side", "expected"),
    [
        (UserTag.FACTUALLY_RIGOROUS, ClaimKind.INFO, True, 2.0),
        (UserTag.FACTUALLY_RIGOROUS, ClaimKind.CODE, True, 1.0),
        (UserTag.CODE_ZERO_ERRORS, ClaimKind.CODE, True, 2.0),
        (UserTag.STRONG_LOGIC, ClaimKind.LOGIC, True, 1.5),
        (UserTag.INSTRUCTION_FOLLOWING, ClaimKind.STRUCTURE, True, 1.5),
        (UserTag.SEVERE_HALLUCINATION, ClaimKind.INFO, False, 0.0),
        (UserTag.SEVERE_HALLUCINATION, ClaimKind.LOGIC, False, 1.0),
        (UserTag.OVER_ALIGNED, ClaimKind.CODE, False, 0.3),
        (UserTag.OVER_ALIGNED, ClaimKind.INFO, False, 0.3),
        (UserTag.LOGIC_BREAK, ClaimKind.LOGIC, False, 0.2),
        (UserTag.FORMAT_CRASH, ClaimKind.CODE, False, 0.3),
        (UserTag.FORMAT_CRASH, ClaimKind.STRUCTURE, False, 1.0),
    ],
)
def test_user_tag_table(tag: UserTag, kind: ClaimKind, winner_side: bool, expected: float) -> None:
    if winner_side:
        signal = UserSignal(winner="m1", winner_tags=frozenset({tag}))
    else:
        signal = UserSignal(winner="m2", loser_tags={"m1": frozenset({tag})})
    assert user_weight(_claim(kind), signal) == expected


def test_tags_multiply_and_reach_only_their_model() -> None:
    signal = UserSignal(
        winner="w",
        winner_tags=frozenset({UserTag.STRONG_LOGIC, UserTag.FACTUALLY_RIGOROUS}),
        loser_tags={"l1": frozenset({UserTag.OVER_ALIGNED, UserTag.LOGIC_BREAK})},
    )
    assert user_weight(_claim(ClaimKind.LOGIC, "l1"), signal) == pytest.approx(0.3 * 0.2)
    assert user_weight(_claim(ClaimKind.INFO, "l1"), signal) == pytest.approx(0.3)
    assert user_weight(_claim(ClaimKind.INFO, "w"), signal) == 2.0
    assert user_weight(_claim(ClaimKind.LOGIC, "w"), signal) == 1.5
    assert user_weight(_claim(ClaimKind.LOGIC, "l2"), signal) == 1.0  # a loser the user did not tag
    assert user_weight(_claim(ClaimKind.LOGIC, "l2"), None) == 1.0
    assert {effect.side for effect in USER_TAG_EFFECTS.values()} == {"winner", "loser"}


def test_signal_rejects_tags_on_the_wrong_side() -> None:
    with pytest.raises(ParameterError, match="give it in loser_tags"):
        UserSignal(winner="w", winner_tags=frozenset({UserTag.FORMAT_CRASH}))
    with pytest.raises(ParameterError, match="give it in winner_tags"):
        UserSignal(winner="w", loser_tags={"l": frozenset({UserTag.STRONG_LOGIC})})
    with pytest.raises(ParameterError, match="is the winner"):
        UserSignal(winner="w", loser_tags={"w": frozenset({UserTag.FORMAT_CRASH})})
    with pytest.raises(ParameterError, match="no winner"):
        UserSignal(winner_tags=frozenset({UserTag.STRONG_LOGIC}))
    with pytest.raises(ParameterError, match="user tag 'great'"):
        UserSignal(winner="w", winner_tags=frozenset({"great"}))  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="claim kind 'prose'"):
        Claim("x", "m", kind="prose")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "level"),
    [
        ("The default read timeout is 30 seconds.", EvidenceLevel.GROUNDED),
        ("Call `requests.get(url, timeout=5)` to bound the wait.", EvidenceLevel.GROUNDED),
        ("Set max_tokens to cap the length of the completion.", EvidenceLevel.GROUNDED),
        ("Pass --no-cache to rebuild every layer.", EvidenceLevel.GROUNDED),
        ("The speed of light is 299,792,458 m/s.", EvidenceLevel.GROUNDED),
        ("Python 3.12 removed the distutils package.", EvidenceLevel.GROUNDED),
        ("The library was released in May 2019.", EvidenceLevel.GROUNDED),
        ("The GPU has 80 GB of memory.", EvidenceLevel.GROUNDED),
        ("Python is a popular language for data work.", EvidenceLevel.PLAIN),
        ("Some model(s) can be fine-tuned on small data, e.g. adapters.", EvidenceLevel.PLAIN),
        ("Some say Rust is always faster than C.", EvidenceLevel.VAGUE),
        ("It might use around 4 GB of memory.", EvidenceLevel.VAGUE),
        ("Reportedly the v1 endpoint was deprecated in 2023.", EvidenceLevel.VAGUE),
        ("I think the function is thread-safe.", EvidenceLevel.VAGUE),
        ("It is believed that the pyramids were built by slaves.", EvidenceLevel.VAGUE),
    ],
)
def test_evidence_levels_without_context(text: str, level: EvidenceLevel) -> None:
    assert evidence_level(text) is level


EIFFEL = (
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France. "
    "The tower is 330 metres (1,083 ft) tall and was completed in 1889 for the World's Fair."
)


@pytest.mark.parametrize(
    ("text", "level"),
    [
        ("The Eiffel Tower is 330 metres tall.", EvidenceLevel.GROUNDED),
        ("The Eiffel Tower in Paris was completed in 1889.", EvidenceLevel.GROUNDED),
        ("The Eiffel Tower is a wrought-iron lattice tower in Paris.", EvidenceLevel.GROUNDED),
        ("The Eiffel Tower might be 330 metres tall.", EvidenceLevel.GROUNDED),  # the context backs it
        ("The Eiffel Tower is 500 metres tall.", EvidenceLevel.PLAIN),  # on topic, a value the context lacks
        ("The Eiffel Tower was completed in 1901.", EvidenceLevel.PLAIN),
        ("The Eiffel Tower reportedly sways in storms.", EvidenceLevel.VAGUE),
        ("A banana holds about 358 mg of potassium.", EvidenceLevel.GROUNDED),  # off topic: its own value counts
    ],
)
def test_evidence_levels_with_a_search_context(text: str, level: EvidenceLevel) -> None:
    assert evidence_level(text, EIFFEL) is level


def test_evidence_weights() -> None:
    assert evidence_weight(EvidenceLevel.GROUNDED) == EVIDENCE_GROUNDED == 1.0
    assert evidence_weight(EvidenceLevel.PLAIN) == EVIDENCE_PLAIN == 0.5
    assert evidence_weight(EvidenceLevel.VAGUE) == 0.0


def test_cross_validate_scores_sorts_and_removes() -> None:
    scores = {"m1": 1138.6, "m2": 1000.0, "m3": 900.0, "m4": 722.7}
    claims = [
        Claim("The Eiffel Tower is 330 metres tall.", "m2", ClaimKind.INFO, overlap=3),
        Claim("The Eiffel Tower is 330 metres tall.", "m1", ClaimKind.INFO, overlap=3),
        Claim("It was completed in 1889.", "m1", ClaimKind.INFO),
        Claim("Some say it was meant to be temporary.", "m3", ClaimKind.INFO),
        Claim("It was painted gold in 1950.", "m4", ClaimKind.INFO),
        Claim("Therefore the tower is the tallest structure today.", "m4", ClaimKind.LOGIC),
        Claim("Use `height_m = 330` in the example.", "m3", ClaimKind.CODE),
    ]
    signal = UserSignal(
        winner="m1",
        winner_tags=frozenset({UserTag.FACTUALLY_RIGOROUS}),
        loser_tags={"m4": frozenset({UserTag.SEVERE_HALLUCINATION})},
    )
    result = cross_validate(claims, scores, signal, search_context=EIFFEL)

    finals = [item.final for item in result.kept]
    assert finals == sorted(finals, reverse=True)
    top = result.kept[0]
    assert top.claim.model == "m1" and top.claim.overlap == 3
    assert top.final == pytest.approx(rank_weight(1138.6) * 1.5 * 2.0 * 1.0)
    for item in result.kept + result.removed:
        assert item.final == pytest.approx(item.w_rank * item.w_consensus * item.w_user * item.w_evidence)
    removed = {(item.claim.model, item.claim.text) for item in result.removed}
    assert removed == {
        ("m3", "Some say it was meant to be temporary."),  # vague
        ("m4", "It was painted gold in 1950."),  # loser info under severe hallucination
    }
    logic = next(item for item in result.kept if item.claim.kind is ClaimKind.LOGIC)
    assert logic.w_user == 1.0 and logic.w_evidence == EVIDENCE_PLAIN
    assert len(result.kept) + len(result.removed) == len(claims)
    json.dumps(result.weights_applied(), allow_nan=False)  # the proof record stores it as JSON
    json.dumps(signal.as_dict(), allow_nan=False)


def test_cross_validate_names_models_without_a_score() -> None:
    with pytest.raises(RankingError, match="'m9'"):
        cross_validate([Claim("x = 1", "m9")], {"m1": 1000.0})
