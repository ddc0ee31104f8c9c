"""Response plagiarism fingerprints (judge ranking document, section 4, "Response Plagiarism Detection").

The document's recipe, in its order:

1. normalize the response: lowercase, remove punctuation;
2. sort the words alphabetically;
3. SHA-256 of the result;
4. compare fingerprints: a match whose two responses share one is skipped (no Elo change).

`fingerprint(text)` is that hash (hex), `same_response(x, y)` compares two texts, and
`is_plagiarized(match)` reads any match that carries `response_a` and `response_b` (the judge
credibility book's `JudgedMatch` does): a match with both texts and equal fingerprints is skipped by
the book, so it moves neither the Elo ratings nor any judge's credibility.

Where the document is vague, and what we chose:

- "Lowercase": we case-fold (`str.casefold`, Unicode's caseless matching: "Straße" and "STRASSE"
  agree) after NFKC normalization (full-width and compatibility forms fold to their plain letters),
  so the fingerprint cannot be dodged by swapping in look-alike code points.
- "Remove punctuation": every character of a Unicode punctuation category (P*) is deleted, not
  replaced by a space, so "don't" and "dont" agree, as the literal instruction says. Symbols (S*:
  "$", "+") and digits are content and stay.
- "Words": the whitespace-separated tokens left; repeated words are kept (the sorted list is a
  multiset), so "no no yes" and "no yes" differ. The words are joined by one space before hashing.
- "Too similar": the document hashes, so only equal fingerprints count; a paraphrase with one word
  changed is a different response. A fuzzy threshold (shingles, MinHash) would be a different
  mechanism than the one the document specifies.
- Two empty (or punctuation-only) responses share the fingerprint of the empty word list, so such a
  match is skipped too: there is nothing to judge.
"""

from __future__ import annotations

import hashlib
import unicodedata
from typing import Protocol

__all__ = ["HasResponses", "fingerprint", "is_plagiarized", "normalize", "same_response"]

_PUNCTUATION_CATEGORY = "P"
"""The first letter of every Unicode punctuation category (Pc, Pd, Ps, Pe, Pi, Pf, Po)."""


class HasResponses(Protocol):
    """Anything carrying the two responses of a match (either may be unknown)."""

    @property
    def response_a(self) -> str | None: ...

    @property
    def response_b(self) -> str | None: ...


def normalize(text: str) -> str:
    """The text the fingerprint hashes: NFKC, case-folded, punctuation deleted, words sorted and
    joined by single spaces."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    kept = "".join(c for c in folded if not unicodedata.category(c).startswith(_PUNCTUATION_CATEGORY))
    return " ".join(sorted(kept.split()))


def fingerprint(text: str) -> str:
    """SHA-256 (hex, 64 characters) of `normalize(text)` encoded as UTF-8."""
    return hashlib.sha256(normalize(text).encode("utf-8")).hexdigest()


def same_response(x: str, y: str) -> bool:
    """True when the two responses have the same fingerprint (the same multiset of words once case,
    punctuation and order are ignored)."""
    return fingerprint(x) == fingerprint(y)


def is_plagiarized(match: HasResponses) -> bool:
    """True when both responses are known and share a fingerprint: the match is to be skipped. A match
    without both texts cannot be checked and is not skipped."""
    if match.response_a is None or match.response_b is None:
        return False
    return same_response(match.response_a, match.response_b)
