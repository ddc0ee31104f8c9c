"""The plagiarism fingerprint of the judge ranking document (section 4): lowercase, punctuation
removed, words sorted, SHA-256; a match whose responses share one is skipped."""

from __future__ import annotations

import hashlib
import random

from hypothesis import given
from hypothesis import strategies as st

from trust.core.ranking.credibility import CredibilityBook, JudgedMatch, Vote
from trust.core.ranking.fingerprint import fingerprint, is_plagiarized, normalize, same_response


def test_fingerprint_is_the_sha256_of_the_sorted_lowercase_words() -> None:
    # By hand: "World, hello!" -> "world hello" -> sorted "hello world".
    assert fingerprint("World, hello!") == hashlib.sha256(b"hello world").hexdigest()
    assert len(fingerprint("anything")) == 64


def test_case_punctuation_and_word_order_do_not_matter() -> None:
    original = "The quick brown fox, as you know, jumps over the lazy dog."
    copied = "dog LAZY the over jumps... know you as fox brown quick; The"
    assert same_response(original, copied)
    assert same_response("Don't panic!", "dont PANIC")


def test_different_words_or_counts_differ() -> None:
    assert not same_response("the cat sat", "the dog sat")
    assert not same_response("no no yes", "no yes")
    assert not same_response("I was 10", "I was 11")  # digits are content


def test_unicode_case_folding_and_compatibility_forms() -> None:
    assert same_response("Straße", "STRASSE")
    assert same_response("ｈｅｌｌｏ world", "hello WORLD")  # full-width letters fold to ASCII
    assert normalize("  «Hello»   —  there ") == "hello there"


def test_is_plagiarized_needs_both_texts() -> None:
    votes = (Vote("j1", "a"),)
    assert is_plagiarized(JudgedMatch("m", "x", "y", votes, response_a="Hi there.", response_b="there hi"))
    assert not is_plagiarized(JudgedMatch("m", "x", "y", votes, response_a="Hi there.", response_b="bye"))
    assert not is_plagiarized(JudgedMatch("m", "x", "y", votes, response_a="Hi there."))
    assert not is_plagiarized(JudgedMatch("m", "x", "y", votes))


def test_a_plagiarized_match_moves_nobody() -> None:
    book = CredibilityBook()
    copied = JudgedMatch(
        "m1",
        "x",
        "y",
        (Vote("j1", "a"), Vote("j2", "a"), Vote("j3", "b")),
        audit="b",
        response_a="I think, therefore I am.",
        response_b="am I therefore think I",
    )
    outcome = book.process(copied)
    assert outcome.skipped and outcome.changes == () and outcome.consensus is None
    assert len(book) == 0  # no judge was even touched
    assert book.state("j1").credibility == 100 and book.state("j1").votes == 0


words = st.lists(st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8), min_size=1, max_size=20)


@given(words, st.randoms(use_true_random=False))
def test_shuffled_recased_punctuated_copies_share_the_fingerprint(ws: list[str], rng: random.Random) -> None:
    shuffled = ws[:]
    rng.shuffle(shuffled)
    noisy = " ".join(w.upper() + rng.choice(["", ",", ".", "!", "?"]) for w in shuffled)
    assert fingerprint(" ".join(ws)) == fingerprint(noisy)


@given(words, st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8))
def test_one_extra_word_changes_the_fingerprint(ws: list[str], extra: str) -> None:
    assert fingerprint(" ".join(ws)) != fingerprint(" ".join([*ws, extra]))
