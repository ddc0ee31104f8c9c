"""Segments: real AES-256-GCM, bound to trace and node; every bad input named, nothing decrypted."""

from __future__ import annotations

import hashlib
import os
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trust.core.decompose.rules import from_steps
from trust.core.graphs.agent_log import AgentLog, AgentSpec, LogTurn, build_cig
from trust.core.graphs.cig import AgentTurn, ReplyContract, Role
from trust.core.graphs.serialization import loads_node
from trust.core.privacy.segments import (
    HEADER_BYTES,
    MAGIC,
    TAG_BYTES,
    Rng,
    dumps_turn,
    loads_turn,
    new_key,
    new_trace_id,
    open_segment,
    parse_header,
    seal,
    seal_graph,
    segment_plaintexts,
)
from trust.errors import ConfigError, GraphError, VerificationError


def seeded(seed: int = 7) -> Rng:
    """An os.urandom-like source that repeats for a seed (test vectors, not secrets)."""
    return random.Random(seed).randbytes


TRACE = bytes(range(32))
OTHER_TRACE = bytes(range(1, 33))


def test_seal_then_open_round_trips_and_the_blob_has_the_documented_layout() -> None:
    rng = seeded()
    key = new_key(rng)
    sealed = seal("s1", b"step one: 2 + 2 = 4", TRACE, key, rng)
    assert sealed.blob[:4] == MAGIC and sealed.blob[4] == 1
    assert len(sealed.blob) == HEADER_BYTES + len(b"step one: 2 + 2 = 4") + TAG_BYTES
    assert sealed.ciphertext_digest == hashlib.sha256(sealed.blob).digest()
    assert b"step one" not in sealed.blob
    assert "key=" not in repr(sealed)
    assert open_segment(sealed.blob, key, TRACE, "s1", ciphertext_digest=sealed.ciphertext_digest) == (
        b"step one: 2 + 2 = 4"
    )


def test_sealing_is_deterministic_under_a_seeded_rng_and_fresh_under_urandom() -> None:
    a = seal("n", b"x", TRACE, new_key(seeded(1)), seeded(2))
    b = seal("n", b"x", TRACE, new_key(seeded(1)), seeded(2))
    assert a.blob == b.blob
    c = seal("n", b"x", TRACE, new_key(os.urandom), os.urandom)
    d = seal("n", b"x", TRACE, new_key(os.urandom), os.urandom)
    assert c.blob != d.blob and c.key != d.key


AUTH = "authentication failed: wrong key, tampered ciphertext or a blob of another node/trace"


def test_wrong_key_fails_authentication() -> None:
    rng = seeded()
    sealed = seal("s1", b"secret", TRACE, new_key(rng), rng)
    with pytest.raises(VerificationError, match=AUTH):
        open_segment(sealed.blob, new_key(rng), TRACE, "s1")


def test_a_blob_moved_to_another_node_or_trace_fails() -> None:
    rng = seeded()
    sealed = seal("s1", b"secret", TRACE, new_key(rng), rng)
    with pytest.raises(VerificationError, match=AUTH):
        open_segment(sealed.blob, sealed.key, TRACE, "s2")
    with pytest.raises(VerificationError, match=AUTH):
        open_segment(sealed.blob, sealed.key, OTHER_TRACE, "s1")


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=200), st.data())
def test_any_flipped_bit_is_rejected(plaintext: bytes, data: st.DataObject) -> None:
    rng = seeded()
    sealed = seal("node", plaintext, TRACE, new_key(rng), rng)
    position = data.draw(st.integers(0, len(sealed.blob) - 1))
    bit = data.draw(st.integers(0, 7))
    tampered = bytearray(sealed.blob)
    tampered[position] ^= 1 << bit
    with pytest.raises(VerificationError):
        open_segment(bytes(tampered), sealed.key, TRACE, "node")


def test_truncated_oversized_and_foreign_blobs_are_refused_before_decrypting() -> None:
    rng = seeded()
    sealed = seal("s1", b"secret", TRACE, new_key(rng), rng)
    with pytest.raises(VerificationError, match="is truncated"):
        open_segment(sealed.blob[: HEADER_BYTES + TAG_BYTES - 1], sealed.key, TRACE, "s1")
    with pytest.raises(VerificationError, match=AUTH):
        open_segment(sealed.blob[:-1], sealed.key, TRACE, "s1")
    with pytest.raises(VerificationError, match="is oversized"):
        open_segment(sealed.blob + b"\x00" * 100, sealed.key, TRACE, "s1", max_plaintext_bytes=64)
    with pytest.raises(VerificationError, match="not the magic"):
        open_segment(b"XXXX" + sealed.blob[4:], sealed.key, TRACE, "s1")
    with pytest.raises(VerificationError, match="format version 2"):
        open_segment(sealed.blob[:4] + b"\x02" + sealed.blob[5:], sealed.key, TRACE, "s1")
    with pytest.raises(VerificationError, match="not the one the trace root commits to"):
        open_segment(sealed.blob, sealed.key, TRACE, "s1", ciphertext_digest=b"\x00" * 32)
    with pytest.raises(VerificationError, match="must be 32 bytes"):
        open_segment(sealed.blob, sealed.key[:16], TRACE, "s1")
    assert parse_header(sealed.blob)[0] == 1


def test_oversized_plaintext_and_bad_arguments_are_refused_when_sealing() -> None:
    rng = seeded()
    with pytest.raises(GraphError, match="above the limit of 10"):
        seal("s1", b"x" * 11, TRACE, new_key(rng), rng, max_plaintext_bytes=10)
    with pytest.raises(GraphError, match="trace id: expected 32 bytes, got 16"):
        seal("s1", b"x", TRACE[:16], new_key(rng), rng)
    with pytest.raises(GraphError, match="node id ''"):
        seal("", b"x", TRACE, new_key(rng), rng)
    with pytest.raises(ConfigError, match="random source"):
        seal("s1", b"x", TRACE, new_key(rng), lambda n: b"\x00" * (n - 1))


def test_every_hdag_node_of_a_real_trace_seals_under_its_own_key_and_reads_back() -> None:
    hdag = from_steps(
        "Tom has 3 boxes of 12 pens. How many pens?",
        ["Each box has 12 pens.", "3 * 12 = 36", "So Tom has 36 pens."],
    )
    rng = seeded()
    trace_id = new_trace_id(rng)
    sealed = seal_graph(hdag, trace_id, rng)
    assert [s.node_id for s in sealed] == [node.id for node in hdag.nodes()]
    assert len({s.key for s in sealed}) == len(sealed)
    for segment in sealed:
        node = loads_node(open_segment(segment.blob, segment.key, trace_id, segment.node_id).decode("ascii"))
        assert node == hdag.node(segment.node_id)


def test_cig_turns_have_a_canonical_json_that_round_trips() -> None:
    log = AgentLog(
        task="sum the list",
        agents=(AgentSpec("Planner", Role.PLANNER), AgentSpec("Coder", Role.CODER)),
        turns=(LogTurn("Planner", "plan: add them"), LogTurn("Coder", "print(sum([1, 2]))  # é")),
    )
    cig = build_cig(log)
    texts = segment_plaintexts(cig)
    assert list(texts) == cig.topological_order()
    for turn in cig.turns():
        text = texts[turn.id].decode("ascii")
        assert loads_turn(text) == turn
        assert dumps_turn(loads_turn(text)) == text
    turn = AgentTurn("t9", 9, "Coder", Role.CODER, "out", "in", "2024-01-01T00:00:00Z", ReplyContract("json", ("a",)))
    assert loads_turn(dumps_turn(turn)) == turn


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[]", "expected an object"),
        ('{"format":"x"}', "missing fields"),
        ('{"a":1,"a":2}', "duplicate field"),
        ("{", "not valid JSON"),
    ],
)
def test_malformed_turn_json_is_refused(text: str, message: str) -> None:
    with pytest.raises(GraphError, match=message):
        loads_turn(text)


def test_a_turn_with_an_unknown_role_is_refused() -> None:
    text = dumps_turn(AgentTurn("t0", 0, "A", Role.EXPERT, "o")).replace('"expert"', '"verifier"')
    with pytest.raises(GraphError, match="role 'verifier'"):
        loads_turn(text)
