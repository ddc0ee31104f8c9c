"""The arena's proof hash and the hash chain over it (arena document Part III): the canonical payload
written out by hand, the ambiguity of plain concatenation, and tampering, reordering and dropping
detected by verify_chain."""

from __future__ import annotations

import hashlib
from dataclasses import replace

import pytest

from trust.core.ranking.proof import (
    GENESIS_LINK,
    Battle,
    ProofRecord,
    append_record,
    build_chain,
    chain_link,
    proof_hash,
    verify_chain,
)
from trust.errors import ParameterError


def _battle(number: int, **changes: object) -> Battle:
    battle = Battle(
        battle_id=f"b{number}",
        question=f"What is {number} squared?",
        responses=(f"{number * number}", f"{number}^2 = {number * number}", "I am not sure.", "Définitely 4"),
        weights_applied=[{"model": "m1", "w_rank": 1.5, "final": 3.0}],
        user_signal={"winner": "m1", "winner_tags": ["factually_rigorous"], "loser_tags": {}},
        refined_answer=f"{number * number}",
        timestamp=f"2026-05-02T12:00:{number:02d}Z",
    )
    return replace(battle, **changes)  # type: ignore[arg-type]


def test_genesis_is_the_documents_printed_hash() -> None:
    assert GENESIS_LINK == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_payload_is_canonical_json_written_out_by_hand() -> None:
    battle = Battle(
        battle_id="b1",
        question="Qué?",
        responses=("a", "b", "c", "d"),
        weights_applied={"z": 1, "a": [0.5, 2]},
        user_signal={"winner": "m2"},
        refined_answer="ok",
        timestamp="2026-05-02T12:00:00Z",
    )
    expected = (
        '{"battle_id":"b1","question":"Qué?","refined_answer":"ok","responses":["a","b","c","d"],'
        '"timestamp":"2026-05-02T12:00:00Z","user_signal":{"winner":"m2"},"weights_applied":{"a":[0.5,2],"z":1}}'
    ).encode()
    assert battle.payload() == expected
    assert proof_hash(battle) == hashlib.sha256(expected).hexdigest()


def test_field_boundaries_matter_where_concatenation_would_not() -> None:
    one = _battle(1, battle_id="ab", question="c")
    two = _battle(1, battle_id="a", question="bc")
    assert one.battle_id + one.question == two.battle_id + two.question
    assert proof_hash(one) != proof_hash(two)


def test_key_order_does_not_change_the_hash() -> None:
    first = _battle(1, user_signal={"winner": "m1", "loser_tags": {}})
    second = _battle(1, user_signal={"loser_tags": {}, "winner": "m1"})
    assert proof_hash(first) == proof_hash(second)


def test_chain_links_by_hand() -> None:
    records = build_chain([_battle(1), _battle(2)])
    h1, h2 = proof_hash(_battle(1)), proof_hash(_battle(2))
    link1 = hashlib.sha256(bytes.fromhex(GENESIS_LINK) + bytes.fromhex(h1)).hexdigest()
    assert records[0] == ProofRecord(_battle(1), h1, link1)
    assert records[1].link == hashlib.sha256(bytes.fromhex(link1) + bytes.fromhex(h2)).hexdigest()
    assert records[1] == append_record(records[0], _battle(2))
    assert chain_link(GENESIS_LINK, h1) == link1


def test_an_intact_chain_verifies() -> None:
    records = build_chain(_battle(n) for n in range(1, 6))
    assert verify_chain(records).ok
    assert verify_chain(records, expected_head=records[-1].link).ok
    assert verify_chain([]).ok


def test_a_tampered_field_is_found() -> None:
    records = build_chain(_battle(n) for n in range(1, 6))
    forged = replace(records[2], battle=replace(records[2].battle, refined_answer="10"))
    check = verify_chain([*records[:2], forged, *records[3:]])
    assert check.first_bad == 2 and check.problem is not None and "a field was changed" in check.problem


def test_a_tampered_field_with_its_hash_recomputed_breaks_the_link() -> None:
    records = build_chain(_battle(n) for n in range(1, 6))
    battle = replace(records[2].battle, weights_applied=[{"model": "m4", "final": 9.0}])
    forged = replace(records[2], battle=battle, proof_hash=proof_hash(battle))
    check = verify_chain([*records[:2], forged, *records[3:]])
    assert check.first_bad == 2 and check.problem is not None and "does not follow" in check.problem


def test_reordered_and_dropped_records_are_found() -> None:
    records = build_chain(_battle(n) for n in range(1, 6))
    assert verify_chain([records[0], records[2], records[1], records[3], records[4]]).first_bad == 1
    assert verify_chain([records[0], records[1], records[3], records[4]]).first_bad == 2
    assert verify_chain(records[1:]).first_bad == 0
    # dropping the tail leaves a consistent chain: only an anchored head shows it
    assert verify_chain(records[:4]).ok
    check = verify_chain(records[:4], expected_head=records[-1].link)
    assert check.first_bad == 4 and check.problem is not None and "anchored head" in check.problem


def test_bad_battles_and_digests_are_refused() -> None:
    with pytest.raises(ParameterError, match="3 responses"):
        _battle(1, responses=("a", "b", "c"))
    with pytest.raises(ParameterError, match="timestamp"):
        _battle(1, timestamp="")
    with pytest.raises(ParameterError, match="not canonical JSON"):
        proof_hash(_battle(1, weights_applied=[float("nan")]))
    with pytest.raises(ParameterError, match="not canonical JSON"):
        proof_hash(_battle(1, user_signal={"tags": {"a", "b"}}))
    with pytest.raises(ParameterError, match="previous_link"):
        chain_link("abc", GENESIS_LINK)
    with pytest.raises(ParameterError, match="proof_hash"):
        chain_link(GENESIS_LINK, "zz" * 32)
