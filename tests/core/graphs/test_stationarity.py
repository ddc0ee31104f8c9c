"""Stationarity detection: consecutive outputs of the same agent, lexical similarity, the MiniLM adapter."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trust.core.graphs.cig import AgentTurn, Cig, Role, turn_id
from trust.core.graphs.stationarity import (
    LexicalSimilarity,
    Similarity,
    StationaryPair,
    detect_stationarity,
    is_stationary,
)
from trust.errors import GraphError

TAU_STAT = 0.95
LEXICAL = LexicalSimilarity()


def test_lexical_similarity_basics() -> None:
    assert LEXICAL.similarity("The same text.", "the  same\ntext.") == 1.0
    assert LEXICAL.similarity("abc", "xyz") == 0.0
    assert LEXICAL.similarity("", "") == 1.0 and LEXICAL.similarity("", "abc") == 0.0
    assert LEXICAL.similarity("ab", "ab") == 1.0  # shorter than n
    near = LEXICAL.similarity("def sort(xs): return sorted(xs)", "def sort(xs): return sorted(xs) ")
    far = LEXICAL.similarity("def sort(xs): return sorted(xs)", "The weather in Paris is mild.")
    assert near > TAU_STAT > far
    assert isinstance(LEXICAL, Similarity)
    with pytest.raises(GraphError, match="must be >= 1"):
        LexicalSimilarity(n=0)


@given(st.text(max_size=200), st.text(max_size=200))
def test_lexical_similarity_is_a_symmetric_score_in_the_unit_interval(a: str, b: str) -> None:
    forward, backward = LEXICAL.similarity(a, b), LEXICAL.similarity(b, a)
    assert 0.0 <= forward <= 1.0 and math.isclose(forward, backward, abs_tol=1e-12)
    assert LEXICAL.similarity(a, a) == pytest.approx(1.0)


def _log(*turns: tuple[str, Role, str]) -> Cig:
    cig = Cig()
    for step, (agent, role, output) in enumerate(turns):
        cig.add_turn(AgentTurn(turn_id(step), step, agent, role, output))
        if step:
            cig.add_edge(turn_id(step - 1), turn_id(step))
    return cig


CODE = "def add(a, b):\n    return a + b\n"


def test_a_coder_reviewer_loop_is_detected_on_the_repeating_agent() -> None:
    cig = _log(
        ("Coder", Role.CODER, CODE),
        ("Reviewer", Role.REVIEWER, "Please handle strings too."),
        ("Coder", Role.CODER, CODE),
        ("Reviewer", Role.REVIEWER, "You did not change anything; please handle strings."),
        ("Coder", Role.CODER, CODE + "\n"),
        ("Terminal", Role.TOOL, "exitcode: 0"),
        ("Terminal", Role.TOOL, "exitcode: 0"),
    )
    found = detect_stationarity(cig, LEXICAL, tau_stat=TAU_STAT)
    assert found == (
        StationaryPair("Coder", "t0", "t2", 1.0),
        StationaryPair("Coder", "t2", "t4", 1.0),
        StationaryPair("Terminal", "t5", "t6", 1.0),
    )
    skipped = detect_stationarity(cig, LEXICAL, tau_stat=TAU_STAT, skip_roles={Role.TOOL})
    assert [pair.agent for pair in skipped] == ["Coder", "Coder"]
    # "Exceeds" is strict: with tau_stat = 1 even identical outputs are not stationary.
    assert detect_stationarity(cig, LEXICAL, tau_stat=1.0) == ()


def test_progress_is_not_stationary() -> None:
    cig = _log(
        ("Coder", Role.CODER, CODE),
        ("Reviewer", Role.REVIEWER, "Handle strings."),
        (
            "Coder",
            Role.CODER,
            "def add(a, b):\n    if isinstance(a, str):\n        return a + str(b)\n    return a + b",
        ),
    )
    assert detect_stationarity(cig, LEXICAL, tau_stat=TAU_STAT) == ()
    assert not is_stationary(CODE, "print('hello')", LEXICAL, tau_stat=TAU_STAT)
    assert is_stationary(CODE, CODE, LEXICAL, tau_stat=TAU_STAT)


class _Broken:
    def similarity(self, first: str, second: str) -> float:
        return math.nan


def test_bad_thresholds_and_bad_similarities_are_refused() -> None:
    cig = _log(("A", Role.EXPERT, "x"), ("A", Role.EXPERT, "x"))
    for tau in (0.0, 1.5, True):
        with pytest.raises(GraphError, match="tau_stat"):
            detect_stationarity(cig, LEXICAL, tau_stat=tau)
    with pytest.raises(GraphError, match="similarity returned nan"):
        detect_stationarity(cig, _Broken(), tau_stat=TAU_STAT)


@pytest.mark.slow
def test_minilm_similarity_sees_paraphrases() -> None:
    from trust.adapters.llm.embeddings import EXTRA_HINT, MiniLmSimilarity, embeddings_available

    if not embeddings_available():
        pytest.skip(f"the sentence-embedding model is not installed; {EXTRA_HINT}")
    model = MiniLmSimilarity()
    assert isinstance(model, Similarity)
    same = model.similarity("The population of Seattle is 737,015.", "The population of Seattle is 737,015.")
    paraphrase = model.similarity("Seattle has 737,015 inhabitants.", "The population of Seattle is 737,015.")
    unrelated = model.similarity("Seattle has 737,015 inhabitants.", "I sorted the list with quicksort.")
    assert same == pytest.approx(1.0, abs=1e-5)
    assert paraphrase > 0.7 > 0.3 > unrelated
    cig = _log(
        ("Coder", Role.CODER, "I will sort the list with merge sort."),
        ("Reviewer", Role.REVIEWER, "Use a faster method."),
        ("Coder", Role.CODER, "I will sort the list with merge sort."),
    )
    assert [pair.later for pair in detect_stationarity(cig, model, tau_stat=TAU_STAT)] == ["t2"]
